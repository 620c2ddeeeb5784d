package memory

import (
	"strings"

	"github.com/mixchat/mixchat/pkg/text"
)

// derived is what recalls compute from a digest, once per digest: term
// vectors and token counts of its summary lines, facts and triples.
type derived struct {
	summary []summaryLine
	facts   []factEntry
	triples []tripleEntry
}

type summaryLine struct {
	text   string
	tokens int
	vec    text.Vector // of its terms (docTerms)
}

type factEntry struct {
	entity string
	text   string
	order  int // position in the digest (later = more recent within an entity)
	vec    text.Vector
	tokens int // of "- entity — fact" and its line break
}

type tripleEntry struct {
	t               Triple
	order           int
	subjObj, rel    text.Vector
	subject, object string
	tokens          int
}

// derive computes the derived values of d. Those of a summary line, fact
// or triple that prev (the derived values of the digest d replaced, or nil)
// holds already are taken from it: compression changes a few of a
// digest's lines at a time, so a recall after it counts and reads those
// only.
func (m *Manager) derive(d Digest, prev *derived) *derived {
	out := &derived{}
	if prev == nil {
		prev = &derived{}
	}
	lines := make(map[string]*summaryLine, len(prev.summary))
	for i := range prev.summary {
		lines[prev.summary[i].text] = &prev.summary[i]
	}
	if d.Summary != "" {
		for _, l := range strings.Split(d.Summary, "\n") {
			sl, ok := lines[l]
			if !ok {
				sl = &summaryLine{text: l, tokens: m.count(l) + 1, vec: text.Count(docTerms(l))}
			}
			out.summary = append(out.summary, *sl)
		}
	}
	type factKey struct{ entity, text string }
	facts := make(map[factKey]*factEntry, len(prev.facts))
	for i := range prev.facts {
		f := &prev.facts[i]
		facts[factKey{f.entity, f.text}] = f
	}
	for _, e := range d.Entities {
		for _, f := range e.Facts {
			fe := factEntry{entity: e.Name, text: f, order: len(out.facts)}
			if old, ok := facts[factKey{e.Name, f}]; ok {
				fe.vec, fe.tokens = old.vec, old.tokens
			} else {
				fe.vec, fe.tokens = text.Count(docTerms(f)), m.count("- "+e.Name+" — "+f)+1
			}
			out.facts = append(out.facts, fe)
		}
	}
	triples := make(map[Triple]*tripleEntry, len(prev.triples))
	for i := range prev.triples {
		triples[prev.triples[i].t] = &prev.triples[i]
	}
	for i, t := range d.Triples {
		te := tripleEntry{t: t, order: i}
		if old, ok := triples[t]; ok {
			te.subjObj, te.rel, te.tokens = old.subjObj, old.rel, old.tokens
		} else {
			te.subjObj, te.rel = text.Count(docTerms(t.Subject+" "+t.Object)), text.Count(docTerms(t.Relation))
			te.tokens = m.count(t.Subject+" | "+t.Relation+" | "+t.Object) + 1
		}
		out.triples = append(out.triples, te)
	}
	return out
}
