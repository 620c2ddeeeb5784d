package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mixchat/mixchat/internal/lockedbuf"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/rag"
)

// records returns the JSON log records written to logs so far.
func records(t *testing.T, logs *lockedbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// observedServer is a mix server wired as cmd/mixchat wires it: models and
// answerers instrumented by one Observer whose spans go to memory, logs in
// JSON at info level.
type observedServer struct {
	*Server
	store memory.Store
	obs   *obs.Observer
	spans *tracetest.InMemoryExporter
	logs  *lockedbuf.Buffer
}

func newObservedServer(t *testing.T, prices obs.Prices) *observedServer {
	t.Helper()
	up := newMixUpstream(t)
	store := openSQLite(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	logs := &lockedbuf.Buffer{}
	log := slog.New(obs.NewLogHandler(slog.NewJSONHandler(logs, nil)))
	o := obs.New(obs.Options{Tracing: tp, Prices: prices, Log: log})

	models := llm.NewRegistry("test")
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	models.Add("test", llm.NewClient(llm.ClientConfig{Name: "test", BaseURL: up.URL(), Model: "test", Timeout: 10 * time.Second, MaxRetries: -1, HTTPClient: hc}))
	models.Add("offline", extractive.New(extractive.Options{}))
	o.InstrumentRegistry(models)
	answerers := map[string]rag.Answerer{
		rag.LLM:    o.Answerer(rag.LLM, chat.New(models, chat.Options{})),
		rag.KB:     o.Answerer(rag.KB, up.answerer(models, rag.KB, mixKBSource)),
		rag.Search: o.Answerer(rag.Search, up.answerer(models, rag.Search, mixWebSource)),
	}
	mixer, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: models, Answerers: answerers})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Log: log, Store: store, Models: models, Chat: chat.New(models, chat.Options{}), Mixer: mixer, Obs: o})
	return &observedServer{Server: s, store: store, obs: o, spans: exp, logs: logs}
}

// do serves one request in process; the middleware has finished (metrics,
// span, access line) when it returns.
func (s *observedServer) do(method, path string, body any, header http.Header) *httptest.ResponseRecorder {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, r)
	req.Host = "localhost:7861" // httptest's example.com is not a served host
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

func TestRequestIDAndAccessLog(t *testing.T) {
	s := newObservedServer(t, nil)
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"sane id kept", "client-id_42", true},
		{"id with a space replaced", "two words", false},
		{"no id", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.sent != "" {
				h.Set("X-Request-ID", tc.sent)
			}
			rec := s.do(http.MethodGet, "/conversations/missing", nil, h)
			if rec.Code != http.StatusNotFound {
				t.Fatalf("status %d", rec.Code)
			}
			got := rec.Header().Get("X-Request-ID")
			if tc.kept && got != tc.sent {
				t.Errorf("X-Request-ID %q, want the client's %q", got, tc.sent)
			}
			if !tc.kept && (got == tc.sent || !obs.SaneRequestID(got) || len(got) != 36) {
				t.Errorf("X-Request-ID %q, want a fresh UUID", got)
			}
			recs := records(t, s.logs)
			last := recs[len(recs)-1]
			want := map[string]any{"msg": "request", "level": "INFO", "method": "GET", "route": "/conversations/:id",
				"path": "/conversations/missing", "status": float64(404), "request_id": got, "bytes": float64(rec.Body.Len())}
			for k, v := range want {
				if last[k] != v {
					t.Errorf("access line %s = %v, want %v (%v)", k, last[k], v, last)
				}
			}
			if _, ok := last["duration_ms"].(float64); !ok {
				t.Errorf("access line has no duration_ms: %v", last)
			}
		})
	}
	// Probes are logged at debug level only.
	n := len(records(t, s.logs))
	for _, p := range []string{"/healthz", "/metrics"} {
		if rec := s.do(http.MethodGet, p, nil, nil); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", p, rec.Code)
		}
	}
	if recs := records(t, s.logs); len(recs) != n {
		t.Errorf("probes logged at info level: %v", recs[n:])
	}
}

