package kb

import (
	"context"
	"maps"
	"strings"

	"github.com/mixchat/mixchat/pkg/text"
)

// Splitter cuts documents into chunks: it is text.Splitter (sentence,
// paragraph and heading boundaries, Size and Overlap measured by Len,
// Chinese title enhancement) applied to each document, with the document's
// metadata carried onto its pieces. A question–answer pair of an FAQ
// document is a piece of its own (see faq.go). The search answerer cuts web pages with
// the same text.Splitter.
type Splitter text.Splitter

// Piece is one chunk of a document as the splitter made it.
type Piece struct {
	Text     string
	Metadata map[string]any // the document's metadata plus "section" when under a heading
}

// Split returns the pieces of docs in order.
func (s Splitter) Split(docs []Document) []Piece {
	out, _ := s.SplitContext(context.Background(), docs)
	return out
}

// SplitContext is Split that stops, with ctx's cause, once ctx is done.
func (s Splitter) SplitContext(ctx context.Context, docs []Document) ([]Piece, error) {
	var out []Piece
	for _, d := range docs {
		if ps, ok, err := s.splitPairs(ctx, d); err != nil {
			return nil, err
		} else if ok {
			out = append(out, ps...)
			continue
		}
		cs, err := text.Splitter(s).SplitContext(ctx, d.Text)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			meta := maps.Clone(d.Metadata)
			if meta == nil {
				meta = map[string]any{}
			}
			if len(c.Headings) > 0 {
				meta["section"] = strings.Join(c.Headings, " > ")
			}
			out = append(out, Piece{Text: c.Text, Metadata: meta})
		}
	}
	return out, nil
}
