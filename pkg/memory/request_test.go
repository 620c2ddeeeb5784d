package memory_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mixchat/mixchat/pkg/memory"
)

func TestResolveRequest(t *testing.T) {
	for _, tt := range []struct {
		strategy           string
		historyLen, window int
		want               memory.Choice
		err                error
	}{
		{"", -1, 0, memory.Choice{}, nil},
		{"", 3, 0, memory.Choice{Strategy: memory.Window, WindowK: 3}, nil},
		{"", -1, 4, memory.Choice{Strategy: memory.Window, WindowK: 4}, nil},
		{memory.Combined, -1, 0, memory.Choice{Strategy: memory.Combined}, nil},
		{memory.Window, -1, 0, memory.Choice{Strategy: memory.Window}, nil},
		{memory.Window, 5, 0, memory.Choice{Strategy: memory.Window, WindowK: 5}, nil},
		{memory.Window, -1, 6, memory.Choice{Strategy: memory.Window, WindowK: 6}, nil},
		{memory.Window, 6, 6, memory.Choice{Strategy: memory.Window, WindowK: 6}, nil},
		// Contradictions: history_len used to override memory silently.
		{memory.Combined, 3, 0, memory.Choice{}, memory.ErrContradiction},
		{memory.SummaryBuffer, 0, 0, memory.Choice{}, memory.ErrContradiction},
		{memory.Retrieval, -1, 2, memory.Choice{}, memory.ErrContradiction},
		{memory.Window, 3, 4, memory.Choice{}, memory.ErrContradiction},
		{"", 3, 4, memory.Choice{}, memory.ErrContradiction},
		// Out of range or unknown.
		{"nonsense", -1, 0, memory.Choice{}, memory.ErrBadMemorySetting},
		{"", 5000, 0, memory.Choice{}, memory.ErrBadMemorySetting},
		{"", -1, -2, memory.Choice{}, memory.ErrBadMemorySetting},
	} {
		got, err := memory.ResolveRequest(tt.strategy, tt.historyLen, tt.window)
		if !errors.Is(err, tt.err) || err == nil && got != tt.want {
			t.Errorf("ResolveRequest(%q, %d, %d) = %+v, %v; want %+v, %v", tt.strategy, tt.historyLen, tt.window, got, err, tt.want, tt.err)
		}
	}
}

// TestRecallChoice: window_k is honoured per request, and history_len 0
// means no history.
func TestRecallChoice(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, func(c *memory.Config) { c.WindowK = 1 }, memory.Options{})
	turns := add(t, store, m, "c", englishChat...)
	all := memory.History(turns)
	for _, tt := range []struct {
		historyLen, windowK int
		want                int // messages
	}{{-1, 3, 6}, {2, 0, 4}, {-1, 0, 2}, {0, 0, 0}} {
		c, err := memory.ResolveRequest(memory.Window, tt.historyLen, tt.windowK)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := m.RecallChoice(ctx, "c", "q", c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(msgs, all[len(all)-tt.want:]) {
			t.Errorf("history_len %d, window_k %d: %d messages, want the last %d", tt.historyLen, tt.windowK, len(msgs), tt.want)
		}
	}
}
