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
// related to it (text.Related) no commoner in the base than it, at
// relatedWeight, unless it is quoted or a heading of the base holds it.
func TestLexicalQueryRelated(t *testing.T) {
	lex := retrieve.NewBM25(retrieve.BM25Params{K1: 0.9, B: 0.4})
	lex.Add("a", append(text.Terms("The room was silent at night."), titleMark+"section"))
	lex.Add("b", text.Terms("Breakfast is served from seven in a quiet garden."))
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

// TestSearchPossessives: a question that names a place with a possessive
// ("Bellmoor's rooms") finds that place's document, and so does one
// whose name has a possessive of its own ("Rosa's Bed and Breakfast").
func TestSearchPossessives(t *testing.T) {
	ctx := context.Background()
	s := newHashKB(t, "places", offlineModels())
	mustAdd(t, s, "places",
		FileData{Name: "Bellmoor.md", Data: []byte("# Bellmoor\n\nBellmoor is a hotel.\n\nQ: Is there parking at Bellmoor?\nA: Bellmoor has free parking.\n")},
		FileData{Name: "Harbour Hotel.md", Data: []byte("# Harbour Hotel\n\nHarbour Hotel is a hotel.\n\nThe rooms were clean, the beds were clean, clean towels every day.\n")},
		FileData{Name: "Rosa's Bed and Breakfast.md", Data: []byte("# Rosa's Bed and Breakfast\n\nRosa's Bed and Breakfast is a guest house.\n\nThe view from our room was lovely.\n")},
		FileData{Name: "Carolina Bed and Breakfast.md", Data: []byte("# Carolina Bed and Breakfast\n\nCarolina Bed and Breakfast is a guest house.\n\nThe room had a view of the park.\n")},
	)
	for _, tt := range []struct{ q, want string }{
		{"Are Bellmoor's rooms clean?", "Bellmoor.md"},
		{"Does Rosa's Bed and Breakfast have a good view?", "Rosa's Bed and Breakfast.md"},
	} {
		rs, err := s.Search(ctx, SearchRequest{Query: tt.q, KnowledgeBases: []string{"places"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 || rs[0].File != tt.want {
			var got []string
			for _, r := range rs {
				got = append(got, r.File)
			}
			t.Errorf("%s → %q, want %s first", tt.q, got, tt.want)
		}
	}
}
