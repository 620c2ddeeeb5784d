package lc

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/tmc/langchaingo/schema"

	"github.com/mixchat/mixchat/pkg/kb"
)

// Retriever is a server's knowledge bases as a schema.Retriever: each query
// is a POST /knowledge_base/search_docs (hybrid BM25 + vector search).
type Retriever struct {
	Client *Client
	// KnowledgeBases are searched together; at least one.
	KnowledgeBases []string
	// TopK is the number of documents; 0 means the server's kb.top_k.
	TopK int
	// MinRelevance keeps documents whose relevance (in [0,1], higher is
	// closer) reaches it; 0 means the server's kb.score_threshold.
	MinRelevance float64
}

var _ schema.Retriever = (*Retriever)(nil)

// searchDoc is a document of search_docs' reply.
type searchDoc struct {
	PageContent   string         `json:"page_content"`
	Metadata      map[string]any `json:"metadata"`
	ID            string         `json:"id"`
	Relevance     float64        `json:"relevance"`
	KnowledgeBase string         `json:"knowledge_base"`
}

// GetRelevantDocuments returns the chunks that best match query, best
// first. Each document's Score is its relevance in [0,1]; its Metadata holds
// the chunk's own metadata plus "knowledge_base", "id" and "source" (the
// file).
func (r *Retriever) GetRelevantDocuments(ctx context.Context, query string) ([]schema.Document, error) {
	if len(r.KnowledgeBases) == 0 {
		return nil, fmt.Errorf("mixchat retriever: no knowledge base named")
	}
	body := map[string]any{"query": query, "knowledge_base_name": r.KnowledgeBases[0], "knowledge_base_names": r.KnowledgeBases}
	if r.TopK > 0 {
		body["top_k"] = r.TopK
	}
	if r.MinRelevance > 0 {
		body["min_relevance"] = r.MinRelevance
	}
	res, err := r.Client.do(ctx, "/knowledge_base/search_docs", body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&raw); err != nil {
		return nil, fmt.Errorf("mixchat retriever: read reply: %w", err)
	}
	var docs []searchDoc
	if err := json.Unmarshal(raw, &docs); err != nil {
		// Not a list: Chatchat's envelope with an error code (HTTP 200,
		// {"code":404,"msg":...} for an unknown knowledge base).
		var env struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		}
		if json.Unmarshal(raw, &env) == nil && env.Code != 0 {
			return nil, &Error{Status: res.StatusCode, Code: env.Code, Message: env.Msg}
		}
		return nil, fmt.Errorf("mixchat retriever: read reply: %w", err)
	}
	out := make([]schema.Document, len(docs))
	for i, d := range docs {
		out[i] = document(d.PageContent, d.Metadata, d.KnowledgeBase, d.ID, d.Relevance)
	}
	return out, nil
}

// document is a chunk as a schema.Document: its metadata plus
// "knowledge_base" and "id", its relevance as Score.
func document(text string, metadata map[string]any, kbName, id string, relevance float64) schema.Document {
	meta := maps.Clone(metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["knowledge_base"], meta["id"] = kbName, id
	return schema.Document{PageContent: text, Metadata: meta, Score: float32(relevance)}
}

// KnowledgeBases is what KBRetriever needs: *kb.Service is one.
type KnowledgeBases interface {
	Search(ctx context.Context, req kb.SearchRequest) ([]kb.Result, error)
}

// KBRetriever is knowledge bases of this process (a *kb.Service) as a
// schema.Retriever, with no server in between.
type KBRetriever struct {
	KB             KnowledgeBases
	KnowledgeBases []string
	TopK           int     // 0: kb.top_k
	MinRelevance   float64 // 0: every match (Retriever's 0 is the server's kb.score_threshold)
}

var _ schema.Retriever = (*KBRetriever)(nil)

// GetRelevantDocuments is Retriever's, in process: for the same threshold
// the same documents, scores and metadata.
func (r *KBRetriever) GetRelevantDocuments(ctx context.Context, query string) ([]schema.Document, error) {
	rs, err := r.KB.Search(ctx, kb.SearchRequest{Query: query, KnowledgeBases: r.KnowledgeBases, TopK: r.TopK, MinRelevance: r.MinRelevance})
	if err != nil {
		return nil, fmt.Errorf("mixchat retriever: %w", err)
	}
	out := make([]schema.Document, len(rs))
	for i, x := range rs {
		out[i] = document(x.Text, x.Metadata, x.KnowledgeBase, x.ID, x.Relevance)
		if _, ok := out[i].Metadata["source"]; !ok {
			out[i].Metadata["source"] = x.File // as search_docs does
		}
	}
	return out, nil
}
