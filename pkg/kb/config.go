package kb

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// Vector stores a knowledge base can keep its vectors in.
const (
	StoreEmbedded = "embedded" // in-process HNSW persisted next to the KB's SQLite file
	StoreQdrant   = "qdrant"   // a Qdrant server over gRPC, one collection per KB
)

// Units the splitter can measure chunks in.
const (
	UnitChars  = "chars"
	UnitTokens = "tokens"
)

// Config configures knowledge bases. The zero value is not usable; start from
// DefaultConfig.
type Config struct {
	// Dir holds one folder per knowledge base (DIR/NAME/kb.db and the
	// uploaded originals in DIR/NAME/content/); with Store "postgres" the
	// originals are in PostgreSQL and Dir keeps only index snapshots.
	Dir string `yaml:"dir"`
	// Store is where the knowledge bases' documents, chunks and settings
	// live: "files" ("" too), a SQLite file per KB under Dir, or
	// "postgres", PostgreSQL at DSN, shared by every replica (see
	// replicas.go); the program opens the matching Catalog
	// (pkg/store/sqlite, pkg/store/postgres). Dir then holds each replica's index snapshots and the
	// originals it received. Either store works with either vector store:
	// with "postgres" and "qdrant" the vectors live only in Qdrant, which
	// every replica searches, and each replica keeps only BM25 in memory.
	Store string `yaml:"store"`
	DSN   string `yaml:"dsn"`
	// VectorStore is where new knowledge bases keep their vectors:
	// "embedded" or "qdrant". A request may pick another per KB.
	VectorStore string `yaml:"vector_store"`
	// VectorEncoding is how the embedded index's snapshot (vectors.hnsw)
	// keeps the vectors: "float32" (exact), or "int8" (one byte a
	// dimension and a scale per vector: the snapshot about a third of the
	// size, the vectors read back within half a step of 1/127 of their
	// largest value). Only the snapshot is encoded: the vector log and
	// memory hold float32.
	VectorEncoding string       `yaml:"vector_encoding"`
	Qdrant         QdrantConfig `yaml:"qdrant"`
	// EmbedModel names the embedder given to New; it is recorded in every
	// KB built with it, and a KB built with another model refuses queries.
	EmbedModel string `yaml:"embed_model"`
	// EmbedBatch is the number of texts per embedding call.
	EmbedBatch int `yaml:"embed_batch"`

	// ChunkSize and ChunkOverlap are measured in ChunkUnit.
	ChunkSize    int    `yaml:"chunk_size"`
	ChunkOverlap int    `yaml:"chunk_overlap"`
	ChunkUnit    string `yaml:"chunk_unit"`
	// ZhTitleEnhance prefixes chunks with the title-like line they follow
	// ("下文与(标题)有关。"), as Langchain-Chatchat's zh_title_enhance does.
	ZhTitleEnhance bool `yaml:"zh_title_enhance"`

	// TopK is the number of chunks a query returns by default.
	TopK int `yaml:"top_k"`
	// ScoreThreshold is the default threshold in Langchain-Chatchat's
	// terms: a distance in [0,2], smaller is stricter, 2 keeps everything.
	// It corresponds to the minimum relevance 1 - d²/2 (see Relevance);
	// relevance is scaled per embedder so that the default, 1 (relevance
	// 0.5), is where that embedder's matches and non-matches part (see
	// Calibrated and retrieve.HashEmbedder.Calibration). Search and chat
	// apply the same threshold; a chat that finds nothing above it says why
	// (ChatReply.Reason).
	ScoreThreshold float64 `yaml:"score_threshold"`

	// VectorWeight is the share of vector similarity in the hybrid score
	// (the rest is BM25), in (0,1]; 0 means automatic: 0.5 for an embedding
	// model, 0.25 for the offline hash embedder, whose n-gram vectors add
	// little to BM25 and are noisy for short questions.
	VectorWeight float64 `yaml:"vector_weight"`

	// MaxUploadBytes caps one upload request (all its files together).
	// Ingestion holds a document's text, chunks, vectors and index
	// entries in memory (some 15 KB per chunk measured with the default
	// chunking), so the default keeps one upload well inside the 2 GiB the
	// Kubernetes manifest gives a replica.
	MaxUploadBytes int64 `yaml:"max_upload_bytes"`
	// MaxUploadFiles caps the files of one upload request (Go's multipart
	// reader takes at most 1000 parts, fields included).
	MaxUploadFiles int `yaml:"max_upload_files"`
	// MaxChunksPerFile caps the chunks one document splits into; a
	// document with more fails before anything is embedded.
	MaxChunksPerFile int `yaml:"max_chunks_per_file"`
	// ParseTimeout bounds the loading and splitting of one document; a
	// document that takes longer fails (the request's other files go on).
	ParseTimeout time.Duration `yaml:"parse_timeout"`

	// DefaultKnowledgeBases are searched by the KB answerer when a query
	// names none (mix_chat with no knowledge_base_name).
	DefaultKnowledgeBases []string `yaml:"default_knowledge_bases"`
	// Model is the LLM the KB answerer calls when a query names none; ""
	// means the models' default.
	Model string `yaml:"model"`
	// History lets the KB answerer see the conversation's history. Off by
	// default: history tends to outrank the retrieved knowledge.
	History bool `yaml:"history"`

	Reranker RerankerConfig `yaml:"reranker"`

	// ProfilesDir is a folder of profiles (*.json, the format of
	// docs/structure.md) a knowledge base may name besides the built-in
	// ones; "" for none.
	ProfilesDir string `yaml:"profiles_dir"`
}

