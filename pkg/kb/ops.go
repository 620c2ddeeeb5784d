package kb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
)

// FileData is an uploaded document: its bytes, or the file a server
// spooled them to (see SpoolDir), read when the document's turn comes so
// that a request holds one document in memory at a time, not all.
type FileData struct {
	Name string
	Data []byte
	Path string // the spooled upload, when Data is nil
}

// SplitOptions override the configured chunking for one request; zero
// values take the configuration.
type SplitOptions struct {
	ChunkSize      int
	ChunkOverlap   int
	ZhTitleEnhance *bool
}

// AddOptions tune AddFiles.
type AddOptions struct {
	SplitOptions
	// Override replaces documents that exist. Without it a document whose
	// upload is identical to the stored one fails with ErrExists (Chatchat's
	// upload_docs refuses a file of the same size; mixchat compares the
	// content), and a changed one replaces the old chunks (as Chatchat
	// overwrites a file whose size changed).
	Override bool
	// Force re-indexes documents whose content and chunking are unchanged
	// (they are skipped otherwise).
	Force bool
	// SaveOnly stores the originals without indexing them (Chatchat's
	// to_vector_store=false); UpdateFiles or Recreate index them later.
	SaveOnly bool
	// Docs are custom documents by file name (Chatchat's "docs" field):
	// they are indexed instead of the file's own text; a name with no
	// uploaded file is indexed from its docs alone.
	Docs map[string][]Document
}

// AddResult says what happened to each document of a request.
type AddResult struct {
	Added   []string         // indexed (new or changed)
	Skipped []string         // unchanged: content and chunking as indexed
	Failed  map[string]error // per-file errors; the other files went on
}

// splitter builds the splitter a request asks for.
func (c Config) splitter(o SplitOptions) (Splitter, fileParams, error) {
	size, overlap := c.ChunkSize, c.ChunkOverlap
	if o.ChunkSize > 0 {
		size = o.ChunkSize
		if o.ChunkOverlap == 0 && overlap >= size {
			overlap = size / 5
		}
	}
	if o.ChunkOverlap > 0 {
		overlap = o.ChunkOverlap
	}
	zh := c.ZhTitleEnhance
	if o.ZhTitleEnhance != nil {
		zh = *o.ZhTitleEnhance
	}
	if size < 10 || size > 100000 {
		return Splitter{}, fileParams{}, fmt.Errorf("%w: chunk_size %d: use 10..100000", ErrBadRequest, size)
	}
	if overlap < 0 || overlap >= size {
		return Splitter{}, fileParams{}, fmt.Errorf("%w: chunk_overlap %d: use 0..chunk_size-1 (%d)", ErrBadRequest, overlap, size-1)
	}
	sp := Splitter{Size: size, Overlap: overlap, TitleEnhance: zh}
	if c.ChunkUnit == UnitTokens {
		tok := llm.NewTokenizer(c.EmbedModel)
		sp.Len = tok.Count
	} else {
		sp.Len = utf8.RuneCountInString
	}
	return sp, fileParams{chunkSize: size, chunkOverlap: overlap, zhTitle: zh}, nil
}

