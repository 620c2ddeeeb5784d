package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/llm"
)

// streamModel streams words and then fails (a cut stream: no usage) or
// ends with the usage it is given.
type streamModel struct {
	words []string
	cut   error
	usage llm.Usage
	// onFirst runs before the first delta is sent.
	onFirst func()
}

func (m *streamModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return m.Stream(ctx, req, nil)
}

func (m *streamModel) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	for i, w := range m.words {
		if i == 0 && m.onFirst != nil {
			m.onFirst()
		}
		if fn != nil {
			if err := fn(w); err != nil {
				return llm.Response{}, err
			}
		}
	}
	if m.cut != nil {
		return llm.Response{}, m.cut
	}
	return llm.Response{Text: strings.Join(m.words, ""), Usage: m.usage}, nil
}

var meterReq = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("What does the first line of the Creative say? ", 20)}}}

// TestMeteredModelChargesCutStreams: a stream cut before its final usage
// chunk is charged its prompt and what it produced (it was charged 0), and
// the prompt is charged before the first token.
func TestMeteredModelChargesCutStreams(t *testing.T) {
	tok := llm.NewTokenizer("m")
	prompt := int64(tok.CountMessages(meterReq.Messages))
	words := strings.Fields(strings.Repeat("the dragon lies hidden in the deep ", 50))
	for i := range words {
		words[i] += " "
	}
	produced := int64(tok.Count(strings.Join(words, "")))
	for _, tc := range []struct {
		name string
		cut  error
		want int64
	}{
		{"upstream cut", errors.New("stream ended before [DONE]"), prompt + produced},
		{"client gone", context.Canceled, prompt + produced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var charged []int64
			ctx, meter := auth.WithChargingMeter(context.Background(), func(n int64) { charged = append(charged, n) })
			var atFirst []int64
			up := &streamModel{words: words, cut: tc.cut}
			up.onFirst = func() { atFirst = append([]int64(nil), charged...) }
			m := newMeteredModel("m", up)
			if _, err := m.Stream(ctx, meterReq, func(string) error { return nil }); !errors.Is(err, tc.cut) {
				t.Fatalf("err = %v", err)
			}
			if got := meter.Tokens(); got != tc.want {
				t.Errorf("metered %d tokens, want %d (prompt %d + produced %d)", got, tc.want, prompt, produced)
			}
			if len(atFirst) != 1 || atFirst[0] != prompt {
				t.Errorf("charged before the first token: %v, want [%d]", atFirst, prompt)
			}
			if s := meter.Settle(); s != 0 {
				t.Errorf("Settle = %d after everything was charged as spent", s)
			}
		})
	}
}

// TestMeterTakesTheLargerCount: usage reported by both the handler and the
// model call is counted once; the upstream's own usage wins over local
// counts.
func TestMeterTakesTheLargerCount(t *testing.T) {
	ctx, meter := auth.WithChargingMeter(context.Background(), nil)
	m := newMeteredModel("m", &streamModel{words: []string{"a", "b"}, usage: llm.Usage{PromptTokens: 900, CompletionTokens: 100, TotalTokens: 1000}})
	resp, err := m.Complete(ctx, meterReq)
	if err != nil {
		t.Fatal(err)
	}
	auth.AddTokens(ctx, resp.Usage.TotalTokens) // what turn.Runner does when it stores a reply
	if got := meter.Tokens(); got != 1000 {
		t.Errorf("Tokens = %d, want 1000", got)
	}
	if s := meter.Settle(); s != 1000 {
		t.Errorf("Settle = %d, want 1000 (nothing charged yet)", s)
	}
	if s := meter.Settle(); s != 0 {
		t.Errorf("second Settle = %d, want 0", s)
	}
	// Without a Meter the call passes through.
	if _, err := m.Stream(context.Background(), meterReq, nil); err != nil {
		t.Fatal(err)
	}
}

// TestCutStreamsAreLimited: six streams cut before their usage once went
// uncharged and unlimited; metered, they exhaust a small budget.
func TestCutStreamsAreLimited(t *testing.T) {
	lim := auth.NewLimiter()
	m := newMeteredModel("m", &streamModel{words: strings.Fields(strings.Repeat("word ", 300)), cut: errors.New("cut")})
	refused := 0
	for range 6 {
		if ok, _ := lim.Allow("k", 0, 1000); !ok {
			refused++
			continue
		}
		ctx, meter := auth.WithChargingMeter(context.Background(), func(n int64) { lim.Charge("k", 0, 1000, n) })
		m.Stream(ctx, meterReq, nil)
		lim.Charge("k", 0, 1000, meter.Settle())
	}
	if refused == 0 {
		t.Error("six cut streams of ~500 tokens each passed a 1000 tokens-per-minute limit")
	}
}
