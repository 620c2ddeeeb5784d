package app

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
)

// TestServe wires the app from the defaults on a fresh data directory,
// serves until the context ends and stops cleanly.
func TestServe(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = filepath.Join(t.TempDir(), "data")
	a, err := New(context.Background(), cfg, Options{Version: "test-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, p := range []string{"mixchat.db", "search"} {
		if _, err := os.Stat(filepath.Join(cfg.Server.DataDir, p)); err != nil {
			t.Errorf("data directory lacks %s: %v", p, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Version string `json:"version"`
	}
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || h.Version != "test-1" {
		t.Errorf("/healthz: %s, version %q", resp.Status, h.Version)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after the context ended: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestAnswerersHook: Options.Answerers sees the three answerers, and what
// it puts in their place answers mix_chat.
func TestAnswerersHook(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = t.TempDir()
	var seen []string
	var called atomic.Int32
	a, err := New(context.Background(), cfg, Options{Answerers: func(models *llm.Registry, answerers map[string]rag.Answerer) {
		if models == nil {
			t.Error("no models")
		}
		for name := range answerers {
			seen = append(seen, name)
		}
		answerers[rag.KB] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
			called.Add(1)
			return rag.Answer{From: rag.KB, Text: "乾：元，亨，利，贞。"}, nil
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	slices.Sort(seen)
	if strings.Join(seen, ",") != strings.Join([]string{rag.KB, rag.LLM, rag.Search}, ",") {
		t.Errorf("hook saw %v", seen)
	}
	srv := httptest.NewServer(a.Server.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/chat/mix_chat", "application/json", strings.NewReader(`{"query":"乾卦是什么？","stream":false}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || called.Load() != 1 {
		t.Errorf("mix_chat: %s, stand-in called %d times", resp.Status, called.Load())
	}
}

func TestNewFailsClosed(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = t.TempDir()
	cfg.Memory.Model = "missing"
	_, err := New(context.Background(), cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "memory.model") {
		t.Errorf("err %v, want memory.model named", err)
	}
}
