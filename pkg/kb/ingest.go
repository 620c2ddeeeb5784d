package kb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/llm"
)

// chunkNamespace seeds the chunk ids (UUIDv5, which Qdrant accepts as point
// ids): the same KB, file, content, position and chunk (text and metadata)
// give the same id. The chunk's own text is part of it so that re-splitting
// a document (another chunk size) makes new ids: replicas that compare ids
// with the rows (refresh) then see the change.
var chunkNamespace = uuid.MustParse("6f1c2a52-8d0e-4c57-9a51-2f4f0b7f3d10")

// Progress reports ingestion as it goes: one event when a file starts, one
// per embedded batch, one when it ends (done, skipped or failed).
type Progress struct {
	File     string `json:"file"`
	Index    int    `json:"index"` // 1-based position of the file in the request
	Total    int    `json:"total"` // files in the request
	Stage    string `json:"stage"` // "start", "embed", "done", "skipped", "failed"
	Chunks   int    `json:"chunks"`
	Embedded int    `json:"embedded"` // chunks embedded so far (Stage "embed")
	Err      error  `json:"-"`
}

// Ingestion stages.
const (
	StageStart   = "start"
	StageEmbed   = "embed"
	StageDone    = "done"
	StageSkipped = "skipped"
	StageFailed  = "failed"
)

// ingestJob is one file to (re)index.
type ingestJob struct {
	name   string
	data   []byte     // the original; nil for custom docs without a file
	path   string     // a spooled original, read into data when the job runs
	docs   []Document // custom docs; nil to load data
	save   bool       // store data as the original (content folder or database)
	force  bool       // re-index even when unchanged
	split  Splitter
	params fileParams
	parse  time.Duration // loading and splitting stop after this long (kb.parse_timeout); 0: no limit
	chunks int           // the most chunks the document may split into (kb.max_chunks_per_file); 0: no limit
}

type fileParams struct {
	chunkSize, chunkOverlap int
	zhTitle                 bool
}

// ingestResult says what happened to one file.
type ingestResult struct {
	chunks  int
	skipped bool // the content and parameters were unchanged
}