// QdrantConfig locates a Qdrant server.
type QdrantConfig struct {
	Addr             string `yaml:"addr"` // host:port of the gRPC API (6334)
	APIKey           string `yaml:"api_key"`
	TLS              bool   `yaml:"tls"`
	CollectionPrefix string `yaml:"collection_prefix"` // collections are PREFIX + KB name
	// Timeout bounds each call to Qdrant (one search, one batch of up to
	// 256 points upserted, one delete, one count); 0 means
	// DefaultQdrantTimeout. A server that stops answering fails the call
	// after it instead of holding the request, or a knowledge base's write
	// lock, forever.
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultQdrantTimeout bounds a call to Qdrant when QdrantConfig.Timeout is 0.
const DefaultQdrantTimeout = 10 * time.Second

// RerankerConfig configures the optional reranker over an OpenAI-style
// (Jina/Cohere/Xinference) /rerank endpoint.
type RerankerConfig struct {
	Enabled bool   `yaml:"enabled"`
	BaseURL string `yaml:"base_url"` // e.g. http://localhost:9997/v1
	APIKey  string `yaml:"api_key"`
	Model   string `yaml:"model"` // e.g. bge-reranker-v2-m3
	// Candidates is how many fused hits are reranked before the top k are
	// kept.
	Candidates int `yaml:"candidates"`
}

// DefaultConfig returns the defaults: embedded vectors under data/kb,
// Chatchat's chunking (250 characters, overlap 50), top 3, threshold 1.0.
func DefaultConfig() Config {
	return Config{
		Dir:              "data/kb",
		VectorStore:      StoreEmbedded,
		VectorEncoding:   retrieve.Float32,
		Qdrant:           QdrantConfig{Addr: "localhost:6334", CollectionPrefix: "mixchat_", Timeout: DefaultQdrantTimeout},
		EmbedModel:       "hash-512",
		EmbedBatch:       32,
		ChunkSize:        250,
		ChunkOverlap:     50,
		ChunkUnit:        UnitChars,
		TopK:             3,
		ScoreThreshold:   1.0,
		MaxUploadBytes:   32 << 20,
		MaxUploadFiles:   500,
		MaxChunksPerFile: 50000,
		ParseTimeout:     time.Minute,
		Reranker:         RerankerConfig{Candidates: 20},
	}
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("invalid kb config")

// Validate checks c and names the offending field (kb.chunk_size ...) and
// its allowed values.
func (c Config) Validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if strings.TrimSpace(c.Dir) == "" {
		bad("kb.dir is empty: set a directory for the knowledge bases")
	}
	switch c.Store {
	case "", KBStoreFiles:
	case KBStorePostgres:
		if strings.TrimSpace(c.DSN) == "" {
			bad("kb.dsn is empty: kb.store %s needs the PostgreSQL DSN", KBStorePostgres)
		}
	default:
		bad("kb.store is %q: use %q or %q", c.Store, KBStoreFiles, KBStorePostgres)
	}
	switch c.VectorStore {
	case StoreEmbedded, StoreQdrant:
	default:
		bad("kb.vector_store is %q: use %q or %q", c.VectorStore, StoreEmbedded, StoreQdrant)
	}
	switch c.VectorEncoding {
	case "", retrieve.Float32, retrieve.Int8:
	default:
		bad("kb.vector_encoding is %q: use %q or %q", c.VectorEncoding, retrieve.Float32, retrieve.Int8)
	}
	if c.VectorStore == StoreQdrant && strings.TrimSpace(c.Qdrant.Addr) == "" {
		bad("kb.qdrant.addr is empty: set host:port of Qdrant's gRPC port (6334)")
	}
	if c.Qdrant.Timeout < 0 {
		bad("kb.qdrant.timeout is %s: use a positive duration (0 means %s)", c.Qdrant.Timeout, DefaultQdrantTimeout)
	}
	if strings.TrimSpace(c.EmbedModel) == "" {
		bad("kb.embed_model is empty: name the embedding model (e.g. hash-512 or bge-m3)")
	}
	if c.EmbedBatch < 1 || c.EmbedBatch > 2048 {
		bad("kb.embed_batch is %d: use 1..2048", c.EmbedBatch)
	}
	if c.ChunkSize < 10 || c.ChunkSize > 100000 {
		bad("kb.chunk_size is %d: use 10..100000", c.ChunkSize)
	}
	if c.ChunkOverlap < 0 || c.ChunkOverlap >= c.ChunkSize {
		bad("kb.chunk_overlap is %d: use 0..chunk_size-1 (%d)", c.ChunkOverlap, c.ChunkSize-1)
	}
	switch c.ChunkUnit {
	case UnitChars, UnitTokens:
	default:
		bad("kb.chunk_unit is %q: use %q or %q", c.ChunkUnit, UnitChars, UnitTokens)
	}
	if c.TopK < 1 || c.TopK > 1000 {
		bad("kb.top_k is %d: use 1..1000", c.TopK)
	}
	if c.ScoreThreshold < 0 || c.ScoreThreshold > 2 {
		bad("kb.score_threshold is %g: use a distance in 0..2 (smaller is stricter, 2 keeps everything)", c.ScoreThreshold)
	}
	if c.VectorWeight < 0 || c.VectorWeight > 1 {
		bad("kb.vector_weight is %g: use 0 (automatic) or a share in (0,1]", c.VectorWeight)
	}
	if c.MaxUploadBytes < 1 {
		bad("kb.max_upload_bytes is %d: use a positive number of bytes", c.MaxUploadBytes)
	}
	if c.MaxUploadFiles < 1 || c.MaxUploadFiles > 990 {
		bad("kb.max_upload_files is %d: use 1..990 (a multipart request holds at most 1000 parts, the form's fields included)", c.MaxUploadFiles)
	}
	if c.MaxChunksPerFile < 1 {
		bad("kb.max_chunks_per_file is %d: use a positive number", c.MaxChunksPerFile)
	}
	if c.ParseTimeout < time.Second || c.ParseTimeout > time.Hour {
		bad("kb.parse_timeout is %s: use 1s..1h", c.ParseTimeout)
	}
	for _, n := range c.DefaultKnowledgeBases {
		if err := ValidName(n); err != nil {
			bad("kb.default_knowledge_bases: %v", err)
		}
	}
	if c.Reranker.Enabled {
		if strings.TrimSpace(c.Reranker.BaseURL) == "" {
			bad("kb.reranker.base_url is empty: set the rerank endpoint's base URL or disable kb.reranker.enabled")
		}
		if strings.TrimSpace(c.Reranker.Model) == "" {
			bad("kb.reranker.model is empty: name the rerank model")
		}
	}
	if c.Reranker.Candidates < 0 || c.Reranker.Candidates > 1000 {
		bad("kb.reranker.candidates is %d: use 0..1000 (0 means 20)", c.Reranker.Candidates)
	}
	if c.ProfilesDir != "" {
		if _, err := LoadProfiles(c.ProfilesDir); err != nil {
			bad("kb.profiles_dir %s: %v", c.ProfilesDir, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(errs, "; "))
	}
	return nil
}
