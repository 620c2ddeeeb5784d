package memory_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// TestSummaryBufferSemantics: summary_buffer keeps the newest turns within
// max_token_limit verbatim and summarises exactly the turns that fall out
// — whatever the background compression did before — never sending a
// turn twice (summarised and verbatim) and never dropping one.
func TestSummaryBufferSemantics(t *testing.T) {
	const limit = 150
	for _, tt := range []struct {
		name   string
		adjust func(*memory.Config)
	}{
		// No summary yet: the compression trigger is far above the limit.
		{"no summary yet", func(c *memory.Config) { c.Compression.TriggerTokens = 5000 }},
		// A summary ahead of the buffer: it covers turns the limit keeps.
		{"summary covers buffer turns", func(c *memory.Config) { c.Compression.TriggerTokens = 50; c.Compression.GroupSize = 5 }},
		// summary_buffer configured: the background folds what falls out.
		{"configured", func(c *memory.Config) { c.Strategy = memory.SummaryBuffer }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := openSQLite(t, ":memory:")
			m := newManager(t, store, func(c *memory.Config) {
				c.MaxTokenLimit = limit
				tt.adjust(c)
			}, memory.Options{})
			turns := add(t, store, m, "c", englishChat...)
			flush(t, m)
			msgs, err := m.Recall(ctx, "c", "anything", memory.SummaryBuffer, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 || msgs[0].Role != llm.RoleSystem {
				t.Fatalf("summary_buffer = %q, want the summary first", joined(msgs))
			}
			verbatim := msgs[1:]
			v, err := m.Inspect(ctx, "c", memory.SummaryBuffer)
			if err != nil {
				t.Fatal(err)
			}
			through := v.Digest.Through
			// The verbatim turns are exactly those after the summary.
			var after []llm.Message
			for _, tr := range turns {
				if tr.ID > through {
					after = append(after, llm.Message{Role: llm.RoleUser, Content: tr.Question.Content},
						llm.Message{Role: llm.RoleAssistant, Content: tr.Answer.Content})
				}
			}
			if !slices.Equal(verbatim, after) {
				t.Errorf("verbatim turns %q, want exactly the %d turns after the summary (through turn %d)", joined(verbatim), len(after)/2, through)
			}
			// Every turn that falls out of the limit is summarised.
			all := memory.History(turns)
			fit := 0
			for i := len(all); i >= 2 && tokens(all[i-2:]) <= limit; i -= 2 {
				fit = len(all) - i + 2
			}
			if outOfBuffer := turns[len(turns)-fit/2-1].ID; through < outOfBuffer {
				t.Errorf("summary covers turns through %d, but turn %d falls out of the buffer: dropped", through, outOfBuffer)
			}
			if tt.name != "summary covers buffer turns" && tokens(verbatim) > limit {
				t.Errorf("verbatim turns take %d tokens, over the limit %d", tokens(verbatim), limit)
			}
			if tt.name != "summary covers buffer turns" && len(verbatim) != fit {
				t.Errorf("%d verbatim messages, want the %d newest that fit the limit", len(verbatim), fit)
			}
		})
	}
}
