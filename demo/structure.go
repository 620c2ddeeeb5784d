package demo

import (
	"bytes"
	"fmt"

	"github.com/mixchat/mixchat/pkg/docstruct"
)

// StructureProfile returns the demo's profile as the structure reading
// takes it (docs/structure.md): the names of the Zhouyi's parts, its
// classifier, its heading and file-name forms.
func StructureProfile() (*docstruct.Profile, error) {
	p, err := docstruct.LoadProfile(bytes.NewReader(profileJSON))
	if err != nil {
		return nil, fmt.Errorf("demo: read profile: %w", err)
	}
	return p, nil
}
