package retrieve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Reranker scores documents against a query with a cross-encoder served
// behind an OpenAI-style rerank endpoint (POST {base}/rerank with
// {model, query, documents, top_n}, answering {results: [{index,
// relevance_score}]}), as Jina, Cohere, Xinference, vLLM and TEI-compatible
// servers do.
type Reranker struct {
	base  string
	key   string
	model string
	hc    *http.Client
}

// NewReranker returns a client for the rerank endpoint under baseURL (for
// example "http://localhost:9997/v1"). apiKey may be empty; hc nil means
// http.DefaultClient.
func NewReranker(baseURL, apiKey, model string, hc *http.Client) *Reranker {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Reranker{base: strings.TrimRight(baseURL, "/"), key: apiKey, model: model, hc: hc}
}

type rerankRequest struct {
	Model     string   `json:"model,omitempty"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

type rerankResponse struct {
	Results []struct {
		Index          int      `json:"index"`
		RelevanceScore *float64 `json:"relevance_score"`
	} `json:"results"`
}

// RerankError is a failed rerank call: the HTTP status (0 when no response
// arrived) and the body the server returned.
type RerankError struct {
	Status int
	Body   string
}

func (e *RerankError) Error() string {
	return fmt.Sprintf("rerank: status %d: %s", e.Status, e.Body)
}

// Rerank returns one relevance score per document, in the order of docs
// (not sorted); higher is more relevant, on the server's scale (usually a
// probability in [0,1]). A document the server leaves out scores 0.
func (r *Reranker) Rerank(ctx context.Context, query string, docs []string) ([]float64, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(rerankRequest{Model: r.model, Query: query, Documents: docs, TopN: len(docs)})
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/rerank", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("rerank: read response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &RerankError{Status: resp.StatusCode, Body: strings.TrimSpace(string(raw))}
	}
	var out rerankResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("rerank: decode response: %w", err)
	}
	scores := make([]float64, len(docs))
	for _, x := range out.Results {
		if x.Index < 0 || x.Index >= len(docs) {
			return nil, fmt.Errorf("rerank: result index %d out of range [0,%d)", x.Index, len(docs))
		}
		if x.RelevanceScore == nil {
			return nil, fmt.Errorf("rerank: result %d has no relevance_score", x.Index)
		}
		scores[x.Index] = *x.RelevanceScore
	}
	return scores, nil
}
