package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
)

// newTestObserver returns an Observer whose spans go to an in-memory
// exporter.
func newTestObserver(t *testing.T, prices Prices, log *slog.Logger) (*Observer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return New(Options{Tracing: tp, Prices: prices, Log: log}), exp
}

func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q among %q", name, names)
	return tracetest.SpanStub{}
}

func attr(s tracetest.SpanStub, key string) any {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.AsInterface()
		}
	}
	return nil
}

func TestSaneRequestID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		sane bool
	}{
		{"3f1c2b8e-1d2a-4c5b-9e8f-0a1b2c3d4e5f", true},
		{"req_01:abc/def+g=h@i.j", true},
		{"", false},
		{"has space", false},
		{"line\nforged", false},
		{"中文", false},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
	} {
		if got := SaneRequestID(tc.id); got != tc.sane {
			t.Errorf("SaneRequestID(%q) = %v, want %v", tc.id, got, tc.sane)
		}
	}
	if a, b := NewRequestID(), NewRequestID(); a == b || !SaneRequestID(a) {
		t.Errorf("NewRequestID gave %q and %q", a, b)
	}
}

func TestLogHandlerAddsRequestAndTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := Logger(slog.New(slog.NewJSONHandler(&buf, nil)))
	if Logger(log) != log {
		t.Error("Logger wrapped an already wrapped logger again")
	}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(WithRequest(context.Background(), "req-1", time.Now()), "op")
	log.With("component", "test").InfoContext(ctx, "hello")
	span.End()
	log.Info("no context")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %s", len(lines), buf.String())
	}
	var first, second map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	if first["request_id"] != "req-1" || first["component"] != "test" {
		t.Errorf("line with context: %v", first)
	}
	if first["trace_id"] != span.SpanContext().TraceID().String() || first["span_id"] != span.SpanContext().SpanID().String() {
		t.Errorf("trace ids: %v, want trace %s", first, span.SpanContext().TraceID())
	}
	if _, ok := second["request_id"]; ok {
		t.Errorf("line without context has a request id: %v", second)
	}
}

func TestPricesUsage(t *testing.T) {
	prices := Prices{
		"deepseek-chat": {InputPerMillion: 2, OutputPerMillion: 8, Currency: "CNY"},
		"gpt":           {InputPerMillion: 0.15, OutputPerMillion: 0.6, Currency: "USD"},
	}
	call := func(model string, in, out int) llm.Response {
		return llm.Response{Model: model, Usage: llm.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}}
	}
	offline := llm.Response{Model: "offline", Extractive: true, Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 10, TotalTokens: 60, Estimated: true}}
	for _, tc := range []struct {
		name     string
		calls    []llm.Response
		tokens   [3]int
		price    []float64 // prompt, completion, total; nil = not priced
		currency string
	}{
		{"one priced call", []llm.Response{call("deepseek-chat", 1000, 500)}, [3]int{1000, 500, 1500}, []float64{0.002, 0.004, 0.006}, "CNY"},
		{"several calls of priced models", []llm.Response{call("deepseek-chat", 1_000_000, 0), call("deepseek-chat", 0, 250_000)}, [3]int{1_000_000, 250_000, 1_250_000}, []float64{2, 2, 4}, "CNY"},
		{"an unpriced model", []llm.Response{call("deepseek-chat", 10, 10), call("other", 10, 10)}, [3]int{20, 20, 40}, nil, ""},
		{"currencies differ", []llm.Response{call("deepseek-chat", 10, 10), call("gpt", 10, 10)}, [3]int{20, 20, 40}, nil, ""},
		{"the offline model is free", []llm.Response{call("gpt", 100, 100), offline}, [3]int{150, 110, 260}, []float64{0.000015, 0.00006, 0.000075}, "USD"},
		{"only the offline model", []llm.Response{offline}, [3]int{50, 10, 60}, nil, ""},
		{"a failed call with no tokens", []llm.Response{{Model: "other"}, call("gpt", 10, 0)}, [3]int{10, 0, 10}, []float64{0.0000015, 0, 0.0000015}, "USD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := prices.Usage(tc.calls, 1234567*time.Microsecond)
			if got := [3]int{u.PromptTokens, u.CompletionTokens, u.TotalTokens}; got != tc.tokens {
				t.Errorf("tokens %v, want %v", got, tc.tokens)
			}
			if u.Latency != 1.234567 {
				t.Errorf("latency %v, want 1.234567", u.Latency)
			}
			if tc.price == nil {
				if u.TotalPrice != nil || u.Currency != "" {
					t.Errorf("priced %v %s, want no price", *u.TotalPrice, u.Currency)
				}
				return
			}
			if u.PromptPrice == nil || u.CompletionPrice == nil || u.TotalPrice == nil {
				t.Fatalf("no price: %+v", u)
			}
			if got := []float64{*u.PromptPrice, *u.CompletionPrice, *u.TotalPrice}; got[0] != tc.price[0] || got[1] != tc.price[1] || got[2] != tc.price[2] || u.Currency != tc.currency {
				t.Errorf("price %v %s, want %v %s", got, u.Currency, tc.price, tc.currency)
			}
		})
	}
	// The JSON shape is Dify's.
	b, _ := json.Marshal(prices.Usage([]llm.Response{call("gpt", 1000, 1000)}, time.Second))
	want := `{"prompt_tokens":1000,"completion_tokens":1000,"total_tokens":2000,"latency":1,"prompt_price":0.00015,"completion_price":0.0006,"total_price":0.00075,"currency":"USD"}`
	if string(b) != want {
		t.Errorf("JSON\n got %s\nwant %s", b, want)
	}
}