// AddFiles indexes uploaded documents into a knowledge base, each in its own
// transaction: a failing file (unsupported, corrupt, empty, embedding
// error) is reported in AddResult.Failed and the others go on. progress,
// when not nil, hears about each file. The error is for the request as a
// whole (unknown KB, bad chunk size, embedding model mismatch, cancelled
// context).
func (s *Service) AddFiles(ctx context.Context, name string, files []FileData, opts AddOptions, progress func(Progress)) (AddResult, error) {
	defer s.changed(name)
	w, err := s.startWrite(ctx, name, opts.SplitOptions, opts.Force)
	if err != nil {
		return newResult(), err
	}
	defer w.release()
	b := w.b
	// New names: no hidden segment, NFC, none that an existing one
	// differs from only by case or width (names.go).
	if w.keys, err = b.nameKeys(ctx); err != nil {
		return w.res, err
	}
	for _, f := range files {
		if err := validUploadName(f.Name); err != nil {
			w.res.Failed[f.Name] = err
			continue
		}
		name := b.fileName(ctx, f.Name)
		if w.seen[name] {
			w.res.Failed[f.Name] = fmt.Errorf("%w: the request names %s twice", ErrExists, f.Name)
			continue
		}
		w.seen[name] = true
		if err := checkNewFile(w.keys, name); err != nil {
			w.res.Failed[f.Name] = err
			continue
		}
		size, err := f.size()
		if err == nil {
			err = b.checkOriginalSize(s.cfg, name, size)
		}
		if err != nil {
			w.res.Failed[f.Name] = err
			continue
		}
		job := w.job(name)
		job.data, job.save = f.Data, true
		if f.Data == nil {
			job.path = f.Path
		}
		job.docs = opts.Docs[f.Name]
		w.jobs = append(w.jobs, job)
	}
	w.addDocs(ctx, opts.Docs)
	return s.runJobs(ctx, w, progress, func(i int, job ingestJob) bool {
		if !opts.Override && job.data != nil && b.sameUpload(ctx, job.name, job.data) {
			w.res.Failed[job.name] = fmt.Errorf("file %s: %w", job.name, ErrExists)
			report(progress, Progress{File: job.name, Index: i + 1, Total: len(w.jobs), Stage: StageFailed, Err: w.res.Failed[job.name]})
			return true
		}
		if !opts.SaveOnly {
			return false
		}
		if job.data == nil {
			return true // custom docs need indexing to be kept at all
		}
		var err error
		if b.dbOriginals {
			err = putOriginal(ctx, b.db, job.name, job.data)
		} else {
			err = b.saveOriginal(job.name, job.data)
		}
		if err != nil {
			w.res.Failed[job.name] = err
		} else {
			w.res.Added = append(w.res.Added, job.name)
		}
		return true
	})
}

func newResult() AddResult { return AddResult{Failed: map[string]error{}} }

// writeBatch is a write request under way (AddFiles, UpdateFiles): the KB
// held open, the chunking the request asks for, the jobs gathered and
// what happened to them.
type writeBatch struct {
	b       *base
	release func()
	sp      Splitter
	params  fileParams
	force   bool
	jobs    []ingestJob
	seen    map[string]bool // the documents the request named
	// keys, when not nil, holds the names of the KB's documents by
	// foldKey: the request creates documents (AddFiles), whose names are
	// checked as new names.
	keys *nameKeys
	res  AddResult
}

// startWrite holds the KB name open for a write request and checks that
// it is writable, and builds the splitter the request asks for.
func (s *Service) startWrite(ctx context.Context, name string, o SplitOptions, force bool) (*writeBatch, error) {
	sp, params, err := s.cfg.splitter(o)
	if err != nil {
		return nil, err
	}
	b, release, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.checkModel(b); err != nil {
		release()
		return nil, err
	}
	return &writeBatch{b: b, release: release, sp: sp, params: params, force: force, seen: map[string]bool{}, res: newResult()}, nil
}

// job is a job of the batch for the document name.
func (w *writeBatch) job(name string) ingestJob {
	return ingestJob{name: name, force: w.force, split: w.sp, params: w.params}
}

// claim resolves the document name a client gave (fileName: its stored
// spelling, or NFC) and reports whether it gets a job: not when the batch
// has seen it already, nor when the name is invalid or, for new
// documents, a lookalike of another (a failure of the batch). It marks
// the name seen.
func (w *writeBatch) claim(ctx context.Context, name string) (string, bool) {
	check := ValidFileName
	if w.keys != nil {
		check = validUploadName
	}
	if err := check(name); err != nil {
		w.res.Failed[name] = err
		return "", false
	}
	given := name
	name = w.b.fileName(ctx, name)
	if w.seen[name] {
		return "", false
	}
	w.seen[name] = true
	if w.keys != nil {
		if err := checkNewFile(w.keys, name); err != nil {
			w.res.Failed[given] = err
			return "", false
		}
	}
	return name, true
}

// addDocs adds a job for each document of custom docs the request did not
// name otherwise.
func (w *writeBatch) addDocs(ctx context.Context, docs map[string][]Document) {
	for given, d := range docs {
		name, ok := w.claim(ctx, given)
		if !ok {
			continue
		}
		job := w.job(name)
		job.docs = d
		w.jobs = append(w.jobs, job)
	}
}

