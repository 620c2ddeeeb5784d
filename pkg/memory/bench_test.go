package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
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

// BenchmarkRecallAtTurn measures one turn's recall late in a conversation
// against early: the configured strategy (combined) and a window, over a
// SQLite file, the memory cached as in a running server. Each recall
// follows a new turn, so it reads that turn and indexes it, and asks a new
// question, so no ranking is reused. A short conversation is one of many
// (one per recall), so that it stays short; a long one grows by at most
// b.N turns.
//
//	go test -run '^$' -bench RecallAtTurn -benchtime 100x ./pkg/memory/
func BenchmarkRecallAtTurn(b *testing.B) {
	ctx := context.Background()
	for _, strategy := range []string{memory.Combined, memory.Window} {
		for _, n := range []int{10, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", strategy, n), func(b *testing.B) {
				store := openSQLite(b, filepath.Join(b.TempDir(), "memory.db"))
				m := newManager(b, store, nil, memory.Options{Tokens: llm.NewTokenizer("gpt-4o")})
				convs := 1
				if n <= 100 {
					convs = min(b.N, 200)
				}
				for c := range convs {
					conv := fmt.Sprint("c", c)
					benchConversation(b, store, m, conv, n)
					if _, err := m.Recall(ctx, conv, "warm", strategy, -1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					conv := fmt.Sprint("c", i%convs)
					j := 2 * (i % (len(englishChat) / 2))
					if _, err := store.AppendTurn(ctx, conv, memory.Message{Role: llm.RoleUser, Content: englishChat[j]},
						memory.Message{Role: llm.RoleAssistant, Content: englishChat[j+1]}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := m.Recall(ctx, conv, fmt.Sprintf("What did I say about the hexagram Kun (%d)?", i), strategy, -1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
