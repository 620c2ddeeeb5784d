package docstruct

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// Profile is what one domain adds to the general reading of structure, as
// data (JSON; docs/structure.md describes the format): names for the
// kinds of its parts, named positions ("序言" is the part numbered 0, "末章" the last chapter), the forms
// of its headings and file names, its classifiers, the persona a model
// speaks as and the example questions a client suggests. A profile only
// adds names: documents are read the same way with or without one.
type Profile struct {
	// Name identifies the profile ("zhouyi").
	Name string `json:"name"`
	// Description says what documents it is for.
	Description string `json:"description,omitempty"`
	// Kinds names the kinds of parts a question may ask for by name, each
	// with the other names it goes by ("注" also "注释", "注解").
	Kinds []KindName `json:"kinds,omitempty"`
	// Positions are parts named rather than numbered: a name (with its
	// other names) that stands for a kind and a number.
	Positions []Position `json:"positions,omitempty"`
	// Classifiers are characters that follow a name to say what it names
	// ("学而篇": 篇), so "学而篇" addresses the part named 学而 of kind 篇.
	Classifiers []string `json:"classifiers,omitempty"`
	// HeadingForms and FileNameForms are the forms of the domain's
	// headings and file names, with N for a number and NAME for a part's
	// name ("第N回NAME", "注释-NAME").
	HeadingForms  []string `json:"heading_forms,omitempty"`
	FileNameForms []string `json:"file_name_forms,omitempty"`
	// Persona is who a model speaks as over these documents.
	Persona string `json:"persona,omitempty"`
	// Examples are questions a client may suggest.
	Examples []string `json:"examples,omitempty"`

	forms []*regexp.Regexp // FileNameForms compiled
}

// KindName is a kind of part and its other names.
type KindName struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
}

// Position is a part named rather than numbered: Names (the first is the
// usual one) stand for the part of Kind numbered Number.
type Position struct {
	Names  []string `json:"names"`
	Kind   string   `json:"kind"`
	Number int      `json:"number"`
}

// ErrInvalidProfile is returned, wrapped, for a profile that does not
// validate.
var ErrInvalidProfile = errors.New("invalid profile")

// LoadProfile reads a profile from JSON and validates it. Unknown fields
// are refused, so a misspelt field is not silently ignored.
func LoadProfile(r io.Reader) (*Profile, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("%w: larger than 1 MiB", ErrInvalidProfile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidProfile, err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the profile and prepares it for use: a name; kinds and
// positions with names; positions with a kind and a number above zero, no
// name standing for two positions; classifiers of one character; forms
// that say where the number or the name is.
func (p *Profile) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidProfile}, args...)...))
	}
	if strings.TrimSpace(p.Name) == "" {
		bad("name is empty")
	}
	for i, k := range p.Kinds {
		if strings.TrimSpace(k.Name) == "" {
			bad("kinds[%d]: name is empty", i)
		}
	}
	seen := map[string]Position{}
	for i, pos := range p.Positions {
		if len(pos.Names) == 0 {
			bad("positions[%d]: no names", i)
		}
		if strings.TrimSpace(pos.Kind) == "" {
			bad("positions[%d]: kind is empty", i)
		}
		if pos.Number <= 0 || pos.Number > maxNumber {
			bad("positions[%d]: number %d, want 1 to %d", i, pos.Number, maxNumber)
		}
		for _, n := range pos.Names {
			if strings.TrimSpace(n) == "" {
				bad("positions[%d]: an empty name", i)
				continue
			}
			key := text.Fold(n)
			if o, ok := seen[key]; ok && (o.Kind != pos.Kind || o.Number != pos.Number) {
				bad("positions[%d]: %q already names %s %d", i, n, o.Kind, o.Number)
			}
			seen[key] = pos
		}
	}
	for i, c := range p.Classifiers {
		if utf8.RuneCountInString(c) != 1 {
			bad("classifiers[%d]: %q, want one character", i, c)
		}
	}
	for i, f := range p.HeadingForms {
		if !strings.Contains(f, "N") && !strings.Contains(f, "NAME") {
			bad("heading_forms[%d]: %q names neither N nor NAME", i, f)
		}
	}
	p.forms = nil
	for i, f := range p.FileNameForms {
		if !strings.Contains(f, "NAME") && !strings.Contains(f, "N") {
			bad("file_name_forms[%d]: %q names neither N nor NAME", i, f)
			continue
		}
		p.forms = append(p.forms, formRegexp(f))
	}
	return errors.Join(errs...)
}

// formRegexp turns a form ("注释-NAME", "第N回NAME") into a pattern with
// the groups name and num.
func formRegexp(f string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for f != "" {
		switch {
		case strings.HasPrefix(f, "NAME"):
			b.WriteString(`(?P<name>.+?)`)
			f = f[4:]
		case strings.HasPrefix(f, "N"):
			b.WriteString(`(?P<num>` + numClass + `)`)
			f = f[1:]
		default:
			r, n := utf8.DecodeRuneInString(f)
			b.WriteString(regexp.QuoteMeta(string(r)))
			f = f[n:]
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// MatchFileName reads a file name (without folder and extension) by the
// profile's file-name forms: the part's name and number it gives ("注释-学而"
// → name 学而), ok false when no form fits.
func (p *Profile) MatchFileName(name string) (partName string, num int, ok bool) {
	if p == nil {
		return "", 0, false
	}
	if p.forms == nil && len(p.FileNameForms) > 0 {
		for _, f := range p.FileNameForms {
			p.forms = append(p.forms, formRegexp(f))
		}
	}
	for _, re := range p.forms {
		m := re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		for i, g := range re.SubexpNames() {
			switch g {
			case "name":
				partName = m[i]
			case "num":
				num, _, _ = ParseNumber(m[i])
			}
		}
		return partName, num, true
	}
	return "", 0, false
}

// positionAt finds the named position s starts with, the longest name
// first.
func (p *Profile) positionAt(s string) (Position, string, bool) {
	var best Position
	bestName := ""
	for _, pos := range p.Positions {
		for _, n := range pos.Names {
			if len(n) > len(bestName) && strings.HasPrefix(s, n) {
				best, bestName = pos, n
			} else if f := text.Fold(n); len(f) > len(bestName) && f != n && strings.HasPrefix(s, f) {
				best, bestName = pos, f
			}
		}
	}
	return best, bestName, bestName != ""
}

// isClassifier reports whether c is one of the profile's classifiers.
func (p *Profile) isClassifier(c string) bool {
	return p != nil && slices.ContainsFunc(p.Classifiers, func(x string) bool { return text.Fold(x) == text.Fold(c) })
}

// KindOf returns the kind a name stands for ("注释" → "注"), or "".
func (p *Profile) KindOf(name string) string {
	if p == nil {
		return ""
	}
	f := text.Fold(name)
	for _, k := range p.Kinds {
		if text.Fold(k.Name) == f || slices.ContainsFunc(k.Aliases, func(a string) bool { return text.Fold(a) == f }) {
			return k.Name
		}
	}
	return ""
}