func contentHash(data []byte, docs []Document) string {
	h := sha256.New()
	if docs != nil {
		b, _ := json.Marshal(docs)
		h.Write([]byte("custom-docs\x00"))
		h.Write(b)
	} else {
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// contentPath is where a document's original is kept.
func (b *base) contentPath(name string) string {
	return filepath.Join(b.dir, contentDir, filepath.FromSlash(name))
}

// ingest indexes one file: load, split, embed, then replace the file's
// chunks in one transaction. Until the commit nothing is changed, so an
// error or a cancelled ctx leaves the KB as it was; after it the in-memory
// indexes follow. The caller holds b.wmu.
func (b *base) ingest(ctx context.Context, job ingestJob, emb llm.Embedder, batch int, report func(Progress)) (ingestResult, error) {
	hash := contentHash(job.data, job.docs)
	if !job.force {
		if old, err := getFile(ctx, b.db, job.name); err == nil && old.Hash == hash &&
			old.ChunkSize == job.params.chunkSize && old.ChunkOverlap == job.params.chunkOverlap &&
			old.ZhTitleEnhance == job.params.zhTitle && old.CustomDocs == (job.docs != nil) {
			// Indexed already. The original is renamed into place after the
			// commit, so a crash in between leaves a stale or missing one:
			// put the uploaded bytes there. (In the database it is written
			// with the rows, but a KB indexed before that may lack it.)
			if job.save && b.dbOriginals {
				if h, ok, err := originalHash(ctx, b.db, job.name); err != nil {
					return ingestResult{}, err
				} else if !ok || h != contentHash(job.data, nil) {
					if err := putOriginal(ctx, b.db, job.name, job.data); err != nil {
						return ingestResult{}, err
					}
				}
			} else if job.save {
				if cur, err := os.ReadFile(b.contentPath(job.name)); err != nil || !bytes.Equal(cur, job.data) {
					if err := b.saveOriginal(job.name, job.data); err != nil {
						return ingestResult{}, err
					}
				}
			}
			return ingestResult{chunks: old.Chunks, skipped: true}, nil
		} else if err != nil && !errors.Is(err, ErrNotFound) {
			return ingestResult{}, err
		}
	}
	pctx, cancel := parseContext(ctx, job.parse)
	defer cancel()
	docs := job.docs
	if docs == nil {
		var err error
		if docs, err = LoadContext(pctx, job.name, job.data); err != nil {
			return ingestResult{}, err
		}
	} else {
		for i := range docs {
			if docs[i].Metadata == nil {
				docs[i].Metadata = map[string]any{}
			}
			docs[i].Metadata["source"] = job.name
		}
	}
	pieces, err := job.split.SplitContext(pctx, docs)
	if err != nil {
		return ingestResult{}, err
	}
	stxt, sfm := structText(job.name, job.data, docs)
	docs = nil
	if len(pieces) == 0 {
		return ingestResult{}, fmt.Errorf("%w: nothing to index after splitting", ErrNoText)
	}
	if err := checkChunks(len(pieces), job.chunks); err != nil {
		return ingestResult{}, err
	}
	ids := make([]string, len(pieces))
	metas := metaInterner{} // the pieces of a part share their metadata, held once
	for i, p := range pieces {
		meta, _ := json.Marshal(p.Metadata) // sorted keys: the same metadata, the same bytes
		pieces[i].Metadata = metas.internJSON(string(meta), p.Metadata)
		ids[i] = uuid.NewSHA1(chunkNamespace, []byte(b.name+"\x00"+job.name+"\x00"+hash+"\x00"+strconv.Itoa(i)+"\x00"+p.Text+"\x00"+string(meta))).String()
	}

	// The original goes to a temporary file first and is renamed into place
	// after the commit; in the database it is written in the commit's
	// transaction.
	var tmpPath string
	if job.save && !b.dbOriginals {
		dst := b.contentPath(job.name)
		if err := contentDirs(b.dir, job.name, true); err != nil {
			return ingestResult{}, fmt.Errorf("save %s: %w", job.name, err)
		}
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".upload-*")
		if err != nil {
			return ingestResult{}, fmt.Errorf("save %s: %w", job.name, err)
		}
		tmpPath = tmp.Name()
		defer os.Remove(tmpPath) // a no-op after the rename
		_, err = tmp.Write(job.data)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return ingestResult{}, fmt.Errorf("save %s: %w", job.name, err)
		}
		// The rename after the commit must not fail: refuse now what the
		// file system will not take there.
		if err := placeable(dst); err != nil {
			return ingestResult{}, fmt.Errorf("save %s: %w", job.name, err)
		}
	}

	f := FileInfo{
		Name: job.name, Hash: hash, Size: int64(len(job.data)), ModTime: time.Now(),
		CustomDocs: job.docs != nil, ChunkSize: job.params.chunkSize, ChunkOverlap: job.params.chunkOverlap,
		ZhTitleEnhance: job.params.zhTitle,
	}
	var orig []byte
	if job.save && b.dbOriginals {
		orig = job.data
		if orig == nil {
			orig = []byte{}
		}
	}
	fw, err := b.beginFile(ctx, f, len(pieces), orig)
	if err != nil {
		return ingestResult{}, err
	}
	defer fw.rollback()
	// A remote store gets the new points before the commit: until then no
	// chunk row names them, so searches ignore them, and a crash leaves
	// only unreferenced points behind.
	var upserted []string
	failed := func(err error) (ingestResult, error) {
		if len(upserted) > 0 {
			// Best effort: the points are unreferenced either way.
			_ = b.vec.Delete(context.WithoutCancel(ctx), Filter{IDs: upserted})
		}
		return ingestResult{}, err
	}

	// Embed and store the chunks group by group: what is held at once is
	// one group's vectors, not the file's. The embedded index's vectors go
	// to the vector log (synced before the commit) and are indexed from it
	// after the commit.
	report(Progress{Stage: StageEmbed, Chunks: len(pieces)})
	dim := b.getInfo().Dim
	var log *vecLog
	var logStart int64
	group := max(batch, ingestGroup)
	inputs := make([]string, 0, group)
	chunks := make([]storedChunk, 0, group)
	for gs := 0; gs < len(pieces); gs += group {
		ge := min(gs+group, len(pieces))
		inputs, chunks = inputs[:0], chunks[:0]
		for i := gs; i < ge; i++ {
			p := pieces[i]
			chunks = append(chunks, storedChunk{Chunk: Chunk{ID: ids[i], File: job.name, Seq: i, Text: p.Text, Metadata: p.Metadata}})
			inputs = append(inputs, embedText(p.Text))
		}
		for start := 0; start < len(inputs); start += batch {
			end := min(start+batch, len(inputs))
			vecs, err := emb.Embed(ctx, inputs[start:end])
			if err != nil {
				return failed(fmt.Errorf("embed chunks %d-%d: %w", gs+start+1, gs+end, err))
			}
			if len(vecs) != end-start {
				return failed(fmt.Errorf("embed chunks %d-%d: got %d vectors for %d texts", gs+start+1, gs+end, len(vecs), end-start))
			}
			for i, v := range vecs {
				chunks[start+i].Vector = v
			}
			report(Progress{Stage: StageEmbed, Chunks: len(pieces), Embedded: gs + end})
		}
		if err := checkDim(chunks, &dim); err != nil {
			return failed(err)
		}
		switch {
		case b.mem != nil:
			if log == nil {
				if log, err = b.vectorLog(dim); err != nil {
					return failed(err)
				}
				logStart = log.size
			}
			for _, c := range chunks {
				if err := log.append(c.ID, c.Vector); err != nil {
					return failed(err)
				}
			}
		default:
			plain := make([]Chunk, len(chunks))
			for i, c := range chunks {
				plain[i] = c.Chunk
			}
			upserted = append(upserted, idsOf(plain)...)
			if err := b.vec.Upsert(ctx, plain); err != nil {
				return failed(fmt.Errorf("upsert vectors: %w", err))
			}
		}
		for _, c := range chunks {
			if err := fw.add(ctx, c); err != nil {
				return failed(err)
			}
		}
	}
	if log != nil {
		if err := log.sync(); err != nil {
			return failed(err)
		}
	}
	old, gen, err := fw.commit(ctx, dim)
	if err != nil {
		return failed(err)
	}
	if tmpPath != "" {
		if err := os.Rename(tmpPath, b.contentPath(job.name)); err != nil {
			return ingestResult{}, fmt.Errorf("save %s (indexed): %w", job.name, err)
		}
	}
	b.applyFile(ctx, old, job.name, ids, pieces, log, logStart, gen)
	b.putStruct(parseStruct(job.name, hash, stxt, sfm, b.profile()))
	return ingestResult{chunks: len(pieces)}, nil
}

