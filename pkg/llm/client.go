package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Defaults of ClientConfig's zero values.
const (
	DefaultMaxRetries   = 2
	DefaultRetryBackoff = 500 * time.Millisecond
	// DefaultEmbedBatch is small enough for every common provider
	// (DashScope's text-embedding-v3 takes at most 10 texts per call).
	DefaultEmbedBatch = 10
)

const (
	maxBackoff    = 20 * time.Second // cap of the exponential backoff
	maxRetryAfter = time.Minute      // a longer Retry-After is not waited for
	maxErrorBody  = 64 << 10         // bytes of a response body kept for errors
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Name is the model's configured name, reported in Response.Model and
	// in errors; empty means Model.
	Name string
	// BaseURL is the API's base URL including /v1 (e.g.
	// https://api.deepseek.com/v1, http://localhost:11434/v1); empty means
	// OpenAI's.
	BaseURL string
	APIKey  string
	// Model is the model as the upstream names it (e.g. "gpt-4o-mini",
	// "deepseek-chat", "qwen-plus").
	Model string
	// EmbedModel is the model Embed uses; empty means Model.
	EmbedModel string
	// EmbedBatch is the number of texts sent per embeddings call; 0 means
	// DefaultEmbedBatch.
	EmbedBatch int
	// Timeout bounds one attempt: one HTTP call, a whole stream included.
	// 0 means no limit beyond the caller's context.
	Timeout time.Duration
	// MaxRetries is the number of retries after a failed attempt; 0 means
	// DefaultMaxRetries, a negative number none.
	MaxRetries int
	// RetryBackoff is the wait before the first retry, doubled for each
	// further one (with jitter, capped at 20s); 0 means DefaultRetryBackoff.
	RetryBackoff time.Duration
	// HTTPClient makes the calls; nil means a new http.Client.
	HTTPClient *http.Client
}

// Client talks to any OpenAI-compatible chat and embeddings API (OpenAI,
// DeepSeek, Qwen/DashScope, vLLM, Ollama, Xinference...). It implements
// Model and Embedder and is safe for concurrent use.
//
// Every call carries the caller's context to the HTTP request, so a caller
// that goes away cancels the upstream work. A failed attempt is retried
// with exponential backoff and jitter when the upstream answered 408, 429
// or 5xx or the connection failed (or the attempt timed out), honouring
// Retry-After; it is never retried once the caller's context is done, nor
// once a streamed piece has reached the callback. Upstream failures are
// returned as *StatusError.
type Client struct {
	cfg  ClientConfig
	name string
	api  *openai.Client // embeddings
	// http, baseURL and authorization make the chat calls (see wire.go).
	http          recordingDoer
	baseURL       string
	authorization string
	tok           *Tokenizer
	// noStreamUsage is set once the upstream has refused
	// stream_options.include_usage; streams then go without it.
	noStreamUsage atomic.Bool
}

// NewClient returns a client for cfg.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Name == "" {
		cfg.Name = cfg.Model
	}
	if cfg.EmbedModel == "" {
		cfg.EmbedModel = cfg.Model
	}
	if cfg.EmbedBatch <= 0 {
		cfg.EmbedBatch = DefaultEmbedBatch
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	oc.HTTPClient = recordingDoer{hc}
	c := &Client{cfg: cfg, name: cfg.Name, api: openai.NewClientWithConfig(oc), http: recordingDoer{hc}, baseURL: oc.BaseURL, tok: NewTokenizer(cfg.Model)}
	if cfg.APIKey != "" {
		c.authorization = "Bearer " + cfg.APIKey
	}
	return c
}

// Name returns the model's configured name.
func (c *Client) Name() string { return c.name }

