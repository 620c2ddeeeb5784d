package kb

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
)

// The structure index of a knowledge base: every document's title,
// aliases and tree of parts (docstruct.Parse, with the base's profile),
// the aliases made distinctive across the base (docstruct.Distinguish).
// An addressed question ("第三十六条", "Article I, Section 8") resolves
// in it before similarity ranks the rest (address.go).
//
// The index is not persisted: it is derived again from what the base
// keeps anyway. Ingestion parses the text it has just loaded; at open a
// background build reads every document's original (the content folder,
// or the originals table with replicas) and parses it, and a document
// without an original (custom docs) is read back from its chunks. Parsing
// is cheap beside loading, the structure is a pure function of the text
// and the profile, and so a stored copy could only go stale: a change of
// profile or of the parser would need a migration of every base, in two
// database engines, where re-deriving needs nothing. The cost is the
// loading of the originals once per open, off the request path.
//
// The index follows the files table: every change of the base (upload,
// update, deletion, rebuild, a profile change, a change another replica
// made) bumps asked, and the next search reconciles the index with the
// files' names and hashes, reusing every document whose hash is
// unchanged. A search waits for a build under way (it needs its result)
// but never for one that is not needed.
type structIndex struct {
	// sem is held by the one build (or put) under way; made on first use
	// (semOnce), so the zero structIndex is ready.
	semOnce sync.Once
	sem     chan struct{}
	cur     atomic.Pointer[structSet]
	// asked counts the changes reported; a set built at version v
	// reflects the changes up to v.
	asked atomic.Uint64
}

// structSet is one state of the index, read without locks once stored.
type structSet struct {
	version uint64
	profile *docstruct.Profile
	docs    []*structDoc // by file name
	byFile  map[string]*structDoc
	known   docstruct.Known
}

// structDoc is one document's structure. One in a set is read
// concurrently: never changed once stored (a set that changes it makes a
// copy).
type structDoc struct {
	file  string
	hash  string
	doc   *docstruct.Doc
	kinds []string
	// numbered is whether some part has a number without a kind (a
	// dotted number, an enumeration).
	numbered bool

	// parsed are the aliases as parsed (doc's before a set distinguishes
	// them); d0 is the title's distinctive alias among no other titles
	// (docstruct.Distinctive(title, nil)) and d0Fold its folded form.
	parsed     []string
	d0, d0Fold string
	// placed is set once doc's aliases are distinguished among a set's
	// titles: alias is then the distinctive alias they end with ("" for
	// none).
	placed bool
	alias  string
	// kindSeq are the kinds of the parts in order, each spelling once:
	// the kinds of several documents (docstruct.KindsOf) merge theirs.
	kindSeq []string
}

// semaphore returns sem, made on first use.
func (x *structIndex) semaphore() chan struct{} {
	x.semOnce.Do(func() { x.sem = make(chan struct{}, 1) })
	return x.sem
}

// invalidate reports a change: the next use reconciles the index.
func (x *structIndex) invalidate() { x.asked.Add(1) }