// runJobs ingests the batch's jobs one after the other under the KB's
// write lock, and saves the snapshots after. handle, when not nil, sees
// each job first and reports whether it dealt with it itself.
func (s *Service) runJobs(ctx context.Context, w *writeBatch, progress func(Progress), handle func(i int, job ingestJob) bool) (AddResult, error) {
	b := w.b
	ctx, done := s.writeContext(ctx)
	defer done()
	b.wmu.Lock()
	defer b.wmu.Unlock()
	defer b.afterWrite(b.dirty)
	for i, job := range w.jobs {
		if err := ctx.Err(); err != nil {
			return w.res, err
		}
		if job.path != "" {
			// A spooled upload is read now, and dropped with job after
			// its turn.
			data, err := os.ReadFile(job.path)
			if err != nil {
				w.res.Failed[job.name] = fmt.Errorf("read upload %s: %w", job.name, err)
				report(progress, Progress{File: job.name, Index: i + 1, Total: len(w.jobs), Stage: StageFailed, Err: w.res.Failed[job.name]})
				continue
			}
			job.data = data
		}
		if handle != nil && handle(i, job) {
			continue
		}
		s.run(ctx, b, job, i+1, len(w.jobs), &w.res, progress)
	}
	return w.res, ctx.Err()
}

// sameUpload reports whether the KB already holds data as the document
// name: its stored original has the same bytes or, without an original,
// the indexed document was made from the same content.
func (b *base) sameUpload(ctx context.Context, name string, data []byte) bool {
	if b.dbOriginals {
		if h, ok, err := originalHash(ctx, b.db, name); err == nil && ok {
			return h == contentHash(data, nil)
		}
	} else if old, err := os.ReadFile(b.contentPath(name)); err == nil {
		return bytes.Equal(old, data)
	}
	f, err := getFile(ctx, b.db, name)
	return err == nil && !f.CustomDocs && f.Hash == contentHash(data, nil)
}

func report(fn func(Progress), p Progress) {
	if fn != nil {
		fn(p)
	}
}

// run ingests one job and records its outcome.
func (s *Service) run(ctx context.Context, b *base, job ingestJob, i, n int, res *AddResult, progress func(Progress)) {
	report(progress, Progress{File: job.name, Index: i, Total: n, Stage: StageStart})
	job.parse, job.chunks = s.cfg.ParseTimeout, s.cfg.MaxChunksPerFile
	r, err := b.ingest(ctx, job, s.emb, s.cfg.EmbedBatch, func(p Progress) {
		p.File, p.Index, p.Total = job.name, i, n
		report(progress, p)
	})
	switch {
	case err != nil:
		res.Failed[job.name] = err
		report(progress, Progress{File: job.name, Index: i, Total: n, Stage: StageFailed, Err: err})
	case r.skipped:
		res.Skipped = append(res.Skipped, job.name)
		report(progress, Progress{File: job.name, Index: i, Total: n, Stage: StageSkipped, Chunks: r.chunks})
	default:
		res.Added = append(res.Added, job.name)
		report(progress, Progress{File: job.name, Index: i, Total: n, Stage: StageDone, Chunks: r.chunks})
	}
}

// UpdateOptions tune UpdateFiles.
type UpdateOptions struct {
	SplitOptions
	// OverrideCustomDocs re-indexes documents that were indexed from custom
	// docs from their original instead (they are left alone otherwise).
	OverrideCustomDocs bool
	Force              bool
	Docs               map[string][]Document
}

// UpdateFiles re-indexes documents from their stored originals (with the
// request's chunking), or from custom docs given in opts.Docs.
func (s *Service) UpdateFiles(ctx context.Context, name string, files []string, opts UpdateOptions, progress func(Progress)) (AddResult, error) {
	defer s.changed(name)
	w, err := s.startWrite(ctx, name, opts.SplitOptions, opts.Force)
	if err != nil {
		return newResult(), err
	}
	defer w.release()
	for _, given := range files {
		f, ok := w.claim(ctx, given)
		if !ok {
			continue
		}
		job := w.job(f)
		if docs, ok := opts.Docs[given]; ok {
			job.docs = docs
			w.jobs = append(w.jobs, job)
			continue
		}
		if old, err := getFile(ctx, w.b.db, f); err == nil && old.CustomDocs && !opts.OverrideCustomDocs {
			continue
		}
		data, _, legacy, err := w.b.readOriginal(ctx, f)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				err = fmt.Errorf("file %s: %w", f, ErrNotFound)
			}
			w.res.Failed[f] = err
			continue
		}
		// An original found only in this replica's folder is stored with
		// the rows (legacy: see readOriginal).
		job.data, job.save = data, legacy
		w.jobs = append(w.jobs, job)
	}
	w.addDocs(ctx, opts.Docs)
	return s.runJobs(ctx, w, progress, nil)
}

