package kb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/sqlrows"
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
	// Profile names the profile the documents are read with ("" for
	// none; see WithProfiles).
	Profile string
	// Indexing is true while the embedded index links an ingestion's
	// vectors into its graph in the background; Pending are the vectors
	// it has yet to link. They are searched (exactly) meanwhile.
	Indexing bool
	Pending  int
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
// terms. Characters matter in titles: a question about "总则章" should
// find the section headed "第一章 总 则", which shares no bigram with it.
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
	// vecEncoding is how the HNSW snapshot keeps vectors (kb.vector_encoding).
	vecEncoding string

	// dbOriginals: the originals live in the database (the originals
	// table of a SharedCatalog's), not in dir/content.
	dbOriginals bool

	// log is the embedded index's vector log (vectors.log), opened by the
	// first ingestion that needs it; under wmu.
	log *vecLog
	// dirty counts the chunks added or removed since the snapshots were
	// last written, lexDirty since the lexical one was (it is written
	// while the graph's waits for its link); under wmu (or before b is
	// shared).
	dirty, lexDirty int
	// unembedded are the chunks whose vectors load found nowhere (see
	// reembed).
	unembedded []string

	// prof is the profile the documents are read with (nil: none);
	// structs the structure index (structure.go); stopBuild stops its
	// build at open.
	prof      atomic.Pointer[docstruct.Profile]
	structs   structIndex
	stopBuild context.CancelFunc

	// chunkCache holds the chunk rows searches read (chunks).
	chunkCache chunkCache
}

// changed records n chunks added or removed since the last snapshot.
func (b *base) changed(n int) { b.dirty += n; b.lexDirty += n }

// vectorLog returns the vector log for vectors of dimension dim, opening
// it on first use.
func (b *base) vectorLog(dim int) (*vecLog, error) {
	if b.log != nil && b.log.dim == dim && b.log.epoch == b.epoch {
		return b.log, nil
	}
	if b.log != nil {
		b.log.close()
		b.log = nil
	}
	l, err := openVecLog(filepath.Join(b.dir, vecLogFile), b.epoch, dim)
	if err != nil {
		return nil, err
	}
	b.log = l
	return l, nil
}

// lexAdd adds a chunk's term counts to the BM25 index.
func (b *base) lexAdd(id string, tf map[string]int) {
	b.lex.AddCounts(id, tf)
	if b.lexIDs != nil {
		b.lexIDs[id] = struct{}{}
	}
}

