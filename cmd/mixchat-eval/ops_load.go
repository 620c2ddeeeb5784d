package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/childserver"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

const evalLoadUsage = `mixchat-eval load [flags]

Runs the whole mixchat app (the same wiring as serve: SQLite conversation
store, knowledge bases with the offline embedder, the local search engine)
in this process on loopback, with the chat model served by a local
OpenAI-compatible test server, and drives it with --conversations
concurrent conversations for --duration. Each conversation repeats a cycle
of 10 requests: 5 streamed mix_chat, 4 knowledge_base_chat and 1 document
upload (to one shared knowledge base). Reported: requests and errors per
kind, p50/p99 latency, throughput, how many conversations were in a request
of each kind on average (the loop is closed: no think time, so the kinds
share the conversations), the CPU the process used a request, where a
mix_chat turn's time went on the server (its done event's timings), and
the process's goroutines and heap before, at the peak and after (the run
passes when no request failed and goroutines and heap are back near the
baseline).
`

// runEvalLoad is `mixchat-eval load`.
func runEvalLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval load", evalLoadUsage, stderr)
	convs := fs.Int("conversations", 200, "concurrent conversations")
	duration := fs.Duration("duration", 60*time.Second, "length of the run")
	latency := fs.Duration("latency", 20*time.Millisecond, "latency of every test-LLM call")
	memprofile := fs.String("memprofile", "", "write a heap profile to this file once the run has settled")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the loaded run (not the warm-up) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *convs < 1 || *duration <= 0 || *latency < 0 {
		return errors.New("eval load: --conversations and --duration must be positive")
	}
	tb := &evalTB{}
	defer tb.close()
	up := llmtest.NewServer(tb, llmtest.WithLatency(*latency), llmtest.WithoutRecording(), llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: "乾卦六爻皆阳，象征天，其德刚健，君子以自强不息。"}
	}))
	dir, err := os.MkdirTemp("", "mixchat-eval-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Join(dir, "search"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "search", "qian.md"), []byte("# 乾卦\n\n乾：元，亨，利，贞。天行健，君子以自强不息。\n"), 0o644); err != nil {
		return err
	}
	cfg := harnessConfig(dir, up.URL())
	a, err := startLoopbackApp(ctx, cfg, app.Options{})
	if err != nil {
		return err
	}
	base := a.base
	tr := &http.Transport{MaxIdleConns: 2 * *convs, MaxIdleConnsPerHost: 2 * *convs}
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	closeAll := func() {
		tr.CloseIdleConnections()
		a.close()
	}

	// Warm up: the KB with one document, one request of each kind.
	if err := childserver.CreateKB(ctx, hc, base, "load"); err != nil {
		closeAll()
		return err
	}
	if err := childserver.UploadKB(ctx, hc, base, "load", "qian.md", loadDoc(0, 0)); err != nil {
		closeAll()
		return err
	}
	l := &loadRun{base: base, hc: hc}
	for k := range loadKinds {
		if _, err := l.do(ctx, k, 0, 0); err != nil {
			closeAll()
			return fmt.Errorf("warm-up %s: %w", loadKinds[k], err)
		}
	}
	// Idle connections (the clients' here, the app's to the model) hold
	// goroutines: none is left before the counts are taken, and settle
	// closes those that work still finishing (memory's) leaves idle.
	closeIdle := func() {
		tr.CloseIdleConnections()
		a.CloseIdleConnections()
	}
	baseG, baseHeap := settle(0, 0, 0, closeIdle)

	var peakG atomic.Int64
	stopSample := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSample:
				return
			case <-t.C:
				if g := int64(runtime.NumGoroutine()); g > peakG.Load() {
					peakG.Store(g)
				}
			}
		}
	}()
	var peakHeap uint64
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			closeAll()
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			closeAll()
			return fmt.Errorf("cpuprofile: %w", err)
		}
	}
	cpu0 := processCPU()
	start := time.Now()
	deadline := start.Add(*duration)
	var wg sync.WaitGroup
	for w := 0; w < *convs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				k := loadCycle[i%len(loadCycle)]
				t0 := time.Now()
				_, err := l.do(ctx, k, w, i)
				l.record(k, time.Since(t0), err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	l.cpu = processCPU() - cpu0
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	close(stopSample)
	sampler.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	peakHeap = ms.HeapAlloc
	afterG, afterHeap := settle(baseG, baseHeap, 15*time.Second, closeIdle)
	var leftG []byte // the goroutines a failed settle leaves, grouped by stack
	if afterG > baseG+10 {
		var b bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&b, 1)
		leftG = b.Bytes()
	}
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile); err != nil {
			closeAll()
			return err
		}
	}

	l.print(stdout, *convs, elapsed, *latency)
	if info, err := a.KB.Info(ctx, "load"); err == nil {
		fmt.Fprintf(stdout, "\nknowledge base after the run: %d files, %d chunks (its BM25 and HNSW indexes stay in memory)\n", info.Files, info.Chunks)
	}
	fmt.Fprintf(stdout, "goroutines: baseline %d, peak %d, after %d\n", baseG, peakG.Load(), afterG)
	fmt.Fprintf(stdout, "heap in use: baseline %.1f MiB, at the end of the run %.1f MiB, after %.1f MiB\n",
		mib(baseHeap), mib(peakHeap), mib(afterHeap))
	st := a.Memory.Stats()
	fmt.Fprintf(stdout, "  held while serving: the memory of %d cached conversations (memory.cache_conversations: %d of each kind) and the knowledge base's indexes\n",
		st.Cached, cfg.Memory.CacheConversations)
	closeAll()
	// With the app closed its caches are gone: what is left must be the
	// baseline's, or something leaked.
	closedG, closedHeap := settle(baseG, baseHeap, 15*time.Second, tr.CloseIdleConnections)
	fmt.Fprintf(stdout, "after closing the app: goroutines %d, heap %.1f MiB\n", closedG, mib(closedHeap))
	var problems []string
	if l.errors.Load() > 0 {
		problems = append(problems, fmt.Sprintf("%d requests failed", l.errors.Load()))
	}
	// The process also runs the test upstream and the clients; a handful of
	// goroutines (timers, the idle-connection reaper) may come and go.
	if afterG > baseG+10 {
		problems = append(problems, fmt.Sprintf("goroutines did not return to the baseline (%d → %d); their stacks are on stderr", baseG, afterG))
		if leftG != nil {
			stderr.Write(leftG)
		}
	}
	if closedHeap > baseHeap+16<<20 {
		problems = append(problems, fmt.Sprintf("heap did not return to the baseline once the app was closed (%.1f → %.1f MiB)", mib(baseHeap), mib(closedHeap)))
	}
	if len(problems) > 0 {
		return errors.New("eval load: " + strings.Join(problems, "; "))
	}
	return nil
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// writeHeapProfile writes the live heap to path (go tool pprof reads it).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("memprofile: %w", err)
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("memprofile: %w", err)
	}
	return f.Close()
}