// DeleteFiles removes documents from a knowledge base (each in its own
// transaction), and their originals when deleteContent is set. Unknown
// documents are reported in the map (ErrNotFound), not as the error.
func (s *Service) DeleteFiles(ctx context.Context, name string, files []string, deleteContent bool) (map[string]error, error) {
	defer s.changed(name)
	failed := map[string]error{}
	b, release, err := s.get(ctx, name)
	if err != nil {
		return failed, err
	}
	defer release()
	ctx, done := s.writeContext(ctx)
	defer done()
	b.wmu.Lock()
	defer b.wmu.Unlock()
	defer b.afterWrite(b.dirty)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return failed, err
		}
		if err := ValidFileName(f); err != nil {
			failed[f] = err
			continue
		}
		given := f
		f := b.fileName(ctx, f)
		err := b.deleteFile(ctx, f, deleteContent)
		if errors.Is(err, ErrNotFound) && deleteContent {
			// Only an original, never indexed: remove it all the same.
			if b.dbOriginals {
				if ok, derr := deleteOriginal(ctx, b.db, f); derr != nil {
					err = derr
				} else if ok {
					err = nil
				}
			}
			// Only an original the knowledge base keeps: a plain file
			// reached through no link, not hidden (a temporary upload).
			if !hiddenName(f) {
				if ok, rerr := removeOriginal(b.dir, f); rerr == nil && ok && !b.dbOriginals {
					err = nil
				} else if rerr != nil && !b.dbOriginals {
					err = fmt.Errorf("file %s: %w", f, rerr)
				}
			}
		}
		if err != nil {
			failed[given] = err
		}
	}
	return failed, nil
}

// RecreateOptions tune Recreate.
type RecreateOptions struct {
	SplitOptions
	// AllowEmpty creates the KB when it does not exist (Chatchat's
	// allow_empty_kb, default true there), e.g. after files were copied
	// into DIR/NAME/content by hand.
	AllowEmpty  bool
	VectorStore string // "" keeps the KB's (or the configured) store
	EmbedModel  string // must be "" or the configured model
}

