package llm_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/leaktest"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// newClient returns a client of srv that retries fast.
func newClient(srv *llmtest.Server, mod func(*llm.ClientConfig)) *llm.Client {
	cfg := srv.Config()
	cfg.Name, cfg.APIKey, cfg.Model = "fake", "k", "test-model"
	if mod != nil {
		mod(&cfg)
	}
	return llm.NewClient(cfg)
}

func ask(q string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: q}}}
}

func statusOf(t *testing.T, err error) *llm.StatusError {
	t.Helper()
	var se *llm.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *llm.StatusError", err, err)
	}
	return se
}

func TestClientComplete(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Text: "乾为天。", Usage: &openai.Usage{PromptTokens: 11, CompletionTokens: 4, TotalTokens: 15}})
	var raw rawBodies
	c := newClient(srv, func(c *llm.ClientConfig) { c.HTTPClient = &http.Client{Transport: &raw} })
	temp := float32(0)
	req := ask("乾卦是什么？")
	req.Temperature, req.MaxTokens, req.Model = &temp, 64, "ignored-by-client"
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{Text: "乾为天。", Model: "fake", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 4, TotalTokens: 15}}
	if resp != want {
		t.Errorf("Complete = %+v, want %+v", resp, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Model != "test-model" || got.Stream || got.MaxTokens != 64 || len(got.Messages) != 2 ||
		got.Messages[1].Role != "user" || got.Messages[1].Content != "乾卦是什么？" {
		t.Errorf("upstream request = %+v", got)
	}
	// A temperature of 0 is sent, not left out (which would leave the
	// upstream's default, often 1, in force).
	if b := raw.bodies(); len(b) != 1 || !strings.Contains(b[0], `"temperature":0,`) && !strings.Contains(b[0], `"temperature":0}`) {
		t.Errorf("request bodies %q, want one with temperature 0", b)
	}
	if h := raw.header(0); h.Get("Authorization") != "Bearer k" || h.Get("Content-Type") != "application/json" {
		t.Errorf("request headers %v, want the key as a bearer token and a JSON body", h)
	}
}

// rawBodies is a transport that records the bodies and headers of the
// requests it passes on.
type rawBodies struct {
	mu      sync.Mutex
	body    []string
	headers []http.Header
}

func (r *rawBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	r.mu.Lock()
	r.body, r.headers = append(r.body, string(b)), append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *rawBodies) bodies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.body)
}

func (r *rawBodies) header(i int) http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.headers) {
		return nil
	}
	return r.headers[i]
}

func TestClientReasoningModelParameters(t *testing.T) {
	srv := llmtest.NewServer(t)
	c := newClient(srv, func(c *llm.ClientConfig) { c.Model = "o3-mini" })
	temp := float32(0.3)
	req := ask("hi")
	req.Temperature, req.MaxTokens = &temp, 100
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if got.MaxTokens != 0 || got.MaxCompletionTokens != 100 || got.Temperature != 0 {
		t.Errorf("o3-mini request: max_tokens %d, max_completion_tokens %d, temperature %v; want 0, 100, 0",
			got.MaxTokens, got.MaxCompletionTokens, got.Temperature)
	}
}

