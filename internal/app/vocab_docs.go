package app

import (
	"context"
	"crypto/sha256"
	"slices"
	"sort"
	"strings"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/kb"
)

// What the vocabulary knows of the knowledge bases' documents besides their
// names (extractive.Documents): each document as the base's structure
// index parsed it (or read again from its chunks by docstruct) — its title and aliases, the kinds of parts it uses — and
// what its opening says the document's subject is ("Efes is a bakery.",
// "Category: museum", "全聚德是一家烤鸭店。"), with the profile in force.

// vocabDocs is the part of a build the structure and the things come from.
type vocabDocs struct {
	known  docstruct.Known
	things *extractive.NameIndex
}

// kbProfiles is what the vocabulary asks of the knowledge bases about
// their profiles, when they can say (*kb.Service can).
type kbProfiles interface {
	Info(ctx context.Context, name string) (kb.Info, error)
	Profile(name string) (*docstruct.Profile, bool)
}

// profilesOf returns the profile each knowledge base of kbs names (nil
// for one that names none: its documents are read without one).
func profilesOf(ctx context.Context, kbs kbLister) func(string) *docstruct.Profile {
	return func(name string) *docstruct.Profile {
		ps, ok := kbs.(kbProfiles)
		if !ok {
			return nil
		}
		info, err := ps.Info(ctx, name)
		if err != nil || info.Profile == "" {
			return nil
		}
		p, _ := ps.Profile(info.Profile)
		return p
	}
}

// buildDocs reads the documents of one build: parsed holds the documents
// of the knowledge bases whose structure index gave them (shared: copied
// here before Distinguish changes their aliases), chunks the chunks of
// the others (nil for one too large to read), files their documents.
func buildDocs(kbNames []string, files map[string][]kb.FileInfo, chunks map[string][]kb.Chunk, parsed map[string][]*docstruct.Doc, profile func(string) *docstruct.Profile, kinds *kindCache) vocabDocs {
	var docs []*docstruct.Doc
	var things []extractive.Thing
	var prof *docstruct.Profile
	for _, n := range kbNames {
		p := profile(n)
		if prof == nil {
			prof = p
		}
		if ds, ok := parsed[n]; ok {
			for _, d := range ds {
				c := *d
				c.Aliases = slices.Clone(d.Aliases)
				docs = append(docs, &c)
			}
			continue
		}
		byFile := map[string][]kb.Chunk{}
		for _, c := range chunks[n] {
			byFile[c.File] = append(byFile[c.File], c)
		}
		for _, f := range files[n] {
			cs := byFile[f.Name]
			if len(cs) == 0 {
				continue
			}
			sort.SliceStable(cs, func(a, b int) bool { return cs[a].Seq < cs[b].Seq })
			var b strings.Builder
			for _, c := range cs {
				b.WriteString(c.Text)
				b.WriteString("\n\n")
			}
			d := docstruct.Parse(f.Name, b.String(), docstruct.FormatOf(f.Name), p)
			docs = append(docs, d)
		}
	}
	docstruct.Distinguish(docs)
	defer kinds.next()
	for _, d := range docs {
		things = append(things, extractive.Thing{Name: d.Title, Aliases: d.Aliases, Kind: kinds.kind(d)})
		d.Text = "" // only the names are kept
	}
	return vocabDocs{
		known:  docstruct.Known{Titles: docstruct.TitlesOf(docs...), Kinds: docstruct.KindsOf(docs...), Profile: prof},
		things: extractive.NewNameIndex(things),
	}
}

// openingBytes bounds the opening read for what a document's subject is.
const openingBytes = 1000

// subjectKind is what the opening of d says its subject (its title or an
// alias) is (extractive.KindIn), "" when it does not say.
func subjectKind(d *docstruct.Doc) string {
	open := d.Text
	if len(open) > openingBytes {
		open = open[:openingBytes]
	}
	return extractive.KindIn(open, append([]string{d.Title}, d.Aliases...))
}

// kindCache keeps subjectKind's answers from one build for the next: a
// build follows every change of a knowledge base (an upload), and reads
// every document again, most of them as they were. A nil *kindCache
// keeps nothing. It is used by one build at a time.
type kindCache struct {
	prev, cur map[string]string
}

// kind is subjectKind(d), from the last build's answers when it had d with
// the same opening, title and aliases.
func (c *kindCache) kind(d *docstruct.Doc) string {
	if c == nil {
		return subjectKind(d)
	}
	open := d.Text
	if len(open) > openingBytes {
		open = open[:openingBytes]
	}
	h := sha256.New()
	for _, x := range append([]string{open, d.Title}, d.Aliases...) {
		h.Write([]byte(x))
		h.Write([]byte{0})
	}
	key := string(h.Sum(nil)) // the opening is up to openingBytes: keys of its digest stay small
	k, ok := c.cur[key]
	if !ok {
		if k, ok = c.prev[key]; !ok {
			k = subjectKind(d)
		}
		if c.cur == nil {
			c.cur = map[string]string{}
		}
		c.cur[key] = k
	}
	return k
}

// next ends a build: its answers are the ones the next build reuses.
func (c *kindCache) next() {
	if c != nil {
		c.prev, c.cur = c.cur, nil
	}
}

var _ extractive.Documents = (*kbVocabulary)(nil)
