package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/rag"
)

const evalLatencyUsage = `mixchat-eval latency [flags]

Measures /chat/mix_chat end to end (HTTP, SSE, memory recall, the SQLite turn
write) against a local OpenAI-compatible test server whose every call takes
the same latency L:
  - wall time of a fused reply vs the bound "slowest answerer + fusion call"
    (must stay <= 1.15), and vs the design's sequential run (~4L);
  - time to the first fused token;
  - the "context" fusion mode's latency and tokens next to the "answers" mode's;
  - mixchat's overhead per request with an instant LLM;
  - requests/s with -concurrency conversations at once and an instant LLM.
With -json it measures the time to the first text instead, and prints it as
JSON: a test model whose first token comes after -ttft (500ms) and whose
answers take -answer-time (6s), its ttft_ms measured directly, then per
fusion mode mixchat's first_text_ms (the first text of any answerer, or of
the reply) and first_fused_ms (the reply's first piece), with the real
answerers over the demo's knowledge base and local search engine.
The app is built by the constructor of "mixchat serve" (conversation memory
recalling history and rewriting follow-ups, metrics and traces around every
answerer and model call). The LLM-chat answerer is the real one; the knowledge-base and
search answerers are stand-ins making the one model call each of them makes
(their retrieval is local and not what is measured here).
`

// evalTB is the little of testing.TB that llmtest needs outside a test:
// Cleanup runs when the command ends. Other methods are never called.
type evalTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (t *evalTB) Helper() {}

func (t *evalTB) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

// evalTemp returns what a run needs to start test upstreams and apps: the
// TB they register their cleanups with and a temporary directory named
// after the run; cleanup runs the cleanups and removes the directory.
func evalTemp(name string) (*evalTB, string, func(), error) {
	tb := &evalTB{}
	dir, err := os.MkdirTemp("", "mixchat-eval-"+name+"-")
	if err != nil {
		return nil, "", nil, err
	}
	return tb, dir, func() { tb.close(); os.RemoveAll(dir) }, nil
}

func (t *evalTB) close() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