func TestClientStream(t *testing.T) {
	srv := llmtest.NewServer(t)
	const text = "Qian is heaven. 乾为天，元亨利贞。"
	srv.Script(llmtest.Reply{Text: text, Usage: &openai.Usage{PromptTokens: 20, CompletionTokens: 9, TotalTokens: 29}})
	c := newClient(srv, nil)
	var pieces []string
	resp, err := c.Stream(context.Background(), ask("乾？"), func(d string) error {
		pieces = append(pieces, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := llmtest.Chunks(text); strings.Join(pieces, "|") != strings.Join(want, "|") {
		t.Errorf("pieces = %q, want %q", pieces, want)
	}
	want := llm.Response{Text: text, Model: "fake", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 20, CompletionTokens: 9, TotalTokens: 29}}
	if resp != want {
		t.Errorf("Stream = %+v, want %+v", resp, want)
	}
	got := srv.Requests()[0]
	if !got.Stream || got.StreamOptions == nil || !got.StreamOptions.IncludeUsage {
		t.Errorf("stream request did not ask for usage: stream=%v options=%+v", got.Stream, got.StreamOptions)
	}
}

func TestClientEstimatesMissingUsage(t *testing.T) {
	srv := llmtest.NewServer(t)
	c := newClient(srv, func(c *llm.ClientConfig) { c.Model = "gpt-4o" })
	req := ask("我的名字是李雷。What is my name?")
	tok := llm.NewTokenizer("gpt-4o")
	want := llm.Usage{PromptTokens: tok.CountMessages(req.Messages), CompletionTokens: 11, Estimated: true}
	want.TotalTokens = want.PromptTokens + want.CompletionTokens
	for _, stream := range []bool{false, true} {
		srv.Script(llmtest.Reply{Text: "我的名字是李雷。What is my name?", NoUsage: true})
		var resp llm.Response
		var err error
		if stream {
			resp, err = c.Stream(context.Background(), req, nil)
		} else {
			resp, err = c.Complete(context.Background(), req)
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != want {
			t.Errorf("stream=%v: usage %+v, want %+v", stream, resp.Usage, want)
		}
	}
}

func TestClientRetries(t *testing.T) {
	tests := []struct {
		name      string
		script    []llmtest.Reply
		retries   int
		wantCalls int
		wantErr   int // status of the returned error; 0 means success
	}{
		{"429 then success", []llmtest.Reply{{Status: 429}, {Text: "ok"}}, 2, 2, 0},
		{"500, 503 then success", []llmtest.Reply{{Status: 500}, {Status: 503}, {Text: "ok"}}, 2, 3, 0},
		{"502 every time", []llmtest.Reply{{Status: 502}, {Status: 502}, {Status: 502}}, 2, 3, 502},
		{"retries off", []llmtest.Reply{{Status: 500}, {Text: "ok"}}, -1, 1, 500},
		{"connection cut then success", []llmtest.Reply{{Disconnect: true}, {Text: "ok"}}, 2, 2, 0},
		{"400 not retried", []llmtest.Reply{{Status: 400}, {Text: "ok"}}, 2, 1, 400},
		{"401 not retried", []llmtest.Reply{{Status: 401}, {Text: "ok"}}, 2, 1, 401},
		{"malformed JSON not retried", []llmtest.Reply{{Garbage: true}, {Text: "ok"}}, 2, 1, 200},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			srv := llmtest.NewServer(t)
			srv.Script(tt.script...)
			c := newClient(srv, func(c *llm.ClientConfig) { c.MaxRetries = tt.retries })
			var resp llm.Response
			var err error
			if stream {
				resp, err = c.Stream(context.Background(), ask("x"), nil)
			} else {
				resp, err = c.Complete(context.Background(), ask("x"))
			}
			if calls := srv.Calls(); calls != tt.wantCalls {
				t.Errorf("%s (stream=%v): %d calls, want %d", tt.name, stream, calls, tt.wantCalls)
			}
			if tt.wantErr == 0 {
				if err != nil || resp.Text != "ok" {
					t.Errorf("%s (stream=%v): got %q, %v; want ok", tt.name, stream, resp.Text, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s (stream=%v): no error", tt.name, stream)
				continue
			}
			if se := statusOf(t, err); se.StatusCode != tt.wantErr {
				t.Errorf("%s (stream=%v): status %d, want %d (%v)", tt.name, stream, se.StatusCode, tt.wantErr, err)
			}
		}
	}
}

func TestClientHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		header, value string
		want          time.Duration
	}{
		{"Retry-After-Ms", "300", 300 * time.Millisecond},
		{"Retry-After", "1", time.Second},
	}
	for _, tt := range tests {
		srv := llmtest.NewServer(t)
		srv.Script(llmtest.Reply{Status: 429, Header: http.Header{tt.header: {tt.value}}}, llmtest.Reply{Text: "ok"})
		c := newClient(srv, nil) // backoff 1ms: only Retry-After makes it wait
		start := time.Now()
		if _, err := c.Complete(context.Background(), ask("x")); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < tt.want {
			t.Errorf("%s: %s: retried after %v, want at least %v", tt.header, tt.value, waited, tt.want)
		}
	}
	// A Retry-After longer than the client waits for ends the call at once.
	srv := llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Status: 503, Header: http.Header{"Retry-After": {"3600"}}}, llmtest.Reply{Text: "ok"})
	_, err := newClient(srv, nil).Complete(context.Background(), ask("x"))
	if se := statusOf(t, err); se.StatusCode != 503 || srv.Calls() != 1 {
		t.Errorf("Retry-After 3600: status %d after %d calls, want 503 after 1", se.StatusCode, srv.Calls())
	}
}

