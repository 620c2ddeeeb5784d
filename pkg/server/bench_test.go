package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// latencies collects request durations from parallel workers.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, elapsed time.Duration) {
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return
	}
	q := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(l.d))/elapsed.Seconds(), "req/s")
}

// BenchmarkChat measures /chat/chat end to end with an upstream that
// answers instantly: "upstream" calls the test LLM server directly, the
// other cases go through mixchat (HTTP, validation, memory recall, the
// SQLite turn write). Their difference is mixchat's overhead.
//
//	go test ./pkg/server -run '^$' -bench BenchmarkChat -benchtime 2000x
func BenchmarkChat(b *testing.B) {
	// A fixed reply: the default echo would repeat the prompt, which holds
	// the history, so every stored answer would double the next prompt.
	up := llmtest.NewServer(b, llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: "乾卦象征天，刚健不息。"}
	}))
	client := llm.NewClient(llm.ClientConfig{Name: "test", BaseURL: up.URL(), Model: "test", Timeout: 10 * time.Second})
	run := func(b *testing.B, do func(i int) error) {
		var lat latencies
		var n sync.Mutex
		i := 0
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n.Lock()
				i++
				id := i
				n.Unlock()
				t0 := time.Now()
				if err := do(id); err != nil {
					b.Error(err)
					return
				}
				lat.add(time.Since(t0))
			}
		})
		lat.report(b, time.Since(start))
	}
	b.Run("upstream", func(b *testing.B) {
		run(b, func(int) error {
			_, err := client.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "乾卦是什么？"}}})
			return err
		})
	})
	ts := newTestServer(b, up)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("mixchat/stream=%v", stream), func(b *testing.B) {
			run(b, func(i int) error {
				body := fmt.Sprintf(`{"query":"乾卦是什么？","conversation_id":"bench-%d","model_name":"test","stream":%v}`, i%64, stream)
				resp, err := hc.Post(ts.http.URL+"/chat/chat", "application/json", strings.NewReader(body))
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					return err
				}
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			})
		})
	}
}