func runEvalLatency(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval latency", evalLatencyUsage, stderr)
	latency := fs.Duration("latency", 200*time.Millisecond, "latency L of every LLM call")
	requests := fs.Int("requests", 10, "sequential requests per latency measurement")
	concurrency := fs.Int("concurrency", 100, "concurrent conversations for the throughput run")
	duration := fs.Duration("duration", 5*time.Second, "length of the throughput run")
	overheadN := fs.Int("overhead-requests", 300, "requests of the instant-LLM overhead run")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the throughput run to this file")
	jsonOut := fs.Bool("json", false, "measure the time to the first text instead (a model with -ttft and -answer-time) and print it as JSON")
	ttft := fs.Duration("ttft", 500*time.Millisecond, "with -json: the test model's time to its first token")
	answerTime := fs.Duration("answer-time", 6*time.Second, "with -json: the test model's time to a whole answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *jsonOut {
		return runEvalFirstText(ctx, ttftOptions{ttft: *ttft, answer: *answerTime, requests: *requests}, stdout)
	}
	if *latency <= 0 || *requests < 1 || *concurrency < 1 || *duration <= 0 || *overheadN < 1 {
		return errors.New("eval latency: -latency, -duration, -requests, -concurrency and -overhead-requests must be positive")
	}
	tb, dir, cleanup, err := evalTemp("latency")
	if err != nil {
		return err
	}
	defer cleanup()

	slow := llmtest.NewServer(tb, llmtest.WithLatency(*latency), llmtest.WithHandler(evalReply))
	instant := llmtest.NewServer(tb, llmtest.WithHandler(evalReply))
	newApp := func(name string, up *llmtest.Server, serial bool) (*evalApp, error) {
		return startEvalApp(ctx, filepath.Join(dir, name), up.URL(), serial)
	}
	conc, err := newApp("concurrent", slow, false)
	if err != nil {
		return err
	}
	defer conc.close()
	seq, err := newApp("sequential", slow, true)
	if err != nil {
		return err
	}
	defer seq.close()
	fast, err := newApp("instant", instant, false)
	if err != nil {
		return err
	}
	defer fast.close()

	L := *latency
	fmt.Fprintf(stdout, "mix_chat latency: every LLM call takes L = %s; %d requests each; %d CPUs (GOMAXPROCS %d); loopback HTTP; the test upstream runs in this process\n\n",
		L, *requests, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	series := func(app *evalApp, fusion string) ([]evalRun, error) {
		var out []evalRun
		for i := 0; i < *requests; i++ {
			r, err := app.ask(ctx, fmt.Sprintf("lat-%s-%d", fusion, i), fusion)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	concRuns, err := series(conc, "answers")
	if err != nil {
		return err
	}
	seqRuns, err := series(seq, "answers")
	if err != nil {
		return err
	}
	ctxRuns, err := series(conc, "context")
	if err != nil {
		return err
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\twall p50\twall/L\tfirst token p50\tbound p50\twall/bound p50\twall/bound max\ttokens/req\tLLM calls/req\t")
	row := func(name string, runs []evalRun, bounded bool) {
		wall := median(runs, func(r evalRun) float64 { return r.wall.Seconds() * 1000 })
		ratios := make([]float64, len(runs))
		for i, r := range runs {
			ratios[i] = r.wall.Seconds() / r.bound.Seconds()
		}
		slices.Sort(ratios)
		bound := "-\t-\t-"
		if bounded {
			bound = fmt.Sprintf("%.1f ms\t%.3f\t%.3f", median(runs, func(r evalRun) float64 { return r.bound.Seconds() * 1000 }),
				ratios[len(ratios)/2], ratios[len(ratios)-1])
		}
		fmt.Fprintf(tw, "%s\t%.1f ms\t%.2f\t%.1f ms\t%s\t%d\t%d\t\n", name, wall, wall/(L.Seconds()*1000),
			median(runs, func(r evalRun) float64 { return r.firstToken.Seconds() * 1000 }),
			bound, runs[len(runs)/2].tokens, runs[len(runs)/2].calls)
	}
	row("answers, concurrent", concRuns, true)
	// The sequential answerers' times include waiting for their turn, so
	// the bound means nothing there.
	row("answers, sequential", seqRuns, false)
	row("context, concurrent", ctxRuns, true)
	tw.Flush()
	c := median(concRuns, func(r evalRun) float64 { return r.wall.Seconds() })
	s := median(seqRuns, func(r evalRun) float64 { return r.wall.Seconds() })
	fmt.Fprintf(stdout, "\nconcurrent / sequential wall time: %.2f (%.2fx faster)\n", c/s, s/c)
	fmt.Fprintln(stdout, "bound = slowest answerer (from its status event) + the fusion call (timings.fusion_ms); the requirement is wall/bound <= 1.15")

	// Overhead with an instant LLM: wall time minus the upstream calls on
	// the critical path.
	var over, walls []float64
	for i := 0; i < *overheadN; i++ {
		r, err := fast.ask(ctx, fmt.Sprintf("over-%d", i%20), "answers")
		if err != nil {
			return err
		}
		walls = append(walls, r.wall.Seconds()*1e6)
		over = append(over, (r.wall-r.bound).Seconds()*1e6)
	}
	slices.Sort(over)
	slices.Sort(walls)
	fmt.Fprintf(stdout, "\ninstant LLM, %d requests one at a time: wall p50 %.0f µs p99 %.0f µs; overhead beyond the 4 upstream calls p50 %.0f µs p99 %.0f µs\n",
		*overheadN, pct(walls, 0.5), pct(walls, 0.99), pct(over, 0.5), pct(over, 0.99))

	// Throughput: concurrency conversations at once, each asking in turn.
	var mu sync.Mutex
	var lat []float64
	var failures int
	var firstErr error
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := processCPU()
	deadline := time.Now().Add(*duration)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				r, err := fast.ask(ctx, fmt.Sprintf("tp-%d", w), "answers")
				mu.Lock()
				if err != nil {
					failures++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					lat = append(lat, r.wall.Seconds()*1000)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	if len(lat) == 0 {
		return fmt.Errorf("throughput run: no request succeeded: %v", firstErr)
	}
	slices.Sort(lat)
	fmt.Fprintf(stdout, "instant LLM, %d concurrent conversations for %s: %d requests, %.0f req/s, latency p50 %.1f ms p99 %.1f ms, %d failed\n",
		*concurrency, duration.Round(time.Second), len(lat), float64(len(lat))/elapsed.Seconds(), pct(lat, 0.5), pct(lat, 0.99), failures)
	// CPU time of this process (server, client and test upstream
	// together) per request: on a machine shared with other work the
	// requests/s above is a lower bound, and this says what a request
	// costs whatever the share of the CPUs this process got.
	if cpu > 0 {
		fmt.Fprintf(stdout, "CPU used by this process (server + client + test upstream): %.2f s of %.2f s wall on %d CPUs, %.2f ms per request\n",
			cpu.Seconds(), elapsed.Seconds(), runtime.NumCPU(), cpu.Seconds()*1000/float64(len(lat)))
	}
	if failures > 0 {
		fmt.Fprintf(stdout, "first failure: %v\n", firstErr)
	}
	return nil
}

// evalReply is the test upstream's answer to every call.
func evalReply(req openai.ChatCompletionRequest) llmtest.Reply {
	return llmtest.Reply{Text: "乾卦六爻皆阳，象征天，其德刚健，君子以自强不息。"}
}

func median(runs []evalRun, f func(evalRun) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return pct(v, 0.5)
}

// pct returns the p-quantile of sorted v (nearest rank).
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[int(p*float64(len(v)-1)+0.5)]
}

// evalApp is a mixchat server on loopback for the benchmark and the
// client requests to it go through.
type evalApp struct {
	*loopbackApp
	client *http.Client
}

// evalConfig is the configuration of a benchmark's app in dataDir: the
// harness's (harnessConfig), no retries, and memoryModel as memory.model
// ("" = upstream too, "offline" = no model calls).
func evalConfig(dataDir, upstream, memoryModel string) config.Config {
	cfg := harnessConfig(dataDir, upstream)
	cfg.LLM.Timeout, cfg.LLM.MaxRetries = time.Minute, 0
	cfg.Memory.Model = memoryModel
	return cfg
}

// startEvalLoopback starts the app of cfg on loopback (startLoopbackApp);
// client is the one requests to it go through.
func startEvalLoopback(ctx context.Context, cfg config.Config, opts app.Options, client *http.Client) (*evalApp, error) {
	l, err := startLoopbackApp(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	return &evalApp{loopbackApp: l, client: client}, nil
}

// evalAnswerer stands in for the knowledge-base or search answerer: one
// model call, and instant retrieval for the "context" mode.
type evalAnswerer struct {
	from   string
	models *llm.Registry
}

func (a evalAnswerer) Answer(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "[" + a.from + "] " + q.Retrieval()}}}
	resp, err := llm.Generate(ctx, a.models, req, fn)
	srcs, _ := a.Retrieve(ctx, q)
	return rag.Answer{From: a.from, Text: resp.Text, Sources: srcs, Response: resp}, err
}

func (a evalAnswerer) Retrieve(ctx context.Context, q rag.Query) ([]rag.Source, error) {
	return []rag.Source{
		{Title: a.from + " 1", Snippet: "乾：元，亨，利，贞。", Score: 0.9},
		{Title: a.from + " 2", Snippet: "天行健，君子以自强不息。", Score: 0.8},
	}, nil
}

// startEvalApp starts mixchat in dataDir through app.New, the constructor
// of mixchat serve, with the model endpoint upstream as the default model:
// the conversation memory (extractive: memory.model is the offline model)
// recalls history and rewrites follow-ups for the Mixer, and every
// answerer and model call is measured and traced (no exporter). The
// knowledge-base and search answerers are evalAnswerer stand-ins; serial
// makes the answerers take turns (the design's sequential reference).
func startEvalApp(ctx context.Context, dataDir, upstream string, serial bool) (*evalApp, error) {
	// The latency run makes its own stand-ins (no demo).
	cfg := evalConfig(dataDir, upstream, "offline")
	pool := func() *http.Client {
		return &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}}
	}
	return startEvalLoopback(ctx, cfg, app.Options{
		LLMHTTPClient: pool(),
		Answerers: func(models *llm.Registry, answerers map[string]rag.Answerer) {
			answerers[rag.KB] = evalAnswerer{from: rag.KB, models: models}
			answerers[rag.Search] = evalAnswerer{from: rag.Search, models: models}
			if serial {
				var turn sync.Mutex
				for name, a := range answerers {
					answerers[name] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
						turn.Lock()
						defer turn.Unlock()
						return a.Answer(ctx, q, fn)
					})
				}
			}
		},
	}, pool())
}

