// Package kb is mixchat's knowledge bases: document loaders, the splitter
// (pkg/text's, applied to documents), the embedded hybrid (BM25 + vector)
// index and Qdrant, and the knowledge-base answerer that answers strictly
// from what it finds.
//
// Each knowledge base lives in its own folder under Config.Dir: the
// uploaded originals in content/ (for download and rebuilds) and one SQLite
// file, kb.db, holding the documents (name, hash, size, chunk count), their
// chunks (text, metadata, BM25 term frequencies, vector) and the KB's
// settings (embedding model, dimension, vector store). A document is
// replaced in one transaction, so an interrupted upload leaves the KB as it
// was or fully updated. At open the in-memory BM25 index and HNSW graph are
// read from snapshots written next to kb.db (or rebuilt from the rows when
// the snapshots are stale) and then updated after every commit; with Qdrant
// the vectors live in a collection per KB and BM25 stays local. Where the
// databases live is the Catalog's business (pkg/store/sqlite: a kb.db file
// per folder; pkg/store/postgres: one schema per KB, shared by every
// replica, with the originals: see replicas.go).
//
// Retrieval is hybrid. BM25 runs over pkg/text's terms of the text with
// traditional Chinese folded to simplified (text.Fold, so 貞 matches 贞), plus
// a title field: the section heading a chunk falls under (or its file name)
// as characters and bigrams, weighted double in queries and double again
// for the chunk that holds the heading, so "劳动法第三十六条" finds the
// section "第三十六条 国家实行劳动者每日工作时间…". Question scaffolding (是什么, 请问, 吗 ...) is dropped
// from queries. The vector side is the configured embedder's cosine.
//
// Scores: every search returns a relevance in [0,1], higher is more
// relevant, the same for every vector store: retrieve.Hybrid's weighted
// sum w·cosine + (1−w)·lexical, where w is kb.vector_weight (0.5 for an
// embedding model, 0.25 for the offline hash embedder) and the lexical
// relevance is the BM25 score over half the query's information (the BM25
// score of a chunk holding each query word once; words no chunk holds count
// with the largest IDF), capped at 1. Langchain-Chatchat's score_threshold,
// a distance d in [0,2] where smaller is stricter, maps to the minimum
// relevance 1 − d²/2 (the cosine of unit vectors at distance d; see
// DistanceToRelevance): Chatchat's default 1.0 keeps relevance ≥ 0.5.
package kb

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qdrant/go-client/qdrant"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/retrieve"
)

// Reranker scores documents against a query, one score per document in
// order, higher is more relevant (retrieve.Reranker is one).
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string) ([]float64, error)
}

// Option configures a Service beyond its Config.
type Option func(*Service)

// WithReranker sets the reranker (instead of the one Config.Reranker
// describes).
func WithReranker(r Reranker) Option { return func(s *Service) { s.rerank = r } }

// WithQdrantClient sets the Qdrant client used for KBs whose vectors live in
// Qdrant (instead of one dialled from Config.Qdrant). The Service does not
// close it.
func WithQdrantClient(c *qdrant.Client) Option {
	return func(s *Service) { s.vs.qdrant, s.vs.ownQdrant = c, false }
}

// WithOnChange sets fn to be called after each operation that may have
// changed what the knowledge base name holds (creating or deleting it,
// adding, updating or removing files), whether it succeeded or not. fn
// must return quickly: it runs on the caller's path.
func WithOnChange(fn func(name string)) Option { return func(s *Service) { s.onChange = fn } }

// Calibrated is an optional ability of an embedder: reporting how its
// vectors are to be read in the hybrid score (retrieve.HashEmbedder has it).
// Without it the relevance scale is plain and the vector weight 0.5.
type Calibrated interface {
	Calibration() retrieve.Calibration
}

