package memory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// benchConversation stores n turns (englishChat's, numbered) in conv.
func benchConversation(b *testing.B, s memory.Store, m *memory.Manager, conv string, n int) {
	b.Helper()
	for i := range n {
		j := 2 * (i % (len(englishChat) / 2))
		q := fmt.Sprintf("%s (%d)", englishChat[j], i)
		a := fmt.Sprintf("%s Note %d.", englishChat[j+1], i)
		add(b, s, m, conv, q, a)
	}
	ctx := context.Background()
	if err := m.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecall measures what each strategy costs per turn: assembling
// the history of a 300-turn conversation (offline model, 2,000-token
// budget, state cached as in a running server).
//
//	go test -run '^$' -bench Recall -benchmem ./pkg/memory/
func BenchmarkRecall(b *testing.B) {
	ctx := context.Background()
	store := openSQLite(b, ":memory:")
	m := newManager(b, store, nil, memory.Options{Tokens: llm.NewTokenizer("gpt-4o")})
	benchConversation(b, store, m, "c", 300)
	for _, strategy := range m.Strategies() {
		b.Run(strategy, func(b *testing.B) {
			if _, err := m.Recall(ctx, "c", "Who is my teacher?", strategy, -1); err != nil { // warm the cache
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := m.Recall(ctx, "c", fmt.Sprintf("What did I say about the hexagram Kun (%d)?", i%300), strategy, -1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRemember measures the background work per turn: storing a turn,
// then compressing it (summary folding, entity and triple extraction,
// offline) until the manager is idle.
func BenchmarkRemember(b *testing.B) {
	store := openSQLite(b, ":memory:")
	m := newManager(b, store, nil, memory.Options{Tokens: llm.NewTokenizer("gpt-4o")})
	benchConversation(b, store, m, "c", 100)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		add(b, store, m, "c", fmt.Sprintf("My favourite hexagram is number %d, what is it called?", i), "It is one of the sixty-four.")
		if err := m.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