// evalRun is what one streamed mix_chat request took.
type evalRun struct {
	wall, firstToken time.Duration
	// firstText is the first text of any kind (an answer's piece or the
	// reply's); slowest the slowest answerer (or retriever) by its status.
	firstText, slowest time.Duration
	// bound is the slowest answerer plus the fusion call, as the server
	// reported them.
	bound  time.Duration
	tokens int
	calls  int
}

// ask sends one streamed mix_chat request and times it from the client.
func (a *evalApp) ask(ctx context.Context, conversation, fusion string) (evalRun, error) {
	body := map[string]any{"query": "乾卦是什么意思？", "conversation_id": conversation, "stream": true, "fusion": fusion}
	start := time.Now()
	var run evalRun
	var slowest float64
	done, err := streamMix(ctx, a.client, a.base, body, func(ev mixStreamEvent) error {
		switch ev.Type {
		case "answer_delta":
			if run.firstText == 0 {
				run.firstText = time.Since(start)
			}
		case "delta":
			if run.firstToken == 0 {
				run.firstToken = time.Since(start)
			}
			if run.firstText == 0 {
				run.firstText = run.firstToken
			}
		case "status":
			if ev.State == "done" {
				slowest = max(slowest, ev.Ms)
				run.calls++
			}
		}
		return nil
	})
	if err != nil {
		return run, err
	}
	run.wall = time.Since(start)
	if done.Usage != nil {
		run.tokens = done.Usage.TotalTokens
	}
	run.slowest = time.Duration(slowest * float64(time.Millisecond))
	run.bound = run.slowest + time.Duration(done.Timings["fusion_ms"]*float64(time.Millisecond))
	if fusion == "context" {
		run.calls = 1 // retrieval makes no model call
	} else {
		run.calls++ // the fusion call
	}
	return run, nil
}
