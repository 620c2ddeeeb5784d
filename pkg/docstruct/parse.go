package docstruct

import (
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// Format is how a document's text is laid out.
type Format int

const (
	// Text is plain text: every line is a paragraph; a short line with no
	// sentence-ending punctuation may be a heading.
	Text Format = iota
	// Markdown has ATX headings (# to ######), paragraphs separated by
	// blank lines and list items; fenced code is not read for labels.
	Markdown
)

// FormatOf is the format a file name suggests: Markdown for .md and
// .markdown, Text otherwise.
func FormatOf(name string) Format {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return Markdown
	}
	return Text
}

// Doc is a document's structure: its title, the other names it goes by and
// the tree of its parts.
type Doc struct {
	// Title is the document's first heading, else its file name without
	// folder and extension.
	Title string
	// Aliases are the other names: the file name without extension, the
	// distinctive part of a long title (see Distinctive), a name a
	// profile's file-name form gives.
	Aliases []string
	// Text is the text parsed; parts' offsets index it.
	Text string
	// Root is the document as a part: its children are the top-level parts.
	Root *Part
}

// Part is one part of a document: a heading, or a labelled paragraph or
// list item, with what lies under it.
type Part struct {
	Label Label
	// Heading is the part's own heading or label line, trimmed.
	Heading string
	// Depth is 0 for the root, 1 for a top-level part, and so on.
	Depth int
	// Start and End are byte offsets in Doc.Text: from the start of the
	// part's heading or label line to the start of the next part of the
	// same or a higher level (or the end of the text). Body is where the
	// text after the heading line (for a heading) or after the label (for
	// a paragraph) starts.
	Start, Body, End int
	Parent           *Part
	Children         []*Part

	heading int    // Markdown heading level, 0 for a paragraph's label
	style   string // what siblings in one list share (Label.style)
}

// Text is the part's text in d, heading or label included.
func (p *Part) Text(d *Doc) string { return d.Text[p.Start:p.End] }

