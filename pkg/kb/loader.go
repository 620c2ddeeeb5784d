package kb

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gtext "github.com/yuin/goldmark/text"
	"golang.org/x/text/encoding/simplifiedchinese"
	xunicode "golang.org/x/text/encoding/unicode"

	"github.com/mixchat/mixchat/pkg/htmltext"
)

// Document is text loaded from a file, with its metadata: a whole text file,
// a PDF page, a CSV row, a JSON record. Its JSON form is Langchain's
// Document ({"page_content", "metadata"}), which Chatchat clients send as
// custom docs.
//
// Loaders write headings as Markdown heading lines ("## Title") so the
// splitter can keep sections apart whatever the source format.
type Document struct {
	Text     string         `json:"page_content"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// LoaderFunc turns a file's content into documents. It returns an error
// wrapping ErrCorrupt when the content is not what the type says, and
// ErrNoText when it holds no text.
type LoaderFunc func(data []byte) ([]Document, error)

// loadFunc is a loader that stops, with ctx's cause, once ctx is done: each
// checks it inside its loops (rows, records, lines, blocks, pages), so a
// parse deadline or a shutdown ends it within one step.
type loadFunc func(ctx context.Context, data []byte) ([]Document, error)

// loaders maps a lower-case extension to its loader.
var loaders = map[string]loadFunc{
	".txt":      noContext(LoadText),
	".text":     noContext(LoadText),
	".md":       loadMarkdown,
	".markdown": loadMarkdown,
	".html":     loadHTML,
	".htm":      loadHTML,
	".pdf":      loadPDF,
	".docx":     loadDOCX,
	".csv":      loadCSV,
	".json":     loadJSON,
	".jsonl":    loadJSONL,
}

// noContext adapts a loader that makes one linear pass over its input
// (decoding a text file) and has no loop worth stopping.
func noContext(f LoaderFunc) loadFunc {
	return func(_ context.Context, data []byte) ([]Document, error) { return f(data) }
}

// SupportedExtensions lists the file extensions Load reads, sorted.
func SupportedExtensions() []string {
	out := make([]string, 0, len(loaders))
	for ext := range loaders {
		out = append(out, ext)
	}
	sort.Strings(out)
	return out
}

// Supported reports whether Load reads files named like name.
func Supported(name string) bool {
	_, ok := loaders[strings.ToLower(path.Ext(name))]
	return ok
}

// Load reads a file by its extension (case-insensitive) and returns its
// documents, each with metadata "source" set to name. Errors wrap
// ErrUnsupported, ErrCorrupt, ErrTooLarge or ErrNoText and say what is
// wrong.
func Load(name string, data []byte) ([]Document, error) {
	return LoadContext(context.Background(), name, data)
}

// LoadContext is Load that stops, with ctx's cause, once ctx is done.
func LoadContext(ctx context.Context, name string, data []byte) ([]Document, error) {
	ext := strings.ToLower(path.Ext(name))
	load, ok := loaders[ext]
	if !ok {
		if ext == "" {
			ext = "(none)"
		}
		return nil, fmt.Errorf("%w %s: supported are %s", ErrUnsupported, ext, strings.Join(SupportedExtensions(), " "))
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	docs, err := runLoader(ctx, load, data)
	if err != nil {
		return nil, err
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	out := docs[:0]
	for _, d := range docs {
		d.Text = cleanText(d.Text)
		if strings.TrimSpace(d.Text) == "" {
			continue
		}
		if d.Metadata == nil {
			d.Metadata = map[string]any{}
		}
		d.Metadata["source"] = name
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s holds no extractable text", ErrNoText, ext)
	}
	return out, nil
}

// abandonAfter is how long a loader has to stop once its context is done
// before runLoader stops waiting for it.
const abandonAfter = time.Second

// runLoader runs load on its own goroutine and returns what it returns,
// or, when load has not stopped abandonAfter after ctx is done, the
// context's cause. The loaders check ctx inside their loops and the PDF
// loader guards the library it calls (pdf.go), so they stop within a step;
// this is the last resort for a loop in a library nobody has found yet: the
// upload fails in time and releases its knowledge base, and shutdown is
// not held up, while the goroutine is left to finish (or spin) on its own.
// A panic in a loader is the file's fault (ErrCorrupt), not the server's.
func runLoader(ctx context.Context, load loadFunc, data []byte) ([]Document, error) {
	type result struct {
		docs []Document
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("%w: %v", ErrCorrupt, r)}
			}
		}()
		docs, err := load(ctx, data)
		done <- result{docs, err}
	}()
	select {
	case r := <-done:
		return r.docs, r.err
	case <-ctx.Done():
	}
	t := time.NewTimer(abandonAfter)
	defer t.Stop()
	select {
	case r := <-done:
		return r.docs, r.err
	case <-t.C:
		return nil, fmt.Errorf("%w (the loader did not stop in time and was left behind)", context.Cause(ctx))
	}
}

// cleanText normalises line ends, drops NULs and other control characters
// (but tabs and newlines) and trims trailing spaces of lines.
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\u00a0' || r == '\u3000':
			return ' '
		case unicode.IsControl(r) || r == '\uFEFF' || r == '\u200b':
			return -1
		}
		return r
	}, s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// decodeText returns data as UTF-8: UTF-8 (with or without BOM) as is,
// UTF-16 with a BOM converted, anything else read as GB18030 (a superset of
// GBK and GB2312, the usual encodings of Chinese text files) when that
// decodes cleanly.
func decodeText(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return string(data[3:])
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		dec := xunicode.UTF16(xunicode.LittleEndian, xunicode.UseBOM).NewDecoder()
		if out, err := dec.Bytes(data); err == nil {
			return string(out)
		}
	}
	if utf8.Valid(data) {
		return string(data)
	}
	if out, err := simplifiedchinese.GB18030.NewDecoder().Bytes(data); err == nil && utf8.Valid(out) && !bytes.ContainsRune(out, utf8.RuneError) {
		return string(out)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// LoadText loads a plain text file as one document.
func LoadText(data []byte) ([]Document, error) {
	return []Document{{Text: decodeText(data)}}, nil
}

// LoadMarkdown loads Markdown (CommonMark + GFM tables) as one document of
// plain text: headings stay "#" lines, links and emphasis lose their
// markup, code blocks and table cells are kept. Question–answer pairs
// ("Q: …" and "A: …" lines of a paragraph, a bold question and the
// paragraph after it) are written as "Q: …" and "A: …" lines for the
// splitter to keep together (faq.go).
func LoadMarkdown(data []byte) ([]Document, error) {
	return loadMarkdown(context.Background(), data)
}

func loadMarkdown(ctx context.Context, data []byte) ([]Document, error) {
	src := []byte(decodeText(data))
	md := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))
	doc := md.Parser().Parse(gtext.NewReader(src))
	var b strings.Builder
	var block func(n ast.Node, prefix string)
	answering := false // the last paragraph was a bold question standing alone
	block = func(n ast.Node, prefix string) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if ctx.Err() != nil {
				return
			}
			if _, ok := c.(*ast.Paragraph); !ok {
				answering = false
			}
			switch v := c.(type) {
			case *ast.Heading:
				b.WriteString(strings.Repeat("#", v.Level) + " " + inlineText(v, src) + "\n\n")
			case *ast.Paragraph, *ast.TextBlock:
				t := inlineText(v, src)
				if qa, ok := qaParagraph(v, src); ok {
					t = qa // "Q: …" and "A: …" on lines of their own (faq.go)
				} else if answering && prefix == "" {
					t = "A: " + t // the answer under a bold question
				}
				answering = false
				if q, ok := boldQuestion(v, src); ok && prefix == "" {
					t, answering = "Q: "+q, true
				}
				b.WriteString(prefix + t + "\n")
				if _, ok := v.(*ast.Paragraph); ok {
					b.WriteString("\n")
				}
			case *ast.FencedCodeBlock, *ast.CodeBlock:
				lines := v.Lines()
				for i := 0; i < lines.Len(); i++ {
					seg := lines.At(i)
					b.Write(seg.Value(src))
				}
				b.WriteString("\n")
			case *ast.HTMLBlock:
				var raw strings.Builder
				lines := v.Lines()
				for i := 0; i < lines.Len(); i++ {
					seg := lines.At(i)
					raw.Write(seg.Value(src))
				}
				if t := strings.TrimSpace(htmltext.Fragment(raw.String())); t != "" {
					b.WriteString(t + "\n\n")
				}
			case *ast.ListItem:
				b.WriteString(prefix + "- ")
				block(v, "")
			case *ast.List, *ast.Blockquote:
				block(v, prefix)
				b.WriteString("\n")
			case *east.Table:
				for row := v.FirstChild(); row != nil; row = row.NextSibling() {
					var cells []string
					for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
						cells = append(cells, inlineText(cell, src))
					}
					b.WriteString(strings.Join(cells, " | ") + "\n")
				}
				b.WriteString("\n")
			case *ast.ThematicBreak:
				b.WriteString("\n")
			default:
				block(v, prefix)
			}
		}
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	block(doc, "")
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return []Document{{Text: b.String()}}, nil
}

// inlineText is the plain text of n's inline children.
func inlineText(n ast.Node, src []byte) string { return joinWrapped(inlineRaw(n, src)) }

// inlineRaw is the plain text of n's inline children, its soft and hard
// line breaks kept.
func inlineRaw(n ast.Node, src []byte) string {
	var b strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch v := c.(type) {
			case *ast.Text:
				b.Write(v.Segment.Value(src))
				if v.SoftLineBreak() || v.HardLineBreak() {
					b.WriteString("\n")
				}
			case *ast.String:
				b.Write(v.Value)
			case *ast.AutoLink:
				b.Write(v.URL(src))
			case *ast.RawHTML:
				// inline tags carry no text of their own
			default:
				walk(v)
			}
		}
	}
	walk(n)
	return b.String()
}

// joinWrapped joins hard-wrapped lines of one paragraph: without a space
// between two CJK characters, with one otherwise.
func joinWrapped(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	return joinLines(s, func(last, first rune) string {
		if isWide(last) && isWide(first) {
			return ""
		}
		return " "
	})
}

// joinLines joins the non-blank lines of s, trimmed, with between two of
// them what sep says for the last rune before and the first after.
func joinLines(s string, sep func(last, first rune) string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			last, _ := utf8.DecodeLastRuneInString(b.String())
			first, _ := utf8.DecodeRuneInString(l)
			b.WriteString(sep(last, first))
		}
		b.WriteString(l)
	}
	return b.String()
}

func isWide(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.In(r, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

// LoadHTML loads an HTML page's readable text (scripts, styles and the head
// removed; the title kept as metadata).
func LoadHTML(data []byte) ([]Document, error) { return loadHTML(context.Background(), data) }

// loadHTML parses the page (one linear pass of x/net/html) and walks it
// (htmltext: one visit per node), checking ctx between the two.
func loadHTML(ctx context.Context, data []byte) ([]Document, error) {
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(decodeText(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: html: %v", ErrCorrupt, err)
	}
	title := strings.TrimSpace(doc.Find("title").First().Text())
	doc.Find("script, style, noscript, template, svg, iframe, nav").Remove()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	nodes := doc.Find("body").Nodes
	if len(nodes) == 0 {
		nodes = doc.Nodes
	}
	text := htmltext.Text(nodes...)
	meta := map[string]any{}
	if title != "" {
		meta["title"] = title
	}
	return []Document{{Text: text, Metadata: meta}}, nil
}

// LoadCSV loads a CSV file, one document per row as "column: value" lines
// (the header names the columns), with metadata "row" (0-based, header
// excluded). With a question and an answer column, or two columns and no
// header whose first asks, each row is a question–answer pair (faq.go).
func LoadCSV(data []byte) ([]Document, error) { return loadCSV(context.Background(), data) }

func loadCSV(ctx context.Context, data []byte) ([]Document, error) {
	r := csv.NewReader(strings.NewReader(decodeText(data)))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	header, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: the csv file is empty", ErrNoText)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: csv: %v", ErrCorrupt, err)
	}
	for i, h := range header {
		header[i] = strings.TrimSpace(h)
	}
	// A question and an answer column make each row a pair (faq.go); so
	// do two columns without a header whose first one asks.
	qi, ai := qaColumns(header)
	var docs []Document
	if qi < 0 && len(header) == 2 && asks(header[0]) {
		qi, ai = 0, 1
		if d, ok := pairDoc(header[0], header[1], nil, map[string]any{"row": 0}); ok {
			docs = append(docs, d)
		}
		header = nil
	}
	for row := len(docs); ; row++ {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: csv: %v", ErrCorrupt, err)
		}
		if qi >= 0 && qi < len(rec) && ai < len(rec) {
			other := map[string]string{}
			for i, v := range rec {
				if i != qi && i != ai && i < len(header) {
					other[header[i]] = v
				}
			}
			if d, ok := pairDoc(rec[qi], rec[ai], other, map[string]any{"row": row}); ok {
				docs = append(docs, d)
				continue
			}
		}
		var b strings.Builder
		for i, v := range rec {
			name := ""
			if i < len(header) {
				name = header[i]
			}
			if name == "" {
				name = "column" + strconv.Itoa(i+1)
			}
			fmt.Fprintf(&b, "%s: %s\n", name, strings.TrimSpace(v))
		}
		docs = append(docs, Document{Text: b.String(), Metadata: map[string]any{"row": row}})
	}
	if len(docs) == 0 {
		// A header and no rows: the header is the only text.
		docs = append(docs, Document{Text: strings.Join(header, ", ")})
	}
	return docs, nil
}

// LoadJSON loads JSON: an array gives one document per element, anything
// else one document. Objects become "key: value" lines with nested keys
// joined by dots ("author.name: ..."); an element with a question and an
// answer key is a question–answer pair (faq.go).
func LoadJSON(data []byte) ([]Document, error) { return loadJSON(context.Background(), data) }

func loadJSON(ctx context.Context, data []byte) ([]Document, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(decodeText(data))))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: json: %v", ErrCorrupt, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: json: data after the first value", ErrCorrupt)
	}
	if arr, ok := v.([]any); ok {
		docs := make([]Document, 0, len(arr))
		for i, e := range arr {
			if err := context.Cause(ctx); err != nil {
				return nil, err
			}
			docs = append(docs, jsonDoc(e, i))
		}
		return docs, nil
	}
	return []Document{{Text: flattenJSON(v)}}, nil
}

// LoadJSONL loads JSON Lines, one document per non-empty line.
func LoadJSONL(data []byte) ([]Document, error) { return loadJSONL(context.Background(), data) }

func loadJSONL(ctx context.Context, data []byte) ([]Document, error) {
	var docs []Document
	for i, line := range strings.Split(decodeText(data), "\n") {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: jsonl line %d: %v", ErrCorrupt, i+1, err)
		}
		docs = append(docs, jsonDoc(v, i))
	}
	return docs, nil
}

// jsonDoc is the document of the i-th record: a pair (faq.go) when it is
// an object with a question and an answer key, its flattened lines
// otherwise.
func jsonDoc(v any, i int) Document {
	if obj, ok := v.(map[string]any); ok {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if qi, ai := qaColumns(keys); qi >= 0 {
			q, qok := obj[keys[qi]].(string)
			a, aok := obj[keys[ai]].(string)
			other := map[string]string{}
			for k, x := range obj {
				if k != keys[qi] && k != keys[ai] {
					if s, ok := x.(string); ok {
						other[k] = s
					} else if n, ok := x.(json.Number); ok {
						other[k] = n.String()
					}
				}
			}
			if d, ok := pairDoc(q, a, other, map[string]any{"seq_num": i}); ok && qok && aok {
				return d
			}
		}
	}
	return Document{Text: flattenJSON(v), Metadata: map[string]any{"seq_num": i}}
}

func flattenJSON(v any) string {
	var b strings.Builder
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, t[k])
			}
		case []any:
			for i, e := range t {
				walk(prefix+"["+strconv.Itoa(i)+"]", e)
			}
		case nil:
		default:
			s := fmt.Sprint(t)
			if prefix == "" {
				b.WriteString(s + "\n")
			} else {
				b.WriteString(prefix + ": " + s + "\n")
			}
		}
	}
	walk("", v)
	return b.String()
}

// errIsFileProblem reports whether err is the file's fault (as opposed to
// the system's).
func errIsFileProblem(err error) bool {
	return errors.Is(err, ErrUnsupported) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNoText) || errors.Is(err, ErrTooLarge)
}