// lexRemove removes chunks from the BM25 index and the chunk cache.
func (b *base) lexRemove(ids ...string) {
	b.chunkCache.drop(ids)
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
	snapMagic   = "MIXKBSNAP2"
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
		case "profile":
			info.Profile = v
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

// load reads the KB's settings and builds the in-memory indexes: from
// the snapshots (of the KB's epoch, whatever their generation) and the
// vector log, reconciled with the chunk rows, which say what the KB holds:
// chunks the snapshots lack are added (their terms from their text, their
// vectors from the log or the row), chunks the rows lack are removed.
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
	} else {
		b.mem.onLinked = b.afterLink
	}
	b.gen = gen
	b.info = info
	if b.epoch, err = getMeta(ctx, b.db, "epoch"); err != nil {
		return err
	}

	snapped := true
	if lx, ok := readSnapshot(filepath.Join(b.dir, lexSnapshot), b.epoch, lexVersion, func(r io.Reader) (any, error) { return retrieve.ReadBM25(r) }); ok {
		b.lex = lx.(*retrieve.BM25)
	} else {
		b.lex = retrieve.NewBM25(retrieve.BM25Params{})
		snapped = false
	}
	var graph *retrieve.HNSW
	if b.mem != nil {
		// A graph of another dimension than the rows' is stale whatever its
		// epoch (saved by a version that kept the old dimension when the KB
		// was emptied for another embedder).
		if h, ok := readSnapshot(filepath.Join(b.dir, vecSnapshot), b.epoch, "", func(r io.Reader) (any, error) { return retrieve.ReadHNSW(r) }); ok && (info.Dim == 0 || h.(*retrieve.HNSW).Dim() == info.Dim) {
			graph = h.(*retrieve.HNSW)
			b.mem.restore(graph)
		} else {
			snapped = false
		}
	}
	// One pass over the rows: what exists, what the indexes lack.
	rows := map[string]struct{}{}
	var needLex, needVec []string
	metas := map[string]map[string]any{} // one map for the chunks of equal metadata
	err = sqlrows.Each(ctx, b.db, `SELECT id, file, metadata FROM chunks`, nil, func(row sqlrows.Scanner) error {
		var id, file, meta string
		if err := row.Scan(&id, &file, &meta); err != nil {
			return err
		}
		rows[id] = struct{}{}
		if !b.lex.Has(id) {
			needLex = append(needLex, id)
		} else if b.lexIDs != nil {
			b.lexIDs[id] = struct{}{}
		}
		if b.mem != nil {
			m, ok := metas[meta]
			if !ok {
				if err := json.Unmarshal([]byte(meta), &m); err != nil {
					return fmt.Errorf("chunk %s metadata: %w", id, err)
				}
				metas[meta] = m
			}
			b.mem.setPayload(id, file, m)
			if graph == nil || !graph.Has(id) {
				needVec = append(needVec, id)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range b.lex.IDs() {
		if _, ok := rows[id]; !ok {
			b.lex.Remove(id)
			b.changed(1)
		}
	}
	if graph != nil {
		for _, id := range graph.IDs() {
			if _, ok := rows[id]; !ok {
				graph.Remove(id)
				b.dirty++
			}
		}
	}
	rows = nil
	for start := 0; start < len(needLex); start += 500 {
		part := needLex[start:min(start+500, len(needLex))]
		err := eachChunk(ctx, b.db, `SELECT id, file, seq, text, metadata, terms, NULL FROM chunks WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, anys(part), func(c storedChunk) error {
			b.lexAdd(c.ID, b.termsOf(c))
			return nil
		})
		if err != nil {
			return err
		}
	}
	b.changed(len(needLex))
	if len(needVec) > 0 {
		if err := b.loadVectors(ctx, needVec); err != nil {
			return err
		}
	}
	if !snapped && !b.dbOriginals && (b.lex.Len() > 0 || b.mem != nil && b.mem.Len() > 0) {
		// Save what was rebuilt so the next open is quick.
		_ = b.saveSnapshots()
	}
	return nil
}

// loadVectors indexes the vectors of the chunks ids, which the embedded
// index lacks: from the vector log, else from their rows. A chunk whose
// vector is in neither is noted in b.unembedded.
func (b *base) loadVectors(ctx context.Context, ids []string) error {
	need := make(map[string]bool, len(ids))
	for _, id := range ids {
		need[id] = true
	}
	dim := b.info.Dim
	if dim > 0 {
		b.mem.reserve(dim, len(ids))
	}
	if dim > 0 && !b.dbOriginals {
		var bids []string
		var bvecs [][]float32
		flush := func() error {
			err := b.mem.addVectors(ctx, bids, bvecs)
			bids, bvecs = bids[:0], bvecs[:0]
			return err
		}
		_, err := scanVecLog(filepath.Join(b.dir, vecLogFile), b.epoch, dim, func(id string, v []float32) error {
			if !need[id] {
				return nil
			}
			delete(need, id)
			bids = append(bids, id)
			bvecs = append(bvecs, slices.Clone(v))
			if len(bids) >= 1024 {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return err
		}
	}
	rest := make([]string, 0, len(need))
	for id := range need {
		rest = append(rest, id)
	}
	for start := 0; start < len(rest); start += 500 {
		part := rest[start:min(start+500, len(rest))]
		var bids []string
		var bvecs [][]float32
		err := sqlrows.Each(ctx, b.db, `SELECT id, vector FROM chunks WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, anys(part), func(row sqlrows.Scanner) error {
			var id string
			var raw []byte
			if err := row.Scan(&id, &raw); err != nil {
				return err
			}
			if v := decodeVector(raw); len(v) > 0 {
				bids = append(bids, id)
				bvecs = append(bvecs, v)
				delete(need, id)
			}
			return nil
		})
		if err == nil {
			err = b.mem.addVectors(ctx, bids, bvecs)
		}
		if err != nil {
			return err
		}
	}
	for id := range need {
		b.unembedded = append(b.unembedded, id)
	}
	b.dirty += len(ids)
	return nil
}

// reembed embeds again the chunks whose vectors were in no snapshot, log
// or row when the KB was opened (the index files were lost), from their
// text, and indexes them: the rows are the source of truth, the vectors
// are rebuilt from them when needed. The caller holds b before sharing it.
func (b *base) reembed(ctx context.Context, emb llm.Embedder, batch int) error {
	ids := b.unembedded
	if len(ids) == 0 || b.mem == nil {
		return nil
	}
	dim := b.info.Dim
	for start := 0; start < len(ids); start += ingestGroup {
		part := ids[start:min(start+ingestGroup, len(ids))]
		var chunks []storedChunk
		err := eachChunk(ctx, b.db, `SELECT id, file, seq, text, metadata, '', NULL FROM chunks WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, anys(part), func(c storedChunk) error {
			chunks = append(chunks, c)
			return nil
		})
		if err != nil {
			return err
		}
		for i := 0; i < len(chunks); i += batch {
			end := min(i+batch, len(chunks))
			inputs := make([]string, 0, end-i)
			for _, c := range chunks[i:end] {
				inputs = append(inputs, embedText(c.Text))
			}
			vecs, err := emb.Embed(ctx, inputs)
			if err != nil {
				return fmt.Errorf("embed chunks again: %w", err)
			}
			if len(vecs) != len(inputs) {
				return fmt.Errorf("embed chunks again: got %d vectors for %d texts", len(vecs), len(inputs))
			}
			for j, v := range vecs {
				chunks[i+j].Vector = v
			}
		}
		if err := checkDim(chunks, &dim); err != nil {
			return err
		}
		log, err := b.vectorLog(dim)
		if err != nil {
			return err
		}
		cids := make([]string, len(chunks))
		vecs := make([][]float32, len(chunks))
		for i, c := range chunks {
			if err := log.append(c.ID, c.Vector); err != nil {
				return err
			}
			cids[i], vecs[i] = c.ID, c.Vector
		}
		if err := log.sync(); err != nil {
			return err
		}
		if err := b.mem.addVectors(ctx, cids, vecs); err != nil {
			return err
		}
	}
	b.unembedded = nil
	return nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// termsOf returns a chunk's BM25 term counts: stored with its row (by
// replicas and older versions), else computed from its text.
func (b *base) termsOf(c storedChunk) map[string]int {
	if c.Terms != nil {
		return c.Terms
	}
	return termCounts(chunkTerms(titleOf(c.File, c.Metadata), c.Text))
}

// refreshTerms drops the stored BM25 terms when they were made by another
// term function than lexTerms (the lexical snapshot, tagged with the
// version, is then rebuilt from the chunks' text). With replicas, which
// read the terms from the rows, it recomputes them instead.
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
	if !b.dbOriginals {
		if _, err := tx.ExecContext(ctx, `UPDATE chunks SET terms = '' WHERE terms != ''`); err != nil {
			return err
		}
	} else {
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
	}
	if err := setMeta(ctx, tx, "lex_version", lexVersion); err != nil {
		return err
	}
	_, err = commitGeneration(ctx, tx)
	return err
}

// stopBackground stops the base's background work (the structure
// index's build at open).
func (b *base) stopBackground() {
	if b.stopBuild != nil {
		b.stopBuild()
	}
	if b.mem != nil {
		b.mem.stopLinking()
	}
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
	b.stopBackground()
	b.life.Lock()
	defer b.life.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.mem.linkRest()
	var err error
	if b.dirty > 0 {
		err = b.saveSnapshots()
	}
	if b.log != nil {
		err = errors.Join(err, b.log.close())
	}
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

// reserve makes room for n more vectors of dimension dim.
func (m *MemIndex) reserve(dim, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.vecs == nil {
		m.dim = dim
		m.vecs = retrieve.NewHNSW(dim, memHNSW)
	}
	if m.dim == dim {
		m.vecs.Reserve(n)
	}
}

// addVectors indexes vectors of chunks whose payloads are set.
func (m *MemIndex) addVectors(ctx context.Context, ids []string, vecs [][]float32) error {
	if len(ids) == 0 {
		return ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.vecs == nil {
		m.dim = len(vecs[0])
		m.vecs = retrieve.NewHNSW(m.dim, memHNSW)
	}
	return m.vecs.AddBatch(ids, vecs)
}

func (m *MemIndex) graph() *retrieve.HNSW {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.vecs
}

// metaInterner gives chunks of equal metadata one map (read only: the
// pieces of an ingestion and the embedded index's payloads).
type metaInterner map[string]map[string]any

// internJSON returns the map held for metadata whose JSON is k, m (which
// k encodes) when there is none yet.
func (mi metaInterner) internJSON(k string, m map[string]any) map[string]any {
	if shared, ok := mi[k]; ok {
		return shared
	}
	mi[k] = m
	return m
}

// afterWrite ends a batch of writes (the caller holds wmu; dirtyBefore is
// b.dirty when the batch began): the background link of the staged
// vectors starts, the snapshots are rewritten when the changes are many
// (compact; the graph's when the link is done), and a write-ahead log
// that a bulk write grew is checkpointed into the database file and
// truncated, so the disk holds the data once.
func (b *base) afterWrite(dirtyBefore int) {
	if b.mem != nil {
		b.mem.linkLater()
	}
	bulk := b.dirty-dirtyBefore >= bulkChunks
	_ = b.compact()
	if bulk {
		// A bulk write leaves much garbage (its batches) beside the
		// grown indexes: give the memory back now rather than holding
		// it until the runtime's scavenger gets to it.
		defer debug.FreeOSMemory()
	}
	if b.dbOriginals {
		// The rows hold the vectors: the log was only their way from the
		// embedder to this replica's index.
		if b.log != nil {
			_ = b.log.reset()
		}
		return
	}
	wals, _ := filepath.Glob(filepath.Join(b.dir, "*-wal"))
	for _, w := range wals {
		if st, err := os.Stat(w); err == nil && st.Size() > checkpointWALBytes {
			_, _ = b.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`)
			return
		}
	}
}

// bulkChunks is the number of chunks changed past which a write returns
// its memory to the system when it ends.
const bulkChunks = 10000

// checkpointWALBytes is the write-ahead log size past which a write ends
// with a checkpoint that truncates it.
const checkpointWALBytes = 8 << 20