func TestClientStreamNoRetryAfterFirstPiece(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Text: "one two three four", Disconnect: true, StreamErrorAfter: 2}, llmtest.Reply{Text: "again"})
	c := newClient(srv, nil)
	var got []string
	_, err := c.Stream(context.Background(), ask("x"), func(d string) error {
		got = append(got, d)
		return nil
	})
	if err == nil {
		t.Fatal("cut stream returned no error")
	}
	se := statusOf(t, err)
	if se.StatusCode != 200 || se.Op != "stream" {
		t.Errorf("error %+v, want status 200 op stream", se)
	}
	if srv.Calls() != 1 {
		t.Errorf("%d calls: a stream that delivered pieces was retried", srv.Calls())
	}
	if strings.Join(got, "") != "one two " {
		t.Errorf("pieces before the cut = %q, want \"one two \"", got)
	}

	// Cut before the first piece: retried.
	srv = llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Text: "lost", Disconnect: true}, llmtest.Reply{Text: "again"})
	resp, err := newClient(srv, nil).Stream(context.Background(), ask("x"), nil)
	if err != nil || resp.Text != "again" || srv.Calls() != 2 {
		t.Errorf("cut before first piece: %q, %v after %d calls; want \"again\" after 2", resp.Text, err, srv.Calls())
	}
}

func TestClientStatusErrorCarriesBody(t *testing.T) {
	const body = `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	srv := llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Status: 402, Body: body})
	_, err := newClient(srv, nil).Complete(context.Background(), ask("x"))
	se := statusOf(t, err)
	if se.StatusCode != 402 || se.Body != body || se.Op != "chat" || se.Model != "fake" {
		t.Errorf("StatusError = %+v", se)
	}
	if !strings.Contains(err.Error(), "402") || !strings.Contains(err.Error(), "quota") {
		t.Errorf("message %q lacks status or body", err)
	}

	srv.Script(llmtest.Reply{Status: 404, Body: "<html>not found</html>"}) // not JSON at all
	_, err = newClient(srv, nil).Stream(context.Background(), ask("x"), nil)
	if se := statusOf(t, err); se.StatusCode != 404 || se.Body != "<html>not found</html>" {
		t.Errorf("non-JSON error body: %+v", se)
	}
}

func TestClientBrokenReplies(t *testing.T) {
	tests := []struct {
		name     string
		reply    llmtest.Reply
		stream   bool
		wantBody string // substring of StatusError.Body
	}{
		{"garbage JSON", llmtest.Reply{Garbage: true}, false, `"role":"assist`},
		{"garbage chunk", llmtest.Reply{Text: "a b c", Garbage: true, StreamErrorAfter: 1}, true, `"delta":{"content":`},
		{"error inside a 200 stream", llmtest.Reply{Text: "a b c", StreamError: "model overloaded"}, true, "model overloaded"},
		{"error after two pieces", llmtest.Reply{Text: "a b c", StreamErrorAfter: 2}, true, "upstream error"},
		{"no choices", llmtest.Reply{Text: "x", EmptyChoices: true}, false, `"choices":[]`},
		{"no choices in stream", llmtest.Reply{Text: "x", EmptyChoices: true}, true, "[DONE]"},
	}
	for _, tt := range tests {
		srv := llmtest.NewServer(t)
		srv.Script(tt.reply, llmtest.Reply{Text: "should not be asked"})
		c := newClient(srv, nil)
		var err error
		if tt.stream {
			_, err = c.Stream(context.Background(), ask("x"), nil)
		} else {
			_, err = c.Complete(context.Background(), ask("x"))
		}
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		se := statusOf(t, err)
		if se.StatusCode != 200 || !strings.Contains(se.Body, tt.wantBody) {
			t.Errorf("%s: status %d body %q, want 200 and body containing %q", tt.name, se.StatusCode, se.Body, tt.wantBody)
		}
		if srv.Calls() != 1 {
			t.Errorf("%s: %d calls, want 1 (not retried)", tt.name, srv.Calls())
		}
	}
}

