package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
)

// TestClientWireShapes: replies in the shapes OpenAI-compatible servers
// send, written by hand rather than by the test server, read as each
// should be.
func TestClientWireShapes(t *testing.T) {
	long := strings.Repeat("乾", 3000) // one chunk longer than the reader's buffer
	chunk := func(s string) string {
		return fmt.Sprintf(`{"choices":[{"delta":{"content":%q},"finish_reason":null}]}`, s)
	}
	const stop = `{"choices":[{"delta":{},"finish_reason":"stop"}]}`
	tests := []struct {
		name     string
		stream   bool
		body     string
		want     string // the reply's text
		wantErr  string // a substring of the error; "" for none
		wantBody string // a substring of the StatusError's body
	}{
		{name: "data without a space, comments and event lines", stream: true,
			body: ": keep-alive\nevent: message\ndata:" + chunk("a") + "\n\nid: 2\ndata:  " + chunk("b") + "\r\n\r\ndata: " + stop + "\n\ndata: [DONE]\n\n",
			want: "ab"},
		{name: "a chunk longer than the buffer", stream: true,
			body: "data: " + chunk(long) + "\n\ndata: " + stop + "\n\ndata: [DONE]\n\n", want: long},
		{name: "no newline after [DONE]", stream: true,
			body: "data: " + chunk("a") + "\n\ndata: " + stop + "\n\ndata: [DONE]", want: "a"},
		{name: "an error object without data lines", stream: true,
			body:    "data: " + chunk("a") + "\n\n{\"error\":{\"message\":\"quota exceeded\",\"type\":\"x\"}}\n",
			wantErr: "quota exceeded", wantBody: "quota exceeded"},
		{name: "an error event", stream: true,
			body:    `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n",
			wantErr: "overloaded", wantBody: "overloaded"},
		{name: "only lines without data", stream: true,
			body:    strings.Repeat(": ping\n", 400),
			wantErr: "without data"},
		{name: "cut before [DONE]", stream: true,
			body: "data: " + chunk("a") + "\n\n", wantErr: "[DONE]"},
		{name: "content as parts", body: `{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"乾"},{"type":"image_url","image_url":{}},{"type":"text","text":"坤"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
			want: "乾坤"},
		{name: "null content", body: `{"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}`,
			want: ""},
		{name: "content neither string nor parts", body: `{"choices":[{"message":{"content":7}}]}`,
			wantErr: "malformed", wantBody: `"content":7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/chat/completions" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			c := llm.NewClient(llm.ClientConfig{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1})
			var resp llm.Response
			var err error
			if tt.stream {
				resp, err = c.Stream(context.Background(), ask("x"), nil)
			} else {
				resp, err = c.Complete(context.Background(), ask("x"))
			}
			if tt.wantErr == "" {
				if err != nil || resp.Text != tt.want {
					t.Fatalf("got %q, %v; want %q", resp.Text, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if se := statusOf(t, err); !strings.Contains(se.Body, tt.wantBody) {
				t.Errorf("body %q, want it to contain %q", se.Body, tt.wantBody)
			}
		})
	}
}
