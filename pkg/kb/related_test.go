package kb

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// TestLexicalQueryRelated: a question's word is also sought in the words
// related to it (text.Related), at relatedWeight, unless it is quoted or
// a heading of the base holds it.
func TestLexicalQueryRelated(t *testing.T) {
	lex := retrieve.NewBM25(retrieve.BM25Params{K1: 0.9, B: 0.4})
	lex.Add("a", append(text.Terms("The room was silent at night."), titleMark+"section"))
	lex.Add("b", text.Terms("Breakfast is served from seven."))
	silent, quiet := text.Terms("silent")[0], text.Terms("quiet")[0]
	related := func(q, term string) []string {
		cl, _ := lexicalQuery(lex, q, queryNames{})
		for _, c := range cl {
			if c.Forms[0].Terms[0] != term {
				continue
			}
			var out []string
			for _, f := range c.Forms[1:] {
				if f.Weight == relatedWeight {
					out = append(out, f.Terms[0])
				}
			}
			return out
		}
		t.Fatalf("%q: no clause for %q", q, term)
		return nil
	}
	if got := related("Is the room quiet?", quiet); !slices.Contains(got, silent) {
		t.Errorf("quiet is sought as %q, want %q among them", got, silent)
	}
	if got := related(`Which part says "a quiet room"?`, quiet); len(got) != 0 {
		t.Errorf("a quoted quiet is sought as %q too, want as written", got)
	}
	if got := related("Which section is quiet?", "section"); len(got) != 0 {
		t.Errorf("section, a heading of the base, is sought as %q too, want as written", got)
	}
}

// TestChatRelatedWords: a question answered by a passage that says what
// it asks in other words.
func TestChatRelatedWords(t *testing.T) {
	ctx := context.Background()
	s := newHashKB(t, "inn", offlineModels())
	mustAdd(t, s, "inn",
		FileData{Name: "Maple Inn.md", Data: []byte("# Maple Inn\n\nMaple Inn has twelve rooms over three floors. Breakfast is served from seven to ten in the garden room.\n\n## Reviews\n\nWe stayed two nights in May. The street outside was silent all night. The staff carried our bags.\n")},
		FileData{Name: "Harbour Hotel.md", Data: []byte("# Harbour Hotel\n\nHarbour Hotel has a bar on the roof and a pool.\n\nParking costs ten pounds a night.\n")},
	)
	reply, err := s.Chat(ctx, ChatRequest{Query: "Is Maple Inn quiet?", KnowledgeBases: []string{"inn"}, MinRelevance: s.DefaultMinRelevance()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Empty || !strings.Contains(reply.Text, "silent") {
		t.Errorf("reply %q (empty %v, best relevance %.3f): want the sentence that says silent", reply.Text, reply.Empty, reply.BestRelevance)
	}
}