func (x *structIndex) lock(ctx context.Context) error {
	select {
	case x.semaphore() <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (x *structIndex) unlock() { <-x.semaphore() }

// structFormat is how the structure reads a document of this name: the
// original Markdown or text as written (Markdown's list numbers and
// headings intact), other formats as their loader's text, which writes
// headings as Markdown heading lines.
func structFormat(name string) (docstruct.Format, bool) {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return docstruct.Markdown, true
	case ".txt", ".text":
		return docstruct.Text, true
	}
	return docstruct.Markdown, false
}

// structText is the text the structure of document name is read from:
// its original as written for Markdown and plain text, else its loaded
// documents joined.
func structText(name string, data []byte, docs []Document) (string, docstruct.Format) {
	f, raw := structFormat(name)
	if raw && data != nil {
		return cleanText(decodeText(data)), f
	}
	parts := make([]string, 0, len(docs))
	for _, d := range docs {
		parts = append(parts, d.Text)
	}
	return strings.Join(parts, "\n\n"), f
}

// parseStruct reads one document's structure.
func parseStruct(file, hash, txt string, f docstruct.Format, p *docstruct.Profile) *structDoc {
	d := docstruct.Parse(file, txt, f, p)
	sd := &structDoc{file: file, hash: hash, doc: d, kinds: docstruct.KindsOf(d), parsed: d.Aliases}
	sd.d0 = docstruct.Distinctive(d.Title, nil)
	sd.d0Fold = foldTitle(sd.d0)
	d.Root.Walk(func(p *docstruct.Part) bool {
		if p.Label.Kind == "" && p.Label.HasNumber() {
			sd.numbered = true
		}
		return !sd.numbered
	})
	d.Root.Walk(func(p *docstruct.Part) bool {
		if k := p.Label.Kind; k != "" && !slices.Contains(sd.kindSeq, k) {
			sd.kindSeq = append(sd.kindSeq, k)
		}
		return true
	})
	return sd
}

// profile is the profile the base's documents are read with, nil for
// none.
func (b *base) profile() *docstruct.Profile { return b.prof.Load() }

// buildStructAtOpen builds the structure index in the background once the
// base is open, so that the first addressed question finds it ready (or
// waits only for the rest of it); close stops it.
func (b *base) buildStructAtOpen() {
	ctx, cancel := context.WithCancel(context.Background())
	b.stopBuild = cancel
	go func() {
		defer cancel()
		if b.acquire() != nil {
			return
		}
		defer b.life.RUnlock()
		_, _ = b.structure(ctx) // a failure is tried again by the first search
	}()
}

// structure returns the base's structure index, up to date with every
// change reported before the call: built now (or by the build under way,
// waited for) when it is not.
func (b *base) structure(ctx context.Context) (*structSet, error) {
	x := &b.structs
	if cur := x.cur.Load(); cur != nil && cur.version >= x.asked.Load() {
		return cur, nil
	}
	if err := x.lock(ctx); err != nil {
		return nil, err
	}
	defer x.unlock()
	want := x.asked.Load()
	cur := x.cur.Load()
	if cur != nil && cur.version >= want {
		return cur, nil
	}
	set, err := b.buildStruct(ctx, cur, want)
	if err != nil {
		return nil, err
	}
	x.cur.Store(set)
	return set, nil
}

// Documents returns the knowledge base's documents as its structure index
// holds them (parsed with its profile: titles, aliases distinctive within
// the base, parts, text), by file name. They are shared: callers copy what
// they change.
func (s *Service) Documents(ctx context.Context, name string) ([]*docstruct.Doc, error) {
	b, release, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer release()
	set, err := b.structure(ctx)
	if err != nil {
		return nil, fmt.Errorf("documents of %s: %w", name, err)
	}
	out := make([]*docstruct.Doc, len(set.docs))
	for i, d := range set.docs {
		out[i] = d.doc
	}
	return out, nil
}

// buildStruct reconciles the index with the files table: documents whose
// hash is unchanged are kept (parsed again from their text when the
// profile changed), the others read from their originals.
func (b *base) buildStruct(ctx context.Context, cur *structSet, version uint64) (*structSet, error) {
	files, err := listFiles(ctx, b.db)
	if err != nil {
		return nil, fmt.Errorf("structure of %s: %w", b.name, err)
	}
	p := b.profile()
	docs := make([]*structDoc, 0, len(files))
	for _, f := range files {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		if cur != nil {
			if old := cur.byFile[f.Name]; old != nil && old.hash == f.Hash {
				if cur.profile == p {
					docs = append(docs, old)
				} else {
					fm, _ := structFormat(f.Name)
					docs = append(docs, parseStruct(f.Name, f.Hash, old.doc.Text, fm, p))
				}
				continue
			}
		}
		txt, fm, err := b.readStructText(ctx, f)
		if err != nil {
			if errors.Is(err, ErrNotFound) || errIsFileProblem(err) {
				continue // a document the index cannot read is found by similarity only
			}
			return nil, err
		}
		docs = append(docs, parseStruct(f.Name, f.Hash, txt, fm, p))
	}
	return newStructSet(version, p, docs), nil
}

// readStructText reads the text a document's structure is parsed from:
// its original, loaded, or (custom docs) its chunks joined back.
func (b *base) readStructText(ctx context.Context, f FileInfo) (string, docstruct.Format, error) {
	fm, _ := structFormat(f.Name)
	if f.CustomDocs {
		txt, err := b.chunkText(ctx, f.Name)
		return txt, fm, err
	}
	data, _, _, err := b.readOriginal(ctx, f.Name)
	if errors.Is(err, ErrNotFound) {
		txt, err := b.chunkText(ctx, f.Name)
		return txt, fm, err
	}
	if err != nil {
		return "", fm, err
	}
	if _, raw := structFormat(f.Name); raw {
		txt, fm := structText(f.Name, data, nil)
		return txt, fm, nil
	}
	pctx, cancel := parseContext(ctx, parseTimeoutOpen)
	defer cancel()
	docs, err := LoadContext(pctx, f.Name, data)
	if err != nil {
		return "", fm, err
	}
	txt, fm := structText(f.Name, nil, docs)
	return txt, fm, nil
}

// parseTimeoutOpen bounds the loading of one original for the index.
const parseTimeoutOpen = 5 * time.Minute

// chunkText is a document's text as its chunks hold it, in order, each
// chunk's overlap with the one before left out.
func (b *base) chunkText(ctx context.Context, file string) (string, error) {
	var sb strings.Builder
	err := eachChunk(ctx, b.db, `SELECT id, file, seq, text, metadata, '', NULL FROM chunks WHERE file = ? ORDER BY seq`, []any{file}, func(c storedChunk) error {
		k := overlapLen(sb.String(), c.Text)
		if k == 0 && sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString(c.Text[k:])
		return nil
	})
	return sb.String(), err
}

// overlapLen is the length of the longest prefix of next (at most
// maxOverlapBytes, ending on a character boundary) that ends acc; a chunk
// with no overlap starts a new paragraph.
func overlapLen(acc, next string) int {
	if acc == "" {
		return 0
	}
	for k := min(len(next), len(acc), maxOverlapBytes); k > 0; k-- {
		if k < len(next) && !utf8.RuneStart(next[k]) {
			continue
		}
		if strings.HasSuffix(acc, next[:k]) {
			return k
		}
	}
	return 0
}

const maxOverlapBytes = 4096
