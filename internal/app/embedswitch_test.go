package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// TestEmbedderSwitch is a knowledge base moved to another embedder: the
// demo base is built with the offline embedder (512 dimensions); the server
// restarts with an embedding endpoint of 64 dimensions, kb chat asks for
// recreate_vector_store, which rebuilds it, and from then on every read
// path answers from the new index, also after another restart.
func TestEmbedderSwitch(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = t.TempDir()
	first, err := New(ctx, cfg, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	up := llmtest.NewServer(t, llmtest.WithEmbedDim(64))
	cfg.Embed.BaseURL, cfg.Embed.Model = up.URL(), "embed-64"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	serve := func() (*App, *httptest.Server) {
		t.Helper()
		a, err := New(ctx, cfg, Options{Log: log})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(a.Server.Handler())
		t.Cleanup(func() { hs.Close(); a.Close() })
		return a, hs
	}
	post := func(hs *httptest.Server, path, body string) (int, string) {
		t.Helper()
		resp, err := hs.Client().Post(hs.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const kbChat = `{"query":"乾卦的卦辞是什么？","knowledge_base_name":"zhouyi","stream":false}`
	// answers checks that every read path finds the document in zhouyi.
	answers := func(hs *httptest.Server, when string) {
		t.Helper()
		status, body := post(hs, "/chat/knowledge_base_chat", kbChat)
		var reply struct {
			Docs []string `json:"docs"`
		}
		if status != http.StatusOK || json.Unmarshal([]byte(body), &reply) != nil || len(reply.Docs) == 0 {
			t.Errorf("%s: knowledge_base_chat: %d %.300s; want 200 with docs", when, status, body)
		}
		status, body = post(hs, "/knowledge_base/search_docs", `{"query":"乾卦的卦辞","knowledge_base_name":"zhouyi","top_k":3}`)
		if status != http.StatusOK || !strings.Contains(body, "page_content") {
			t.Errorf("%s: search_docs: %d %.300s; want 200 with documents", when, status, body)
		}
		status, body = post(hs, "/chat/mix_chat", `{"query":"乾卦的卦辞是什么？","knowledge_base_name":"zhouyi","answerers":["kb"],"stream":false}`)
		if status != http.StatusOK || !strings.Contains(body, `"knowledge_base":"zhouyi"`) {
			t.Errorf("%s: mix_chat: %d %.300s; want 200 citing zhouyi", when, status, body)
		}
		status, body = post(hs, "/v1/chat/completions", `{"model":"mixchat-kb","messages":[{"role":"user","content":"乾卦的卦辞是什么？"}],"mixchat":{"knowledge_base_name":"zhouyi"}}`)
		if status != http.StatusOK || strings.Contains(body, "dimension") {
			t.Errorf("%s: /v1/chat/completions: %d %.300s; want 200", when, status, body)
		}
	}

	_, hs := serve()
	status, body := post(hs, "/chat/knowledge_base_chat", kbChat)
	if !strings.Contains(body, "recreate_vector_store") {
		t.Fatalf("kb chat on a base of the old embedder: %d %.300s; want a message naming recreate_vector_store", status, body)
	}
	resp, err := hs.Client().Post(hs.URL+"/knowledge_base/recreate_vector_store", "application/json", strings.NewReader(`{"knowledge_base_name":"zhouyi"}`))
	if err != nil {
		t.Fatal(err)
	}
	var last struct {
		Code            int    `json:"code"`
		Msg             string `json:"msg"`
		Total, Finished int
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last.Code, last.Msg = 0, ""
			if err := json.Unmarshal([]byte(data), &last); err != nil {
				t.Fatalf("recreate event %q: %v", data, err)
			}
			if last.Code != 200 {
				t.Errorf("recreate event %s", data)
			}
		}
	}
	resp.Body.Close()
	if last.Total == 0 || last.Finished != last.Total {
		t.Fatalf("recreate_vector_store ended with %+v; want every file done", last)
	}
	answers(hs, "after recreate_vector_store")

	_, hs = serve()
	answers(hs, "after a restart")
}
