package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestReranker(t *testing.T) {
	var got rerankRequest
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, auth = r.URL.Path, r.Header.Get("Authorization")
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		switch got.Query {
		case "fail":
			http.Error(w, `{"error":"model not loaded"}`, http.StatusServiceUnavailable)
		case "bad index":
			w.Write([]byte(`{"results":[{"index":7,"relevance_score":0.5}]}`))
		default: // sorted by score, as servers answer, and one document left out
			w.Write([]byte(`{"model":"m","results":[{"index":2,"relevance_score":0.93},{"index":0,"relevance_score":0.41}]}`))
		}
	}))
	defer srv.Close()
	r := NewReranker(srv.URL+"/v1/", "sk-test", "bge-reranker", srv.Client())
	docs := []string{"doc a", "doc b", "doc c"}
	scores, err := r.Rerank(context.Background(), "乾卦", docs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.41, 0, 0.93}; len(scores) != 3 || scores[0] != want[0] || scores[1] != want[1] || scores[2] != want[2] {
		t.Errorf("scores = %v, want %v", scores, want)
	}
	if path != "/v1/rerank" || auth != "Bearer sk-test" {
		t.Errorf("path %q auth %q", path, auth)
	}
	if got.Model != "bge-reranker" || got.Query != "乾卦" || got.TopN != 3 || len(got.Documents) != 3 || got.Documents[2] != "doc c" {
		t.Errorf("request %+v", got)
	}

	_, err = r.Rerank(context.Background(), "fail", docs)
	var re *RerankError
	if !errors.As(err, &re) || re.Status != http.StatusServiceUnavailable || re.Body == "" {
		t.Errorf("server error: %v", err)
	}
	if _, err := r.Rerank(context.Background(), "bad index", docs); err == nil {
		t.Error("out-of-range index accepted")
	}
	if s, err := r.Rerank(context.Background(), "q", nil); s != nil || err != nil {
		t.Errorf("no documents: %v, %v", s, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Rerank(ctx, "q", docs); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
