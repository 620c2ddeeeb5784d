package kb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ledongthuc/pdf"
)

// The PDF loader. github.com/ledongthuc/pdf reads objects lazily, each time
// they are asked for, and trusts the file's structure: its Reader.Page walks
// the page tree again for every page without remembering where it has been
// (a Pages node whose Kids list names itself loops forever), and
// Page.Resources follows /Parent links without a bound (a /Parent loop
// does the same). So the loader walks the page tree itself through the
// library's object API (Value.Key, Index, Len), with a visited set of
// object references, a depth limit and a node budget, and looks up
// inherited resources along at most maxPDFDepth parents; it never calls
// Reader.Page, NumPage or Page.Resources.
//
// The library has other loops a hostile file can steer (object streams
// that extend each other, cross-reference sections chained by /Prev). They
// all read the file as they go, and every read goes through ctxReaderAt,
// which stops once the parse's context is done (kb.parse_timeout, the
// request, shutdown): the library's walk is abandoned from inside, on the
// goroutine that runs it, so no goroutine is left spinning.

// maxPDFPages bounds the pages read from one PDF, so a damaged page count
// cannot keep the loader busy.
const maxPDFPages = 20000

// maxPDFDepth bounds the page tree's depth and the /Parent chain followed
// for inherited resources. Real page trees are a handful of levels deep
// (writers balance them); a deeper one is taken for corrupt.
const maxPDFDepth = 64

// maxPDFNodes bounds the page-tree nodes visited (pages and intermediate
// nodes), so a tree that names one subtree many times cannot make the walk
// exponential.
const maxPDFNodes = 4 * maxPDFPages

// errPDFStopped is what ctxReaderAt panics with once its context is done;
// loadPDF turns it back into the context's cause.
var errPDFStopped = errors.New("pdf: parse stopped")

// ctxReaderAt is the PDF's bytes, readable until ctx is done. The library
// has no context: a read after that panics (the library reports malformed
// input by panicking too, and loadPDF recovers either).
type ctxReaderAt struct {
	ctx context.Context
	r   *bytes.Reader
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if c.ctx.Err() != nil {
		panic(errPDFStopped)
	}
	return c.r.ReadAt(p, off)
}

// LoadPDF loads a PDF's text, one document per page with metadata "page"
// (1-based). Scanned PDFs without a text layer fail with ErrNoText.
func LoadPDF(data []byte) ([]Document, error) { return loadPDF(context.Background(), data) }

func loadPDF(ctx context.Context, data []byte) (docs []Document, err error) {
	defer func() {
		// The PDF reader reports some malformed input by panicking, and
		// ctxReaderAt stops it the same way.
		if r := recover(); r != nil {
			if cause := context.Cause(ctx); cause != nil {
				docs, err = nil, cause
				return
			}
			docs, err = nil, fmt.Errorf("%w: pdf: %v", ErrCorrupt, r)
		}
	}()
	r, err := pdf.NewReader(ctxReaderAt{ctx, bytes.NewReader(data)}, int64(len(data)))
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause
		}
		return nil, fmt.Errorf("%w: pdf: %v", ErrCorrupt, err)
	}
	pages, err := pdfPages(ctx, r.Trailer().Key("Root").Key("Pages"))
	if err != nil {
		return nil, err
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("%w: pdf has no pages", ErrCorrupt)
	}
	fonts := map[string]*pdf.Font{}
	for i, pv := range pages {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		font := pdfResources(pv).Key("Font")
		for _, name := range font.Keys() {
			if _, ok := fonts[name]; !ok {
				fonts[name] = &pdf.Font{V: font.Key(name)}
			}
		}
		// With fonts given, GetPlainText looks up no resources itself.
		t, err := pdf.Page{V: pv}.GetPlainText(fonts)
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause // the library recovers ctxReaderAt's panic into err
		}
		if err != nil {
			return nil, fmt.Errorf("%w: pdf page %d: %v", ErrCorrupt, i+1, err)
		}
		t = tidyPDFText(t)
		if strings.TrimSpace(t) == "" {
			continue
		}
		docs = append(docs, Document{Text: t, Metadata: map[string]any{"page": i + 1}})
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w: the pdf has no text layer (scanned pages need OCR)", ErrNoText)
	}
	return docs, nil
}