// Complete sends req and returns the whole reply. req.Model is ignored: the
// client always asks for its configured model. Usage is the upstream's, or
// counted locally (Usage.Estimated) when the upstream reports none.
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := json.Marshal(c.wireRequest(req))
	if err != nil {
		return Response{}, fmt.Errorf("encode request: %w", err)
	}
	var out Response
	err = c.do(ctx, "chat", func(ctx context.Context, at *attempt) error {
		r, err := c.complete(ctx, at, body)
		if err != nil {
			return err
		}
		if len(r.Choices) == 0 {
			return &StatusError{StatusCode: at.status, Body: string(at.body.Bytes()), Err: errNoChoices}
		}
		ch := r.Choices[0]
		out = Response{
			Text:         string(ch.Message.Content),
			Model:        c.name,
			FinishReason: string(ch.FinishReason),
			Usage:        Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.TotalTokens},
		}
		return nil
	})
	if err != nil {
		return Response{}, err
	}
	if out.Usage.TotalTokens == 0 {
		out.Usage = c.estimate(req, out.Text)
	}
	return out, nil
}

// Stream sends req and calls fn with each piece of the reply as it arrives.
// It asks the upstream for usage (stream_options.include_usage) and counts
// locally when none comes. A stream that fails before its first piece
// reached fn is retried like Complete; after that the error is returned as
// is. An error from fn stops the stream and is returned unchanged.
func (c *Client) Stream(ctx context.Context, req Request, fn func(delta string) error) (Response, error) {
	if fn == nil {
		fn = func(string) error { return nil }
	}
	withUsage := !c.noStreamUsage.Load()
	resp, err := c.stream(ctx, req, fn, withUsage)
	var se *StatusError
	if withUsage && errors.As(err, &se) && se.StatusCode == http.StatusBadRequest && strings.Contains(se.Body, "stream_options") {
		// Some OpenAI-compatible servers refuse stream_options: go without.
		c.noStreamUsage.Store(true)
		return c.stream(ctx, req, fn, false)
	}
	return resp, err
}

func (c *Client) stream(ctx context.Context, req Request, fn func(string) error, withUsage bool) (Response, error) {
	wreq := c.wireRequest(req)
	wreq.Stream = true
	if withUsage {
		wreq.StreamOptions = &wireStreamOptions{IncludeUsage: true}
	}
	body, err := json.Marshal(wreq)
	if err != nil {
		return Response{}, fmt.Errorf("encode request: %w", err)
	}
	var out Response
	var usage *openai.Usage
	err = c.do(ctx, "stream", func(ctx context.Context, at *attempt) error {
		resp, err := c.post(ctx, at, body, true)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		s := newStreamLines(resp.Body)
		var text strings.Builder
		var chunk streamChunk
		finish, choices := "", false
		usage = nil
		for {
			raw, err := s.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if err := decodeChunk(raw, &chunk); err != nil {
				return &StatusError{StatusCode: at.status, Body: string(raw), Err: fmt.Errorf("malformed stream chunk: %w", err)}
			}
			if chunk.Usage != nil {
				usage = chunk.Usage
			}
			if len(chunk.Choices) == 0 {
				continue
			}
			choices = true
			ch := chunk.Choices[0]
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
			if d := ch.Delta.Content; d != "" {
				at.delivered = true
				text.WriteString(d)
				if err := fn(d); err != nil {
					return callbackError{err}
				}
			}
		}
		switch {
		case !s.done && finish == "":
			// The body ended without [DONE] or a finish reason: the
			// upstream went away mid-stream.
			return &StatusError{StatusCode: at.status, Err: errStreamCut}
		case !choices:
			return &StatusError{StatusCode: at.status, Body: at.tail(), Err: errNoChoices}
		}
		out = Response{Text: text.String(), Model: c.name, FinishReason: finish}
		return nil
	})
	if err != nil {
		return Response{}, err
	}
	if usage != nil && usage.TotalTokens > 0 {
		out.Usage = Usage{PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens, TotalTokens: usage.TotalTokens}
	} else {
		out.Usage = c.estimate(req, out.Text)
	}
	return out, nil
}

// streamChunk is what Stream reads of each chunk of a streamed reply: the
// fields of openai.ChatCompletionStreamResponse it uses. A reply comes in
// one chunk per token or so, and decoding only these costs a fraction of
// decoding the whole struct (decodeChunk decodes them).
type streamChunk struct {
	Choices []chunkChoice `json:"choices"`
	Usage   *openai.Usage `json:"usage"`
}

