package extractive

import (
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/text"
)

// Names the way people write them: the things the documents are about
// (a document's title and aliases, and what the document says the thing
// is) are found in a conversation without regard to case, with "&" read
// as "and" and words run together or apart alike ("A & B Bookshop" for
// "A AND B BOOK SHOP"), and by the distinctive part of a long name (a
// run of its words no other title has: "Efes" for "Efes Bakery").

// Documents is what a Vocabulary may also know of the documents behind its
// names (the knowledge bases' vocabulary does). The rewrite uses it, when
// the Vocabulary has it, to move through a document's structure
// ("那第四条呢？", "and the next one?") and to resolve "the museum" to
// the last thing named that a document says is one.
type Documents interface {
	// Structure is what docstruct.ParseAddress needs of the knowledge
	// bases: their documents' titles and aliases, the kinds of parts the
	// documents use and the profile in force.
	Structure() docstruct.Known
	// Named returns the things of the documents that s names, in the
	// order s names them.
	Named(s string) []Named
}

// Named is one thing a text names.
type Named struct {
	// Name is the thing's name as its document writes it; As is how the
	// text writes it; Kind is what its document says it is ("bakery"
	// for "Efes is a bakery."), lower case, "" when it does not say.
	Name, As, Kind string
	// At is the byte offset of As in the text.
	At int
}

// Thing is a thing a document is about: its name (the document's title),
// its other names, and what the document says it is.
type Thing struct {
	Name    string
	Aliases []string
	Kind    string
}

// NameIndex finds Things in text (see Documents.Named).
type NameIndex struct {
	things []Thing
	// keys by the first letter of their joined form; cjk keys are
	// matched as substrings.
	byFirst map[rune][]nameKey
	cjk     []nameKey
}

// nameKey is one way of writing a thing's name.
type nameKey struct {
	joined string // lower-case words, "&" as "and", run together
	words  int
	thing  int
	// capital: the text must write the key's first letter in upper case
	// (a one-word part of a longer name: "Belfry" names the place,
	// "belfry" may not).
	capital bool
}

// Bounds of the distinctive parts taken from a name.
const (
	minPartLetters = 4
	maxPartsPerKey = 12
)

// NewNameIndex indexes things by their names, their aliases and the
// distinctive parts of their names.
func NewNameIndex(things []Thing) *NameIndex {
	things = slices.Clone(things)
	for i, t := range things {
		// Names are written into rewrites: valid UTF-8 only.
		t.Name, t.Kind = validUTF8(t.Name), validUTF8(t.Kind)
		t.Aliases = slices.Clone(t.Aliases)
		for j, a := range t.Aliases {
			t.Aliases[j] = validUTF8(a)
		}
		things[i] = t
	}
	x := &NameIndex{things: things, byFirst: map[rune][]nameKey{}}
	var all []thingWords // every name's words, for distinctiveness
	for i, t := range things {
		for _, n := range append([]string{t.Name}, t.Aliases...) {
			if ws := nameWords(n); len(ws) > 0 {
				all = append(all, thingWords{i, strings.Join(ws, "")})
			}
		}
	}
	add := func(k nameKey) {
		if k.joined == "" {
			return
		}
		if text.IsCJK(firstRune(k.joined)) {
			x.cjk = append(x.cjk, k)
			return
		}
		r := firstRune(k.joined)
		x.byFirst[r] = append(x.byFirst[r], k)
	}
	for i, t := range things {
		names := append([]string{t.Name}, t.Aliases...)
		own := nameWords(t.Name)
		for j, n := range names {
			ws := nameWords(n)
			if len(ws) == 0 || j > 0 && len(ws) < len(own) && containsRun(own, ws) && !text.MostlyCJK(n) {
				// A part of the name is a name only where it is
				// distinctive, as distinctiveParts reads it.
				continue
			}
			if text.MostlyCJK(n) {
				if utf8.RuneCountInString(n) >= 2 {
					add(nameKey{joined: strings.ToLower(n), thing: i})
				}
				continue
			}
			add(nameKey{joined: strings.Join(ws, ""), words: len(ws), thing: i})
			for _, p := range distinctiveParts(ws, i, all) {
				add(nameKey{joined: strings.Join(p, ""), words: len(p), thing: i, capital: len(p) == 1})
			}
		}
	}
	return x
}

// nameWords splits a name into lower-case words, "&" read as "and" and a
// leading "the" dropped.
func nameWords(s string) []string {
	var ws []string
	for _, w := range spanWords(strings.ReplaceAll(s, "&", " and ")) {
		ws = append(ws, strings.ToLower(w.s))
	}
	if len(ws) > 1 && ws[0] == "the" {
		ws = ws[1:]
	}
	return ws
}

// thingWords is a name of the thing of that index, its words run
// together.
type thingWords struct {
	thing  int
	joined string
}

