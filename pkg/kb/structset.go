package kb

import (
	"slices"
	"strings"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/text"
)

// A structure set's documents have their aliases distinguished across
// the set's titles (docstruct.Distinguish): each keeps its parsed aliases
// but its title's distinctive alias among no other titles (d0), and ends
// with the one among the set's titles. An upload changes one document of
// the set: the others are kept as they are, but those whose distinctive
// alias the titles that came or went may change.

// putStruct records the structure of a document just ingested (its hash as the
// files table has it), so that the next use need not load it again.
func (b *base) putStruct(sd *structDoc) {
	x := &b.structs
	select {
	case x.semaphore() <- struct{}{}:
		defer x.unlock()
	default:
		// A build is under way: the next one reads this document again.
		x.invalidate()
		return
	}
	cur := x.cur.Load()
	if cur == nil || cur.profile != b.profile() {
		// Not built yet (or about to be rebuilt for another profile): the
		// next build reads it like the others.
		x.invalidate()
		return
	}
	x.cur.Store(cur.with(sd))
}

// with returns the set with sd in the place of the document of its file,
// or added.
func (s *structSet) with(sd *structDoc) *structSet {
	i, found := slices.BinarySearchFunc(s.docs, sd.file, func(d *structDoc, f string) int { return strings.Compare(d.file, f) })
	docs := make([]*structDoc, 0, len(s.docs)+1)
	docs = append(append(docs, s.docs[:i]...), sd)
	changed := []string{} // the titles that came or went
	if found {
		if old := s.docs[i].doc.Title; old != sd.doc.Title {
			changed = append(changed, old, sd.doc.Title)
		}
		i++
	} else {
		changed = append(changed, sd.doc.Title)
	}
	docs = append(docs, s.docs[i:]...)
	return makeStructSet(s.version, s.profile, docs, changed)
}

// newStructSet makes a set of docs, their distinctive aliases computed
// across them.
func newStructSet(version uint64, p *docstruct.Profile, docs []*structDoc) *structSet {
	slices.SortFunc(docs, func(a, b *structDoc) int { return strings.Compare(a.file, b.file) })
	return makeStructSet(version, p, docs, nil)
}

// makeStructSet makes a set of docs, sorted by file. changed, when not
// nil, are the titles that came or went since the set the placed docs
// were distinguished in (the one changed document): the distinctive
// alias of a placed document none of them holds a candidate of is kept
// without a look at the others (every candidate ends with its d0).
// With changed nil every alias is computed again.
func makeStructSet(version uint64, p *docstruct.Profile, docs []*structDoc, changed []string) *structSet {
	set := &structSet{version: version, profile: p, docs: docs, byFile: make(map[string]*structDoc, len(docs))}
	folds := make([]string, len(changed))
	for i, t := range changed {
		folds[i] = foldTitle(t)
	}
	var titles []string
	ds := make([]*docstruct.Doc, len(docs))
	for i, d := range docs {
		if !d.placed || changed == nil || mayHold(folds, d.d0Fold) {
			alias := ""
			if d.d0 != "" {
				// A title with no candidate has no distinctive alias
				// among any titles.
				if titles == nil {
					titles = make([]string, len(docs))
					for j, o := range docs {
						titles[j] = o.doc.Title
					}
				}
				alias = docstruct.Distinctive(d.doc.Title, titles)
			}
			if !d.placed || alias != d.alias {
				d = d.place(alias)
			}
		}
		docs[i] = d
		set.byFile[d.file] = d
		ds[i] = d.doc
	}
	set.known = docstruct.Known{Titles: docstruct.TitlesOf(ds...), Kinds: mergeKinds(docs), Profile: p}
	return set
}

// mayHold reports whether one of the folded titles holds d0 (folded): an
// alias that ends with it then may change.
func mayHold(folds []string, d0 string) bool {
	if d0 == "" {
		return false
	}
	for _, f := range folds {
		if strings.Contains(f, d0) {
			return true
		}
	}
	return false
}

// place returns a copy of d whose doc's aliases are distinguished with
// alias, its distinctive one among a set's titles (docstruct.Distinguish).
func (d *structDoc) place(alias string) *structDoc {
	c := *d.doc
	var keep []string
	for _, a := range d.parsed {
		if a != d.d0 {
			keep = append(keep, a)
		}
	}
	if alias != "" && alias != c.Title {
		keep = append(keep, alias)
	}
	c.Aliases = keep
	nd := *d
	nd.doc, nd.placed, nd.alias = &c, true, alias
	return &nd
}

// mergeKinds is docstruct.KindsOf of the docs' documents, from their
// kindSeq: a spelling seen once is never taken again, which a walk of
// their parts would not either.
func mergeKinds(docs []*structDoc) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range docs {
		for _, k := range d.kindSeq {
			if seen[k] {
				continue
			}
			seen[k] = true
			if !slices.ContainsFunc(out, func(x string) bool { return docstruct.SameKind(x, k) }) {
				out = append(out, k)
			}
		}
	}
	return out
}

// foldTitle is a title as docstruct.Distinctive compares it.
func foldTitle(s string) string { return strings.ToLower(text.Fold(s)) }
