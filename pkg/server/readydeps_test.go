package server

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/search"
)

// stoppedURL is the address of a server that was started and stopped: a
// connection to it is refused.
func stoppedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestReadyzModelAndSearch: /readyz reports an unreachable model and a
// stopped search engine, without their addresses, and stays ready
// ("degraded", 200): they are advisory. The model is asked at most once
// in a while.
func TestReadyzModelAndSearch(t *testing.T) {
	var modelCalls int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		modelCalls++
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"data":[]}`))
	}))
	t.Cleanup(up.Close)
	stopped := stoppedURL(t)

	tests := []struct {
		name       string
		modelURL   string
		searxURL   string // "" = the local engine is the default
		wantStatus string
		want       map[string]string
	}{
		{"model up, local search", up.URL + "/v1", "", "ready", map[string]string{"model": checkOK, "search": checkOK}},
		{"model down", stopped + "/v1", "", statusDegraded, map[string]string{"model": checkFailed, "search": checkOK}},
		{"searx stopped", up.URL + "/v1", stopped, statusDegraded, map[string]string{"model": checkOK, "search": checkFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			models := llm.NewRegistry("remote")
			models.Add("remote", llm.NewClient(llm.ClientConfig{Name: "remote", BaseURL: tt.modelURL, APIKey: "k", Model: "m"}))
			cfg := localSearchConfig(t)
			if tt.searxURL != "" {
				cfg.Engines = []search.EngineConfig{{Name: "searx", Provider: "searxng", BaseURL: tt.searxURL}}
				cfg.Default = "searx"
			}
			svc, err := search.New(cfg, search.Options{Models: models})
			if err != nil {
				t.Fatal(err)
			}
			s := New(Options{Store: openSQLite(t), Models: models, Chat: chat.New(models, chat.Options{}), Search: svc, Version: "v-test"})
			url := serveTest(t, s).URL
			code, r := getReady(t, url)
			if code != http.StatusOK || r.Status != tt.wantStatus {
				t.Fatalf("/readyz = %d %q, want 200 %q (%+v)", code, r.Status, tt.wantStatus, r.Checks)
			}
			for name, want := range tt.want {
				got := r.Checks[name]
				if got.Status != want {
					t.Errorf("check %s = %+v, want %s", name, got, want)
				}
				if strings.Contains(got.Error, "127.0.0.1") {
					t.Errorf("check %s names an address: %q", name, got.Error)
				}
			}
		})
	}

	// Cached: a second probe right away does not ask the model again.
	models := llm.NewRegistry("remote")
	models.Add("remote", llm.NewClient(llm.ClientConfig{Name: "remote", BaseURL: up.URL + "/v1", APIKey: "k", Model: "m"}))
	s := New(Options{Store: openSQLite(t), Models: models, Chat: chat.New(models, chat.Options{})})
	url := serveTest(t, s).URL
	modelCalls = 0
	getReady(t, url)
	getReady(t, url)
	if modelCalls != 1 {
		t.Errorf("two probes asked the model %d times, want 1", modelCalls)
	}
	// The offline model has nothing to reach.
	offline, _ := offlineModels()
	s = New(Options{Store: openSQLite(t), Models: offline, Chat: chat.New(offline, chat.Options{})})
	if _, r := getReady(t, serveTest(t, s).URL); r.Checks["model"].Status != checkNotConfigured {
		t.Errorf("offline model check %+v, want not_configured", r.Checks["model"])
	}
}

// TestListSearchEnginesStoppedSearx: a SearxNG that does not answer is
// listed as unavailable, with a reason that does not name its address; a
// running one (MIXCHAT_TEST_SEARX_URL) as available.
func TestListSearchEnginesStoppedSearx(t *testing.T) {
	cfg := localSearchConfig(t)
	cfg.Engines = []search.EngineConfig{{Name: "searx", Provider: "searxng", BaseURL: stoppedURL(t)}}
	if live := os.Getenv("MIXCHAT_TEST_SEARX_URL"); live != "" {
		cfg.Engines = append(cfg.Engines, search.EngineConfig{Name: "live", Provider: "searxng", BaseURL: live})
	}
	srv := searchTestServer(t, cfg)
	var out struct {
		Engines []search.EngineInfo `json:"engines"`
	}
	if code := getJSON(t, srv.URL+"/server/list_search_engines", &out); code != http.StatusOK {
		t.Fatalf("HTTP %d", code)
	}
	for _, e := range out.Engines {
		switch e.Name {
		case "searx":
			if e.Available || e.Reason == "" || strings.Contains(e.Reason, "127.0.0.1") {
				t.Errorf("stopped searx listed as %+v, want unavailable with a reason naming no address", e)
			}
		case "live", "local":
			if !e.Available {
				t.Errorf("engine %+v listed as unavailable", e)
			}
		}
	}
}

// getJSON GETs url and decodes the JSON reply into out.
func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: reply is not JSON: %v", url, err)
	}
	return resp.StatusCode
}