// termBlock is how many chunks' term counts an ingestion makes at a time
// before adding them to the lexical index.
const termBlock = 1024

// parallelFor calls f(0) … f(n-1) on all cores.
func parallelFor(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/16)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// bulkGC is the number of chunks of an ingestion past which it collects
// garbage as it indexes, every bulkGC chunks.
const bulkGC = 8192

// ingestGroup is how many chunks an ingestion embeds and stores at a time
// (at least the embedding batch).
const ingestGroup = 512

// titleOf is the section path a chunk falls under: its document's title
// (the file name without folder and extension), then the headings it is
// under ("labor-law > 第四章 工作时间和休息休假 > 第三十六条"). The ranker matches it as the
// chunk's title field and the reader sees it above the chunk's text.
//
// A heading that repeats the one before it (a Markdown file whose first
// heading is its own title) is said once.
func titleOf(file string, meta map[string]any) string {
	if file == "" {
		t, _ := meta["section"].(string)
		return t
	}
	base := path.Base(file)
	doc := strings.TrimSuffix(base, path.Ext(base))
	t, _ := meta["section"].(string)
	if t == "" {
		return doc
	}
	if !repeatsHeading(doc, t) {
		return doc + " > " + t // what the general case below makes, without splitting
	}
	parts := []string{doc}
	for _, h := range strings.Split(t, " > ") {
		if h != parts[len(parts)-1] {
			parts = append(parts, h)
		}
	}
	return strings.Join(parts, " > ")
}