type chunkChoice struct {
	Delta struct {
		Content string `json:"content"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

// Embed returns one vector per text, in order, sending EmbedBatch texts per
// call. All vectors have the same dimension; an upstream that breaks this
// (wrong count, missing index, mixed dimensions) gets a *StatusError.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.cfg.EmbedBatch {
		batch := texts[start:min(start+c.cfg.EmbedBatch, len(texts))]
		var vecs [][]float32
		err := c.do(ctx, "embed", func(ctx context.Context, at *attempt) error {
			at.keepBody = true
			r, err := c.api.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: batch, Model: openai.EmbeddingModel(c.cfg.EmbedModel)})
			if err != nil {
				return err
			}
			bad := func(format string, args ...any) error {
				return &StatusError{StatusCode: at.status, Body: string(at.body.Bytes()), Err: fmt.Errorf(format, args...)}
			}
			if len(r.Data) != len(batch) {
				return bad("got %d embeddings for %d texts", len(r.Data), len(batch))
			}
			vecs = make([][]float32, len(batch))
			for _, d := range r.Data {
				if d.Index < 0 || d.Index >= len(batch) || vecs[d.Index] != nil {
					return bad("embedding index %d out of place", d.Index)
				}
				vecs[d.Index] = d.Embedding
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, v := range vecs {
			if len(v) == 0 || len(v) != len(vecs[0]) || (len(out) > 0 && len(v) != len(out[0])) {
				return nil, &StatusError{Op: "embed", Model: c.cfg.EmbedModel, StatusCode: http.StatusOK, Err: fmt.Errorf("embeddings of mixed or zero dimension (%d)", len(v))}
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

var (
	errNoChoices = errors.New("reply has no choices")
	errStreamCut = fmt.Errorf("stream ended before [DONE]: %w", io.ErrUnexpectedEOF)
)

func isReasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

func (c *Client) estimate(req Request, reply string) Usage {
	p, r := c.tok.CountMessages(req.Messages), c.tok.Count(reply)
	return Usage{PromptTokens: p, CompletionTokens: r, TotalTokens: p + r, Estimated: true}
}

// do runs one call with retries. Each attempt gets its own timeout and a
// record of the HTTP response it saw.
func (c *Client) do(ctx context.Context, op string, call func(ctx context.Context, at *attempt) error) error {
	model := c.name
	if op == "embed" {
		model = c.cfg.EmbedModel
	}
	for try := 0; ; try++ {
		at := &attempt{}
		actx := context.WithValue(ctx, attemptKey{}, at)
		cancel := context.CancelFunc(func() {})
		if c.cfg.Timeout > 0 {
			actx, cancel = context.WithTimeout(actx, c.cfg.Timeout)
		}
		err := call(actx, at)
		cancel()
		if err == nil {
			return nil
		}
		var cb callbackError
		if errors.As(err, &cb) {
			return cb.err
		}
		se := statusError(op, model, err, at)
		if ctx.Err() != nil {
			se.Err = ctx.Err()
			return se
		}
		if try >= c.cfg.MaxRetries || at.delivered || !retryable(se, at) {
			return se
		}
		wait, ok := c.backoff(try, at.header)
		if !ok {
			return se
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			se.Err = ctx.Err()
			return se
		case <-t.C:
		}
	}
}

// statusError turns the error of one attempt into a *StatusError carrying
// the status and body the upstream sent.
func statusError(op, model string, err error, at *attempt) *StatusError {
	var se *StatusError
	if errors.As(err, &se) {
		se.Op, se.Model = op, model
		return se
	}
	se = &StatusError{Op: op, Model: model, StatusCode: at.status, Err: err}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &reqErr):
		se.StatusCode, se.Body, se.Err = reqErr.HTTPStatusCode, string(reqErr.Body), nil
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0:
		se.StatusCode, se.Body, se.Err = apiErr.HTTPStatusCode, string(at.body.Bytes()), nil
	case errors.As(err, &apiErr):
		// An error event inside a 200 stream.
		b, _ := json.Marshal(openai.ErrorResponse{Error: apiErr})
		se.Body, se.Err = string(b), nil
	case at.status != 0 && at.readErr == nil:
		// The body arrived whole but did not decode.
		se.Body = string(at.body.Bytes())
		se.Err = fmt.Errorf("malformed response: %w", err)
	}
	return se
}

// retryable reports whether an attempt that failed with se may be tried
// again: status 408, 429 and 5xx, and failures of the connection itself.
func retryable(se *StatusError, at *attempt) bool {
	switch s := se.StatusCode; {
	case s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500:
		return true
	case s != 0 && at.readErr == nil && !errors.Is(se.Err, errStreamCut):
		// The body arrived whole: a client error or a malformed reply.
		return false
	}
	var opErr *net.OpError
	return at.readErr != nil ||
		errors.As(se.Err, &opErr) ||
		errors.Is(se.Err, io.EOF) || errors.Is(se.Err, io.ErrUnexpectedEOF) ||
		errors.Is(se.Err, syscall.ECONNRESET) || errors.Is(se.Err, syscall.ECONNREFUSED) ||
		errors.Is(se.Err, context.DeadlineExceeded) // the attempt's own timeout
}

// backoff returns how long to wait before retry number try+1: the
// upstream's Retry-After when it sent one (false when that is too long to
// wait for), else RetryBackoff·2^try with jitter.
func (c *Client) backoff(try int, h http.Header) (time.Duration, bool) {
	if d, ok := retryAfter(h, time.Now()); ok {
		return d, d <= maxRetryAfter
	}
	d := c.cfg.RetryBackoff << min(try, 16)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	// "Equal jitter": half fixed, half random.
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1)), true
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an
// HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// callbackError marks an error returned by the caller's stream callback.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// attempt records what one HTTP attempt saw. The HTTP client finds it in
// the request's context (see recordingDoer), since go-openai's errors keep
// neither the headers (Retry-After) nor always the raw body.
type attempt struct {
	status    int
	header    http.Header
	keepBody  bool         // keep the body of successful responses too
	body      bytes.Buffer // the first maxErrorBody bytes of the body
	readErr   error        // reading the body failed (not EOF)
	last      []byte       // the last bytes read, to spot "data: [DONE]"
	delivered bool         // a streamed piece reached the caller
}

type attemptKey struct{}

func (a *attempt) sawDone() bool { return bytes.Contains(a.last, []byte("[DONE]")) }

func (a *attempt) tail() string { return strings.TrimSpace(string(a.last)) }

// recordingDoer is the HTTP client given to go-openai: it records the
// status, headers and (a bounded prefix of) the body of each response in
// the attempt found in the request's context.
type recordingDoer struct{ c *http.Client }

func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	at, ok := req.Context().Value(attemptKey{}).(*attempt)
	if err != nil || !ok {
		return resp, err
	}
	at.status, at.header = resp.StatusCode, resp.Header
	resp.Body = &recordingBody{ReadCloser: resp.Body, at: at, keep: at.keepBody || resp.StatusCode >= 400}
	return resp, nil
}

type recordingBody struct {
	io.ReadCloser
	at   *attempt
	keep bool
}

const tailSize = 64

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		if b.keep && b.at.body.Len() < maxErrorBody {
			b.at.body.Write(p[:min(n, maxErrorBody-b.at.body.Len())])
		}
		// The last tailSize bytes, kept in place: a stream is read a few
		// bytes at a time.
		tail := p[max(0, n-tailSize):n]
		if over := len(b.at.last) + len(tail) - tailSize; over > 0 {
			b.at.last = b.at.last[:copy(b.at.last, b.at.last[over:])]
		}
		b.at.last = append(b.at.last, tail...)
	}
	if err != nil && err != io.EOF {
		b.at.readErr = err
	}
	return n, err
}
