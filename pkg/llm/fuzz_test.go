package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
)

// fuzzTransport answers every request with body as a 200 Server-Sent
// Events stream, in process: go-openai's SSE parser and the client's
// handling of what it yields meet arbitrary bytes without a network.
type fuzzTransport struct{ body []byte }

func (f fuzzTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(string(f.body))), ContentLength: -1}, nil
}

// FuzzStreamSSE feeds arbitrary SSE bodies to the client's Stream: it must
// not panic or hang, must fail only with a *llm.StatusError, and on success
// return as Text exactly what it passed to the callback.
//
//	go test ./pkg/llm -run '^$' -fuzz FuzzStreamSSE -fuzztime 30s
func FuzzStreamSSE(f *testing.F) {
	chunk := func(content string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
	}
	f.Add([]byte(chunk("乾，") + chunk("元亨利贞。") + "data: [DONE]\n\n"))
	f.Add([]byte(chunk("a") + `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}` + "\n\ndata: [DONE]\n\n"))
	f.Add([]byte(chunk("a") + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"))
	f.Add([]byte(chunk("a") + "data: {not json\n\n"))
	f.Add([]byte(chunk("a")))
	f.Add([]byte(": keep-alive\n\nevent: message\nid: 1\nretry: 10\ndata: [DONE]\n\n"))
	f.Add([]byte("data:" + strings.Repeat("x", 5000) + "\r\n\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		c := llm.NewClient(llm.ClientConfig{Name: "m", BaseURL: "http://upstream.invalid/v1", Model: "m",
			MaxRetries: -1, Timeout: 10 * time.Second, HTTPClient: &http.Client{Transport: fuzzTransport{body: body}}})
		var got strings.Builder
		resp, err := c.Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "乾卦？"}}},
			func(d string) error { got.WriteString(d); return nil })
		if err != nil {
			var se *llm.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *llm.StatusError: %v", err, err)
			}
			return
		}
		if resp.Text != got.String() {
			t.Fatalf("Text %q, streamed %q", resp.Text, got.String())
		}
		if u := resp.Usage; u.PromptTokens < 0 || u.CompletionTokens < 0 {
			t.Fatalf("negative usage %+v", u)
		}
	})
}