func TestMetricsEndpoint(t *testing.T) {
	s := newObservedServer(t, nil)
	s.do(http.MethodGet, "/conversations/a", nil, nil)
	s.do(http.MethodGet, "/conversations/b", nil, nil)
	s.do(http.MethodGet, "/no/such/route", nil, nil)
	if rec := s.do(http.MethodPost, "/chat/chat", map[string]any{"query": "乾卦是什么？", "model_name": "test"}, nil); rec.Code != http.StatusOK {
		t.Fatalf("chat: %d %s", rec.Code, rec.Body)
	}
	if rec := s.do(http.MethodPost, "/chat/mix_chat", map[string]any{"query": "乾卦是什么？"}, nil); rec.Code != http.StatusOK {
		t.Fatalf("mix_chat: %d %s", rec.Code, rec.Body)
	}
	rec := s.do(http.MethodGet, "/metrics", nil, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`mixchat_http_request_duration_seconds_count{method="GET",route="/conversations/:id",status="404"} 2`,
		`mixchat_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 1`,
		`mixchat_http_request_duration_seconds_count{method="POST",route="/chat/chat",status="200"} 1`,
		`mixchat_http_requests_in_flight 1`, // the /metrics request itself
		`mixchat_active_streams 0`,
		`mixchat_answerer_duration_seconds_count{answerer="kb",outcome="ok"} 1`,
		`mixchat_answerer_duration_seconds_count{answerer="llm",outcome="ok"} 2`,                // the /chat/chat turn and mix_chat's
		`mixchat_llm_request_duration_seconds_count{model="test",op="complete",outcome="ok"} 5`, // chat + 3 answerers + fusion
		`mixchat_llm_tokens_total{direction="input",model="test"}`,
		`mixchat_llm_tokens_total{direction="output",model="test"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "/no/such/route") || strings.Contains(body, `route="/conversations/a"`) {
		t.Error("a request path leaked into a label")
	}
}

// gaugeValue reads a gauge from the Observer's registry.
func gaugeValue(t *testing.T, o *obs.Observer, name string) float64 {
	t.Helper()
	mfs, err := o.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestActiveStreamsGauge(t *testing.T) {
	s := newObservedServer(t, nil)
	engine, ok := s.Handler().(*gin.Engine)
	if !ok {
		t.Fatalf("handler is %T", s.Handler())
	}
	var during, duringJSON float64
	engine.GET("/test/stream", func(c *gin.Context) {
		out := newSSE(c, DefaultStreamWriteTimeout)
		defer out.close()
		_ = out.Send(map[string]string{"text": "乾"})
		during = gaugeValue(t, s.obs, "mixchat_active_streams")
		_ = out.Send(map[string]string{"text": "坤"})
	})
	engine.GET("/test/json", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"ok": true})
		duringJSON = gaugeValue(t, s.obs, "mixchat_active_streams")
	})
	if rec := s.do(http.MethodGet, "/test/stream", nil, nil); !strings.Contains(rec.Body.String(), "坤") {
		t.Fatalf("stream: %q", rec.Body)
	}
	s.do(http.MethodGet, "/test/json", nil, nil)
	if during != 1 || duringJSON != 0 {
		t.Errorf("active streams while streaming %v, while answering JSON %v; want 1 and 0", during, duringJSON)
	}
	if after := gaugeValue(t, s.obs, "mixchat_active_streams"); after != 0 {
		t.Errorf("active streams after the stream: %v", after)
	}
}

func TestTraceSpans(t *testing.T) {
	s := newObservedServer(t, nil)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	h := http.Header{}
	h.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	rec := s.do(http.MethodPost, "/chat/mix_chat", map[string]any{"query": "乾卦是什么？"}, h)
	if rec.Code != http.StatusOK {
		t.Fatalf("mix_chat: %d %s", rec.Code, rec.Body)
	}
	spans := s.spans.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, sp := range spans {
		if sp.SpanContext.TraceID().String() != traceID {
			t.Errorf("span %s is in trace %s, not the client's", sp.Name, sp.SpanContext.TraceID())
		}
		byName[sp.Name] = append(byName[sp.Name], sp)
	}
	server := byName["POST /chat/mix_chat"]
	if len(server) != 1 {
		t.Fatalf("server spans %d; spans: %v", len(server), keys(byName))
	}
	srv := server[0]
	if srv.Parent.SpanID().String() != parentID || srv.SpanKind != trace.SpanKindServer {
		t.Errorf("server span parent %s kind %v", srv.Parent.SpanID(), srv.SpanKind)
	}
	var reqID, route any
	for _, a := range srv.Attributes {
		switch a.Key {
		case "mixchat.request_id":
			reqID = a.Value.AsString()
		case "http.route":
			route = a.Value.AsString()
		}
	}
	if reqID != rec.Header().Get("X-Request-ID") || route != "/chat/mix_chat" {
		t.Errorf("server span request id %v route %v", reqID, route)
	}
	answererIDs := map[trace.SpanID]string{}
	for _, name := range []string{"llm", "kb", "search"} {
		as := byName["answerer "+name]
		if len(as) != 1 || as[0].Parent.SpanID() != srv.SpanContext.SpanID() {
			t.Fatalf("answerer %s spans %d, want 1 child of the server span", name, len(as))
		}
		answererIDs[as[0].SpanContext.SpanID()] = name
	}
	calls := byName["chat test"]
	if len(calls) != 4 {
		t.Fatalf("%d LLM call spans, want 4 (three answerers, one fusion)", len(calls))
	}
	underAnswerer, underRequest := 0, 0
	for _, c := range calls {
		switch {
		case answererIDs[c.Parent.SpanID()] != "":
			underAnswerer++
		case c.Parent.SpanID() == srv.SpanContext.SpanID():
			underRequest++
		}
	}
	if underAnswerer != 3 || underRequest != 1 {
		t.Errorf("LLM call spans: %d under answerers, %d under the request; want 3 and 1", underAnswerer, underRequest)
	}
}

func TestMessageUsage(t *testing.T) {
	prices := obs.Prices{"test": {InputPerMillion: 2, OutputPerMillion: 8, Currency: "CNY"}}
	s := newObservedServer(t, prices)
	price := func(u llm.Usage) float64 {
		return float64(u.PromptTokens)*2/1e6 + float64(u.CompletionTokens)*8/1e6
	}
	checkUsage := func(t *testing.T, what string, u obs.Usage) {
		t.Helper()
		if u.TotalTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("%s: tokens %+v", what, u)
		}
		if u.Latency <= 0 {
			t.Errorf("%s: latency %v", what, u.Latency)
		}
		if u.TotalPrice == nil || u.Currency != "CNY" || math.Abs(*u.TotalPrice-price(u.Tokens())) > 1e-9 {
			t.Errorf("%s: price %v %s, want %v CNY", what, u.TotalPrice, u.Currency, price(u.Tokens()))
		}
	}
	stored := func(t *testing.T, conv string) obs.Usage {
		t.Helper()
		turns, err := s.store.Turns(context.Background(), conv, 1)
		if err != nil || len(turns) != 1 {
			t.Fatalf("turns %v %v", turns, err)
		}
		b, _ := json.Marshal(turns[0].Answer.Metadata.Extra["usage"])
		var u obs.Usage
		if err := json.Unmarshal(b, &u); err != nil {
			t.Fatal(err)
		}
		if tok := turns[0].Answer.Metadata.Usage; tok == nil || tok.TotalTokens != u.TotalTokens {
			t.Errorf("metadata.usage %v and extra.usage %v disagree", tok, u)
		}
		return u
	}

	t.Run("chat", func(t *testing.T) {
		rec := s.do(http.MethodPost, "/chat/chat", map[string]any{"query": "乾卦是什么？", "model_name": "test", "conversation_id": "c1"}, nil)
		var reply chatReply
		if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		checkUsage(t, "reply", reply.Usage)
		if u := stored(t, "c1"); u.TotalPrice == nil || *u.TotalPrice != *reply.Usage.TotalPrice {
			t.Errorf("stored usage %+v, replied %+v", u, reply.Usage)
		}
	})
	t.Run("mix_chat stream", func(t *testing.T) {
		rec := s.do(http.MethodPost, "/chat/mix_chat", map[string]any{"query": "乾卦是什么？", "conversation_id": "c2", "stream": true}, nil)
		evs := readEvents[mixEvent](t, rec.Body)
		done := evs[len(evs)-1]
		if done.Type != "done" || done.Usage == nil {
			t.Fatalf("last event %+v", done)
		}
		checkUsage(t, "done event", *done.Usage)
		if u := stored(t, "c2"); u.TotalTokens != done.Usage.TotalTokens || *u.TotalPrice != *done.Usage.TotalPrice {
			t.Errorf("stored usage %+v, done event %+v", u, *done.Usage)
		}
	})
	t.Run("offline model is not priced", func(t *testing.T) {
		rec := s.do(http.MethodPost, "/chat/chat", map[string]any{"query": "乾卦是什么？", "model_name": "offline"}, nil)
		var reply chatReply
		_ = json.Unmarshal(rec.Body.Bytes(), &reply)
		if reply.Usage.TotalPrice != nil || reply.Usage.Latency <= 0 {
			t.Errorf("usage %+v", reply.Usage)
		}
	})
}

// BenchmarkObserveMiddleware measures a request through the whole router
// with the observe middleware (request id, metrics, access line to a
// discarding JSON logger, no tracing) on GET /healthz.
//
//	go test ./pkg/server -run '^$' -bench BenchmarkObserveMiddleware -benchmem
func BenchmarkObserveMiddleware(b *testing.B) {
	store := openSQLite(b)
	models, _ := offlineModels()
	s := New(Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Store: store, Models: models, Chat: chat.New(models, chat.Options{})})
	h := s.Handler()
	req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

func TestObservePanickingHandler(t *testing.T) {
	s := newObservedServer(t, nil)
	s.Handler().(*gin.Engine).GET("/test/panic", func(c *gin.Context) { panic("boom") })
	rec := s.do(http.MethodGet, "/test/panic", nil, nil)
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("X-Request-ID") == "" {
		t.Fatalf("status %d, request id %q", rec.Code, rec.Header().Get("X-Request-ID"))
	}
	var access, panicLine map[string]any
	for _, r := range records(t, s.logs) {
		switch r["msg"] {
		case "request":
			access = r
		case "handler panic":
			panicLine = r
		}
	}
	if access["status"] != float64(500) || panicLine["request_id"] != rec.Header().Get("X-Request-ID") {
		t.Errorf("access line %v, panic line %v", access, panicLine)
	}
	body := s.do(http.MethodGet, "/metrics", nil, nil).Body.String()
	if !strings.Contains(body, `mixchat_http_request_duration_seconds_count{method="GET",route="/test/panic",status="500"} 1`) {
		t.Error("the panic is not counted as a 500")
	}
}
