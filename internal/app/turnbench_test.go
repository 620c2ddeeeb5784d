package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/chattest"
	"github.com/mixchat/mixchat/internal/childserver"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// fillTurns stores n turns of chattest.Turns, numbered from first, as
// conversation conv of the app's store and tells its memory, as a served
// turn does.
func fillTurns(b *testing.B, a *App, conv string, first, n int) {
	b.Helper()
	ctx := context.Background()
	for i := first; i < first+n; i++ {
		j := 2 * (i % (len(chattest.Turns) / 2))
		q := memory.Message{Role: llm.RoleUser, Content: fmt.Sprintf("%s (%d)", chattest.Turns[j], i)}
		ans := memory.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("%s [%d]", chattest.Turns[j+1], i)}
		t, err := a.Store.AppendTurn(ctx, conv, q, ans)
		if err != nil {
			b.Fatal(err)
		}
		a.Memory.Remember(ctx, conv, t)
	}
	if err := a.Memory.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkChatAtTurn measures a whole /chat/chat turn late in a
// conversation against early: the app as `mixchat serve` wires it on its
// embedded defaults (SQLite conversation store, the offline extractive
// model) in a temporary data directory, served over HTTP. For every memory
// strategy a request can name but buffer (which shows the whole
// conversation, so costs what the conversation is long), each iteration
// times one non-streamed POST /chat/chat at the next turn of one of 200
// conversations of 10 turns (early: turn 11 or 12) and one at the next turn
// of a conversation of 10,000 turns (late; it grows by the turns asked),
// side by side so that both see the same machine; each iteration asks a new
// question, the same early and late. The turns are stored through
// the app's store and told to its memory, which is idle (flushed) before
// every request, as between a user's turns. Reported: early-ns/op,
// late-ns/op and late/early (wall time; the request is served on other
// threads, so there is no thread CPU to compare). The turn reads what its
// strategy needs (the window, the summary, the indexes), not the whole
// conversation, so the ratio stays bounded however long the conversation is.
//
//	go test ./internal/app -run '^$' -bench ChatAtTurn -benchtime 300x
func BenchmarkChatAtTurn(b *testing.B) {
	ctx := context.Background()
	const shorts, early, late = 200, 10, 10000
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = b.TempDir()
	a, err := New(ctx, cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	hs := httptest.NewServer(a.Server.Handler())
	defer hs.Close()
	fillTurns(b, a, "long", 0, late)
	asked := 0
	// chat asks the question numbered k in conv.
	chat := func(conv, strategy string, k int) time.Duration {
		j := 2 * (k % (len(chattest.Turns) / 2))
		body := map[string]any{"query": fmt.Sprintf("%s (%d)", chattest.Turns[j], late+k),
			"conversation_id": conv, "memory": strategy, "stream": false}
		var reply struct {
			Text   string `json:"text"`
			TurnID int64  `json:"turn_id"`
		}
		t0 := time.Now()
		if err := childserver.PostJSON(ctx, hs.Client(), hs.URL+"/chat/chat", body, &reply); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		if reply.Text == "" || reply.TurnID == 0 {
			b.Fatalf("%s: reply %+v, want a stored turn's text", conv, reply)
		}
		if err := a.Memory.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		return d
	}
	for _, strategy := range a.Memory.Strategies() {
		if strategy == memory.Buffer {
			continue
		}
		b.Run(strategy, func(b *testing.B) {
			// Fresh short conversations for each strategy, so that every
			// strategy's early turn is the 11th or 12th.
			short := func(c int) string { return fmt.Sprintf("%s-%d", strategy, c) }
			for c := range shorts {
				fillTurns(b, a, short(c), c, early)
			}
			for c := range shorts + 1 {
				conv := "long"
				if c < shorts {
					conv = short(c)
				}
				if _, err := a.Memory.Recall(ctx, conv, "warm", strategy, -1); err != nil {
					b.Fatal(err)
				}
			}
			var wall [2]time.Duration // early, late
			for i := 0; b.Loop(); i++ {
				// The same new question early and late.
				wall[0] += chat(short(i%shorts), strategy, asked)
				wall[1] += chat("long", strategy, asked)
				asked++
			}
			b.ReportMetric(float64(wall[0].Nanoseconds())/float64(b.N), "early-ns/op")
			b.ReportMetric(float64(wall[1].Nanoseconds())/float64(b.N), "late-ns/op")
			b.ReportMetric(float64(wall[1])/float64(wall[0]), "late/early")
		})
	}
}
