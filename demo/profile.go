package demo

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mixchat/mixchat/pkg/docstruct"
)

// profileJSON is the demo knowledge base's profile: who the fusion prompt
// speaks as over it, and the questions the web app suggests for it.
//
//go:embed zhouyi/profile.json
var profileJSON []byte

// Profile is what the demo knowledge base brings besides its texts.
type Profile struct {
	// Persona opens the fusion prompt when the demo knowledge base is the
	// default and mix.persona is left at its neutral default.
	Persona string `json:"persona"`
	// Questions are suggested to a new user of the demo knowledge base.
	Questions []string `json:"examples"`
}

// KBProfile returns the demo knowledge base's profile.
func KBProfile() (Profile, error) {
	var p Profile
	if err := json.Unmarshal(profileJSON, &p); err != nil {
		return Profile{}, fmt.Errorf("demo: read profile: %w", err)
	}
	return p, nil
}

// StructureProfile returns the demo knowledge base's profile as the
// knowledge bases read it (docstruct.LoadProfile): the names of its parts,
// its classifiers, its heading and file-name forms. A knowledge base names
// it by its Name.
func StructureProfile() (*docstruct.Profile, error) {
	p, err := docstruct.LoadProfile(bytes.NewReader(profileJSON))
	if err != nil {
		return nil, fmt.Errorf("demo: read profile: %w", err)
	}
	return p, nil
}

// Decline records in dataDir that the demo is not wanted there (demo:
// false), unless a first run already happened: a later start with the
// default demo: true then creates nothing either. Delete the marker file
// to have the demo made on the next start.
func Decline(dataDir string) error {
	_, err := os.Stat(filepath.Join(dataDir, MarkerFile))
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("demo: %w", err)
	}
	return writeMarker(dataDir, marker{Declined: true, Created: time.Now().UTC()})
}
