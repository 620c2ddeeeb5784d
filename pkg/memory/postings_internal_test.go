package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// TestPostingsScoreAsBM25: read whole (lo = 0), the postings score every
// document exactly as retrieve.BM25 does, repeated query terms included;
// from lo on they score the documents from lo on the same, and read at
// most scan postings per term of the older ones, the latest first.
func TestPostingsScoreAsBM25(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	p, ref := newPostings(), retrieve.NewBM25(retrieve.BM25Params{})
	const n = 300
	for i := range n {
		terms := make([]string, rng.IntN(6))
		for j := range terms {
			terms[j] = vocab[rng.IntN(len(vocab))]
		}
		p.extend(i, terms)
		ref.Add(strconv.Itoa(i), terms)
	}
	for _, q := range [][]string{{"a"}, {"b", "c"}, {"c", "c", "h"}, {"z"}, {"a", "b", "c", "d", "e", "f", "g", "h"}} {
		got := make([]float64, n)
		p.score(q, 0, got, 0, nil)
		want := make([]float64, n)
		for _, h := range ref.Search(q, n, nil) {
			i, _ := strconv.Atoi(h.ID)
			want[i] = h.Score
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("query %v: doc %d scored %v, want %v", q, i, got[i], want[i])
			}
		}
		const lo, scan = 200, 7
		win, arch := make([]float64, n-lo), &sparse{}
		arch.reset(lo)
		p.score(q, lo, win, scan, arch)
		for i := range win {
			if win[i] != want[lo+i] {
				t.Fatalf("query %v from %d: doc %d scored %v, want %v", q, lo, lo+i, win[i], want[lo+i])
			}
		}
		if len(arch.touched) > scan*len(q) {
			t.Errorf("query %v: %d older documents scored, want at most %d", q, len(arch.touched), scan*len(q))
		}
		for _, d := range arch.touched {
			if s := arch.val[d]; d >= lo || s > want[d]+1e-12 {
				t.Errorf("query %v: older doc %d scored %v (whole: %v)", q, d, s, want[d])
			}
		}
	}
}

// TestRankLongConversation: past recentDocs messages, a search ranks the
// latest ones and the older ones the lexical index finds with their
// replies: an old message naming a rare word is found (with the reply that
// answers it), and what is ranked stays bounded however long the
// conversation.
func TestRankLongConversation(t *testing.T) {
	x := newTurnIndex(retrieve.NewHashEmbedder(64), 64, 0, func(s string) int { return len(s) / 4 })
	var turns []Turn
	for i := range 3000 {
		q, a := fmt.Sprintf("How was the weather on day %d?", i), fmt.Sprintf("It was mild on day %d.", i)
		if i == 10 {
			q, a = "Have you ever tried kohlrabi soup?", "Yes, my grandmother made it every winter."
		}
		turns = append(turns, Turn{ID: int64(i + 1), Question: Message{Role: "user", Content: q}, Answer: Message{Role: "assistant", Content: a}})
	}
	x.add(turns)
	rk, docs, _ := x.rank(t.Context(), "Who made the kohlrabi soup?", 0.3, 0.6, time.UTC)
	rs := rk.top(rk.len())
	if docs != 6000 {
		t.Fatalf("ranked over %d messages, want 6000", docs)
	}
	if max := recentDocs + 5*archiveHits; len(rs) > max {
		t.Errorf("ranked %d messages, want at most %d", len(rs), max)
	}
	if len(rs) < 2 || rs[0].doc.turn != 11 || rs[1].doc.turn != 11 {
		var top []string
		for _, r := range rs[:min(len(rs), 3)] {
			top = append(top, r.doc.id)
		}
		t.Errorf("best %v, want the old question about kohlrabi and its reply (11q, 11a)", top)
	}
	for _, r := range rs {
		if math.IsNaN(r.score) {
			t.Fatalf("%s scored NaN", r.doc.id)
		}
	}
}
