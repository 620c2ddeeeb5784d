package text

import (
	"slices"
	"testing"
)

func TestRelated(t *testing.T) {
	for _, tt := range []struct {
		word string
		want []string // words whose terms Related must hold
		not  []string
	}{
		{"quiet", []string{"silent", "tranquil"}, []string{"quiet"}},
		{"spacious", []string{"large", "roomy"}, nil},
		{"large", []string{"spacious", "big"}, nil},
		{"beverage", []string{"drink"}, nil},
		{"spotless", []string{"clean", "immaculate"}, nil},
		{"安静", nil, nil},
	} {
		term := Terms(tt.word)[0]
		got := Related(term)
		for _, w := range tt.want {
			if !slices.Contains(got, Terms(w)[0]) {
				t.Errorf("Related(%q) = %q, lacks %q", term, got, w)
			}
		}
		for _, w := range tt.not {
			if slices.Contains(got, Terms(w)[0]) {
				t.Errorf("Related(%q) holds %q", term, w)
			}
		}
		if tt.want == nil && got != nil {
			t.Errorf("Related(%q) = %q, want nil", term, got)
		}
	}
}

func TestUnquoted(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`Which section says "the right of the people"?`, `Which section says                          ?`},
		{"「依照本法」出自哪里？", "      出自哪里？"},
		{`An open "quote`, `An open "quote`},
		{"no quotes", "no quotes"},
	} {
		if got := Unquoted(tt.in); got != tt.want {
			t.Errorf("Unquoted(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDropPossessives(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Is Sala Thong's beer cheap?", "Is Sala Thong beer cheap?"},
		{"Rosa’s view", "Rosa view"},
		{"it's", "it"},
		{"no possessive", "no possessive"},
	} {
		if got := DropPossessives(tt.in); got != tt.want {
			t.Errorf("DropPossessives(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
