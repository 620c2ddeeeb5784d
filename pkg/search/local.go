package search

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/mixchat/mixchat/pkg/htmltext"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// localExts are the file types the local engine indexes.
var localExts = map[string]string{
	".html": "html", ".htm": "html", ".xhtml": "html",
	".md": "md", ".markdown": "md",
	".txt": "txt", ".text": "txt",
}

// Local is the offline engine: a full-text BM25 index (the knowledge
// bases' retrieve.BM25 over their terms, lexTerms: Chinese as character
// bigrams with traditional characters folded to simplified) over a folder of .html, .md and .txt files. It returns each
// matching file's title, a local: URL (its path relative to the folder, see
// localURL), a snippet with the matches in
// **bold**, and the most relevant passages as Content.
//
// Files are split into passages of about 400 characters and indexed with
// their title's terms; a file ranks by its best passage. The index is built
// by NewLocal and kept up to date as files are added, changed or removed:
// a search first re-lists the folder (at most once per Refresh interval)
// and re-reads the files whose size or modification time changed.
type Local struct {
	name         string
	dir          string
	refresh      time.Duration
	maxBytes     int64
	passageChars int

	scanMu   sync.Mutex   // one scan at a time
	lastScan atomic.Int64 // unix nanoseconds of the last scan

	mu    sync.RWMutex
	files map[string]*localFile // by path relative to dir
	index *retrieve.BM25        // ids "rel\x00passage"
}

type localFile struct {
	rel, url string
	size     int64
	mtime    time.Time
	title    string
	passages []string
}

// LocalOptions configure a Local engine.
type LocalOptions struct {
	Name string // engine name; "" means "local"
	Dir  string
	// Refresh is the least time between two checks of the folder; 0 checks
	// on every search, a negative value never.
	Refresh      time.Duration
	MaxFileBytes int64 // larger files are skipped; 0 means 16 MiB
	PassageChars int   // 0 means 400
}

// NewLocal indexes the folder o.Dir and returns the engine.
func NewLocal(o LocalOptions) (*Local, error) {
	if o.Name == "" {
		o.Name = LocalEngine
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 16 << 20
	}
	if o.PassageChars <= 0 {
		o.PassageChars = 400
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("local engine %s: %w", o.Name, err)
	}
	st, err := os.Stat(o.Dir) // errors name the folder as configured
	if err != nil {
		return nil, fmt.Errorf("local engine %s: %w", o.Name, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("local engine %s: %s is not a folder", o.Name, o.Dir)
	}
	l := &Local{
		name: o.Name, dir: abs, refresh: o.Refresh, maxBytes: o.MaxFileBytes, passageChars: o.PassageChars,
		files: map[string]*localFile{}, index: retrieve.NewBM25(retrieve.BM25Params{}),
	}
	if _, err := l.Refresh(context.Background()); err != nil {
		return nil, err
	}
	return l, nil
}

// Dir returns the indexed folder.
func (l *Local) Dir() string { return l.dir }

// Len returns the number of indexed files.
func (l *Local) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.files)
}

// Refresh re-lists the folder now and re-indexes what changed. It returns
// how many files were added, changed or removed.
func (l *Local) Refresh(ctx context.Context) (int, error) {
	l.scanMu.Lock()
	defer l.scanMu.Unlock()
	return l.scan(ctx)
}

// maybeRefresh scans when the last scan is older than the refresh
// interval. A search that finds another one scanning does not wait for it:
// it searches the index as it is.
func (l *Local) maybeRefresh(ctx context.Context) error {
	if l.refresh < 0 {
		return nil
	}
	if l.refresh > 0 && time.Since(time.Unix(0, l.lastScan.Load())) < l.refresh {
		return nil
	}
	if !l.scanMu.TryLock() {
		return nil
	}
	defer l.scanMu.Unlock()
	// Another search may have scanned just before.
	if l.refresh > 0 && time.Since(time.Unix(0, l.lastScan.Load())) < l.refresh {
		return nil
	}
	_, err := l.scan(ctx)
	return err
}

type fileStat struct {
	rel, abs string
	size     int64
	mtime    time.Time
}

