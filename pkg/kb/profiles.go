package kb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mixchat/mixchat/pkg/docstruct"
)

// A knowledge base may name a profile (docstruct.Profile): what one domain
// adds to the general reading of structure (named positions, classifiers,
// the forms of its headings and file names). The profiles a server knows
// are those given to New (WithProfiles: the demo's) and the *.json files
// of kb.profiles_dir.

// WithProfiles adds profiles the knowledge bases may name (a profile of
// kb.profiles_dir with the same name replaces one given here).
func WithProfiles(ps ...*docstruct.Profile) Option {
	return func(s *Service) {
		for _, p := range ps {
			if p != nil {
				s.profiles[p.Name] = p
			}
		}
	}
}

// LoadProfiles reads every *.json file of dir as a profile (docs/structure.md
// describes the format). Two files naming one profile are an error.
func LoadProfiles(dir string) ([]*docstruct.Profile, error) {
	if dir == "" {
		return nil, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*docstruct.Profile
	seen := map[string]string{}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		p, err := docstruct.LoadProfile(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if other, ok := seen[p.Name]; ok {
			return nil, fmt.Errorf("%s and %s both name the profile %q", other, f, p.Name)
		}
		seen[p.Name] = f
		out = append(out, p)
	}
	return out, nil
}

// Profiles lists the names of the profiles a knowledge base may name,
// sorted.
func (s *Service) Profiles() []string {
	out := make([]string, 0, len(s.profiles))
	for n := range s.profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Profile returns the profile named name.
func (s *Service) Profile(name string) (*docstruct.Profile, bool) {
	p, ok := s.profiles[name]
	return p, ok
}

// checkProfile refuses a profile name the server does not know ("" names
// none).
func (s *Service) checkProfile(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := s.profiles[name]; ok {
		return nil
	}
	known := s.Profiles()
	if len(known) == 0 {
		return fmt.Errorf("%w: profile %q is not known: this server has no profiles (kb.profiles_dir)", ErrBadRequest, name)
	}
	return fmt.Errorf("%w: profile %q is not known: use one of %s (or none)", ErrBadRequest, name, strings.Join(known, ", "))
}

// SetProfile names the profile the knowledge base's documents are read
// with ("" for none) and reads their structure again with it.
func (s *Service) SetProfile(ctx context.Context, name, profile string) error {
	if err := s.checkProfile(profile); err != nil {
		return err
	}
	b, release, err := s.get(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	return s.setProfile(ctx, b, profile)
}

// setProfile records the profile of b and reads the structure again.
func (s *Service) setProfile(ctx context.Context, b *base, profile string) error {
	if err := setMeta(ctx, b.db, "profile", profile); err != nil {
		return fmt.Errorf("update profile of %s: %w", b.name, err)
	}
	b.mu.Lock()
	b.info.Profile = profile
	b.mu.Unlock()
	b.prof.Store(s.profiles[profile])
	b.structs.invalidate()
	return nil
}

// AdoptProfile names profile for the knowledge base when it has never
// recorded a profile setting (a base made before bases named profiles),
// and does nothing otherwise, so a later choice, "" included, stands.
func (s *Service) AdoptProfile(ctx context.Context, name, profile string) error {
	if err := s.checkProfile(profile); err != nil {
		return err
	}
	b, release, err := s.get(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	var n int
	if err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE key = 'profile'`).Scan(&n); err != nil {
		return fmt.Errorf("profile of %s: %w", name, err)
	}
	if n > 0 {
		return nil
	}
	return s.setProfile(ctx, b, profile)
}
