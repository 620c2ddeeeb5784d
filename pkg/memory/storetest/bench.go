package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// benchTurn is a turn of realistic size: a Chinese question, a reply of a
// few hundred characters, and the metadata mixchat records.
func benchTurn() (memory.Message, memory.Message) {
	q := memory.Message{Content: "乾卦初九“潜龙勿用”在今天的工作中应该如何理解？", Metadata: memory.Metadata{Source: "message"}}
	a := memory.Message{
		Content: strings.Repeat("潜龙勿用，阳在下也。君子当韬光养晦，积蓄力量，等待时机。", 10),
		Metadata: memory.Metadata{
			Source: "llm",
			Model:  "qwen2.5-7b-instruct",
			Usage:  &llm.Usage{PromptTokens: 850, CompletionTokens: 240, TotalTokens: 1090},
			Extra: map[string]any{
				"standalone": "乾卦初九潜龙勿用的现代含义",
				"timings_ms": map[string]any{"kb": 35.0, "search": 420.0, "chat": 1800.0},
			},
		},
	}
	return q, a
}

// Benchmark measures AppendTurn (to one conversation, and in parallel to
// one conversation per goroutine) and Turns(limit 10) on stores from open.
func Benchmark(b *testing.B, open Opener) {
	ctx := context.Background()
	b.Run("AppendTurn", func(b *testing.B) {
		s := open(b)
		q, a := benchTurn()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.AppendTurn(ctx, "bench", q, a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendTurnParallel", func(b *testing.B) {
		s := open(b)
		q, a := benchTurn()
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			conv := fmt.Sprintf("bench-%d", n.Add(1))
			for pb.Next() {
				if _, err := s.AppendTurn(ctx, conv, q, a); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("Turns10", func(b *testing.B) {
		s := open(b)
		q, a := benchTurn()
		// A long conversation among others, so that Turns must find the
		// last ten of many.
		for i := range 500 {
			if _, err := s.AppendTurn(ctx, "long", q, a); err != nil {
				b.Fatal(err)
			}
			if _, err := s.AppendTurn(ctx, fmt.Sprintf("other-%d", i%20), q, a); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			turns, err := s.Turns(ctx, "long", 10)
			if err != nil {
				b.Fatal(err)
			}
			if len(turns) != 10 {
				b.Fatalf("Turns returned %d turns, want 10", len(turns))
			}
		}
	})
}
