// Package llmtest runs a local OpenAI-compatible server for tests: scripted
// or computed chat replies, streamed in OpenAI's exact SSE format, upstream
// failures (error statuses, malformed JSON, errors inside a 200 stream, cut
// connections), latency, a model's speed (time to the first token and a
// token rate, see WithFirstToken and WithTokenRate), deterministic
// embeddings, and a record of what was
// asked, including how many calls are still running so a test can check
// that a cancelled request reached the upstream.
//
//	srv := llmtest.NewServer(t)
//	srv.Script(llmtest.Reply{Text: "hi"})
//	c := llm.NewClient(srv.Config()) // or llm.ClientConfig{BaseURL: srv.URL(), Model: "test"}
//
// The server lives on 127.0.0.1 and shuts down with t.Cleanup: calls still
// running then are cancelled, so a reply that waits forever cannot hang the
// test.
package llmtest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/llm"
)

// Reply is one scripted answer of the server. The zero Reply answers 200
// with an empty text.
type Reply struct {
	// Text is the assistant's reply. Streamed, it is sent in the pieces
	// Chunks returns.
	Text string
	// Status is the HTTP status; 0 means 200. A status of 400 or more
	// sends Body, or an OpenAI-style error object when Body is empty.
	Status int
	// Body, when not empty, is sent as the response body as is, instead of
	// a completion (or instead of the SSE stream when streaming).
	Body string
	// Header holds extra response headers, e.g. Retry-After.
	Header http.Header
	// Delay waits before the response headers are sent.
	Delay time.Duration
	// ChunkDelay waits before each streamed chunk.
	ChunkDelay time.Duration
	// FirstToken and TokenDelay, when not zero, replace the server's time
	// to the first token and delay between tokens (WithFirstToken,
	// WithTokenRate) for this reply.
	FirstToken, TokenDelay time.Duration
	// Garbage sends malformed JSON: the whole body when not streaming, or
	// one data line after StreamErrorAfter content chunks when streaming.
	Garbage bool
	// StreamError is the message of the error event that ends a streamed
	// reply inside the 200 stream (data: {"error":{"message":...}}) after
	// StreamErrorAfter content chunks.
	StreamError string
	// StreamErrorAfter is the number of content chunks a failing stream
	// sends before it fails (with Garbage, Disconnect or StreamError). Set
	// alone, it sends an error event saying "upstream error".
	StreamErrorAfter int
	// Disconnect cuts the connection without finishing the response: after
	// StreamErrorAfter content chunks when streaming, right after the
	// headers otherwise.
	Disconnect bool
	// EmptyChoices sends a well-formed completion with no choices.
	EmptyChoices bool
	// NoUsage leaves usage out of the reply, even when the request asked
	// for it with stream_options.include_usage.
	NoUsage bool
	// Usage overrides the usage reported; by default prompt tokens are
	// llm.Estimate of the messages' contents and completion tokens
	// llm.Estimate of Text.
	Usage *openai.Usage
	// FinishReason defaults to "stop".
	FinishReason string
}

// Handler computes a reply for requests the script does not cover.
type Handler func(req openai.ChatCompletionRequest) Reply

// Option configures a Server.
type Option func(*Server)

// WithHandler sets the responder used when the script is empty. The default
// echoes the last user message.
func WithHandler(h Handler) Option { return func(s *Server) { s.handler = h } }

// WithoutRecording keeps no requests (Requests and EmbedRequests return
// none; Calls still counts), so a long load run against the server does not
// hold every request in memory.
func WithoutRecording() Option { return func(s *Server) { s.noRecord = true } }

// WithLatency adds d before every call is answered (chat and embeddings).
func WithLatency(d time.Duration) Option { return func(s *Server) { s.latency = d } }

// WithFirstToken makes the model take d to its first token. A streamed
// reply sends its headers and the role chunk at once and its first content
// chunk after d (after Delay and WithLatency's wait); a reply that is not
// streamed comes whole after the time the stream would have taken.
func WithFirstToken(d time.Duration) Option { return func(s *Server) { s.firstToken = d } }

// WithTokenRate makes the model produce perSecond tokens a second after its
// first: a streamed reply waits 1s/perSecond before each content chunk after
// the first (a chunk, see Chunks, stands for a token), and a reply that is
// not streamed waits that long for each of them before it is sent. 0 (the
// default) means no wait.
func WithTokenRate(perSecond float64) Option {
	return func(s *Server) {
		s.tokenDelay = 0
		if perSecond > 0 {
			s.tokenDelay = time.Duration(float64(time.Second) / perSecond)
		}
	}
}