// Path is the part's headings from the document's title down to the part
// itself: ["United States Constitution", "Article I", "Section 8"].
func (p *Part) Path() []string {
	var out []string
	for q := p; q != nil; q = q.Parent {
		out = append(out, q.Heading)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Walk calls fn for p and every part under it, in document order, until fn
// returns false.
func (p *Part) Walk(fn func(*Part) bool) bool {
	if !fn(p) {
		return false
	}
	for _, c := range p.Children {
		if !c.Walk(fn) {
			return false
		}
	}
	return true
}

// Parts is every part of the document in order, the root first.
func (d *Doc) Parts() []*Part {
	var out []*Part
	d.Root.Walk(func(p *Part) bool { out = append(out, p); return true })
	return out
}

// At is the deepest part whose text holds byte offset off.
func (d *Doc) At(off int) *Part {
	p := d.Root
	for {
		var next *Part
		for _, c := range p.Children {
			if c.Start <= off && off < c.End {
				next = c
				break
			}
		}
		if next == nil {
			return p
		}
		p = next
	}
}

var (
	reATX    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	reFence  = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	reBullet = regexp.MustCompile(`^ {0,3}[*+\-•·][ \t]+`)
	reQuote  = regexp.MustCompile(`^ {0,3}>[ \t]?`)
)

// maxDepth bounds the depth of the tree of parts.
const maxDepth = 12

// maxHeadingRunes is the longest line of plain text that may be a heading.
const maxHeadingRunes = 40

// Parse reads a document's structure. title is its file name (a folder
// and an extension are dropped) or title; f says how text is laid out; p,
// when not nil, adds a domain's named positions and classifiers. Parse
// never fails: text with no structure is a root with no children.
func Parse(title, txt string, f Format, p *Profile) *Doc {
	base := path.Base(strings.ReplaceAll(title, `\`, "/"))
	base = strings.TrimSuffix(base, path.Ext(base))
	if base == "." || base == "/" {
		base = ""
	}
	d := &Doc{Text: txt}
	root := &Part{Heading: base, End: len(txt)}
	d.Root = root
	stack := []*Part{root}
	firstHeading := ""
	h1s := 0
	inFence := ""
	prevBlank := true
	add := func(part *Part) {
		// Pop to the part's parent: a heading closes every part at its
		// level or deeper and every labelled paragraph; a paragraph's
		// label closes the labelled paragraphs down to one of its style.
		if part.heading > 0 {
			for len(stack) > 1 {
				top := stack[len(stack)-1]
				if top.heading == 0 || top.heading >= part.heading {
					stack = stack[:len(stack)-1]
					continue
				}
				break
			}
		} else {
			for i := len(stack) - 1; i >= 1 && stack[i].heading == 0; i-- {
				if stack[i].style == part.style {
					stack = stack[:i]
					break
				}
			}
		}
		if len(stack) > maxDepth {
			// Nesting this deep is no document's: keep the tree (and the
			// work of finding a part's level) bounded.
			stack = stack[:maxDepth]
		}
		parent := stack[len(stack)-1]
		part.Parent = parent
		part.Depth = parent.Depth + 1
		parent.Children = append(parent.Children, part)
		stack = append(stack, part)
	}
	off := 0
	for off < len(txt) {
		end := strings.IndexByte(txt[off:], '\n')
		next := len(txt)
		if end >= 0 {
			next = off + end + 1
			end = off + end
		} else {
			end = len(txt)
		}
		line := strings.TrimRight(txt[off:end], "\r")
		start := off
		off = next
		if f == Markdown {
			if m := reFence.FindStringSubmatch(line); m != nil {
				switch {
				case inFence == "":
					inFence = m[1][:1]
				case strings.HasPrefix(m[1], inFence):
					inFence = ""
				}
				prevBlank = false
				continue
			}
			if inFence != "" {
				continue
			}
		}
		if strings.TrimSpace(line) == "" {
			prevBlank = true
			continue
		}
		if f == Markdown {
			if m := reATX.FindStringSubmatch(line); m != nil {
				h := strings.TrimSpace(stripInline(m[2]))
				prevBlank = true
				if h == "" {
					continue
				}
				level := len(m[1])
				if firstHeading == "" {
					firstHeading = h
				}
				if level == 1 {
					h1s++
				}
				part := &Part{Heading: h, Start: start, Body: next, heading: level}
				if l, _, ok := ParseLabel(h, true, p); ok {
					part.Label = l
				} else {
					part.Label = Label{Name: h}
				}
				part.style = part.Label.style()
				add(part)
				continue
			}
			startsBlock := prevBlank
			body := line
			if m := reBullet.FindString(body); m != "" {
				body = body[len(m):]
				startsBlock = true
			}
			if m := reQuote.FindString(body); m != "" {
				body = body[len(m):]
			}
			prevBlank = false
			if !startsBlock {
				continue
			}
			body = stripInlineStart(body)
			if l, n, ok := ParseLabel(body, false, p); ok {
				part := &Part{Label: l, Heading: strings.TrimSpace(line), Start: start, Body: start + len(line) - len(body) + n, style: l.style()}
				add(part)
			}
			continue
		}
		// Plain text: a labelled line starts a part; a short line without
		// closing punctuation reads as a heading for the label's name.
		trimmed := strings.TrimSpace(line)
		heading := looksLikeHeading(trimmed)
		if firstHeading == "" && heading {
			if _, _, ok := ParseLabel(trimmed, true, p); !ok {
				firstHeading = trimmed
				continue
			}
		}
		if l, n, ok := ParseLabel(line, heading, p); ok {
			part := &Part{Label: l, Heading: trimmed, Start: start, Body: start + n, style: l.style()}
			add(part)
		}
	}
	if firstHeading == "" {
		firstHeading = base
	}
	// A Markdown document whose one level-1 heading opens it is the
	// document: its parts are the root's.
	if f == Markdown && h1s == 1 && len(root.Children) > 0 && root.Children[0].heading == 1 && root.Children[0].Label.Num == 0 {
		top := root.Children[0]
		root.Children = append(top.Children, root.Children[1:]...)
		for _, c := range root.Children {
			c.Parent = root
		}
		root.Heading = top.Heading
		for _, c := range root.Children {
			fixDepth(c, 1)
		}
	}
	d.Title = firstHeading
	if root.Heading == "" || root.Heading == base {
		root.Heading = d.Title
	}
	if base != "" && base != d.Title {
		d.Aliases = append(d.Aliases, base)
	}
	if p != nil {
		if name, _, ok := p.MatchFileName(base); ok && name != "" {
			d.Aliases = append(d.Aliases, name)
		}
	}
	if a := Distinctive(d.Title, nil); a != "" && a != d.Title {
		d.Aliases = append(d.Aliases, a)
	}
	setEnds(root, len(txt))
	return d
}

func fixDepth(p *Part, d int) {
	p.Depth = d
	for _, c := range p.Children {
		fixDepth(c, d+1)
	}
}

// setEnds ends each part where the next part of its level or a higher one
// starts.
func setEnds(p *Part, end int) {
	p.End = end
	for i, c := range p.Children {
		e := end
		if i+1 < len(p.Children) {
			e = p.Children[i+1].Start
		}
		setEnds(c, e)
	}
}

// looksLikeHeading reports whether a line of plain text could be a
// heading: short, and not ending a sentence.
func looksLikeHeading(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > maxHeadingRunes {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s)
	return !strings.ContainsRune("。！？!?；;，,：:", r) && !(r == '.' && !unicode.IsDigit(lastButOne(s)))
}

func lastButOne(s string) rune {
	_, n := utf8.DecodeLastRuneInString(s)
	r, _ := utf8.DecodeLastRuneInString(s[:len(s)-n])
	return r
}

// stripInline drops Markdown emphasis and code marks from a heading.
func stripInline(s string) string { return inlineMarks.Replace(s) }

var inlineMarks = strings.NewReplacer("**", "", "__", "", "`", "")

// stripInlineStart drops emphasis marks at the start of a paragraph, so
// "**Section 2.** …" reads its label.
func stripInlineStart(s string) string {
	return strings.TrimLeft(s, "*_`")
}

// Distinctive is the distinctive part of a long title: its shortest
// suffix that ends with the title's last word (for CJK, of at least three
// characters) and that no other title of titles (the other documents of
// the knowledge base) holds. It is "" when the title is short or no such
// suffix is shorter than the title: 劳动法 for 中华人民共和国劳动法, and for
// 中华人民共和国劳动合同法 beside it 合同法; "Constitution" for "United
// States Constitution".
func Distinctive(title string, titles []string) string {
	title = strings.TrimSpace(title)
	rs := []rune(title)
	cjk, _ := text.CountLetters(title)
	holds := func(s string) bool {
		fs := strings.ToLower(text.Fold(s))
		for _, t := range titles {
			if strings.TrimSpace(t) != title && strings.Contains(strings.ToLower(text.Fold(t)), fs) {
				return true
			}
		}
		return false
	}
	if cjk > 0 && cjk*2 >= len(rs) {
		const least = 3
		if len(rs) <= least {
			return ""
		}
		for n := least; n < len(rs); n++ {
			s := string(rs[len(rs)-n:])
			if !text.IsCJK(rs[len(rs)-n]) {
				continue
			}
			if !holds(s) {
				return s
			}
		}
		return ""
	}
	words := strings.Fields(title)
	if len(words) < 2 {
		return ""
	}
	for n := 1; n < len(words); n++ {
		s := strings.Join(words[len(words)-n:], " ")
		if len(s) < 4 {
			continue
		}
		if !holds(s) {
			return s
		}
	}
	return ""
}

// Distinguish recomputes the distinctive aliases of the documents of one
// knowledge base against each other's titles, so an alias names one
// document only.
func Distinguish(docs []*Doc) {
	titles := make([]string, len(docs))
	for i, d := range docs {
		titles[i] = d.Title
	}
	for _, d := range docs {
		old := Distinctive(d.Title, nil)
		var keep []string
		for _, a := range d.Aliases {
			if a != old {
				keep = append(keep, a)
			}
		}
		if a := Distinctive(d.Title, titles); a != "" && a != d.Title {
			keep = append(keep, a)
		}
		d.Aliases = keep
	}
}

// Locate finds the part that holds a passage (a quoted phrase): the
// deepest part whose text holds its first occurrence, matched as written,
// then traditional and simplified characters alike, then ignoring
// punctuation and spaces. ok is false when the document does not hold it.
func (d *Doc) Locate(passage string) (p *Part, ok bool) {
	passage = strings.TrimSpace(passage)
	if passage == "" {
		return nil, false
	}
	if i := strings.Index(d.Text, passage); i >= 0 {
		return d.At(i), true
	}
	// Compare letters only, folded, mapping back to byte offsets.
	var letters []rune
	var offs []int
	for i, r := range d.Text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			letters = append(letters, unicode.ToLower(text.FoldRune(r)))
			offs = append(offs, i)
		}
	}
	var want []rune
	for _, r := range passage {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			want = append(want, unicode.ToLower(text.FoldRune(r)))
		}
	}
	if len(want) == 0 {
		return nil, false
	}
	if i := strings.Index(string(letters), string(want)); i >= 0 {
		return d.At(offs[utf8.RuneCountInString(string(letters)[:i])]), true
	}
	return nil, false
}