// settle waits up to d for the goroutines to drop to wantG (0: no wait),
// closing idle connections with closeIdle and collecting garbage, and
// returns the fewest goroutines it saw and the heap in use. The fewest,
// not the last: the app's background work (a summary's model call) comes
// and goes while its caches keep the heap above the baseline, so the wait
// can end in the middle of it; a leaked goroutine never goes.
func settle(wantG int, wantHeap uint64, d time.Duration, closeIdle func()) (int, uint64) {
	end := time.Now().Add(d)
	least := -1
	for {
		closeIdle()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		g := runtime.NumGoroutine()
		if least < 0 || g < least {
			least = g
		}
		if d == 0 || (g <= wantG && ms.HeapAlloc <= wantHeap+8<<20) || time.Now().After(end) {
			return least, ms.HeapAlloc
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const (
	kindMix = iota
	kindKB
	kindUpload
)

var loadKinds = []string{"mix_chat (streamed)", "knowledge_base_chat", "upload_docs"}

// loadCycle is each conversation's sequence of requests.
var loadCycle = []int{kindMix, kindKB, kindMix, kindKB, kindMix, kindUpload, kindKB, kindMix, kindKB, kindMix}

// loadDoc is a small document, different for every (worker, i).
func loadDoc(w, i int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# 文档%d-%d\n\n", w, i)
	for j := range 8 {
		fmt.Fprintf(&b, "## 第%d节\n\n乾卦第%d爻，会话%d，第%d次：天行健，君子以自强不息。潜龙勿用，见龙在田。\n\n", j+1, j, w, i)
	}
	return []byte(b.String())
}

// loadRun collects the results of `eval load`.
type loadRun struct {
	base   string
	hc     *http.Client
	errors atomic.Int64
	// cpu is the CPU time the process (app, test model and clients)
	// used during the run; 0 where it is not measured.
	cpu time.Duration

	mu       sync.Mutex
	lat      [3][]float64 // ms, per kind
	errs     [3]int
	firstErr [3]error
	// steps are the mix_chat done events' timings (ms), by key: where a
	// turn's time goes on the server.
	steps map[string][]float64
}

// mixSteps are the done event's timings reported, in the turn's order,
// then two the client measures: from sending the request to the first
// event, and from the reply's last piece to the end of the stream (the
// turn's storing and the done event).
var mixSteps = []string{"recall_ms", "condense_ms", "answers_ms", "fusion_ms", "first_text_ms", "total_ms", "store_ms", clientFirstEvent, clientAfterReply}

const (
	clientFirstEvent = "client: first event_ms"
	clientAfterReply = "client: reply to done_ms"
)

func (l *loadRun) recordSteps(t map[string]float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.steps == nil {
		l.steps = map[string][]float64{}
	}
	for _, k := range mixSteps {
		if v, ok := t[k]; ok {
			l.steps[k] = append(l.steps[k], v)
		}
	}
}

func (l *loadRun) record(k int, d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errors.Add(1)
		l.errs[k]++
		if l.firstErr[k] == nil {
			l.firstErr[k] = err
		}
		return
	}
	l.lat[k] = append(l.lat[k], d.Seconds()*1000)
}

// do sends one request of kind k for worker w.
func (l *loadRun) do(ctx context.Context, k, w, i int) (string, error) {
	conv := fmt.Sprintf("load-%d", w)
	switch k {
	case kindMix:
		return l.mix(ctx, conv)
	case kindKB:
		var r struct {
			Answer string            `json:"answer"`
			Docs   []json.RawMessage `json:"docs"`
		}
		err := childserver.PostJSON(ctx, l.hc, l.base+"/chat/knowledge_base_chat", map[string]any{
			"query": "乾卦是什么意思？", "knowledge_base_name": "load", "conversation_id": conv + "-kb", "stream": false,
		}, &r)
		if err == nil && r.Answer == "" {
			err = errors.New("knowledge_base_chat: empty answer")
		}
		return r.Answer, err
	default:
		return "", childserver.UploadKB(ctx, l.hc, l.base, "load", fmt.Sprintf("w%d.md", w), loadDoc(w, i))
	}
}

// mix sends a streamed mix_chat request and reads it to its done event.
func (l *loadRun) mix(ctx context.Context, conv string) (string, error) {
	var text strings.Builder
	body := map[string]any{"query": "乾卦是什么意思？", "conversation_id": conv, "stream": true, "knowledge_base_name": "load"}
	start := time.Now()
	var first, last time.Time // the first event read, the last piece of the reply
	done, err := streamMix(ctx, l.hc, l.base, body, func(ev mixStreamEvent) error {
		if first.IsZero() {
			first = time.Now()
		}
		switch {
		case ev.Type == "delta":
			text.WriteString(ev.Text)
			last = time.Now()
		case ev.Type == "status" && ev.State == "failed":
			return fmt.Errorf("mix_chat: answerer %s failed: %s", ev.Answerer, ev.Error)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	t := maps.Clone(done.Timings)
	if t == nil {
		t = map[string]float64{}
	}
	if !first.IsZero() {
		t[clientFirstEvent] = float64(first.Sub(start).Microseconds()) / 1000
	}
	if !last.IsZero() {
		t[clientAfterReply] = float64(time.Since(last).Microseconds()) / 1000
	}
	l.recordSteps(t)
	return text.String(), nil
}

func (l *loadRun) print(w io.Writer, convs int, elapsed, latency time.Duration) {
	fmt.Fprintf(w, "load: %d concurrent conversations for %s; test LLM latency %s per call; %d CPUs; loopback HTTP, server in this process\n\n",
		convs, elapsed.Round(time.Millisecond), latency, runtime.NumCPU())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "request\tok\terrors\treq/s\tp50 ms\tp99 ms\tmax ms\tin flight\t")
	total, totalErr := 0, 0
	for k, name := range loadKinds {
		v := slices.Clone(l.lat[k])
		slices.Sort(v)
		mx, sum := 0.0, 0.0
		if len(v) > 0 {
			mx = v[len(v)-1]
		}
		for _, x := range v {
			sum += x
		}
		// In flight: how many conversations were in a request of this
		// kind on average (Little's law: rate × mean latency). The loop
		// is closed, so the kinds share the conversations: time one kind
		// takes is time the others do not get.
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", name, len(v), l.errs[k], float64(len(v))/elapsed.Seconds(), pct(v, 0.5), pct(v, 0.99), mx,
			sum/1000/elapsed.Seconds())
		total += len(v)
		totalErr += l.errs[k]
	}
	var all []float64
	for k := range loadKinds {
		all = append(all, l.lat[k]...)
	}
	slices.Sort(all)
	fmt.Fprintf(tw, "all\t%d\t%d\t%.1f\t%.1f\t%.1f\t\t\t\n", total, totalErr, float64(total)/elapsed.Seconds(), pct(all, 0.5), pct(all, 0.99))
	tw.Flush()
	if l.cpu > 0 && total > 0 {
		fmt.Fprintf(w, "CPU during the run (app, test model and clients): %.1f s, %.2f ms a request, %.0f%% of %d CPUs\n",
			l.cpu.Seconds(), l.cpu.Seconds()*1000/float64(total), 100*l.cpu.Seconds()/elapsed.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU())
	}
	if len(l.steps) > 0 {
		fmt.Fprintln(w, "\nmix_chat on the server (the done event's timings) and at the client, ms:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "step\tp50\tp99\t")
		for _, k := range mixSteps {
			v := slices.Clone(l.steps[k])
			slices.Sort(v)
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t\n", strings.TrimSuffix(k, "_ms"), pct(v, 0.5), pct(v, 0.99))
		}
		tw.Flush()
	}
	for k, err := range l.firstErr {
		if err != nil {
			fmt.Fprintf(w, "first %s error: %v\n", loadKinds[k], err)
		}
	}
}