// Sleep waits d unless ctx is done first, and reports whether the full time
// passed.
type Sleep func(ctx context.Context, d time.Duration) bool

// WithSleep makes the server wait with sleep instead of a timer for every
// delay it applies (WithLatency, WithFirstToken, WithTokenRate, Delay,
// ChunkDelay, FirstToken, TokenDelay), so a test can see the delays asked
// for, in order, and decide when each ends. Only delays above zero are asked
// for.
func WithSleep(sleep Sleep) Option { return func(s *Server) { s.sleep = sleep } }

// WithEmbedDim sets the dimension of the vectors /v1/embeddings returns
// (default 64).
func WithEmbedDim(n int) Option { return func(s *Server) { s.dim = n } }

// WithModels sets the model ids /v1/models lists (default "test").
func WithModels(ids ...string) Option { return func(s *Server) { s.models = ids } }

// EmbedRequest is one recorded call of /v1/embeddings.
type EmbedRequest struct {
	Model string
	Input []string
}

// Server is a running fake upstream. Its methods are safe for concurrent
// use.
type Server struct {
	srv     *httptest.Server
	done    chan struct{} // closed at shutdown
	handler Handler
	latency time.Duration
	dim     int
	models  []string

	firstToken, tokenDelay time.Duration // see WithFirstToken, WithTokenRate
	sleep                  Sleep         // nil: a timer

	mu        sync.Mutex
	idle      chan struct{} // closed and replaced whenever inFlight drops to 0
	script    []Reply
	embScript []Reply
	requests  []openai.ChatCompletionRequest
	embeds    []EmbedRequest
	noRecord  bool
	calls     int
	inFlight  int
	cancelled int
	seq       int
	// transports of the clients Config made, closed at shutdown
	transports []*http.Transport
}

// NewServer starts a server for the test t and stops it in t.Cleanup.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		done:    make(chan struct{}),
		idle:    make(chan struct{}),
		dim:     64,
		models:  []string{"test"},
		handler: echo,
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.track(s.chat))
	mux.HandleFunc("POST /v1/embeddings", s.track(s.embed))
	mux.HandleFunc("GET /v1/models", s.listModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path, "invalid_request_error")
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	close(s.done)
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.transports {
		t.CloseIdleConnections()
	}
}

// URL returns the base URL of the API, ending in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Config returns a client configuration for the server: name and model
// "test", retries after 1ms instead of half a second, and an HTTP client of
// its own whose connections are closed when the server stops. Adjust the
// fields, then call llm.NewClient.
func (s *Server) Config() llm.ClientConfig {
	t := &http.Transport{}
	s.mu.Lock()
	s.transports = append(s.transports, t)
	s.mu.Unlock()
	return llm.ClientConfig{
		Name:         "test",
		BaseURL:      s.URL(),
		Model:        "test",
		RetryBackoff: time.Millisecond,
		HTTPClient:   &http.Client{Transport: t},
	}
}

// Script queues replies for the next chat calls, first in first out. When
// the queue is empty the Handler answers.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, replies...)
	s.mu.Unlock()
}

// ScriptEmbed queues replies for the next embeddings calls. Only Status,
// Body, Header, Delay, Garbage and Disconnect apply; when the queue is empty
// the server answers with vectors.
func (s *Server) ScriptEmbed(replies ...Reply) {
	s.mu.Lock()
	s.embScript = append(s.embScript, replies...)
	s.mu.Unlock()
}

// Requests returns the chat requests received so far, in arrival order.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.requests...)
}

// EmbedRequests returns the embeddings requests received so far.
func (s *Server) EmbedRequests() []EmbedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbedRequest(nil), s.embeds...)
}

// Calls returns the number of chat completion calls received.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// InFlight returns the number of calls (chat and embeddings) being answered
// right now.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// Cancelled returns the number of calls that ended because the client went
// away (its context was cancelled or the connection closed) before the
// reply was complete.
func (s *Server) Cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

// WaitIdle waits until no call is in flight, for at most d, and reports
// whether that happened.
func (s *Server) WaitIdle(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s.mu.Lock()
		n, idle := s.inFlight, s.idle
		s.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-idle:
		case <-timer.C:
			return false
		}
	}
}