// scan lists the folder, reads new and changed files and applies the
// changes to the index. The caller holds scanMu.
func (l *Local) scan(ctx context.Context) (int, error) {
	started := time.Now()
	var found []fileStat
	err := filepath.WalkDir(l.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == l.dir {
				return err
			}
			return nil // an unreadable entry is skipped
		}
		if p != l.dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || localExts[strings.ToLower(filepath.Ext(p))] == "" {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() > l.maxBytes {
			return nil
		}
		rel, _ := filepath.Rel(l.dir, p)
		found = append(found, fileStat{rel: filepath.ToSlash(rel), abs: p, size: info.Size(), mtime: info.ModTime()})
		return ctx.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("local engine %s: list %s: %w", l.name, l.dir, err)
	}

	l.mu.RLock()
	var changed []fileStat
	seen := make(map[string]bool, len(found))
	for _, f := range found {
		seen[f.rel] = true
		if old, ok := l.files[f.rel]; !ok || old.size != f.size || !old.mtime.Equal(f.mtime) {
			changed = append(changed, f)
		}
	}
	var removed []string
	for rel := range l.files {
		if !seen[rel] {
			removed = append(removed, rel)
		}
	}
	l.mu.RUnlock()

	// Read outside the lock so searches go on meanwhile.
	loaded := make([]*localFile, 0, len(changed))
	for _, f := range changed {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		lf, err := l.load(f)
		if err != nil {
			continue // unreadable now; a later scan tries again
		}
		loaded = append(loaded, lf)
	}

	l.mu.Lock()
	for _, rel := range removed {
		l.drop(rel)
	}
	for _, lf := range loaded {
		l.drop(lf.rel)
		l.files[lf.rel] = lf
		titleTerms := lexTerms(lf.title)
		for i, p := range lf.passages {
			terms := append(append([]string{}, titleTerms...), lexTerms(p)...)
			l.index.Add(localID(lf.rel, i), terms)
		}
	}
	l.mu.Unlock()
	l.lastScan.Store(started.UnixNano())
	return len(removed) + len(loaded), nil
}

// drop removes a file from the index; the caller holds mu.
func (l *Local) drop(rel string) {
	old, ok := l.files[rel]
	if !ok {
		return
	}
	for i := range old.passages {
		l.index.Remove(localID(rel, i))
	}
	delete(l.files, rel)
}

func localID(rel string, i int) string { return rel + "\x00" + strconv.Itoa(i) }

func splitLocalID(id string) (rel string, i int) {
	rel, n, _ := strings.Cut(id, "\x00")
	i, err := strconv.Atoi(n)
	if err != nil {
		return rel, -1
	}
	return rel, i
}

// load reads one file and splits it into passages.
func (l *Local) load(f fileStat) (*localFile, error) {
	data, err := os.ReadFile(f.abs)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		// Chinese text files are often GB18030 (GBK).
		if d, err := simplifiedchinese.GB18030.NewDecoder().Bytes(data); err == nil {
			data = d
		}
	}
	base := strings.TrimSuffix(filepath.Base(f.abs), filepath.Ext(f.abs))
	var title, body string
	switch localExts[strings.ToLower(filepath.Ext(f.abs))] {
	case "html":
		doc, err := html.Parse(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		title = htmltext.Title(doc)
		body = htmlText(doc)
	case "md":
		title, body = markdownText(string(data))
	default:
		body = tidyText(string(data))
	}
	if title == "" {
		title = base
	}
	return &localFile{
		rel:      f.rel,
		url:      localURL(f.rel),
		size:     f.size,
		mtime:    f.mtime,
		title:    title,
		passages: splitPassages(body, l.passageChars),
	}, nil
}

// localURL is the address a local result cites: "local:" and the file's
// path relative to the engine's folder, escaped as a URL path
// (local:ten-wings/xici.html), so no absolute path of the server's disk
// reaches a client or a prompt.
func localURL(rel string) string {
	return "local:" + (&url.URL{Path: rel}).EscapedPath()
}

// markdownText returns a Markdown file's first heading and its text with
// heading marks removed (the rest of the syntax reads well enough as is).
func markdownText(s string) (title, body string) {
	lines := strings.Split(s, "\n")
	for i, ln := range lines {
		t := strings.TrimSpace(ln)
		if strings.HasPrefix(t, "#") {
			h := strings.TrimSpace(strings.TrimLeft(t, "#"))
			if title == "" {
				title = h
			}
			lines[i] = h
		}
	}
	return title, tidyText(strings.Join(lines, "\n"))
}

