package search

import (
	"github.com/mixchat/mixchat/pkg/rag"
)

// fitDocs keeps the leading docs whose texts fit in budget tokens, the
// last one cut to fit (rag.FitEvidence); budget 0 keeps them all.
func fitDocs(docs []Doc, budget int) []Doc {
	return rag.FitEach(docs, budget, func(d Doc) string { return d.Text }, func(d *Doc, t string) { d.Text = t })
}
