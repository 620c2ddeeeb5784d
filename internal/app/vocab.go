package app

import (
	"context"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/text"
)

// kbLister is what the vocabulary reads of the knowledge bases;
// *kb.Service satisfies it.
type kbLister interface {
	Names(ctx context.Context) ([]string, error)
	Files(ctx context.Context, name string) ([]kb.FileInfo, error)
	ListChunks(ctx context.Context, name, file string, metadata map[string]any) ([]kb.Chunk, error)
}

// kbDocuments is what a catalog with a structure index (*kb.Service) also
// gives: its chunks' distinct metadata and its parsed documents, so a
// build reads neither the chunks' text nor parses the documents again
// (for a large base, hundreds of megabytes of garbage each time it
// changes).
type kbDocuments interface {
	ChunkMetadata(ctx context.Context, name string) ([]map[string]any, error)
	Documents(ctx context.Context, name string) ([]*docstruct.Doc, error)
}

// kbVocabulary is the offline rewriter's Vocabulary (extractive.NewRewriter) over
// the knowledge bases: their names, their documents' titles and their
// section headings, which the offline follow-up rewrite prefers as
// referents; and its Documents: the documents' titles, aliases and kinds
// of parts with the profile in force (docstruct.Known), and what each
// document says its subject is (vocab_docs.go).
//
// It is never built on the request path: a goroutine started when the
// knowledge bases are set (the memory is made before them) builds it, and
// builds it again when they change (changed, which the knowledge bases
// call after a knowledge base is created or deleted and after files are
// added, updated or removed) and, for changes another replica made to a
// shared store, when a use finds the last check older than `every`.
// Changes reported within `settle` of one another make one build (an
// upload of many files in many requests reads the chunks once). A build
// compares the knowledge bases' names and documents (name, hash,
// update time) with those the names were built from and reads the chunks
// only when they differ. Uses meanwhile see the names as they were (none
// before the first build is done): NamesIn reads one atomic pointer.
type kbVocabulary struct {
	every  time.Duration
	settle time.Duration

	names   atomic.Pointer[vocabSnapshot]
	checked atomic.Int64 // when the last check was asked for, Unix ns
	kick    chan struct{}

	// asked counts the changes reported, built those the served names
	// reflect (wait).
	mu     sync.Mutex
	cond   *sync.Cond
	asked  uint64
	built  uint64
	closed bool

	start  sync.Once
	cancel context.CancelFunc
	done   chan struct{}

	// kinds keeps the documents' subject kinds from one build for the
	// next; the builder's alone.
	kinds kindCache
}

// vocabSnapshot is what one build made: the names and the documents.
type vocabSnapshot struct {
	names []vocabName
	docs  vocabDocs
}

// vocabName is one known name and its lower-cased form.
type vocabName struct{ name, lower string }

// Bounds of the vocabulary: names longer than maxNameRunes are sentences,
// not names; maxNames bounds the matching work of one rewrite.
const (
	maxNameRunes = 40
	maxNames     = 5000
	// maxHeadingChunks bounds the chunks read for headings per knowledge
	// base.
	maxHeadingChunks = 50000
	// vocabularyBuildTimeout bounds one build.
	vocabularyBuildTimeout = 30 * time.Second
)

func chunkCount(fs []kb.FileInfo) int {
	n := 0
	for _, f := range fs {
		n += f.Chunks
	}
	return n
}

// vocabularyCheck is how often the served vocabulary looks for knowledge
// bases changed elsewhere (another replica sharing the store);
// vocabularySettle how long a build waits after a reported change for more.
const (
	vocabularyCheck  = 5 * time.Second
	vocabularySettle = time.Second
)

func newKBVocabulary(every, settle time.Duration) *kbVocabulary {
	v := &kbVocabulary{every: every, settle: settle, kick: make(chan struct{}, 1), done: make(chan struct{})}
	v.cond = sync.NewCond(&v.mu)
	return v
}

// set gives the vocabulary its knowledge bases and starts building it in
// the background; later calls do nothing.
func (v *kbVocabulary) set(kbs kbLister) {
	v.start.Do(func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.closed {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		v.cancel = cancel
		v.asked++
		v.nudge()
		go v.run(ctx, kbs)
	})
}

// changed reports that the knowledge base name (any, for "") changed: the
// vocabulary is built again in the background. It never blocks.
func (v *kbVocabulary) changed(string) {
	v.mu.Lock()
	v.asked++
	v.mu.Unlock()
	v.nudge()
}