// distinctiveParts returns the runs of ws (a name of the thing of index
// thing), shorter than ws, that no other thing's name of all holds (its
// words run together), neither starting nor ending with a joining word, of
// at least minPartLetters letters.
func distinctiveParts(ws []string, thing int, all []thingWords) [][]string {
	var out [][]string
	for n := 1; n < len(ws) && len(out) < maxPartsPerKey; n++ {
		for i := 0; i+n <= len(ws) && len(out) < maxPartsPerKey; i++ {
			p := ws[i : i+n]
			if nameJoiners[p[0]] || nameJoiners[p[n-1]] || p[0] == "and" || p[n-1] == "and" ||
				utf8.RuneCountInString(strings.Join(p, "")) < minPartLetters || isAllDigits(strings.Join(p, "")) {
				continue
			}
			jp := strings.Join(p, "")
			if !slices.ContainsFunc(all, func(o thingWords) bool { return o.thing != thing && strings.Contains(o.joined, jp) }) {
				out = append(out, p)
			}
		}
	}
	return out
}

func containsRun(ws, p []string) bool {
	for i := 0; i+len(p) <= len(ws); i++ {
		ok := true
		for j := range p {
			if ws[i+j] != p[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Named returns the things s names, longest match first where two
// overlap, in the order s names them.
func (x *NameIndex) Named(s string) []Named {
	if x == nil || s == "" {
		return nil
	}
	type match struct {
		start, end, thing int
	}
	var ms []match
	ws := spanWords(s)
	lower := make([]string, len(ws))
	for i, w := range ws {
		lower[i] = strings.ToLower(w.s)
	}
	// "&" is no word rune: read it where it stands.
	ws, lower = withAmpersands(s, ws, lower)
	for i := range ws {
		cands := x.byFirst[firstRune(lower[i])]
		for _, k := range cands {
			if k.capital && !unicode.IsUpper(firstRune(ws[i].s)) {
				continue
			}
			joined := ""
			for j := i; j < len(ws) && len(joined) < len(k.joined); j++ {
				joined += lower[j]
				if joined == k.joined {
					ms = append(ms, match{ws[i].start, ws[j].end, k.thing})
					break
				}
				if !strings.HasPrefix(k.joined, joined) {
					break
				}
			}
		}
	}
	ls := strings.ToLower(s)
	for _, k := range x.cjk {
		for off := 0; ; {
			j := strings.Index(ls[off:], k.joined)
			if j < 0 {
				break
			}
			ms = append(ms, match{off + j, off + j + len(k.joined), k.thing})
			off += j + len(k.joined)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	sort.SliceStable(ms, func(a, b int) bool { return ms[a].end-ms[a].start > ms[b].end-ms[b].start })
	var kept []match
	for _, m := range ms {
		overlap := false
		for _, k := range kept {
			if m.start < k.end && k.start < m.end {
				overlap = true
				break
			}
		}
		if !overlap {
			kept = append(kept, m)
		}
	}
	sort.Slice(kept, func(a, b int) bool { return kept[a].start < kept[b].start })
	out := make([]Named, 0, len(kept))
	seen := map[int]bool{}
	for _, m := range kept {
		if seen[m.thing] {
			continue
		}
		seen[m.thing] = true
		t := x.things[m.thing]
		out = append(out, Named{Name: t.Name, As: s[m.start:m.end], Kind: t.Kind, At: m.start})
	}
	return out
}

// withAmpersands inserts the "&" of s between the words around it, read as
// "and".
func withAmpersands(s string, ws []word, lower []string) ([]word, []string) {
	if !strings.Contains(s, "&") {
		return ws, lower
	}
	var ow []word
	var ol []string
	prev := 0
	for i, w := range ws {
		if k := strings.Index(s[prev:w.start], "&"); k >= 0 {
			at := prev + k
			ow = append(ow, word{"&", at, at + 1})
			ol = append(ol, "and")
		}
		ow = append(ow, w)
		ol = append(ol, lower[i])
		prev = w.end
	}
	return ow, ol
}

// Catalog is a Vocabulary with Documents over fixed data: other known
// names (headings, knowledge base names), the things the documents are
// about and their structure.
type Catalog struct {
	// Names are names known besides the things (may be nil).
	Names NameList
	// Known is what ParseAddress is given.
	Known docstruct.Known
	// Things are found by Named.
	Things *NameIndex
}

// NamesIn returns the names and the things' names that occur in s, as s
// writes them.
func (c *Catalog) NamesIn(s string) []string {
	out := c.Names.NamesIn(s)
	for _, n := range c.Things.Named(s) {
		out = append(out, n.As)
	}
	return out
}

// Structure returns c.Known.
func (c *Catalog) Structure() docstruct.Known { return c.Known }

// Named returns the things s names.
func (c *Catalog) Named(s string) []Named { return c.Things.Named(s) }

// documentsOf returns vocab's Documents, or nil.
func documentsOf(vocab Vocabulary) Documents {
	if d, ok := vocab.(Documents); ok && d != nil {
		return d
	}
	return nil
}
