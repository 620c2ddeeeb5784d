package server

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// TestDownloadPreviewIsInert: an uploaded page, image or script is never
// rendered as active content on the app's origin: a preview shows it as
// text/plain, a download is an attachment, and both say nosniff and carry
// a sandboxing CSP.
func TestDownloadPreviewIsInert(t *testing.T) {
	ts := newKBTestServer(t, nil)
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "zy"}, &env)
	evil := `<html><body><p>乾，元亨，利贞。</p><script>fetch("/conversations").then(r => r.text()).then(alert)</script></body></html>`
	env = ts.upload(t, map[string]string{"knowledge_base_name": "zy"}, map[string][]byte{
		"evil.html": []byte(evil),
		"notes.md":  []byte("# 乾\n\n乾，元亨，利贞。"),
	})
	if len(env.failed(t)) != 0 {
		t.Fatalf("upload: %+v", env)
	}
	for _, tc := range []struct {
		file, preview, ctype, disposition string
	}{
		{"evil.html", "true", "text/plain", "inline"},
		{"evil.html", "false", "text/plain", "attachment"},
		{"notes.md", "true", "text/plain", "inline"},
	} {
		resp, err := http.Get(ts.url + "/knowledge_base/download_doc?" + url.Values{"knowledge_base_name": {"zy"}, "file_name": {tc.file}, "preview": {tc.preview}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 200 || !strings.HasPrefix(h.Get("Content-Type"), tc.ctype) || !strings.HasPrefix(h.Get("Content-Disposition"), tc.disposition) {
			t.Errorf("%s preview=%s: %d, Content-Type %q, Content-Disposition %q; want %s, %s", tc.file, tc.preview, resp.StatusCode,
				h.Get("Content-Type"), h.Get("Content-Disposition"), tc.ctype, tc.disposition)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("%s: nosniff %q, CSP %q", tc.file, h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"))
		}
		if tc.file == "evil.html" && string(body) != evil {
			t.Errorf("the original must come back byte for byte: %q", body)
		}
	}
	for file, want := range map[string][2]string{
		"a.svg": {"text/plain; charset=utf-8", "inline"}, "a.xml": {"text/plain; charset=utf-8", "inline"},
		"a.js": {"text/plain; charset=utf-8", "inline"}, "a.xhtml": {"text/plain; charset=utf-8", "inline"},
		"a.pdf": {"application/pdf", "inline"}, "a.bin": {"application/octet-stream", "attachment"},
		"a.HTM": {"text/plain; charset=utf-8", "inline"},
	} {
		ctype, inline := downloadType(file, true)
		if got := map[bool]string{true: "inline", false: "attachment"}[inline]; ctype != want[0] || got != want[1] {
			t.Errorf("downloadType(%s) = %s, %s; want %s, %s", file, ctype, got, want[0], want[1])
		}
	}
}

// TestLongNamesAreClientErrors: names over 255 bytes (a 100-character
// Chinese KB name, a 90-character Chinese file name) are refused with a
// clear 4xx before anything is written: no 500, nothing listed.
func TestLongNamesAreClientErrors(t *testing.T) {
	ts := newKBTestServer(t, nil)
	var env envelope
	long := strings.Repeat("周", 100)
	if status := ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": long}, &env); status != 200 || env.Code != 400 || !strings.Contains(env.Msg, "bytes") {
		t.Errorf("100-character Chinese KB name: HTTP %d %+v; want code 400 naming the byte limit", status, env)
	}
	for _, bad := range []string{"a\u202eb", "a\u200bb", "a\tb"} {
		if ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": bad}, &env); env.Code != 400 {
			t.Errorf("KB name %q: %+v; want code 400", bad, env)
		}
	}
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "zy"}, &env)
	name := strings.Repeat("乾", 90) + ".txt"
	env = ts.upload(t, map[string]string{"knowledge_base_name": "zy"}, map[string][]byte{name: []byte("乾，元亨，利贞。")})
	if msg := env.failed(t)[name]; env.Code != 200 || !strings.Contains(msg, "bytes") || strings.Contains(msg, "/tmp") {
		t.Errorf("90-character Chinese file name: %+v; want a failed file naming the byte limit", env)
	}
	ts.do(t, http.MethodGet, "/knowledge_base/list_files?knowledge_base_name=zy", "", nil, &env)
	if string(env.Data) != "[]" {
		t.Errorf("files after the refused upload: %s", env.Data)
	}
}