// nudge asks the builder for a check without waiting for it.
func (v *kbVocabulary) nudge() {
	v.checked.Store(time.Now().UnixNano())
	select {
	case v.kick <- struct{}{}:
	default: // a check is already due
	}
}

// run builds the names each time it is nudged, until ctx is done.
func (v *kbVocabulary) run(ctx context.Context, kbs kbLister) {
	defer close(v.done)
	stamp := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.kick:
		}
		v.mu.Lock()
		changed := v.asked > v.built && v.built > 0 // a change after the first build
		v.mu.Unlock()
		if changed && v.settle > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(v.settle): // more changes meanwhile join this build
			}
			select {
			case <-v.kick:
			default:
			}
		}
		v.mu.Lock()
		target := v.asked
		v.mu.Unlock()
		var snap *vocabSnapshot
		stamp, snap = v.refresh(ctx, kbs, stamp)
		if snap != nil {
			v.names.Store(snap)
		}
		v.mu.Lock()
		v.built = max(v.built, target)
		v.cond.Broadcast()
		v.mu.Unlock()
	}
}

// wait blocks until the served names reflect every change reported
// before the call (built, or failed to build), or the vocabulary is
// closed or ctx is done.
func (v *kbVocabulary) wait(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.cond.Broadcast()
	})
	defer stop()
	v.mu.Lock()
	defer v.mu.Unlock()
	target := v.asked
	for v.built < target && !v.closed && ctx.Err() == nil {
		v.cond.Wait()
	}
	return ctx.Err()
}

// NamesIn returns the known names that occur in s (whole words in Latin
// script, substrings in Chinese: extractive.NameList's matching), as s writes
// them.
func (v *kbVocabulary) NamesIn(s string) []string {
	names := v.current()
	if len(names) == 0 || s == "" {
		return nil
	}
	ls := strings.ToLower(s)
	var cands extractive.NameList
	for _, n := range names {
		if strings.Contains(ls, n.lower) {
			cands = append(cands, n.name)
		}
	}
	out := cands.NamesIn(s)
	if len(ls) != len(s) {
		return out
	}
	for i, n := range out {
		ln := strings.ToLower(n)
		if j := strings.Index(ls, ln); j >= 0 {
			out[i] = s[j : j+len(ln)]
		}
	}
	return out
}

// current returns the names as last built (nil before the first build),
// nudging the builder when the last check is older than v.every.
func (v *kbVocabulary) current() []vocabName {
	if p := v.snapshot(); p != nil {
		return p.names
	}
	return nil
}

// snapshot returns the last build (nil before the first), nudging the
// builder when the last check is older than v.every.
func (v *kbVocabulary) snapshot() *vocabSnapshot {
	if last := v.checked.Load(); last != 0 && time.Since(time.Unix(0, last)) >= v.every {
		v.nudge()
	}
	return v.names.Load()
}

// Structure is what the documents say of their structure as last built
// (zero before the first build): extractive.Documents.
func (v *kbVocabulary) Structure() docstruct.Known {
	if p := v.snapshot(); p != nil {
		return p.docs.known
	}
	return docstruct.Known{}
}

// Named returns the things of the documents s names, as last built (none
// before the first build): extractive.Documents.
func (v *kbVocabulary) Named(s string) []extractive.Named {
	if p := v.snapshot(); p != nil {
		return p.docs.things.Named(s)
	}
	return nil
}

// refresh returns the stamp of the knowledge bases and, when it differs
// from old, what is built from them; on error, old and nil.
func (v *kbVocabulary) refresh(ctx context.Context, kbs kbLister, old string) (string, *vocabSnapshot) {
	ctx, cancel := context.WithTimeout(ctx, vocabularyBuildTimeout)
	defer cancel()
	stamp, files, err := kbStamp(ctx, kbs)
	if err != nil || stamp == old {
		return old, nil
	}
	names, docs, err := buildVocabulary(ctx, kbs, files, &v.kinds)
	if err != nil {
		return old, nil
	}
	return stamp, &vocabSnapshot{names: names, docs: docs}
}

// close stops the builder, cancelling a build in flight, and waits for it.
func (v *kbVocabulary) close() error {
	v.mu.Lock()
	v.closed = true
	v.cond.Broadcast()
	cancel := v.cancel
	v.mu.Unlock()
	if cancel != nil {
		cancel()
		<-v.done
	}
	return nil
}

