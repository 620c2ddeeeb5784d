package search

import (
	"github.com/mixchat/mixchat/pkg/rag"
)

// fitDocs keeps the leading docs whose texts fit in budget tokens, the
// last one cut to fit (rag.FitEvidence); budget 0 keeps them all.
func fitDocs(docs []Doc, budget int) []Doc {
	if budget <= 0 {
		return docs
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	fit := rag.FitEvidence(texts, budget)
	out := make([]Doc, len(fit))
	for i, t := range fit {
		out[i] = docs[i]
		out[i].Text = t
	}
	return out
}