func TestClientStreamOptionsRefused(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.WithHandler(func(req openai.ChatCompletionRequest) llmtest.Reply {
		if req.StreamOptions != nil {
			return llmtest.Reply{Status: 400, Body: `{"error":{"message":"Unrecognized request argument supplied: stream_options"}}`}
		}
		return llmtest.Reply{Text: "fine"}
	}))
	c := newClient(srv, nil)
	for i := range 2 {
		resp, err := c.Stream(context.Background(), ask("x"), nil)
		if err != nil || resp.Text != "fine" || !resp.Usage.Estimated {
			t.Fatalf("call %d: %+v, %v", i, resp, err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].StreamOptions == nil || reqs[1].StreamOptions != nil || reqs[2].StreamOptions != nil {
		t.Errorf("want one refused request then two without stream_options, got %d requests", len(reqs))
	}
}

func TestClientTimeoutPerAttempt(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Text: "late", Delay: time.Minute})
	c := newClient(srv, func(c *llm.ClientConfig) { c.Timeout = 100 * time.Millisecond; c.MaxRetries = -1 })
	_, err := c.Complete(context.Background(), ask("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a deadline exceeded", err)
	}
	statusOf(t, err)
	if !srv.WaitIdle(5 * time.Second) {
		t.Fatal("upstream call still running after the timeout")
	}
	if srv.Cancelled() != 1 {
		t.Errorf("upstream saw %d cancelled calls, want 1", srv.Cancelled())
	}

	// A timed-out attempt is retried.
	srv.Script(llmtest.Reply{Text: "late", Delay: time.Minute}, llmtest.Reply{Text: "on time"})
	c = newClient(srv, func(c *llm.ClientConfig) { c.Timeout = 100 * time.Millisecond })
	resp, err := c.Complete(context.Background(), ask("x"))
	if err != nil || resp.Text != "on time" {
		t.Errorf("after a timed-out attempt: %q, %v", resp.Text, err)
	}
}

