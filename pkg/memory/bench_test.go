package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

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
// against early, for every strategy but buffer (which shows the whole
// conversation, so costs what the conversation is long): over a SQLite
// file, the memory cached as in a running server, each iteration recalls
// once in one of 200 conversations of 10 turns (early) and once in one of
// 10,000 turns (late), side by side so that both see the same machine.
// Before each recall a turn is added to the conversation, remembered and
// compressed (as after a reply), so the recall indexes that turn, and the
// question is new, so no ranking is reused. Reported: early-ns/op,
// late-ns/op and late/early. The strategies read the window, the summary
// and the indexes, not the whole conversation, so the ratio is bounded
// whatever the conversation's length: within 1.25 for most strategies;
// retrieval and combined rank the latest 512 messages and the older hits
// with their neighbours (some 830) where turn 10 ranks 20, about 1.6.
//
//	go test -run '^$' -bench RecallAtTurn -benchtime 200x ./pkg/memory/
func BenchmarkRecallAtTurn(b *testing.B) {
	ctx := context.Background()
	const shorts, early, late = 200, 10, 10000
	store := openSQLite(b, filepath.Join(b.TempDir(), "memory.db"))
	m := newManager(b, store, nil, memory.Options{Tokens: llm.NewTokenizer("gpt-4o")})
	for c := range shorts {
		benchConversation(b, store, m, fmt.Sprint("s", c), early)
	}
	benchConversation(b, store, m, "long", late)
	turn := 0
	next := func(conv string) {
		j := 2 * (turn % (len(englishChat) / 2))
		turn++
		add(b, store, m, conv, englishChat[j], englishChat[j+1])
		if err := m.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, strategy := range m.Strategies() {
		if strategy == memory.Buffer {
			continue
		}
		b.Run(strategy, func(b *testing.B) {
			for c := range shorts + 1 {
				conv := fmt.Sprint("s", c)
				if c == shorts {
					conv = "long"
				}
				if _, err := m.Recall(ctx, conv, "warm", strategy, -1); err != nil {
					b.Fatal(err)
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var wall, cpu [2]time.Duration // early, late
			cpuOK := true
			recall := func(conv string, i, late int) {
				next(conv)
				t0 := time.Now()
				c0, ok0 := threadCPU()
				if _, err := m.Recall(ctx, conv, fmt.Sprintf("What did I say about the hexagram Kun (%d)?", i), strategy, -1); err != nil {
					b.Fatal(err)
				}
				c1, ok1 := threadCPU()
				wall[late] += time.Since(t0)
				cpu[late] += c1 - c0
				cpuOK = cpuOK && ok0 && ok1
			}
			for i := 0; b.Loop(); i++ {
				recall(fmt.Sprint("s", i%shorts), i, 0)
				recall("long", i, 1)
			}
			b.ReportMetric(float64(wall[0].Nanoseconds())/float64(b.N), "early-ns/op")
			b.ReportMetric(float64(wall[1].Nanoseconds())/float64(b.N), "late-ns/op")
			b.ReportMetric(float64(wall[1])/float64(wall[0]), "late/early")
			if cpuOK && cpu[0] > 0 {
				b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "late/early-cpu")
			}
		})
	}
}