// track counts a handler in flight and records whether the client left
// before it finished.
func (s *Server) track(h func(w http.ResponseWriter, r *http.Request) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.inFlight++
		s.mu.Unlock()
		completed := false
		defer func() {
			s.mu.Lock()
			s.inFlight--
			if !completed && r.Context().Err() != nil {
				s.cancelled++
			}
			if s.inFlight == 0 {
				close(s.idle)
				s.idle = make(chan struct{})
			}
			s.mu.Unlock()
		}()
		completed = h(w, r)
	}
}

// wait sleeps for d unless the client leaves or the server stops first; it
// reports whether the full time passed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if s.sleep != nil {
		return s.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// tokenWait is how long the model takes to produce the i-th token (0-based)
// of rep.
func (s *Server) tokenWait(rep Reply, i int) time.Duration {
	if i == 0 {
		return cmp.Or(rep.FirstToken, s.firstToken)
	}
	return cmp.Or(rep.TokenDelay, s.tokenDelay)
}

// generation is how long the model takes to produce all of rep: the time
// to its first token and the delays between the others.
func (s *Server) generation(rep Reply) time.Duration {
	d := s.tokenWait(rep, 0)
	if n := len(Chunks(rep.Text)); n > 1 {
		d += time.Duration(n-1) * s.tokenWait(rep, 1)
	}
	return d
}

func echo(req openai.ChatCompletionRequest) Reply {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == openai.ChatMessageRoleUser {
			return Reply{Text: req.Messages[i].Content}
		}
	}
	return Reply{}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) bool {
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed request: "+err.Error(), "invalid_request_error")
		return true
	}
	s.mu.Lock()
	s.calls++
	s.seq++
	id := fmt.Sprintf("chatcmpl-llmtest-%d", s.seq)
	if !s.noRecord {
		s.requests = append(s.requests, req)
	}
	var rep Reply
	scripted := len(s.script) > 0
	if scripted {
		rep, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()
	if !scripted {
		rep = s.handler(req)
	}
	if !s.wait(r.Context(), s.latency+rep.Delay) {
		return false
	}
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if rep.Status >= 400 {
		if rep.Body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rep.Status)
			io.WriteString(w, rep.Body)
			return true
		}
		writeError(w, rep.Status, http.StatusText(rep.Status), errorType(rep.Status))
		return true
	}
	if req.Stream {
		return s.stream(w, r, req, rep, id)
	}
	return s.complete(w, r, req, rep, id)
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func writeError(w http.ResponseWriter, status int, msg, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil},
	})
}

func status(rep Reply) int {
	if rep.Status == 0 {
		return http.StatusOK
	}
	return rep.Status
}

