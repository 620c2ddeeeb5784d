package kb

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// Info describes a knowledge base. The server shows it in Chatchat's
// field names (its own wire type).
type Info struct {
	Name        string
	Info        string // the description
	VectorStore string // "embedded", "qdrant"
	EmbedModel  string
	Dim         int
	Files       int
	Chunks      int
	CreatedAt   time.Time
}

// lexVersion names the term function below; a KB whose stored terms were
// made by another version recomputes them at open.
const lexVersion = "fold-variants-path-3"

// lexTerms are the BM25 terms of a chunk or query: pkg/text's terms (CJK
// bigrams, stemmed English words) of the text with traditional Chinese
// folded to simplified, so either script finds the other.
func lexTerms(s string) []string { return text.Terms(text.Fold(s)) }

// titleMark prefixes the terms of a chunk's title field.
const titleMark = "§"

// titleTerms are the terms of the title field: the title's lexTerms plus
// its single CJK characters, marked so they count apart from the body's
// terms. Characters matter in titles: a question about "乾卦" should find
// the section headed "第一卦乾 乾為天", which shares no bigram with it.
func titleTerms(title string) []string {
	if title == "" {
		return nil
	}
	title = text.Fold(title)
	var out []string
	for _, t := range text.Terms(title) {
		out = append(out, titleMark+t)
	}
	for _, r := range title {
		if text.IsCJK(r) {
			out = append(out, titleMark+string(r))
		}
	}
	return out
}

// chunkTerms are the BM25 terms of a chunk: its body's and its title's.
// The chunk that holds the heading itself (a section's lead chunk) gets the
// title terms twice: a question naming the section is best answered by
// where the section starts.
func chunkTerms(title, body string) []string {
	terms := append(lexTerms(body), titleTerms(title)...)
	if title != "" && leadsSection(title, body) {
		terms = append(terms, titleTerms(title)...)
	}
	return terms
}

// leadsSection reports whether body holds the last heading of the title
// path on a line of its own.
func leadsSection(title, body string) bool {
	if i := strings.LastIndex(title, " > "); i >= 0 {
		title = title[i+3:]
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.TrimLeft(strings.TrimSpace(l), "# ") == title {
			return true
		}
	}
	return false
}

// embedText is what the embedder sees of a chunk or query: the folded text
// (a no-op for simplified Chinese and other languages).
func embedText(s string) string { return text.Fold(s) }

func termCounts(terms []string) map[string]int {
	m := make(map[string]int, len(terms))
	for _, t := range terms {
		m[t]++
	}
	return m
}

// base is one open knowledge base: its database, the in-memory BM25
// index and its vector store.
type base struct {
	name string
	dir  string
	db   *sql.DB

	// life is held shared by every operation and exclusively by close, so
	// a KB is never closed under a running search or ingestion.
	life   sync.RWMutex
	closed bool

	// wmu serialises writers (ingestion, deletion).
	wmu sync.Mutex

	mu   sync.RWMutex // guards info
	info Info

	lex *retrieve.BM25
	// lexIDs are the chunk ids in lex when the vectors are remote (mem is
	// nil), for refresh to compare with the rows (with embedded vectors it
	// compares mem's). Written during load (before b is shared) and under
	// wmu, like lex, through lexAdd and lexRemove.
	lexIDs map[string]struct{}
	vec    store
	mem    *MemIndex // vec when embedded, for snapshots
	gen    uint64    // generation of the data in memory
	// epoch is the meta value "epoch", changed when the KB is emptied to
	// be rebuilt (clear): a replica that sees another epoch rebuilds its
	// indexes from the rows rather than comparing chunk ids.
	epoch string

	// dbOriginals: the originals live in the database (the originals
	// table of a SharedCatalog's), not in dir/content.
	dbOriginals bool
}

// lexAdd adds a chunk's term counts to the BM25 index.
func (b *base) lexAdd(id string, tf map[string]int) {
	b.lex.AddCounts(id, tf)
	if b.lexIDs != nil {
		b.lexIDs[id] = struct{}{}
	}
}