// refArray matches the printed form of an array of object references
// ("[4 0 R 6 0 R]"), which is how a page tree's Kids are written.
var refArray = regexp.MustCompile(`^\[(\d+ \d+ R( \d+ \d+ R)*)?\]$`)

// kidRefs returns the object reference ("4 0") of each element of the
// Kids array kids, or nil when an element is not a reference (the library
// prints unresolved references as "N G R").
func kidRefs(kids pdf.Value) []string {
	s := kids.String()
	if !refArray.MatchString(s) {
		return nil
	}
	f := strings.Fields(strings.Trim(s, "[]"))
	refs := make([]string, 0, len(f)/3)
	for i := 0; i+2 < len(f); i += 3 {
		refs = append(refs, f[i]+" "+f[i+1])
	}
	if len(refs) != kids.Len() {
		return nil
	}
	return refs
}

// pdfPages walks the page tree from root depth first and returns its
// leaves (the pages) in order. A node met twice (by its object reference),
// a tree deeper than maxPDFDepth or larger than maxPDFNodes is corrupt; the
// walk stops at maxPDFPages pages.
func pdfPages(ctx context.Context, root pdf.Value) ([]pdf.Value, error) {
	type frame struct {
		kids pdf.Value
		refs []string
		next int
	}
	var pages []pdf.Value
	visited := map[string]bool{}
	nodes := 0
	var stack []frame
	// push descends into a node: a leaf is a page, an inner node's kids
	// are walked next.
	push := func(n pdf.Value) error {
		if nodes++; nodes > maxPDFNodes {
			return fmt.Errorf("%w: pdf page tree has more than %d nodes", ErrCorrupt, maxPDFNodes)
		}
		kids := n.Key("Kids")
		if n.Key("Type").Name() == "Page" || (kids.Kind() != pdf.Array && n.Kind() == pdf.Dict) {
			pages = append(pages, n)
			return nil
		}
		if len(stack) >= maxPDFDepth {
			return fmt.Errorf("%w: pdf page tree is deeper than %d levels", ErrCorrupt, maxPDFDepth)
		}
		stack = append(stack, frame{kids: kids, refs: kidRefs(kids)})
		return nil
	}
	if root.Kind() != pdf.Dict {
		return nil, fmt.Errorf("%w: pdf has no page tree", ErrCorrupt)
	}
	if err := push(root); err != nil {
		return nil, err
	}
	for len(stack) > 0 && len(pages) < maxPDFPages {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		top := &stack[len(stack)-1]
		if top.next >= top.kids.Len() {
			stack = stack[:len(stack)-1]
			continue
		}
		i := top.next
		top.next++
		if top.refs != nil {
			if visited[top.refs[i]] {
				return nil, fmt.Errorf("%w: pdf page tree loops (object %s is reached twice)", ErrCorrupt, top.refs[i])
			}
			visited[top.refs[i]] = true
		}
		kid := top.kids.Index(i)
		if kid.Kind() != pdf.Dict {
			continue // a dangling reference: no page
		}
		if err := push(kid); err != nil {
			return nil, err
		}
	}
	return pages, nil
}

// pdfResources returns a page's resources, inherited from the nearest
// ancestor that has them, following at most maxPDFDepth /Parent links (a
// /Parent loop ends there).
func pdfResources(page pdf.Value) pdf.Value {
	v := page
	for i := 0; i <= maxPDFDepth && v.Kind() == pdf.Dict; i++ {
		if r := v.Key("Resources"); !r.IsNull() {
			return r
		}
		v = v.Key("Parent")
	}
	return pdf.Value{}
}

// tidyPDFText joins the text objects a PDF page is made of: blank lines go,
// and a line break between two CJK characters (a wrapped line) is removed.
func tidyPDFText(s string) string {
	return joinLines(s, func(last, first rune) string {
		if isWide(last) && isWide(first) && !sentenceEndRune(last) {
			return "" // a wrapped line of CJK text
		}
		return "\n"
	})
}

func sentenceEndRune(r rune) bool {
	switch r {
	case '。', '！', '？', '；', '：', '」', '』', '”':
		return true
	}
	return false
}
