package server

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/gin-gonic/gin"
)

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func TestWantsEnglish(t *testing.T) {
	for _, tt := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{"en", true},
		{"en-US,en;q=0.9", true},
		{"zh-CN,zh;q=0.9,en;q=0.8", false},
		{"en;q=0.5,zh-CN", false},
		{"fr-FR", true},
		{"*", false},
	} {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
		if tt.header != "" {
			c.Request.Header.Set("Accept-Language", tt.header)
		}
		if got := wantsEnglish(c); got != tt.want {
			t.Errorf("Accept-Language %q: english %v, want %v", tt.header, got, tt.want)
		}
	}
}

// TestUploadErrorsInTheRequestLanguage: an upload's per-file errors follow
// Accept-Language: English for the English interface, Chatchat's Chinese
// without the header.
func TestUploadErrorsInTheRequestLanguage(t *testing.T) {
	ts := newKBTestServer(t, nil)
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "hr"}, &env)
	for _, tt := range []struct {
		lang    string
		english bool
	}{{"en-US,en;q=0.9", true}, {"", false}} {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		w.WriteField("knowledge_base_name", "hr")
		part, _ := w.CreateFormFile("files", "x.png")
		part.Write([]byte("\x89PNG not a document"))
		w.Close()
		req, _ := http.NewRequest(http.MethodPost, ts.url+"/knowledge_base/upload_docs", &b)
		req.Header.Set("Content-Type", w.FormDataContentType())
		if tt.lang != "" {
			req.Header.Set("Accept-Language", tt.lang)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		body := buf.String()
		if !strings.Contains(body, "x.png") {
			t.Fatalf("Accept-Language %q: the reply %s does not report x.png", tt.lang, body)
		}
		_, failed, _ := strings.Cut(body, `"failed_files"`)
		if hasHan(failed) == tt.english {
			t.Errorf("Accept-Language %q: failed files %s (want English: %v)", tt.lang, failed, tt.english)
		}
	}
}

// TestEnglishQuestionNoChineseMessage: search_engine_chat asked in English
// finds nothing and says so in English.
func TestEnglishQuestionNoChineseMessage(t *testing.T) {
	srv := searchTestServer(t, localSearchConfig(t))
	code, out := searchPost(t, srv, "/chat/search_engine_chat", map[string]any{"query": "What is the quarterly revenue of the zeppelin factory?", "stream": false})
	if code != http.StatusOK {
		t.Fatalf("HTTP %d %v", code, out)
	}
	if answer, _ := out["answer"].(string); answer == "" || hasHan(answer) {
		t.Errorf("English question answered %q, want an English message", answer)
	}
}