func usage(req openai.ChatCompletionRequest, rep Reply) openai.Usage {
	if rep.Usage != nil {
		return *rep.Usage
	}
	p := 0
	for _, m := range req.Messages {
		p += llm.Estimate(m.Content)
	}
	c := llm.Estimate(rep.Text)
	return openai.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

// finish is the reply's finish_reason, "stop" by default.
func finish(rep Reply) *string {
	fin := cmp.Or(rep.FinishReason, "stop")
	return &fin
}

// The wire shapes below spell out OpenAI's responses field by field,
// including the nulls, so clients are tested against the real format.

type wireMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

// wireChoice is a choice of a completion (Message) or of a chunk (Delta,
// with a null finish_reason until the last).
type wireChoice struct {
	Index        int          `json:"index"`
	Message      *wireMessage `json:"message,omitempty"`
	Delta        *wireDelta   `json:"delta,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
}

// wireHead is what completions and chunks begin with.
type wireHead struct {
	ID                string  `json:"id"`
	Object            string  `json:"object"`
	Created           int64   `json:"created"`
	Model             string  `json:"model"`
	SystemFingerprint *string `json:"system_fingerprint"`
}

type wireCompletion struct {
	wireHead
	Choices []wireChoice  `json:"choices"`
	Usage   *openai.Usage `json:"usage,omitempty"`
}

type wireDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type wireChunk struct {
	wireHead
	Choices []wireChoice `json:"choices"`
	// Usage is present (null) in every chunk when the request asked for
	// usage, and set in the last one, as OpenAI does.
	Usage json.RawMessage `json:"usage,omitempty"`
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, req openai.ChatCompletionRequest, rep Reply, id string) bool {
	if rep.Disconnect {
		w.WriteHeader(status(rep))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.Body != "" {
		w.WriteHeader(status(rep))
		io.WriteString(w, rep.Body)
		return true
	}
	if rep.Garbage {
		w.WriteHeader(status(rep))
		io.WriteString(w, `{"id":"`+id+`","object":"chat.completion","choices":[{"index":0,"message":{"role":"assist`)
		return true
	}
	if !s.wait(r.Context(), s.generation(rep)) {
		return false
	}
	resp := wireCompletion{
		wireHead: wireHead{ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model},
		Choices:  []wireChoice{{Message: &wireMessage{Role: "assistant", Content: rep.Text}, FinishReason: finish(rep)}},
	}
	if rep.EmptyChoices {
		resp.Choices = []wireChoice{}
	}
	if !rep.NoUsage {
		u := usage(req, rep)
		resp.Usage = &u
	}
	w.WriteHeader(status(rep))
	json.NewEncoder(w).Encode(resp)
	return true
}

// stream sends rep as a streamed reply. Events are flushed before every
// wait and at the end, not one by one: pieces the model produces with no
// time between them leave together, as a fast upstream's do, and a piece
// that comes after a wait leaves when it is written.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req openai.ChatCompletionRequest, rep Reply, id string) bool {
	flusher := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status(rep))
	if rep.Body != "" {
		io.WriteString(w, rep.Body)
		return true
	}
	created := time.Now().Unix()
	withUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage && !rep.NoUsage
	send := func(c wireChunk) bool {
		c.wireHead = wireHead{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model}
		if withUsage && c.Usage == nil {
			c.Usage = json.RawMessage("null")
		}
		b, _ := json.Marshal(c)
		return writeEvent(w, b)
	}
	empty := ""
	choice := func(d wireDelta, fin *string) []wireChoice {
		return []wireChoice{{Delta: &d, FinishReason: fin}}
	}
	fail := func() {
		switch {
		case rep.Garbage:
			writeEvent(w, []byte(`{"id":"`+id+`","object":"chat.completion.chunk","choices":[{"delta":{"content":`))
		case rep.Disconnect:
			flusher.Flush() // what came before the cut reaches the client
			panic(http.ErrAbortHandler)
		default:
			msg := rep.StreamError
			if msg == "" {
				msg = "upstream error"
			}
			b, _ := json.Marshal(map[string]any{"error": map[string]any{
				"message": msg, "type": "server_error", "param": nil, "code": nil}})
			writeEvent(w, b)
		}
		flusher.Flush()
	}
	failing := rep.Garbage || rep.StreamError != "" || rep.Disconnect || rep.StreamErrorAfter > 0
	if rep.EmptyChoices {
		if !send(wireChunk{Choices: []wireChoice{}}) {
			return false
		}
	} else {
		if !send(wireChunk{Choices: choice(wireDelta{Role: "assistant", Content: &empty}, nil)}) {
			return false
		}
		for i, piece := range Chunks(rep.Text) {
			if failing && i == rep.StreamErrorAfter {
				fail()
				return true
			}
			d := rep.ChunkDelay + s.tokenWait(rep, i)
			if d > 0 {
				flusher.Flush()
			}
			if !s.wait(r.Context(), d) {
				return false
			}
			if !send(wireChunk{Choices: choice(wireDelta{Content: &piece}, nil)}) {
				return false
			}
		}
		if failing {
			fail()
			return true
		}
		if !send(wireChunk{Choices: choice(wireDelta{}, finish(rep))}) {
			return false
		}
	}
	if withUsage {
		b, _ := json.Marshal(usage(req, rep))
		if !send(wireChunk{Choices: []wireChoice{}, Usage: b}) {
			return false
		}
	}
	if !writeEvent(w, []byte("[DONE]")) {
		return false
	}
	flusher.Flush()
	return true
}

// writeEvent writes data as one SSE event, unflushed.
func writeEvent(w io.Writer, data []byte) bool {
	b := make([]byte, 0, len(data)+len("data: \n\n"))
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	_, err := w.Write(b)
	return err == nil
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	data := make([]model, len(s.models))
	for i, id := range s.models {
		data[i] = model{ID: id, Object: "model", OwnedBy: "llmtest"}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}