func TestPricesValidate(t *testing.T) {
	if err := (Prices{"m": {InputPerMillion: 1, OutputPerMillion: 2, Currency: "USD"}}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := Prices{"m": {InputPerMillion: -1, Currency: "usd"}}.Validate()
	for _, want := range []string{"llm.prices.m.input_per_million: -1", `llm.prices.m.currency: "usd"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if got := (Prices{"a": {}, "b": {}}).Unknown([]string{"b"}); len(got) != 1 || got[0] != "a" {
		t.Errorf("Unknown = %v", got)
	}
}

// fakeModel answers with a fixed reply, streamed in two pieces.
type fakeModel struct {
	err   error
	delay time.Duration
}

func (f fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return f.Stream(ctx, req, nil)
}

func (f fakeModel) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
	}
	if f.err != nil {
		return llm.Response{}, f.err
	}
	for _, d := range []string{"乾，", "元亨利贞。"} {
		if fn != nil {
			if err := fn(d); err != nil {
				return llm.Response{}, err
			}
		}
	}
	return llm.Response{Text: "乾，元亨利贞。", Model: "upstream-name", FinishReason: "stop",
		Usage: llm.Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17}}, nil
}

func TestModelCountsTokensAndTraces(t *testing.T) {
	o, exp := newTestObserver(t, nil, nil)
	r := llm.NewRegistry("m")
	r.Add("m", fakeModel{})
	r.Add("offline", llm.NewOffline(llm.OfflineOptions{}))
	r.Add("bad", fakeModel{err: errors.New("upstream said no")})
	o.InstrumentRegistry(r)
	o.InstrumentRegistry(r) // twice is once
	m, _, _ := r.Get("m")
	if w, ok := m.(*Model); !ok || w.Unwrap() == nil {
		t.Fatalf("registry model is %T", m)
	} else if _, twice := w.Unwrap().(*Model); twice {
		t.Fatal("wrapped twice")
	}
	if info, _ := r.Info("offline"); !info.Extractive {
		t.Error("the wrapped offline model is no longer extractive")
	}

	ctx := context.Background()
	if _, err := r.Complete(ctx, llm.Request{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	if _, err := r.Stream(ctx, llm.Request{Model: "m"}, func(d string) error { got.WriteString(d); return nil }); err != nil {
		t.Fatal(err)
	}
	if got.String() != "乾，元亨利贞。" {
		t.Errorf("streamed %q", got.String())
	}
	if _, err := r.Complete(ctx, llm.Request{Model: "bad"}); err == nil {
		t.Fatal("no error from the failing model")
	}

	met := o.Metrics()
	wantValue(t, "input tokens", met.tokens.WithLabelValues("m", "input"), 24)
	wantValue(t, "output tokens", met.tokens.WithLabelValues("m", "output"), 10)
	wantSeries(t, "call series (m complete ok, m stream ok, bad complete error)", met.llmCalls, 3)
	wantSeries(t, "first-token series", met.llmFirstToken, 1)
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	s := spanNamed(t, spans, "chat m")
	if attr(s, "gen_ai.usage.input_tokens") != int64(12) || attr(s, "gen_ai.response.model") != "upstream-name" || s.SpanKind != trace.SpanKindClient {
		t.Errorf("span attributes %v", s.Attributes)
	}
	if bad := spanNamed(t, spans, "chat bad"); bad.Status.Code.String() != "Error" || len(bad.Events) == 0 {
		t.Errorf("failed call's span: status %v, events %v", bad.Status, bad.Events)
	}
}

// retrievingFake is a kb-like answerer: it retrieves (the sleep stands for
// it), then calls its model.
type retrievingFake struct {
	model   llm.Model
	retrErr error
}

func (f retrievingFake) Answer(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
	time.Sleep(2 * time.Millisecond)
	if f.retrErr != nil {
		return rag.Answer{}, f.retrErr
	}
	resp, err := f.model.Complete(ctx, llm.Request{})
	return rag.Answer{From: "kb", Text: resp.Text, Response: resp, Sources: []rag.Source{{Title: "乾"}}}, err
}

func (f retrievingFake) Retrieve(ctx context.Context, q rag.Query) ([]rag.Source, error) {
	return []rag.Source{{Title: "乾"}}, f.retrErr
}

func TestAnswererOutcomesAndSpans(t *testing.T) {
	var logs bytes.Buffer
	o, exp := newTestObserver(t, nil, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	model := o.Model("m", fakeModel{})
	llmAns := o.Answerer("llm", rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		resp, err := model.Complete(ctx, llm.Request{})
		return rag.Answer{From: "llm", Text: resp.Text, Response: resp}, err
	}))
	if _, ok := llmAns.(rag.Retriever); ok {
		t.Error("an answerer that does not retrieve became a Retriever")
	}
	kbAns := o.Answerer("kb", retrievingFake{model: model})
	if _, ok := kbAns.(rag.Retriever); !ok {
		t.Fatal("the kb answerer lost its Retriever ability")
	}
	failing := o.Answerer("search", retrievingFake{model: model, retrErr: errors.New("engine down")})
	slow := o.Answerer("slow", rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		<-ctx.Done()
		return rag.Answer{}, ctx.Err()
	}))

	ctx, root := sdktrace.NewTracerProvider().Tracer("t").Start(WithRequest(context.Background(), "req-7", time.Now()), "root")
	defer root.End()
	if _, err := llmAns.Answer(ctx, rag.Query{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := kbAns.Answer(ctx, rag.Query{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := kbAns.(rag.Retriever).Retrieve(ctx, rag.Query{}); err != nil {
		t.Fatal(err)
	}
	if _, err := failing.Answer(ctx, rag.Query{}, nil); err == nil {
		t.Fatal("no error")
	}
	tctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if _, err := slow.Answer(tctx, rag.Query{}, nil); err == nil {
		t.Fatal("no error")
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	_, _ = slow.Answer(cctx, rag.Query{}, nil)

	met := o.Metrics()
	for _, tc := range []struct {
		answerer, outcome string
		n                 uint64
	}{{"llm", "ok", 1}, {"kb", "ok", 1}, {"search", "error", 1}, {"slow", "timeout", 1}, {"slow", "canceled", 1}} {
		if n := histCount(t, met.answerers.WithLabelValues(tc.answerer, tc.outcome)); n != tc.n {
			t.Errorf("answerer %s %s: %d, want %d", tc.answerer, tc.outcome, n, tc.n)
		}
	}
	wantValue(t, "search failures", met.answerFailures.WithLabelValues("search", "error"), 1)
	wantValue(t, "slow timeouts", met.answerFailures.WithLabelValues("slow", "timeout"), 1)
	wantSeries(t, "failure series (a cancelled request is no failure)", met.answerFailures, 2)
	// kb: one retrieval ended by its model call, one Retrieve; search: one
	// failed retrieval.
	if n := histCount(t, met.retrieval.WithLabelValues("kb", "ok")); n != 2 {
		t.Errorf("kb retrievals %d, want 2", n)
	}
	if n := histCount(t, met.retrieval.WithLabelValues("search", "error")); n != 1 {
		t.Errorf("search retrievals %d, want 1", n)
	}

	spans := exp.GetSpans()
	var kbSpan, kbRetrieve, kbChat tracetest.SpanStub
	for _, s := range spans {
		switch {
		case s.Name == "answerer kb":
			kbSpan = s
		case s.Name == "retrieve kb" && kbRetrieve.Name == "":
			kbRetrieve = s
		}
	}
	for _, s := range spans {
		if s.Name == "chat m" && s.Parent.SpanID() == kbSpan.SpanContext.SpanID() {
			kbChat = s
		}
	}
	if kbSpan.Name == "" || kbChat.Name == "" || kbRetrieve.Name == "" {
		t.Fatalf("missing kb spans among %d", len(spans))
	}
	if kbSpan.Parent.SpanID() != root.SpanContext().SpanID() || kbRetrieve.Parent.SpanID() != kbSpan.SpanContext.SpanID() {
		t.Error("the answerer span is not the request's child, or the retrieval span not the answerer's")
	}
	if kbRetrieve.EndTime.After(kbChat.StartTime) {
		t.Errorf("retrieval ended at %v, after the model call started at %v", kbRetrieve.EndTime, kbChat.StartTime)
	}
	if s := spanNamed(t, spans, "answerer search"); s.Status.Code.String() != "Error" {
		t.Errorf("failed answerer span status %v", s.Status)
	}
	msgs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["request_id"] != "req-7" {
			t.Errorf("log line without the request id: %s", line)
		}
		msgs[rec["msg"].(string)+"/"+rec["level"].(string)]++
	}
	if msgs["answerer failed/WARN"] != 2 || msgs["llm call/DEBUG"] != 2 || msgs["answerer done/DEBUG"] != 3 {
		t.Errorf("log lines %v", msgs)
	}

	if a := o.Answerer("kb", nil); a != nil {
		t.Error("a nil answerer was wrapped into a live one")
	}
}

// histCount returns how many observations a histogram child has.
func histCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func TestSearchClient(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "no", http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, `{"results":[]}`)
	}))
	defer up.Close()
	o, exp := newTestObserver(t, nil, nil)
	c := o.SearchClient(nil)
	for _, p := range []string{"/search", "/fail"} {
		req, _ := http.NewRequest(http.MethodGet, up.URL+p, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	host := strings.TrimPrefix(up.URL, "http://")
	met := o.Metrics()
	if n := histCount(t, met.searchRequests.WithLabelValues(host, "2xx")); n != 1 {
		t.Errorf("2xx: %d", n)
	}
	if n := histCount(t, met.searchRequests.WithLabelValues(host, "5xx")); n != 1 {
		t.Errorf("5xx: %d", n)
	}
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("%d spans, want 2", n)
	}
}

func TestTracingOffByDefault(t *testing.T) {
	tr, err := SetupTracing(context.Background(), DefaultTelemetryConfig(), "test", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Error("tracing on with no endpoint configured")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}
	tr, _ = SetupTracing(context.Background(), DefaultTelemetryConfig(), "test", func(k string) string { return env[k] })
	if tr.Enabled() {
		t.Error("OTEL_SDK_DISABLED=true left tracing on")
	}
	for _, bad := range []TelemetryConfig{{OTLPEndpoint: "collector:4318", SampleRatio: 1}, {SampleRatio: 2}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v is valid", bad)
		}
	}
}

// TestTracingExportsOTLP sends spans to a local OTLP/HTTP receiver and
// decodes what it got.
func TestTracingExportsOTLP(t *testing.T) {
	var mu sync.Mutex
	var got []*collectortrace.ExportTraceServiceRequest
	var paths []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("not an OTLP export (%s): %v", r.Header.Get("Content-Type"), err)
		}
		mu.Lock()
		got, paths = append(got, &req), append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()

	cfg := DefaultTelemetryConfig()
	cfg.OTLPEndpoint = recv.URL
	tr, err := SetupTracing(context.Background(), cfg, "v9", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() || tr.Endpoint != recv.URL+"/v1/traces" {
		t.Fatalf("enabled %v endpoint %q", tr.Enabled(), tr.Endpoint)
	}
	o := New(Options{Tracing: tr.Provider})
	if _, err := o.Model("m", fakeModel{}).Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("the receiver got nothing")
	}
	if paths[0] != "/v1/traces" {
		t.Errorf("path %q", paths[0])
	}
	rs := got[0].GetResourceSpans()[0]
	var service, version string
	for _, a := range rs.GetResource().GetAttributes() {
		switch a.GetKey() {
		case "service.name":
			service = a.GetValue().GetStringValue()
		case "service.version":
			version = a.GetValue().GetStringValue()
		}
	}
	if service != "mixchat" || version != "v9" {
		t.Errorf("resource service %q version %q", service, version)
	}
	if name := rs.GetScopeSpans()[0].GetSpans()[0].GetName(); name != "chat m" {
		t.Errorf("span %q", name)
	}
}

// BenchmarkModelOverhead measures what the instrumented wrapper adds to a
// model call (metrics, a no-op span, the debug log check).
//
//	go test ./pkg/obs -run '^$' -bench BenchmarkModelOverhead -benchmem
func BenchmarkModelOverhead(b *testing.B) {
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "乾卦？"}}}
	for _, tc := range []struct {
		name  string
		model llm.Model
	}{
		{"bare", fakeModel{}},
		{"instrumented", New(Options{}).Model("m", fakeModel{})},
		{"instrumented+sdk-tracing", New(Options{Tracing: sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))}).Model("m", fakeModel{})},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := tc.model.Complete(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// wantValue fails the test when the counter or gauge c does not hold want.
func wantValue(t *testing.T, what string, c prometheus.Collector, want float64) {
	t.Helper()
	if v := testutil.ToFloat64(c); v != want {
		t.Errorf("%s: %v, want %v", what, v, want)
	}
}

// wantSeries fails the test when c does not have n series.
func wantSeries(t *testing.T, what string, c prometheus.Collector, n int) {
	t.Helper()
	if got := testutil.CollectAndCount(c); got != n {
		t.Errorf("%s: %d, want %d", what, got, n)
	}
}
