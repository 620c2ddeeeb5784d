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

func (m *Manager) derive(d Digest) *derived {
	out := &derived{}
	if d.Summary != "" {
		for _, l := range strings.Split(d.Summary, "\n") {
			out.summary = append(out.summary, summaryLine{l, m.count(l) + 1})
		}
	}
	for _, e := range d.Entities {
		for _, f := range e.Facts {
			out.facts = append(out.facts, factEntry{entity: e.Name, text: f, order: len(out.facts),
				vec: text.Count(docTerms(f)), tokens: m.count("- "+e.Name+" — "+f) + 1})
		}
	}
	for i, t := range d.Triples {
		out.triples = append(out.triples, tripleEntry{t: t, order: i,
			subjObj: text.Count(docTerms(t.Subject + " " + t.Object)), rel: text.Count(docTerms(t.Relation)),
			tokens: m.count(t.Subject+" | "+t.Relation+" | "+t.Object) + 1})
	}
	return out
}