// lexRemove removes chunks from the BM25 index.
func (b *base) lexRemove(ids ...string) {
	for _, id := range ids {
		b.lex.Remove(id)
		if b.lexIDs != nil {
			delete(b.lexIDs, id)
		}
	}
}

const (
	contentDir  = "content"
	lexSnapshot = "lexical.bin"
	vecSnapshot = "vectors.hnsw"
	snapMagic   = "MIXKBSNAP1"
)

func (b *base) readInfo(ctx context.Context) (Info, uint64, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT key, value FROM meta`)
	if err != nil {
		return Info{}, 0, err
	}
	defer rows.Close()
	info := Info{Name: b.name}
	var gen uint64
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return Info{}, 0, err
		}
		switch k {
		case "info":
			info.Info = v
		case "vector_store":
			info.VectorStore = v
		case "embed_model":
			info.EmbedModel = v
		case "dim":
			info.Dim, _ = strconv.Atoi(v)
		case "created_at":
			ms, _ := strconv.ParseInt(v, 10, 64)
			info.CreatedAt = time.UnixMilli(ms)
		case "generation":
			gen, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return info, gen, rows.Err()
}

// load reads the KB's settings and builds the in-memory indexes, from the
// snapshots when they are current, else from the chunk rows.
func (b *base) load(ctx context.Context, newStore func(Info) (store, error)) error {
	info, gen, err := b.readInfo(ctx)
	if err != nil {
		return err
	}
	if err := b.refreshTerms(ctx); err != nil {
		return err
	}
	if info.VectorStore == "" {
		info.VectorStore = StoreEmbedded
	}
	vec, err := newStore(info)
	if err != nil {
		return err
	}
	b.vec = vec
	b.mem, _ = vec.(*MemIndex)
	if b.mem == nil {
		b.lexIDs = map[string]struct{}{}
	}
	b.gen = gen
	b.info = info
	if b.epoch, err = getMeta(ctx, b.db, "epoch"); err != nil {
		return err
	}

	lexOK := false
	if lx, ok := readSnapshot(filepath.Join(b.dir, lexSnapshot), gen, func(r io.Reader) (any, error) { return retrieve.ReadBM25(r) }); ok {
		b.lex = lx.(*retrieve.BM25)
		lexOK = true
	} else {
		b.lex = retrieve.NewBM25(retrieve.BM25Params{})
	}
	vecOK := false
	if b.mem != nil {
		// A graph of another dimension than the rows' is stale whatever
		// its generation (saved by a version that kept the old dimension
		// when the KB was emptied for another embedder).
		if h, ok := readSnapshot(filepath.Join(b.dir, vecSnapshot), gen, func(r io.Reader) (any, error) { return retrieve.ReadHNSW(r) }); ok &&
			(info.Dim == 0 || h.(*retrieve.HNSW).Dim() == info.Dim) {
			b.mem.restore(h.(*retrieve.HNSW))
			vecOK = true
		}
	} else {
		vecOK = true // Qdrant keeps its own vectors; see syncRemote
	}
	// One pass over the rows fills whatever the snapshots did not.
	cols := `id, file, seq, '', metadata, terms, vector`
	if vecOK && b.mem == nil {
		cols = `id, file, seq, '', metadata, terms, NULL`
	}
	var batch []Chunk
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := b.mem.Upsert(ctx, batch)
		batch = batch[:0]
		return err
	}
	err = eachChunk(ctx, b.db, `SELECT `+cols+` FROM chunks`, nil, func(c storedChunk) error {
		if !lexOK {
			b.lexAdd(c.ID, c.Terms)
		} else if b.lexIDs != nil {
			b.lexIDs[c.ID] = struct{}{} // lex holds it from the snapshot
		}
		switch {
		case b.mem == nil:
		case vecOK:
			b.mem.setPayload(c.ID, c.File, c.Metadata)
		case len(c.Vector) > 0:
			batch = append(batch, c.Chunk)
			if len(batch) >= 1024 {
				return flush()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if !lexOK || !vecOK {
		// Save what was rebuilt so the next open is quick.
		_ = b.saveSnapshots()
	}
	return nil
}

// refreshTerms recomputes the stored BM25 terms when they were made by
// another term function than lexTerms.
func (b *base) refreshTerms(ctx context.Context) error {
	v, err := getMeta(ctx, b.db, "lex_version")
	if err != nil || v == lexVersion {
		return err
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, file, text, metadata FROM chunks`)
	if err != nil {
		return err
	}
	type row struct{ id, file, text, meta string }
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.file, &r.text, &r.meta); err != nil {
			rows.Close()
			return err
		}
		all = append(all, r)
	}
	rows.Close()
	for _, r := range all {
		var meta map[string]any
		_ = json.Unmarshal([]byte(r.meta), &meta)
		t, _ := json.Marshal(termCounts(chunkTerms(titleOf(r.file, meta), r.text)))
		if _, err := tx.ExecContext(ctx, `UPDATE chunks SET terms = ? WHERE id = ?`, string(t), r.id); err != nil {
			return err
		}
	}
	if err := setMeta(ctx, tx, "lex_version", lexVersion); err != nil {
		return err
	}
	_, err = commitGeneration(ctx, tx)
	return err
}