// Service manages knowledge bases and answers from them. It is safe for
// concurrent use. Close it to save the index snapshots.
type Service struct {
	cfg    Config
	emb    llm.Embedder
	models llm.Models
	rerank Reranker
	// onChange is WithOnChange's.
	onChange func(name string)
	// vectorWeight is the vector share of the hybrid score; relevanceMid
	// the hybrid score that reads as relevance 0.5 (the embedder's
	// retrieve.Calibration).
	vectorWeight float64
	relevanceMid float64
	// titleTerms are the documents' title terms searches rank by.
	titleTerms titleTermsCache

	vs vectorStores

	cat Catalog
	// shared is cat when replicas share it (a SharedCatalog), else nil.
	shared SharedCatalog
	// replicas is what this replica holds of each KB of a shared catalog.
	replicas replicas

	mu   sync.Mutex
	open map[string]*base
	// profiles are those a knowledge base may name (profiles.go).
	profiles map[string]*docstruct.Profile

	// opening holds, for each KB being opened, a channel closed when it
	// is open (or failed to open): the slow part of opening (reading the
	// indexes, refilling Qdrant) runs without mu, so requests to other
	// KBs go on, and those for the same KB wait for the one opening it.
	opening  map[string]chan struct{}
	deleting map[string]bool
	closed   bool

	// stop is cancelled when Close begins: writes under way (uploads,
	// rebuilds, deletions) stop at their next check and release their
	// knowledge base, so Close does not wait on them.
	stop    context.Context
	stopNow context.CancelCauseFunc
}

// New returns a Service over the knowledge bases of cat, keeping their
// folders (index snapshots, and originals unless cat is a SharedCatalog)
// in cfg.Dir (created if missing). The Service closes cat with itself.
// embedder embeds chunks and queries; its name is cfg.EmbedModel. models
// answers questions (nil: Chat and Answer fail, the rest works).
func New(cfg Config, cat Catalog, embedder llm.Embedder, models llm.Models, opts ...Option) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cat == nil {
		return nil, errors.New("kb: no catalog")
	}
	if embedder == nil {
		return nil, errors.New("kb: no embedder")
	}
	shared, _ := cat.(SharedCatalog)
	if shared != nil && cfg.MaxUploadBytes > shared.MaxOriginal() {
		return nil, fmt.Errorf("kb.max_upload_bytes is %d: with kb.store %s the originals are kept in the database, which stores at most %d bytes in one: use a smaller limit",
			cfg.MaxUploadBytes, cfg.Store, shared.MaxOriginal())
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("kb: create %s: %w", cfg.Dir, err)
	}
	removeStaleSpools(cfg.Dir, time.Now())
	s := &Service{cfg: cfg, emb: embedder, models: models, cat: cat, shared: shared,
		vs:       vectorStores{cfg: cfg.Qdrant, ownQdrant: true},
		replicas: replicas{synced: map[string]syncState{}},
		open:     map[string]*base{}, opening: map[string]chan struct{}{}, deleting: map[string]bool{},
		profiles: map[string]*docstruct.Profile{}}
	s.stop, s.stopNow = context.WithCancelCause(context.Background())
	for _, o := range opts {
		o(s)
	}
	ps, err := LoadProfiles(cfg.ProfilesDir)
	if err != nil {
		return nil, fmt.Errorf("kb.profiles_dir: %w", err)
	}
	WithProfiles(ps...)(s)
	var cal retrieve.Calibration
	if c, ok := embedder.(Calibrated); ok {
		cal = c.Calibration()
	}
	s.relevanceMid = cmp.Or(cal.RelevanceMid, 0.5)
	s.vectorWeight = cmp.Or(cfg.VectorWeight, cal.VectorWeight, 0.5)
	if s.rerank == nil && cfg.Reranker.Enabled {
		s.rerank = retrieve.NewReranker(cfg.Reranker.BaseURL, cfg.Reranker.APIKey, cfg.Reranker.Model, nil)
	}
	return s, nil
}

