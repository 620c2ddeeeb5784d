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
// read the file as they go, and every read goes through ctxReaderAt, which
// stops once the parse's context is done (kb.parse_timeout, the request,
// shutdown): the library's walk is abandoned from inside, on the goroutine
// that runs it, so no goroutine is left spinning. One loop reads no more
// of the file: its lexer, at the end of a stream (a page's content, a
// font's ToUnicode map) inside a hex string ("<4142" and no ">"), reads
// end-of-stream as white space forever. So every stream the library will
// interpret is scanned first (streamSafe), with the same lexer rules, and a
// page whose content stream would hang it is refused, a font whose map
// would is read without its map. Running the parse on a goroutine that
// could be abandoned was the other way; it would leave that goroutine
// spinning a core for the life of the process.

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
	badFonts := map[string]bool{}
	for i, pv := range pages {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		if err := streamSafe(ctx, pv.Key("Contents")); err != nil {
			return nil, fmt.Errorf("pdf page %d: %w", i+1, err)
		}
		font := pdfResources(pv).Key("Font")
		for _, name := range font.Keys() {
			if _, ok := fonts[name]; ok || badFonts[name] {
				continue
			}
			fv := font.Key(name)
			if tu := fv.Key("ToUnicode"); !tu.IsNull() && streamSafe(ctx, tu) != nil {
				if err := context.Cause(ctx); err != nil {
					return nil, err
				}
				// The library would read its map forever: left out of
				// fonts, the font's text comes out undecoded.
				badFonts[name] = true
				continue
			}
			fonts[name] = &pdf.Font{V: fv}
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

// streamSafe scans the stream v (or the streams of the array v, as one:
// the library reads a page's content array so) with the library's lexer
// rules and fails with ErrCorrupt when a hex string is still open at the
// end, where the library's lexer would loop forever, and with ErrTooLarge
// past MaxDecompressedBytes. A null v is safe.
func streamSafe(ctx context.Context, v pdf.Value) error {
	var parts []pdf.Value
	switch v.Kind() {
	case pdf.Null:
		return nil
	case pdf.Array:
		for i := 0; i < v.Len(); i++ {
			parts = append(parts, v.Index(i))
		}
	default:
		parts = []pdf.Value{v}
	}
	var sc hexScanner
	buf := make([]byte, 32<<10)
	total := 0
	for _, p := range parts {
		if p.Kind() != pdf.Stream {
			continue // the library reads it as empty
		}
		rd := p.Reader()
		for {
			if err := context.Cause(ctx); err != nil {
				rd.Close()
				return err
			}
			n, err := rd.Read(buf)
			sc.scan(buf[:n])
			if total += n; total > MaxDecompressedBytes {
				rd.Close()
				return fmt.Errorf("%w: pdf: a content stream decompresses to more than %d MB (the limit per document)", ErrTooLarge, MaxDecompressedBytes>>20)
			}
			if err != nil {
				break // the end, or an error the library meets too and reports
			}
		}
		rd.Close()
	}
	if sc.openHex() {
		return fmt.Errorf("%w: pdf: a content stream ends inside a hex string", ErrCorrupt)
	}
	return nil
}

// hexScanner follows the library's lexer through a content stream as far
// as hex strings go: outside literal strings and comments, "<" not
// followed by "<" opens one and ">" closes it.
type hexScanner struct {
	state   int // scanNormal, ...
	depth   int // of parentheses in a literal string
	escaped bool
}

const (
	scanNormal  = iota
	scanLT      // a "<" was seen: a hex string or "<<"
	scanHex     // inside a hex string
	scanComment // after "%" up to the end of the line
	scanLiteral // inside a literal string
)

func (s *hexScanner) scan(p []byte) {
	for _, c := range p {
		switch s.state {
		case scanLT:
			s.state = scanHex
			if c == '<' {
				s.state = scanNormal
				continue
			}
			fallthrough
		case scanHex:
			if c == '>' {
				s.state = scanNormal
			}
		case scanComment:
			if c == '\r' || c == '\n' {
				s.state = scanNormal
			}
		case scanLiteral:
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '(':
				s.depth++
			case c == ')':
				if s.depth--; s.depth == 0 {
					s.state = scanNormal
				}
			}
		default:
			switch c {
			case '<':
				s.state = scanLT
			case '%':
				s.state = scanComment
			case '(':
				s.state, s.depth = scanLiteral, 1
			}
		}
	}
}

// openHex reports whether the stream ended inside a hex string.
func (s *hexScanner) openHex() bool { return s.state == scanLT || s.state == scanHex }