// readSnapshot reads a snapshot file written for generation gen; ok is false
// when it is missing, stale or unreadable.
func readSnapshot(path string, gen uint64, read func(io.Reader) (any, error)) (any, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	r := bufio.NewReader(f)
	head := make([]byte, len(snapMagic)+8)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:len(snapMagic)]) != snapMagic {
		return nil, false
	}
	if binary.LittleEndian.Uint64(head[len(snapMagic):]) != gen {
		return nil, false
	}
	v, err := read(r)
	if err != nil {
		return nil, false
	}
	return v, true
}

// writeSnapshot writes a snapshot for generation gen atomically (temporary
// file, then rename).
func writeSnapshot(path string, gen uint64, w io.WriterTo) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<16)
	head := make([]byte, len(snapMagic)+8)
	copy(head, snapMagic)
	binary.LittleEndian.PutUint64(head[len(snapMagic):], gen)
	if _, err := bw.Write(head); err == nil {
		_, err = w.WriteTo(bw)
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// saveSnapshots writes the BM25 index and the HNSW graph for the current
// generation, so the next open loads them instead of rebuilding. A failure
// costs only a rebuild at the next open.
func (b *base) saveSnapshots() error {
	if err := writeSnapshot(filepath.Join(b.dir, lexSnapshot), b.gen, b.lex); err != nil {
		return fmt.Errorf("save bm25 snapshot: %w", err)
	}
	if b.mem != nil {
		if h := b.mem.graph(); h != nil {
			if err := writeSnapshot(filepath.Join(b.dir, vecSnapshot), b.gen, h); err != nil {
				return fmt.Errorf("save hnsw snapshot: %w", err)
			}
		}
	}
	return nil
}

// acquire holds the KB open for one operation; release with b.life.RUnlock.
func (b *base) acquire() error {
	b.life.RLock()
	if b.closed {
		b.life.RUnlock()
		return fmt.Errorf("knowledge base %s: %w", b.name, ErrNotFound)
	}
	return nil
}

// close waits for running operations, saves the snapshots and closes.
func (b *base) close() error {
	b.life.Lock()
	defer b.life.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	err := b.saveSnapshots()
	err = errors.Join(err, b.vec.Close(), b.db.Close())
	return err
}

func (b *base) getInfo() Info {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.info
}

// counts fills the file and chunk counts of info.
func (b *base) counts(ctx context.Context, info Info) (Info, error) {
	err := b.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks)`).Scan(&info.Files, &info.Chunks)
	return info, err
}

// restore replaces the graph with h (read from a snapshot); payloads are
// filled by setPayload.
func (m *MemIndex) restore(h *retrieve.HNSW) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vecs = h
	m.dim = h.Dim()
	m.pay = map[string]payload{}
}

func (m *MemIndex) setPayload(id, file string, meta map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pay[id] = payload{file: file, meta: meta}
}

func (m *MemIndex) graph() *retrieve.HNSW {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.vecs
}