// Config returns the service's configuration.
func (s *Service) Config() Config { return s.cfg }

// Close saves every open KB's snapshots and closes it.
func (s *Service) Close() error {
	s.stopNow(errClosing)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	open := s.open
	s.open = map[string]*base{}
	s.mu.Unlock()
	var errs []error
	for _, b := range open {
		errs = append(errs, b.close()) // waits for the KB's running operations
	}
	errs = append(errs, s.replicas.closeRetired(), s.cat.Close(), s.vs.close())
	return errors.Join(errs...)
}

// errClosing is the cause of the writes Close stops.
var errClosing = fmt.Errorf("knowledge bases are closing: %w", context.Canceled)

// writeContext is ctx, cancelled also when Close begins. Call done when
// the write is over.
func (s *Service) writeContext(ctx context.Context) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(s.stop, func() { cancel(context.Cause(s.stop)) })
	return ctx, func() { unhook(); cancel(nil) }
}

// changed reports a change to the knowledge base name (WithOnChange).
func (s *Service) changed(name string) {
	if s.onChange != nil {
		s.onChange(name)
	}
}

// kbDir is the folder of the knowledge base name.
func (c Config) kbDir(name string) string { return filepath.Join(c.Dir, name) }

// get returns the open KB name, opening it if needed, held for one
// operation: call release when done.
func (s *Service) get(ctx context.Context, name string) (*base, func(), error) {
	if err := ValidName(name); err != nil {
		return nil, nil, err
	}
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, nil, errors.New("kb: service closed")
		}
		if b, ok := s.open[name]; ok {
			s.mu.Unlock()
			if err := b.acquire(); err != nil {
				return nil, nil, err
			}
			return b, b.life.RUnlock, nil
		}
		if ch, ok := s.opening[name]; ok {
			s.mu.Unlock()
			select {
			case <-ch: // open now, or failed: look again
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		if s.deleting[name] {
			s.mu.Unlock()
			return nil, nil, fmt.Errorf("knowledge base %s: %w", name, ErrNotFound)
		}
		ch := make(chan struct{})
		s.opening[name] = ch
		s.mu.Unlock()

		b, err := s.openExisting(ctx, name)
		s.mu.Lock()
		delete(s.opening, name)
		close(ch)
		if err == nil && s.closed {
			err = errors.New("kb: service closed")
			defer b.close()
		}
		if err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		s.open[name] = b
		s.mu.Unlock()
	}
}