// TestConversationIDsValidated: conversation ids outside the documented
// character set or over 128 bytes, and names with control or invisible
// characters, are 400s.
func TestConversationIDsValidated(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, id := range []string{"a\x00b", "a\tb", "a\u200bb", "a\u202eb", strings.Repeat("a", 60<<10), "对话"} { // 60 KB: the test server takes 64 KB bodies {
		if status, body := ts.post(t, "/chat/chat", map[string]any{"query": "乾", "conversation_id": id, "stream": false}); status != http.StatusBadRequest {
			t.Errorf("chat with conversation_id %.12q: %d %v; want 400", id, status, body)
		}
		if status, body := ts.post(t, "/conversations", map[string]any{"id": id}); status != http.StatusBadRequest {
			t.Errorf("create conversation %.12q: %d %v; want 400", id, status, body)
		}
	}
	for _, name := range []string{"a\x00b", "evil\u202etxt.exe", "x\u200b", strings.Repeat("名", 200)} {
		if status, body := ts.post(t, "/conversations", map[string]any{"name": name}); status != http.StatusBadRequest {
			t.Errorf("create conversation named %.12q: %d %v; want 400", name, status, body)
		}
	}
	for _, id := range []string{"d1", "3f2c9a1e-8b7d-4c2a-9e1f-0a1b2c3d4e5f", "user-42:draft@x.y_z"} {
		if status, body := ts.post(t, "/conversations", map[string]any{"id": id, "name": "乾卦 notes"}); status != http.StatusCreated {
			t.Errorf("create conversation %q: %d %v; want 201", id, status, body)
		}
	}
}

// TestCutStreamsChargeTokens: streams cut by the upstream before its final
// usage chunk are charged what they produced (and their prompt up front),
// so a key's tokens-per-minute limit holds; they were charged 0 and never
// limited.
func TestCutStreamsChargeTokens(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: strings.Repeat("The dragon lies hidden in the deep water. ", 40), Disconnect: true, StreamErrorAfter: 250}
	}))
	as := newAccessServerWith(t, func(a *Access) { a.TokensPerMinute = 300 }, func(models *llm.Registry) {
		cfg := up.Config()
		cfg.Name, cfg.MaxRetries = "up", 0
		models.Add("up", chargingModel{llm.NewClient(cfg), llm.NewTokenizer("up")})
	})
	tok := as.key(t, "alice", auth.RoleUser, 0, 0)
	limited := false
	for i := range 6 {
		req, _ := http.NewRequest(http.MethodPost, as.url+"/chat/chat",
			strings.NewReader(`{"query":"乾卦初九是什么意思？","model_name":"up","stream":true}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = true
			break
		}
		if i == 5 {
			t.Errorf("six cut streams of ~300 tokens each passed a 300 tokens-per-minute limit")
		}
	}
	if !limited {
		t.Error("never limited")
	}
}

// chargingModel charges a call's prompt when it starts and what it
// streamed when it ends to the request's auth.Meter, as the metered models
// the wiring installs (internal/app) do.
type chargingModel struct {
	llm.Model
	tok *llm.Tokenizer
}

func (m chargingModel) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	auth.Spend(ctx, int64(m.tok.CountMessages(req.Messages)))
	var got strings.Builder
	resp, err := m.Model.Stream(ctx, req, func(d string) error {
		got.WriteString(d)
		if fn == nil {
			return nil
		}
		return fn(d)
	})
	auth.Spend(ctx, int64(m.tok.Count(got.String())))
	return resp, err
}

// TestTakenConversationIDs: POST /conversations with an id another user
// holds answers as for an id the caller holds: the id is taken, nothing
// says whose.
func TestTakenConversationIDs(t *testing.T) {
	as := newAccessServer(t, nil)
	alice := as.key(t, "alice", auth.RoleUser, 0, 0)
	bob := as.key(t, "bob", auth.RoleUser, 0, 0)
	for tok, id := range map[string]string{alice: "c-alice", bob: "c-bob"} {
		if status, body, _ := as.do(t, tok, http.MethodPost, "/conversations", map[string]any{"id": id}); status != http.StatusCreated {
			t.Fatalf("create %s = %d %s", id, status, body)
		}
	}
	ts, tb, _ := as.do(t, bob, http.MethodPost, "/conversations", map[string]any{"id": "c-alice"})
	ms, mb, _ := as.do(t, bob, http.MethodPost, "/conversations", map[string]any{"id": "c-bob"})
	if ts != ms || strings.ReplaceAll(tb, "c-alice", "ID") != strings.ReplaceAll(mb, "c-bob", "ID") || strings.Contains(tb, "alice\"") {
		t.Errorf("another's id: %d %s; own id: %d %s; want the same answer", ts, tb, ms, mb)
	}
}
