// Package retrieve is mixchat's retrieval core: the in-memory structures that
// knowledge bases, conversation memory and the local search engine rank text
// with.
//
//   - BM25 is an incremental inverted index with Lucene's BM25 scoring over the
//     terms of pkg/text (CJK bigrams, stemmed English words). Documents are
//     added and removed one at a time; nothing is rebuilt per query.
//   - Flat is exact cosine search; HNSW is an approximate graph index that
//     answers exactly while it is small. Both satisfy VectorIndex.
//   - RRF and Hybrid fuse a lexical and a vector list; Hybrid scores are a
//     relevance in [0,1], higher is more relevant, the same scale for every
//     store. CosineToRelevance maps a vector-only score onto that scale.
//   - HashEmbedder is a deterministic offline embedder (hashed n-grams) for
//     zero-setup use; Reranker calls an OpenAI-style /rerank endpoint.
//
// Everything here is safe for concurrent use. The structures do no I/O of
// their own except serialisation to an io.Writer and from an io.Reader, so a
// caller that persists its documents elsewhere can save and reload an index
// instead of rebuilding it.
//
// Result lists ([]Hit) are always best first; equal scores are ordered by ID
// so results are deterministic.
package retrieve
