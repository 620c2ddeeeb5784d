package mix_test

import (
	"context"
	"flag"
	"net/http"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
)

var benchLatency = flag.Duration("latency", 100*time.Millisecond, "latency of every LLM call in BenchmarkMixLatency")

// benchMixer is a Mixer whose every model call goes to a local test server
// answering after latency: the real LLM-chat answerer, and for kb and
// search stand-ins that make the one model call those answerers make
// (their retrieval is local and not what this measures). With serial set,
// the answerers take turns, as in the design's sequential reference.
func benchMixer(b *testing.B, latency time.Duration, serial bool) *mix.Mixer {
	b.Helper()
	up := llmtest.NewServer(b, llmtest.WithLatency(latency), llmtest.WithHandler(func(req openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: "乾卦六爻皆阳，象征天，其德刚健。"}
	}))
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	models := llm.NewRegistry("test")
	models.Add("test", llm.NewClient(llm.ClientConfig{Name: "test", BaseURL: up.URL(), Model: "test", Timeout: time.Minute, HTTPClient: hc}))
	var turn sync.Mutex
	wrap := func(a rag.Answerer) rag.Answerer {
		if !serial {
			return a
		}
		return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
			turn.Lock()
			defer turn.Unlock()
			return a.Answer(ctx, q, fn)
		})
	}
	oneCall := func(from string) rag.Answerer {
		return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
			resp, err := models.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: q.Retrieval()}}})
			return rag.Answer{From: from, Text: resp.Text, Response: resp, Sources: []rag.Source{{Title: from, Snippet: resp.Text}}}, err
		})
	}
	m, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: models, Answerers: map[string]rag.Answerer{
		rag.LLM: wrap(chat.New(models, chat.Options{})), rag.KB: wrap(oneCall(rag.KB)), rag.Search: wrap(oneCall(rag.Search)),
	}})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkMixLatency runs mix_chat with every LLM call taking the same
// latency L (-latency, default 100ms) and reports the wall time per request,
// the time to the first fused token, and the ratio of the wall time to the
// bound "slowest answerer + fusion call" (which must stay ≤ 1.15). The
// sequential case runs the answerers one after the other, as the design's
// reference does; compare their ms/req.
//
//	go test ./pkg/mix -run '^$' -bench BenchmarkMixLatency -benchtime 20x
func BenchmarkMixLatency(b *testing.B) {
	for _, tc := range []struct {
		name   string
		serial bool
	}{{"concurrent", false}, {"sequential", true}} {
		b.Run(tc.name, func(b *testing.B) {
			m := benchMixer(b, *benchLatency, tc.serial)
			var wall, first, bound time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := m.Mix(context.Background(), mix.Request{Query: rag.Query{Text: "乾卦是什么意思？"}}, func(mix.Event) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				wall += res.Timings.Total
				first += res.Timings.FirstToken
				var slowest time.Duration
				for _, o := range res.Answers {
					slowest = max(slowest, o.Elapsed)
				}
				bound += slowest + res.Timings.Fusion
			}
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
			b.ReportMetric(ms(wall), "ms/req")
			b.ReportMetric(ms(first), "first-token-ms")
			if !tc.serial { // serial answerers' times include waiting for their turn
				b.ReportMetric(float64(wall)/float64(bound), "wall/bound")
			}
			b.ReportMetric(float64(wall)/n/float64(*benchLatency), "wall/L")
		})
	}
}

// BenchmarkMixOverhead runs mix_chat against an LLM that answers at once:
// ns/op is the Mixer's cost per request with four local HTTP calls; the
// overhead metric is what it adds to the slowest answerer plus the fusion.
//
//	go test ./pkg/mix -run '^$' -bench BenchmarkMixOverhead -benchtime 2000x
func BenchmarkMixOverhead(b *testing.B) {
	m := benchMixer(b, 0, false)
	var over time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := m.Mix(context.Background(), mix.Request{Query: rag.Query{Text: "乾卦是什么意思？"}}, func(mix.Event) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		var slowest time.Duration
		for _, o := range res.Answers {
			slowest = max(slowest, o.Elapsed)
		}
		over += res.Timings.Total - slowest - res.Timings.Fusion
	}
	b.ReportMetric(float64(over.Microseconds())/float64(b.N), "overhead-µs")
}