// repeatsHeading reports whether a heading of the section path t (headings
// joined by " > ") is the one before it, or the first is doc.
func repeatsHeading(doc, t string) bool {
	prev := doc
	for {
		h, rest, more := strings.Cut(t, " > ")
		if h == prev {
			return true
		}
		if !more {
			return false
		}
		prev, t = h, rest
	}
}

// saveOriginal writes a document's original into the content folder
// (temporary file, then rename).
func (b *base) saveOriginal(name string, data []byte) error {
	dst := b.contentPath(name)
	if err := contentDirs(b.dir, name, true); err != nil {
		return fmt.Errorf("save %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".upload-*")
	if err != nil {
		return fmt.Errorf("save %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return fmt.Errorf("save %s: %w", name, err)
	}
	return nil
}

func idsOf(cs []Chunk) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

// checkDim checks the vectors against the KB's dimension *dim (0 until the
// first vector fixes it).
func checkDim(chunks []storedChunk, dim *int) error {
	for _, c := range chunks {
		if len(c.Vector) == 0 {
			return fmt.Errorf("embed chunk %d: empty vector", c.Seq+1)
		}
		if *dim == 0 {
			*dim = len(c.Vector)
		}
		if len(c.Vector) != *dim {
			return fmt.Errorf("%w: the embedder returned %d dimensions, the knowledge base holds %d", ErrEmbedModel, len(c.Vector), *dim)
		}
	}
	return nil
}

// fileWriter replaces a file's rows in one transaction, chunk by chunk.
type fileWriter struct {
	b    *base
	tx   *sql.Tx
	stmt *sql.Stmt
	name string
	old  []string
	n    int
	done bool
}

// beginFile starts replacing the rows of f, which will have n chunks;
// orig, when not nil, is stored as the file's original in the same
// transaction (the originals table).
func (b *base) beginFile(ctx context.Context, f FileInfo, n int, orig []byte) (*fileWriter, error) {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	w := &fileWriter{b: b, tx: tx, name: f.Name}
	if orig != nil {
		if err := putOriginal(ctx, tx, f.Name, orig); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	if w.old, w.stmt, err = beginReplace(ctx, tx, f, n); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("store %s: %w", f.Name, err)
	}
	return w, nil
}

// add stores one chunk: with its vector when the rows are where other
// replicas or a remote store find it, with its terms when other replicas
// read them.
func (w *fileWriter) add(ctx context.Context, c storedChunk) error {
	if !w.b.rowVectors() {
		c.Vector = nil
	}
	if w.b.dbOriginals {
		c.Terms = termCounts(chunkTerms(titleOf(c.File, c.Metadata), c.Text))
	}
	w.n++
	return insertChunk(ctx, w.stmt, w.name, c)
}

// commit commits the rows with a new generation (recording dim as the
// KB's dimension when it had none) and returns the ids of the chunks the
// file had before and the generation.
func (w *fileWriter) commit(ctx context.Context, dim int) ([]string, uint64, error) {
	b := w.b
	w.stmt.Close()
	if b.getInfo().Dim == 0 && dim > 0 {
		if err := setMeta(ctx, w.tx, "dim", strconv.Itoa(dim)); err != nil {
			return nil, 0, err
		}
	}
	gen, err := commitGeneration(ctx, w.tx)
	if err != nil {
		return nil, 0, fmt.Errorf("commit %s: %w", w.name, err)
	}
	w.done = true
	if dim > 0 {
		b.mu.Lock()
		if b.info.Dim == 0 {
			b.info.Dim = dim
		}
		b.mu.Unlock()
	}
	return w.old, gen, nil
}

// rollback abandons the rows unless they were committed.
func (w *fileWriter) rollback() {
	if !w.done {
		w.stmt.Close()
		w.tx.Rollback()
		w.done = true
	}
}

// commitFile replaces the file's rows in one transaction and returns the
// ids it removed and the new generation. orig, when not nil, is stored as
// the file's original in the same transaction (the originals table).
func (b *base) commitFile(ctx context.Context, f FileInfo, chunks []storedChunk, orig []byte) ([]string, uint64, error) {
	w, err := b.beginFile(ctx, f, len(chunks), orig)
	if err != nil {
		return nil, 0, err
	}
	defer w.rollback()
	dim := 0
	for _, c := range chunks {
		dim = max(dim, len(c.Vector))
		if err := w.add(ctx, c); err != nil {
			return nil, 0, err
		}
	}
	return w.commit(ctx, dim)
}

// rowVectors reports whether the chunk rows hold the vectors: with a
// remote store, and with replicas (which build their indexes from the
// rows). A local embedded index keeps them in its snapshot and vector log
// only.
func (b *base) rowVectors() bool { return b.mem == nil || b.dbOriginals }

// applyFile brings the in-memory indexes up to a committed replacement of
// the file's chunks: the chunks old are gone, the chunks ids (pieces) are
// there, their vectors in log from logStart (nil with a remote store).
// The commit is done, so the indexes follow it even when the request that
// made it is cancelled meanwhile: its ctx's values without its
// cancellation; a remote store's delete is bounded by its own per-call
// timeout (QdrantConfig.Timeout).
func (b *base) applyFile(ctx context.Context, old []string, file string, ids []string, pieces []Piece, log *vecLog, logStart int64, gen uint64) {
	keep := make(map[string]bool, len(ids))
	for _, id := range ids {
		keep[id] = true
	}
	var gone []string
	for _, id := range old {
		if !keep[id] {
			gone = append(gone, id)
		}
	}
	b.lexRemove(gone...)
	dctx := context.WithoutCancel(ctx)
	if len(gone) > 0 {
		// With a remote store, stale points are ignored by searches;
		// removing them is tidying.
		_ = b.vec.Delete(dctx, Filter{IDs: gone})
	}
	// A large ingestion collects its garbage (the term counts, the graph
	// searches of the insertions) every bulkGC chunks: the heap then
	// follows the indexes and one batch's garbage, where the runtime's
	// pacing alone would let it grow to twice the indexes.
	gcEvery := 0
	if len(ids) >= bulkGC {
		gcEvery = bulkGC
	}
	// The term counts are made on all cores, a block at a time, and
	// added in order.
	tfs := make([]map[string]int, min(len(pieces), termBlock))
	for s := 0; s < len(pieces); s += termBlock {
		e := min(s+termBlock, len(pieces))
		parallelFor(e-s, func(i int) {
			p := pieces[s+i]
			tfs[i] = termCounts(chunkTerms(titleOf(file, p.Metadata), p.Text))
		})
		for i := s; i < e; i++ {
			b.lexAdd(ids[i], tfs[i-s])
			tfs[i-s] = nil
			if gcEvery > 0 && (i+1)%gcEvery == 0 {
				runtime.GC()
			}
		}
	}
	if b.mem != nil && log != nil {
		pay := make(map[string]payload, len(ids))
		for i, p := range pieces {
			pay[ids[i]] = payload{file: file, meta: p.Metadata}
		}
		// The vectors were synced before the commit: a failure to read
		// them back leaves the chunks out of the vector index until the
		// next open, which indexes them from the log.
		_ = b.mem.addFromLog(dctx, log, logStart, pay, gcEvery)
	}
	b.gen = gen
	b.changed(len(ids) + len(gone))
}

// deleteFile removes a document's rows (one transaction), then its chunks
// from the indexes, and its original when deleteContent is set (in the
// same transaction when the originals live in the database).
func (b *base) deleteFile(ctx context.Context, name string, deleteContent bool) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ids, err := deleteFileRows(ctx, tx, name)
	if err != nil {
		return err
	}
	if deleteContent && b.dbOriginals {
		if _, err := deleteOriginal(ctx, tx, name); err != nil {
			return err
		}
	}
	gen, err := commitGeneration(ctx, tx)
	if err != nil {
		return err
	}
	b.lexRemove(ids...)
	b.structs.invalidate()
	if len(ids) > 0 {
		_ = b.vec.Delete(context.WithoutCancel(ctx), Filter{IDs: ids})
	}
	b.gen = gen
	b.changed(len(ids))
	if deleteContent {
		// With the originals in the database, a copy an older version
		// left in this replica's folder goes too.
		if _, err := removeOriginal(b.dir, name); err != nil {
			return fmt.Errorf("delete original of %s: %w", name, err)
		}
	}
	return nil
}

// clear removes every file and chunk and writes settings (meta keys) in
// one transaction that also starts a new epoch, then empties the indexes;
// the originals stay.
func (b *base) clear(ctx context.Context, settings map[string]string) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ids, err := allChunkIDs(ctx, tx)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM files`); err != nil {
		return err
	}
	if err := setMeta(ctx, tx, "dim", "0"); err != nil {
		return err
	}
	for k, v := range settings {
		if err := setMeta(ctx, tx, k, v); err != nil {
			return err
		}
	}
	epoch := uuid.NewString()
	if err := setMeta(ctx, tx, "epoch", epoch); err != nil {
		return err
	}
	gen, err := commitGeneration(ctx, tx)
	if err != nil {
		return err
	}
	b.lexRemove(ids...)
	b.structs.invalidate()
	if err := b.vec.Drop(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("drop vectors: %w", err)
	}
	// The snapshots and the vector log are of the old epoch, which the
	// next open ignores: remove them now.
	if b.log != nil {
		b.log.close()
		b.log = nil
	}
	for _, f := range []string{lexSnapshot, vecSnapshot, vecLogFile} {
		if err := os.Remove(filepath.Join(b.dir, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	b.dirty, b.lexDirty = 0, 0
	b.mu.Lock()
	b.info.Dim = 0
	b.mu.Unlock()
	b.gen = gen
	b.epoch = epoch
	return nil
}

// readOriginal returns a document's original and its modification time;
// ErrNotFound when it has none. With the originals in the database, a copy
// that an older version left in this replica's content folder stands in
// for a missing row when it is the version the KB indexed (legacy is
// then true: the caller stores it); any other copy there is ignored.
func (b *base) readOriginal(ctx context.Context, name string) (data []byte, mtime time.Time, legacy bool, err error) {
	if b.dbOriginals {
		data, mtime, ok, err := getOriginal(ctx, b.db, name)
		if err != nil || ok {
			return data, mtime, false, err
		}
	}
	// What downloads serve: no hidden file, nothing through a link.
	f, st, err := openOriginal(b.dir, name)
	if err == nil {
		data, err = io.ReadAll(f)
		f.Close()
	} else if errors.Is(err, errNotPlainFile) {
		err = fs.ErrNotExist
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("original of %s: %w", name, ErrNotFound)
		}
		return nil, time.Time{}, false, err
	}
	if b.dbOriginals {
		f, ferr := getFile(ctx, b.db, name)
		if ferr != nil && !errors.Is(ferr, ErrNotFound) {
			return nil, time.Time{}, false, ferr
		}
		if ferr != nil || f.CustomDocs || f.Hash != contentHash(data, nil) {
			return nil, time.Time{}, false, fmt.Errorf("original of %s: %w", name, ErrNotFound)
		}
		return data, st.ModTime(), true, nil
	}
	return data, st.ModTime(), false, nil
}

// fileNames lists the KB's documents, sorted. It reads their names
// alone: an upload checks its names against every document's.
func (b *base) fileNames(ctx context.Context) ([]string, error) {
	names, err := queryStrings(ctx, b.db, `SELECT name FROM files`)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}
