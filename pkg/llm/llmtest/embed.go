package llmtest

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file holds /v1/embeddings and its deterministic vectors.

func (s *Server) embed(w http.ResponseWriter, r *http.Request) bool {
	var raw struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		writeError(w, http.StatusBadRequest, "malformed request: "+err.Error(), "invalid_request_error")
		return true
	}
	var input []string
	if err := json.Unmarshal(raw.Input, &input); err != nil {
		var one string
		if err := json.Unmarshal(raw.Input, &one); err != nil {
			writeError(w, http.StatusBadRequest, "input must be a string or an array of strings", "invalid_request_error")
			return true
		}
		input = []string{one}
	}
	s.mu.Lock()
	if !s.noRecord {
		s.embeds = append(s.embeds, EmbedRequest{Model: raw.Model, Input: input})
	}
	var rep Reply
	if len(s.embScript) > 0 {
		rep, s.embScript = s.embScript[0], s.embScript[1:]
	}
	s.mu.Unlock()
	if !s.wait(r.Context(), s.latency+rep.Delay) {
		return false
	}
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch {
	case rep.Status >= 400 && rep.Body == "":
		writeError(w, rep.Status, http.StatusText(rep.Status), errorType(rep.Status))
		return true
	case rep.Disconnect:
		w.WriteHeader(status(rep))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case rep.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status(rep))
		io.WriteString(w, rep.Body)
		return true
	case rep.Garbage:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status(rep))
		io.WriteString(w, `{"object":"list","data":[{"object":"embedding","embedding":[0.1,`)
		return true
	}
	type item struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	data := make([]item, len(input))
	tokens := 0
	for i, in := range input {
		data[i] = item{Object: "embedding", Embedding: Vector(in, s.dim), Index: i}
		tokens += llm.Estimate(in)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   data,
		"model":  raw.Model,
		"usage":  map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	return true
}

// Vector is the embedding the server returns for s: the terms of s (see
// text.Terms, plus single CJK characters) hashed into dim signed buckets
// and normalised to unit length, so texts that share words get close
// vectors. A text with no terms gets a unit vector chosen by its hash.
func Vector(s string, dim int) []float32 {
	v := make([]float64, dim)
	feats := text.Terms(s)
	for _, r := range s {
		if text.IsCJK(r) {
			feats = append(feats, string(r))
		}
	}
	if len(feats) == 0 {
		feats = []string{"\x00" + s}
	}
	for _, f := range feats {
		h := fnv.New64a()
		h.Write([]byte(f))
		x := h.Sum64()
		sign := 1.0
		if x>>63 == 1 {
			sign = -1
		}
		v[x%uint64(dim)] += sign
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	out := make([]float32, dim)
	for i, x := range v {
		if norm > 0 {
			out[i] = float32(x / norm)
		}
	}
	if norm == 0 { // the signs cancelled out
		out[0] = 1
	}
	return out
}