// kbStamp lists the knowledge bases and their documents, and a stamp that
// changes when any of them does.
func kbStamp(ctx context.Context, kbs kbLister) (string, map[string][]kb.FileInfo, error) {
	names, err := kbs.Names(ctx)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	files := map[string][]kb.FileInfo{}
	for _, n := range names {
		fs, err := kbs.Files(ctx, n)
		if err != nil {
			return "", nil, err
		}
		files[n] = fs
		b.WriteString(n + "\x00")
		for _, f := range fs {
			b.WriteString(f.Name + "\x01" + f.Hash + "\x01" + f.UpdatedAt.String() + "\x00")
		}
		b.WriteString("\x02")
	}
	return b.String(), files, nil
}

// buildVocabulary collects the knowledge bases' names, their documents'
// titles (the file name without folder and extension, with - and _ read as
// spaces) and their chunks' section headings and page titles; and the
// documents (buildDocs): from the catalog's structure index when it has
// one (kbDocuments), else read from their chunks.
func buildVocabulary(ctx context.Context, kbs kbLister, files map[string][]kb.FileInfo, kinds *kindCache) ([]vocabName, vocabDocs, error) {
	seen := map[string]bool{}
	var out []vocabName
	add := func(s string) {
		s = cleanName(s)
		if s == "" || len(out) >= maxNames {
			return
		}
		l := strings.ToLower(s)
		if seen[l] {
			return
		}
		seen[l] = true
		out = append(out, vocabName{name: s, lower: l})
	}
	kbNames := make([]string, 0, len(files))
	for n := range files {
		kbNames = append(kbNames, n)
	}
	sort.Strings(kbNames)
	for _, n := range kbNames {
		add(n)
		for _, f := range files[n] {
			title := strings.TrimSuffix(path.Base(f.Name), path.Ext(f.Name))
			add(title)
			add(titleSpaces.Replace(title))
		}
	}
	headings := func(meta map[string]any) {
		if sec, ok := meta["section"].(string); ok {
			for _, h := range strings.Split(sec, " > ") {
				add(h)
			}
		}
		if t, ok := meta["title"].(string); ok {
			add(t)
		}
	}
	read := map[string][]kb.Chunk{}
	parsed := map[string][]*docstruct.Doc{}
	indexed, fast := kbs.(kbDocuments)
	for _, n := range kbNames {
		if fast {
			// The distinct metadata and the structure index's
			// documents: no chunk text is read or parsed again.
			metas, err := indexed.ChunkMetadata(ctx, n)
			if err != nil {
				return nil, vocabDocs{}, err
			}
			for _, m := range metas {
				headings(m)
			}
			if parsed[n], err = indexed.Documents(ctx, n); err != nil {
				return nil, vocabDocs{}, err
			}
			continue
		}
		if chunkCount(files[n]) > maxHeadingChunks {
			continue // its titles and name only: reading every chunk costs too much
		}
		chunks, err := kbs.ListChunks(ctx, n, "", nil)
		if err != nil {
			return nil, vocabDocs{}, err
		}
		read[n] = chunks
		for _, c := range chunks {
			headings(c.Metadata)
		}
	}
	if out == nil {
		out = []vocabName{} // built, and empty
	}
	return out, buildDocs(kbNames, files, read, parsed, profilesOf(ctx, kbs), kinds), nil
}

// titleSpaces reads - and _ in a document title as spaces.
var titleSpaces = strings.NewReplacer("-", " ", "_", " ")

// headingNumber is a heading's numbering: "1.2 ", "3) ", "第一章 ".
var headingNumber = regexp.MustCompile(`^(?:[0-9]+(?:[.)][0-9]*)*\.?\)?\s+|第[0-9一二三四五六七八九十百]+[章节篇卷部]\s*)`)

// cleanName trims a title or heading to a name, or "" when it cannot be
// one: too short (a letter or one Chinese character would match almost
// anything), too long (a sentence), or without letters.
func cleanName(s string) string {
	s = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), "#*- "))
	s = strings.TrimSpace(headingNumber.ReplaceAllString(s, ""))
	s = strings.Join(strings.Fields(s), " ")
	n := utf8.RuneCountInString(s)
	if n > maxNameRunes {
		return ""
	}
	cjk, letters := text.CountLetters(s)
	if cjk < 2 && letters < 3 {
		return ""
	}
	// A Chinese heading of several parts ("《劳动法》第四章 工作时间 和 休息休假")
	// or of many characters is a label, not a name a follow-up's 它 stands
	// for.
	if cjk > 0 && (strings.ContainsRune(s, ' ') || cjk > maxCJKNameRunes) {
		return ""
	}
	return s
}

// maxCJKNameRunes bounds a Chinese name.
const maxCJKNameRunes = 16