// openExisting opens the knowledge base name when the catalog has it;
// the caller has claimed the name in s.opening.
func (s *Service) openExisting(ctx context.Context, name string) (*base, error) {
	found, err := s.cat.Exists(ctx, name)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("knowledge base %s: %w", name, ErrNotFound)
	}
	b, err := s.openKB(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.syncRemote(ctx, b); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// lockIdle locks s.mu once no operation is opening the KB name, so that
// creating it cannot interleave with opening it.
func (s *Service) lockIdle(ctx context.Context, name string) error {
	for {
		s.mu.Lock()
		ch, ok := s.opening[name]
		if !ok {
			return nil
		}
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkModel refuses a KB built with another embedding model than the
// service's.
func (s *Service) checkModel(b *base) error {
	info := b.getInfo()
	if info.EmbedModel != "" && info.EmbedModel != s.cfg.EmbedModel {
		return fmt.Errorf("%w: knowledge base %s was built with embedding model %q but this server embeds with %q: "+
			"rebuild it with recreate_vector_store (or `mixchat kb add --force`), or set kb.embed_model back to %q",
			ErrEmbedModel, info.Name, info.EmbedModel, s.cfg.EmbedModel, info.EmbedModel)
	}
	return nil
}

// List returns the knowledge bases, sorted by name.
func (s *Service) List(ctx context.Context) ([]Info, error) {
	names, err := s.Names(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(names))
	for _, n := range names {
		info, err := s.Info(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Names returns the names of the knowledge bases, sorted.
func (s *Service) Names(ctx context.Context) ([]string, error) {
	all, err := s.cat.Names(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(all))
	for _, n := range all {
		if ValidName(n) == nil {
			names = append(names, n)
		}
	}
	return names, nil
}

// Info describes one knowledge base.
func (s *Service) Info(ctx context.Context, name string) (Info, error) {
	b, release, err := s.get(ctx, name)
	if err != nil {
		return Info{}, err
	}
	defer release()
	info := b.getInfo()
	if b.mem != nil {
		info.Pending, info.Indexing = b.mem.linking()
	}
	return b.counts(ctx, info)
}

// Exists reports whether the knowledge base exists; an invalid name does
// not. An error means the check itself failed (the PostgreSQL store is
// unreachable, say), which callers must not take for a missing knowledge
// base: the catalog's Exists never reads an outage as "no".
func (s *Service) Exists(ctx context.Context, name string) (bool, error) {
	if ValidName(name) != nil {
		return false, nil
	}
	return s.cat.Exists(ctx, name)
}

// CreateOptions are the settings of a new knowledge base.
type CreateOptions struct {
	// VectorStore is "embedded" or "qdrant"; "" (and Chatchat's "faiss",
	// the default its clients send) mean the configured kb.vector_store.
	VectorStore string
	// EmbedModel must be "" or the configured kb.embed_model.
	EmbedModel string
	Info       string
	// Profile names the profile the documents are read with ("" for
	// none); ErrBadRequest when the server does not know it.
	Profile string
}

// resolveStore maps a requested vector store to one this server has.
func (c Config) resolveStore(vs string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(vs)) {
	case "", "faiss", "default":
		return c.VectorStore, nil
	case StoreEmbedded:
		return StoreEmbedded, nil
	case StoreQdrant:
		return StoreQdrant, nil
	}
	return "", fmt.Errorf("%w: vector store %q is not supported: use %s or %s", ErrBadRequest, vs, StoreEmbedded, StoreQdrant)
}

// resolveModel checks a requested embedding model against this server's.
func (c Config) resolveModel(m string) (string, error) {
	m = strings.TrimSpace(m)
	if m == "" || m == c.EmbedModel {
		return c.EmbedModel, nil
	}
	return "", fmt.Errorf("%w: embedding model %q is not available: this server embeds with %q", ErrEmbedModel, m, c.EmbedModel)
}

// Create makes an empty knowledge base. It fails with ErrEmptyName,
// ErrInvalidName, ErrExists, ErrBadRequest (vector store) or ErrEmbedModel.
func (s *Service) Create(ctx context.Context, name string, opts CreateOptions) (Info, error) {
	defer s.changed(name)
	if err := ValidName(name); err != nil {
		return Info{}, err
	}
	name = nfc(name)
	vs, err := s.cfg.resolveStore(opts.VectorStore)
	if err != nil {
		return Info{}, err
	}
	model, err := s.cfg.resolveModel(opts.EmbedModel)
	if err != nil {
		return Info{}, err
	}
	if err := s.checkProfile(opts.Profile); err != nil {
		return Info{}, err
	}
	if err := s.lockIdle(ctx, name); err != nil {
		return Info{}, err
	}
	defer s.mu.Unlock()
	if s.closed {
		return Info{}, errors.New("kb: service closed")
	}
	if ok, err := s.cat.Exists(ctx, name); err != nil {
		return Info{}, err
	} else if ok {
		return Info{}, fmt.Errorf("knowledge base %s: %w", name, ErrExists)
	}
	b, err := s.createLocked(ctx, name, vs, model, opts.Info, opts.Profile)
	if err != nil {
		return Info{}, err
	}
	return b.getInfo(), nil
}

// createLocked registers a new KB with its settings and opens it; s.mu
// is held.
func (s *Service) createLocked(ctx context.Context, name, vs, model, info, profile string) (*base, error) {
	if err := s.checkNewKB(ctx, name); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(s.cfg.kbDir(name), contentDir), 0o755); err != nil {
		return nil, fmt.Errorf("create knowledge base %s: %w", name, err)
	}
	db, err := s.cat.Create(ctx, name)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("knowledge base %s: %w", name, ErrExists)
	}
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		for k, v := range map[string]string{
			"name": name, "info": info, "vector_store": vs, "embed_model": model, "dim": "0", "profile": profile,
			"created_at": strconv.FormatInt(time.Now().UnixMilli(), 10), "lex_version": lexVersion, "generation": "0",
		} {
			if err == nil {
				err = setMeta(ctx, tx, k, v)
			}
		}
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
	}
	if err != nil {
		db.Close()
		_ = s.cat.Drop(context.WithoutCancel(ctx), name)
		return nil, fmt.Errorf("create knowledge base %s: %w", name, err)
	}
	b, err := s.openBase(ctx, name, db)
	if err != nil {
		_ = s.cat.Drop(context.WithoutCancel(ctx), name)
		return nil, err
	}
	s.replicas.setSynced(b, b.gen)
	s.open[name] = b
	return b, nil
}

// openKB opens the knowledge base name from the catalog.
func (s *Service) openKB(ctx context.Context, name string) (*base, error) {
	if err := os.MkdirAll(filepath.Join(s.cfg.kbDir(name), contentDir), 0o755); err != nil {
		return nil, fmt.Errorf("open knowledge base %s: %w", name, err)
	}
	db, err := s.cat.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	if s.shared != nil {
		// This replica's snapshots may be tagged with a generation whose
		// rows they do not all hold (its writes interleaved with others'):
		// the indexes are built from the rows instead. The first search
		// then checks them against the rows (refresh).
		for _, f := range []string{lexSnapshot, vecSnapshot, vecLogFile} {
			if err := os.Remove(filepath.Join(s.cfg.kbDir(name), f)); err != nil && !os.IsNotExist(err) {
				db.Close()
				return nil, fmt.Errorf("open knowledge base %s: %w", name, err)
			}
		}
	}
	return s.openBase(ctx, name, db)
}

// openBase opens the KB whose database is db (closed on failure).
func (s *Service) openBase(ctx context.Context, name string, db *sql.DB) (*base, error) {
	b := &base{name: name, dir: s.cfg.kbDir(name), db: db, dbOriginals: s.shared != nil, vecEncoding: s.cfg.VectorEncoding}
	if err := b.load(ctx, s.vs.newStore); err != nil {
		db.Close()
		return nil, fmt.Errorf("open knowledge base %s: %w", name, err)
	}
	b.prof.Store(s.profiles[b.info.Profile])
	b.buildStructAtOpen()
	// Best effort: an embedder that is unreachable now leaves those chunks
	// to the lexical index until the next open tries again.
	_ = b.reembed(ctx, s.emb, s.cfg.EmbedBatch)
	// Best effort: a leftover that cannot be removed is never served.
	_, _ = removeStaleUploads(b.dir)
	return b, nil
}

// Delete removes a knowledge base with its originals and vectors.
func (s *Service) Delete(ctx context.Context, name string) error {
	defer s.changed(name)
	if err := ValidName(name); err != nil {
		return err
	}
	b, release, err := s.get(ctx, name)
	if err != nil {
		return err
	}
	release()
	// Take the KB out of service first (get refuses it while it is being
	// deleted), then wait for its running operations without holding s.mu,
	// which they may need to open other KBs.
	s.mu.Lock()
	if s.deleting[name] {
		s.mu.Unlock()
		return fmt.Errorf("knowledge base %s: %w", name, ErrNotFound)
	}
	delete(s.open, name)
	s.deleting[name] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.deleting, name)
		s.mu.Unlock()
	}()
	b.stopBackground()
	b.life.Lock()
	b.closed = true
	derr := b.vec.Drop(ctx)
	err = errors.Join(derr, b.vec.Close(), b.db.Close())
	b.life.Unlock()
	if rerr := os.RemoveAll(s.cfg.kbDir(name)); rerr != nil {
		err = errors.Join(err, rerr)
	}
	err = errors.Join(err, s.cat.Drop(ctx, name))
	if err != nil {
		return fmt.Errorf("delete knowledge base %s: %w", name, err)
	}
	return nil
}