func TestClientCancellationReachesUpstream(t *testing.T) {
	srv := llmtest.NewServer(t)
	transport := &http.Transport{}
	c := newClient(srv, func(c *llm.ClientConfig) { c.HTTPClient = &http.Client{Transport: transport} })
	before := runtime.NumGoroutine()

	// Stream: the caller goes away after the first piece.
	srv.Script(llmtest.Reply{Text: "a b c d e f", ChunkDelay: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := c.Stream(ctx, ask("x"), func(string) error {
		n++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("stream error %v, want context.Canceled", err)
	}
	if n != 1 {
		t.Errorf("callback called %d times after cancel, want 1", n)
	}

	// Complete: cancelled while the upstream thinks.
	srv.Script(llmtest.Reply{Text: "late", Delay: time.Minute})
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.Complete(ctx, ask("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("complete error %v, want context.Canceled", err)
	}

	// Stream: the callback fails.
	errStop := errors.New("client gone")
	srv.Script(llmtest.Reply{Text: "a b c d e f", ChunkDelay: 20 * time.Millisecond})
	if _, err := c.Stream(context.Background(), ask("x"), func(string) error { return errStop }); err != errStop {
		t.Errorf("callback error came back as %v, want it unchanged", err)
	}

	if !srv.WaitIdle(5 * time.Second) {
		t.Fatalf("%d upstream calls still running", srv.InFlight())
	}
	if srv.Cancelled() != 3 || srv.Calls() != 3 {
		t.Errorf("upstream: %d calls, %d cancelled; want 3 and 3 (none retried)", srv.Calls(), srv.Cancelled())
	}
	transport.CloseIdleConnections()
	leaktest.Wait(t, before)
}

func TestClientEmbed(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.WithEmbedDim(16))
	c := newClient(srv, func(c *llm.ClientConfig) { c.EmbedModel = "embed-model"; c.EmbedBatch = 3 })
	texts := []string{"乾为天", "坤为地", "The creative", "The receptive", "屯", "蒙", "需"}
	vecs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		want := llmtest.Vector(texts[i], 16)
		for j := range want {
			if v[j] != want[j] {
				t.Fatalf("vector %d (%q) differs from the upstream's at %d", i, texts[i], j)
			}
		}
	}
	var sizes []int
	for _, r := range srv.EmbedRequests() {
		sizes = append(sizes, len(r.Input))
		if r.Model != "embed-model" {
			t.Errorf("embeddings model %q, want embed-model", r.Model)
		}
	}
	if len(sizes) != 3 || sizes[0] != 3 || sizes[1] != 3 || sizes[2] != 1 {
		t.Errorf("batch sizes %v, want [3 3 1]", sizes)
	}
	if v, err := c.Embed(context.Background(), nil); err != nil || len(v) != 0 {
		t.Errorf("Embed(nil) = %v, %v", v, err)
	}
}

func TestClientEmbedFailures(t *testing.T) {
	srv := llmtest.NewServer(t)
	c := newClient(srv, func(c *llm.ClientConfig) { c.EmbedBatch = 2 })

	srv.ScriptEmbed(llmtest.Reply{Status: 503})
	if _, err := c.Embed(context.Background(), []string{"a", "b", "c"}); err != nil {
		t.Errorf("503 then success: %v", err)
	}

	srv.ScriptEmbed(llmtest.Reply{Body: `{"object":"list","data":[{"object":"embedding","embedding":[1,0],"index":0}],"model":"m"}`})
	_, err := c.Embed(context.Background(), []string{"a", "b"})
	if se := statusOf(t, err); se.Op != "embed" || !strings.Contains(se.Error(), "1 embeddings for 2 texts") {
		t.Errorf("short reply: %v", err)
	}

	srv.ScriptEmbed(llmtest.Reply{Status: 400, Body: `{"error":{"message":"input too long"}}`})
	_, err = c.Embed(context.Background(), []string{"a"})
	if se := statusOf(t, err); se.StatusCode != 400 || !strings.Contains(se.Body, "input too long") {
		t.Errorf("400: %+v", se)
	}
}

func TestClientConnectionRefused(t *testing.T) {
	srv := llmtest.NewServer(t)
	cfg := srv.Config()
	cfg.BaseURL = "http://127.0.0.1:1/v1" // nothing listens on port 1
	cfg.MaxRetries = 1
	_, err := llm.NewClient(cfg).Complete(context.Background(), ask("x"))
	se := statusOf(t, err)
	var opErr *net.OpError
	if se.StatusCode != 0 || !errors.As(err, &opErr) {
		t.Errorf("refused connection: %+v", se)
	}
}