// Search returns the files that best match query, up to n, each ranked by
// its best passage; Score is that passage's BM25 score divided by the
// query's maximum possible score, in [0,1].
func (l *Local) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 100)
	if err := l.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	q := lexTerms(query)
	if len(q) == 0 {
		return []Result{}, nil
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	maxScore := l.index.MaxScore(q)

	type fileHits struct {
		f     *localFile
		best  float64
		parts []int // passages, best first
	}
	var order []*fileHits
	for k := n * 8; ; k *= 2 {
		hits := l.index.Search(q, k, nil)
		byFile := map[string]*fileHits{}
		order = order[:0]
		for _, h := range hits {
			rel, i := splitLocalID(h.ID)
			f := l.files[rel]
			if f == nil || i < 0 || i >= len(f.passages) {
				continue
			}
			fh := byFile[rel]
			if fh == nil {
				fh = &fileHits{f: f, best: h.Score}
				byFile[rel] = fh
				order = append(order, fh)
			}
			fh.parts = append(fh.parts, i)
		}
		if len(order) >= n || len(hits) < k {
			break
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].best > order[b].best })
	if len(order) > n {
		order = order[:n]
	}
	qset := map[string]bool{}
	for _, t := range q {
		qset[t] = true
	}
	out := make([]Result, 0, len(order))
	for _, fh := range order {
		best := fh.f.passages[fh.parts[0]]
		content := best
		if len(fh.parts) > 1 {
			content += "\n…\n" + fh.f.passages[fh.parts[1]]
		}
		score := 0.0
		if maxScore > 0 {
			score = min(1, fh.best/maxScore)
		}
		out = append(out, Result{
			Title:   fh.f.title,
			URL:     fh.f.url,
			Snippet: highlight(snippetWindow(best, qset, 160), qset),
			Engine:  l.name,
			Score:   score,
			Content: content,
		})
	}
	return out, nil
}

// snippetWindow returns the sentences of passage around its best-matching
// sentence, about size characters long.
func snippetWindow(passage string, q map[string]bool, size int) string {
	sents := text.Sentences(passage)
	if len(sents) == 0 {
		return ""
	}
	best, bestN := 0, -1
	for i, s := range sents {
		n := 0
		seen := map[string]bool{}
		for _, t := range lexTerms(s) {
			if q[t] && !seen[t] {
				seen[t] = true
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	out := sents[best]
	for i := best + 1; i < len(sents) && utf8.RuneCountInString(out) < size; i++ {
		out += joiner(out, sents[i]) + sents[i]
	}
	for i := best - 1; i >= 0 && utf8.RuneCountInString(out) < size; i-- {
		out = sents[i] + joiner(sents[i], out) + out
	}
	if r := []rune(out); len(r) > size+size/2 {
		out = string(r[:size+size/2]) + "…"
	}
	return out
}

// joiner is what goes between sentences a and b: a space, except at a
// line end or next to CJK text.
func joiner(a, b string) string {
	if strings.HasSuffix(a, "\n") {
		return ""
	}
	ra, _ := utf8.DecodeLastRuneInString(a)
	rb, _ := utf8.DecodeRuneInString(b)
	if text.IsCJK(ra) || text.IsCJK(rb) {
		return ""
	}
	return " "
}

// highlight wraps the parts of s that match query terms in **bold**: CJK
// characters covered by a matching bigram (or single character term) and
// Latin words whose term matches. Matching is on the folded text, as the
// index's is, so traditional characters matching a simplified query are
// marked too.
func highlight(s string, q map[string]bool) string {
	rs := []rune(s)
	fs := make([]rune, len(rs)) // rs folded to simplified, rune for rune
	for i, r := range rs {
		fs[i] = text.FoldRune(r)
	}
	mark := make([]bool, len(rs))
	for i := 0; i < len(rs); {
		switch {
		case text.IsCJK(rs[i]):
			j := i
			for j < len(rs) && text.IsCJK(rs[j]) {
				j++
			}
			run := fs[i:j]
			if len(run) == 1 && q[string(run)] {
				mark[i] = true
			}
			for k := 0; k+1 < len(run); k++ {
				if q[string(run[k:k+2])] {
					mark[i+k], mark[i+k+1] = true, true
				}
			}
			for k, r := range run { // single-character query terms
				if q[string(r)] {
					mark[i+k] = true
				}
			}
			i = j
		case isWordRune(rs[i]):
			j := i
			for j < len(rs) && isWordRune(rs[j]) && !text.IsCJK(rs[j]) {
				j++
			}
			for _, t := range lexTerms(string(rs[i:j])) {
				if q[t] {
					for k := i; k < j; k++ {
						mark[k] = true
					}
				}
			}
			i = j
		default:
			i++
		}
	}
	var b strings.Builder
	for i, r := range rs {
		if mark[i] && (i == 0 || !mark[i-1]) {
			b.WriteString("**")
		}
		b.WriteRune(r)
		if mark[i] && (i == len(rs)-1 || !mark[i+1]) {
			b.WriteString("**")
		}
	}
	return b.String()
}

func isWordRune(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !text.IsCJK(r)
}
