package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/mix"
)

// ttftOptions are the test model's pace for the first-text run.
type ttftOptions struct {
	ttft, answer time.Duration // first token, whole answer
	requests     int           // per fusion mode
}

// pacedText is the test model's every answer: long enough (75 pieces) for
// its time to be spread over the answer as a model writes.
var pacedText = strings.Repeat("乾卦六爻皆阳，象征天，其德刚健，君子以自强不息。", 3)

// paced is a test model whose first token comes after ttft and whose
// whole answer, pacedText, takes answer: streamed, the pieces come evenly
// after the first; not streamed, the reply comes whole after answer.
func paced(ttft, answer time.Duration) []llmtest.Option {
	pieces := len(llmtest.Chunks(pacedText))
	rate := float64(pieces-1) / (answer - ttft).Seconds()
	return []llmtest.Option{llmtest.WithFirstToken(ttft), llmtest.WithTokenRate(rate), llmtest.WithoutRecording(),
		llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply { return llmtest.Reply{Text: pacedText} })}
}

// firstTextMode is what one fusion mode showed, medians over the requests.
type firstTextMode struct {
	// FirstTextMs is the first text of any answerer (or of the reply)
	// the client got; FirstFusedMs the first piece of the reply.
	FirstTextMs  float64 `json:"first_text_ms"`
	FirstFusedMs float64 `json:"first_fused_ms"`
	// RetrievalMs is the slowest answerer's time in context mode, where
	// the answerers only retrieve.
	RetrievalMs float64 `json:"retrieval_ms"`
	WallMs      float64 `json:"wall_ms"`
	// Target is the requirement checked and Met whether it holds.
	Target string `json:"target"`
	Met    bool   `json:"met"`
}

// firstTextReport is the JSON that latency -json prints.
type firstTextReport struct {
	// TTFTMs and AnswerMs are the test model's, measured by a streamed
	// call to it directly.
	TTFTMs   float64                  `json:"ttft_ms"`
	AnswerMs float64                  `json:"answer_ms"`
	Requests int                      `json:"requests"`
	Modes    map[string]firstTextMode `json:"fusion_modes"`
}

// runEvalFirstText measures how soon mix_chat shows text with a model of
// the given pace: the model's own time to first token, then per fusion
// mode the client's time to the first text and to the first fused text.
func runEvalFirstText(ctx context.Context, o ttftOptions, stdout io.Writer) error {
	if o.ttft <= 0 || o.answer <= o.ttft {
		return errors.New("eval latency: want 0 < -ttft < -answer-time")
	}
	tb, dir, cleanup, err := evalTemp("ttft")
	if err != nil {
		return err
	}
	defer cleanup()
	up := llmtest.NewServer(tb, paced(o.ttft, o.answer)...)

	rep := firstTextReport{Requests: o.requests, Modes: map[string]firstTextMode{}}
	var ttfts, answers []float64
	client := llm.NewClient(up.Config())
	for range 3 {
		start := time.Now()
		var first time.Duration
		if _, err := client.Stream(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "乾卦是什么意思？"}}}, func(d string) error {
			if first == 0 && d != "" {
				first = time.Since(start)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("test model: %w", err)
		}
		ttfts = append(ttfts, ms(first))
		answers = append(answers, ms(time.Since(start)))
	}
	slices.Sort(ttfts)
	slices.Sort(answers)
	rep.TTFTMs, rep.AnswerMs = pct(ttfts, 0.5), pct(answers, 0.5)

	// The real answerers over the demo's knowledge base and local search
	// engine; the memory extractive, so that only the answers wait for
	// the model.
	a, err := startDemoApp(ctx, filepath.Join(dir, "app"), up.URL(), "offline")
	if err != nil {
		return err
	}
	defer a.close()
	for _, mode := range []string{mix.FusionAnswers, mix.FusionContext} {
		var runs []evalRun
		for i := range o.requests {
			r, err := a.ask(ctx, fmt.Sprintf("ttft-%s-%d", mode, i), mode)
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
		m := firstTextMode{
			FirstTextMs:  median(runs, func(r evalRun) float64 { return ms(r.firstText) }),
			FirstFusedMs: median(runs, func(r evalRun) float64 { return ms(r.firstToken) }),
			WallMs:       median(runs, func(r evalRun) float64 { return ms(r.wall) }),
		}
		if mode == mix.FusionContext {
			m.RetrievalMs = median(runs, func(r evalRun) float64 { return ms(r.slowest) })
			m.Target = "first_fused_ms <= retrieval_ms + ttft_ms + 50"
			m.Met = m.FirstFusedMs <= m.RetrievalMs+rep.TTFTMs+50
		} else {
			m.Target = "first_text_ms <= ttft_ms + 50"
			m.Met = m.FirstTextMs <= rep.TTFTMs+50
		}
		rep.Modes[mode] = m
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