// Recreate rebuilds a knowledge base from its originals (the content
// folder, or with the PostgreSQL store the originals table): each is
// re-split, re-embedded and re-indexed in its own transaction (so an
// interrupted rebuild leaves a consistent KB, and other replicas follow
// each commit), then documents without an original are dropped. When the
// KB was built with another embedding model or vector store it is emptied
// first and rebuilt with the current ones. progress hears about each file.
func (s *Service) Recreate(ctx context.Context, name string, opts RecreateOptions, progress func(Progress)) (AddResult, error) {
	defer s.changed(name)
	res := AddResult{Failed: map[string]error{}}
	if err := ValidName(name); err != nil {
		return res, err
	}
	name, err := s.kbName(ctx, name)
	if err != nil {
		return res, err
	}
	sp, params, err := s.cfg.splitter(opts.SplitOptions)
	if err != nil {
		return res, err
	}
	model, err := s.cfg.resolveModel(opts.EmbedModel)
	if err != nil {
		return res, err
	}
	var vs string
	if strings.TrimSpace(opts.VectorStore) != "" {
		if vs, err = s.cfg.resolveStore(opts.VectorStore); err != nil {
			return res, err
		}
	}
	found, err := s.cat.Exists(ctx, name)
	if err != nil {
		return res, err
	}
	if !found {
		// Without allow_empty only a folder of originals copied in by hand
		// becomes a knowledge base (a shared catalog keeps no originals in
		// folders).
		if _, err := os.Stat(s.cfg.kbDir(name)); (err != nil || s.shared != nil) && !opts.AllowEmpty {
			return res, fmt.Errorf("knowledge base %s: %w", name, ErrNotFound)
		}
		if vs == "" {
			vs = s.cfg.VectorStore
		}
		if err := s.lockIdle(ctx, name); err != nil {
			return res, err
		}
		if found, err = s.cat.Exists(ctx, name); err == nil && !found {
			_, err = s.createLocked(ctx, name, vs, model, "", "")
		}
		s.mu.Unlock()
		if err != nil {
			return res, err
		}
	}
	b, release, err := s.get(ctx, name)
	if err != nil {
		return res, err
	}
	info := b.getInfo()
	if (vs != "" && vs != info.VectorStore) || info.EmbedModel != model {
		// Another store or model: start over with the current ones.
		release()
		if err := s.reset(ctx, name, vs, model); err != nil {
			return res, err
		}
		if b, release, err = s.get(ctx, name); err != nil {
			return res, err
		}
	}
	defer release()
	ctx, done := s.writeContext(ctx)
	defer done()

	b.wmu.Lock()
	defer b.wmu.Unlock()
	defer b.afterWrite(b.dirty)
	files, err := b.originals(ctx)
	if err != nil {
		return res, fmt.Errorf("list originals of %s: %w", name, err)
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if ValidFileName(f) != nil {
			continue
		}
		data, _, legacy, err := b.readOriginal(ctx, f)
		if err != nil {
			res.Failed[f] = err
			report(progress, Progress{File: f, Index: i + 1, Total: len(files), Stage: StageFailed, Err: err})
			continue
		}
		s.run(ctx, b, ingestJob{name: f, data: data, save: legacy, force: true, split: sp, params: params}, i+1, len(files), &res, progress)
	}
	// Documents with no original left (custom docs included) go, as a
	// rebuild from the folder would not have them.
	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
	}
	names, err := b.fileNames(ctx)
	if err != nil {
		return res, err
	}
	for _, n := range names {
		if !have[n] {
			if err := b.deleteFile(ctx, n, false); err != nil && !errors.Is(err, ErrNotFound) {
				return res, err
			}
		}
	}
	return res, nil
}

// reset empties a KB and records a new vector store and embedding model.
func (s *Service) reset(ctx context.Context, name, vs, model string) error {
	b, release, err := s.get(ctx, name)
	if err != nil {
		return err
	}
	settings := map[string]string{"embed_model": model}
	if vs != "" {
		settings["vector_store"] = vs
	}
	b.wmu.Lock()
	err = b.clear(ctx, settings) // one transaction: other replicas see the new settings with the new epoch
	b.wmu.Unlock()
	release()
	if err != nil {
		return fmt.Errorf("reset %s: %w", name, err)
	}
	// Reopen so the new store and model take effect.
	s.mu.Lock()
	delete(s.open, name)
	s.mu.Unlock()
	return b.close()
}

// originals lists the documents Recreate rebuilds from: the files in the
// content folder or, with the originals in the database, the stored ones
// and those an older version left in this replica's folder that
// readOriginal accepts. Sorted.
func (b *base) originals(ctx context.Context) ([]string, error) {
	local, err := contentFiles(b.dir)
	if err != nil || !b.dbOriginals {
		return local, err
	}
	names, err := originalNames(ctx, b.db)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	for _, n := range local {
		if have[n] || ValidFileName(n) != nil {
			continue
		}
		if _, _, legacy, err := b.readOriginal(ctx, n); err == nil && legacy {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// checkOriginalSize refuses an original the store cannot keep: when the
// originals live in the database (b.dbOriginals), one larger than
// kb.max_upload_bytes (an upload over HTTP cannot be larger; the CLI is
// held to the same limit).
func (b *base) checkOriginalSize(cfg Config, name string, n int) error {
	if b.dbOriginals && int64(n) > cfg.MaxUploadBytes {
		return fmt.Errorf("%w: file %s is %d bytes, more than kb.max_upload_bytes (%d) allows with kb.store %s",
			ErrBadRequest, name, n, cfg.MaxUploadBytes, cfg.Store)
	}
	return nil
}