// SetInfo changes a knowledge base's description.
func (s *Service) SetInfo(ctx context.Context, name, info string) error {
	b, release, err := s.get(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	if err := setMeta(ctx, b.db, "info", info); err != nil {
		return fmt.Errorf("update info of %s: %w", name, err)
	}
	b.mu.Lock()
	b.info.Info = info
	b.mu.Unlock()
	return nil
}

// Files lists a knowledge base's documents, sorted by name.
func (s *Service) Files(ctx context.Context, name string) ([]FileInfo, error) {
	b, release, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer release()
	fs, err := listFiles(ctx, b.db)
	if fs == nil && err == nil {
		fs = []FileInfo{}
	}
	return fs, err
}

// File describes one document.
func (s *Service) File(ctx context.Context, name, file string) (FileInfo, error) {
	b, release, err := s.get(ctx, name)
	if err != nil {
		return FileInfo{}, err
	}
	defer release()
	return getFile(ctx, b.db, b.fileName(ctx, file))
}

// Original is a document's original as uploaded, open for reading: close
// it when done.
type Original struct {
	Name    string // the document's name in the knowledge base
	Size    int64
	ModTime time.Time
	io.ReadSeekCloser
}

// Original opens a document's original, for download: from the KB's
// content folder, or with the PostgreSQL store from the database (so any
// replica serves it). ErrNotFound when the KB, the document or its
// original (custom docs have none) does not exist.
func (s *Service) Original(ctx context.Context, name, file string) (*Original, error) {
	if err := ValidFileName(file); err != nil {
		return nil, err
	}
	b, release, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer release()
	file = b.fileName(ctx, file)
	if !b.dbOriginals {
		// The originals the KB keeps: no temporary (hidden) file, no link.
		if f, st, err := openOriginal(b.dir, file); err == nil {
			return &Original{Name: file, Size: st.Size(), ModTime: st.ModTime(), ReadSeekCloser: f}, nil
		}
		return nil, fmt.Errorf("file %q of %s: %w", file, name, ErrNotFound)
	}
	data, mtime, _, err := b.readOriginal(ctx, file)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("file %q of %s: %w", file, name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &Original{Name: file, Size: int64(len(data)), ModTime: mtime, ReadSeekCloser: nopCloser{bytes.NewReader(data)}}, nil
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

// OriginalPath returns the path of a document's original as uploaded, for
// download, with the files store. ErrNotFound when the KB, the document or
// its original (custom docs have none) does not exist, and always with the
// PostgreSQL store, whose originals are in the database: use Original.
func (s *Service) OriginalPath(ctx context.Context, name, file string) (string, error) {
	if err := ValidFileName(file); err != nil {
		return "", err
	}
	b, release, err := s.get(ctx, name)
	if err != nil {
		return "", err
	}
	defer release()
	if b.dbOriginals {
		return "", fmt.Errorf("file %q of %s: %w: the originals are in PostgreSQL", file, name, ErrNotFound)
	}
	f, _, err := openOriginal(b.dir, file) // no hidden file, nothing through a link
	if err != nil {
		return "", fmt.Errorf("file %q of %s: %w", file, name, ErrNotFound)
	}
	f.Close()
	return b.contentPath(file), nil
}

// contentFiles lists the originals in a KB's content folder (relative
// names with "/"), skipping hidden and temporary files.
func contentFiles(dir string) ([]string, error) {
	var out []string
	root := filepath.Join(dir, contentDir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}
