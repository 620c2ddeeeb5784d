package kb

import (
	"context"
	"maps"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"

	"github.com/mixchat/mixchat/pkg/text"
)

// This file keeps the question–answer pairs of FAQ documents whole. A pair
// is one chunk: its text is the question on the first line and the answer
// on the next ("Q: …\nA: …", "问：…\n答：…"), so both the lexical and the
// vector index match the question (and the answer's words), and its
// metadata "question" holds the question alone. The reader (a model, or
// the extractive one) sees the question as what the answer under it
// answers; search_docs shows the pair as it is.
//
// Pairs are found in
//   - text (a .txt or .md file, or what the loaders wrote): a line that
//     starts with a question marker ("Q:", "Q1.", "Question:", "问：",
//     "问题：") followed by a line that starts with an answer marker ("A:",
//     "Answer:", "答：", "回答：", "答案："); the answer runs to a blank line,
//     a heading or the next question;
//   - a Markdown heading that is a question ("## How do I apply?") over the
//     text of its section, and a bold question ("**How do I apply?**")
//     followed by its answer (the Markdown loader writes both as Q:/A:);
//   - rows (CSV, JSON, JSONL) with a question and an answer column or key
//     (named question/q/问题/问 and answer/a/答案/答/回答, in any case), and
//     a CSV of two columns without a header whose first column asks
//     (RAGFlow's Q&A template): the loaders make each such row a document
//     with metadata "question" (and the row's other columns as metadata).

var (
	qMarker = regexp.MustCompile(`^(?i:q|question)\s*\d{0,3}\s*[:：.．、)]\s*(\S.*)$|^(?:问|问题|問|問題|提问|提問)\s*\d{0,3}\s*[:：]\s*(\S.*)$`)
	aMarker = regexp.MustCompile(`^(?i:a|answer)\s*\d{0,3}\s*[:：.．、)]\s*(.*)$|^(?:答|答案|回答|答复|答覆)\s*\d{0,3}\s*[:：]\s*(.*)$`)
	// mdHeadingLine is a Markdown heading line as the splitter reads it.
	mdHeadingLine = regexp.MustCompile(`^(#{1,6})\s+(.+?)\s*#*\s*$`)
)

// markerText returns what follows a marker that re matches at the start of
// line, and whether it matched.
func markerText(re *regexp.Regexp, line string) (string, bool) {
	m := re.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	for _, g := range m[1:] {
		if g != "" {
			return strings.TrimSpace(g), true
		}
	}
	return "", true
}

// asks reports whether s reads as a question: it ends with a question mark.
func asks(s string) bool {
	s = strings.TrimRight(strings.TrimSpace(s), "*_ ")
	return strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？")
}

// pairText is a pair's chunk text: "Q: question\nA: answer", or
// "问：…\n答：…" for a question in Chinese, the form FAQs are written in
// and readers (a model, the extractive reader) take as a pair.
func pairText(q, a string) string {
	q, a = strings.TrimSpace(q), strings.TrimSpace(a)
	if c, l := text.CountLetters(q); c > 0 && c >= l {
		return "问：" + q + "\n答：" + a
	}
	return "Q: " + q + "\nA: " + a
}

// faqPart is a run of a document's text: prose, or one pair with the
// headings it is under.
type faqPart struct {
	prose    string
	q, a     string
	headings []string
}

// faqParts cuts t into prose and pairs, in order; nil when t holds no pair.
func faqParts(t string) []faqPart {
	lines := strings.Split(t, "\n")
	var parts []faqPart
	var prose []string
	type heading struct {
		level int
		title string
	}
	var stack []heading
	path := func() []string {
		out := make([]string, len(stack))
		for i, h := range stack {
			out[i] = h.title
		}
		return out
	}
	hasBody := func() bool {
		for _, l := range prose {
			if l = strings.TrimSpace(l); l != "" && !mdHeadingLine.MatchString(l) {
				return true
			}
		}
		return false
	}
	// restart starts the prose again with the headings it is under, so
	// the splitter gives it its section.
	restart := func() {
		prose = prose[:0]
		for _, h := range stack {
			prose = append(prose, strings.Repeat("#", h.level)+" "+h.title)
		}
	}
	// flush ends the prose before a pair.
	flush := func() {
		if hasBody() {
			parts = append(parts, faqPart{prose: strings.Join(prose, "\n")})
		}
		restart()
	}
	found := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := mdHeadingLine.FindStringSubmatch(l); m != nil {
			level := len(m[1])
			// A question heading over a body of its own: a pair.
			if asks(m[2]) {
				j := i + 1
				var body []string
				for ; j < len(lines); j++ {
					bl := strings.TrimSpace(lines[j])
					if hm := mdHeadingLine.FindStringSubmatch(bl); hm != nil && len(hm[1]) <= level {
						break
					} else if hm != nil {
						body = nil // subsections: the heading heads more than an answer
						break
					}
					if _, ok := markerText(qMarker, bl); ok {
						break // the next pair
					}
					if bl != "" {
						body = append(body, bl)
					}
				}
				if len(body) > 0 {
					for len(stack) > 0 && stack[len(stack)-1].level >= level {
						stack = stack[:len(stack)-1]
					}
					flush()
					parts = append(parts, faqPart{q: m[2], a: strings.Join(body, "\n"), headings: path()})
					found = true
					i = j - 1
					continue
				}
			}
			for len(stack) > 0 && stack[len(stack)-1].level >= level {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, heading{level, m[2]})
			if found && !hasBody() {
				restart() // the headings of the pairs before are done
				continue
			}
			prose = append(prose, lines[i])
			continue
		}
		q, ok := markerText(qMarker, l)
		if !ok || q == "" {
			prose = append(prose, lines[i])
			continue
		}
		// The question may run over lines before its answer's marker;
		// blank lines may stand between them.
		j := i + 1
		qs := []string{q}
		for ; j < len(lines); j++ {
			nl := strings.TrimSpace(lines[j])
			if _, isA := markerText(aMarker, nl); isA || mdHeadingLine.MatchString(nl) {
				break
			}
			if _, isQ := markerText(qMarker, nl); isQ {
				break
			}
			if nl != "" {
				qs = append(qs, nl)
			}
		}
		a, isA := "", false
		if j < len(lines) {
			a, isA = markerText(aMarker, strings.TrimSpace(lines[j]))
		}
		if !isA || len(qs) > 3 {
			prose = append(prose, lines[i])
			continue
		}
		ans := []string{}
		if a != "" {
			ans = append(ans, a)
		}
		k := j + 1
		for ; k < len(lines); k++ {
			nl := strings.TrimSpace(lines[k])
			if nl == "" {
				if len(ans) > 0 {
					break
				}
				continue
			}
			if _, isQ := markerText(qMarker, nl); isQ || mdHeadingLine.MatchString(nl) {
				break
			}
			ans = append(ans, nl)
		}
		if len(ans) == 0 {
			prose = append(prose, lines[i])
			continue
		}
		flush()
		parts = append(parts, faqPart{q: strings.Join(qs, " "), a: strings.Join(ans, "\n"), headings: path()})
		found = true
		i = k - 1
	}
	if !found {
		return nil
	}
	flush()
	return parts
}

// splitPairs returns the pieces of a document with pairs in it, in order,
// and false when it holds none: the prose between pairs is split as
// before, each pair is one piece (a long answer several, each under its
// question).
func (s Splitter) splitPairs(ctx context.Context, d Document) ([]Piece, bool, error) {
	if q, _ := d.Metadata["question"].(string); q != "" {
		_, a, _ := strings.Cut(d.Text, "\n") // pairDoc's text: the answer's marker, then the answer
		a = strings.TrimPrefix(strings.TrimPrefix(a, "A: "), "答：")
		ps, err := s.pairPieces(ctx, d.Metadata, nil, q, a)
		return ps, true, err
	}
	parts := faqParts(d.Text)
	if parts == nil {
		return nil, false, nil
	}
	var out []Piece
	for _, p := range parts {
		if p.prose != "" {
			cs, err := text.Splitter(s).SplitContext(ctx, p.prose)
			if err != nil {
				return nil, true, err
			}
			for _, c := range cs {
				if strings.TrimSpace(stripHeadings(c.Text)) == "" {
					continue // headings alone: those of the pairs that follow
				}
				out = append(out, Piece{Text: c.Text, Metadata: sectionMeta(d.Metadata, c.Headings)})
			}
			continue
		}
		ps, err := s.pairPieces(ctx, d.Metadata, p.headings, p.q, p.a)
		if err != nil {
			return nil, true, err
		}
		out = append(out, ps...)
	}
	return out, true, nil
}

// pairPieces is one pair as pieces: one when it fits the chunk size, else
// the answer cut to fit with the question above each part.
func (s Splitter) pairPieces(ctx context.Context, meta map[string]any, headings []string, q, a string) ([]Piece, error) {
	m := sectionMeta(meta, headings)
	m["question"] = strings.TrimSpace(q)
	whole := pairText(q, a)
	sp := text.Splitter(s)
	length := func(t string) int {
		if s.Len != nil {
			return s.Len(t)
		}
		return utf8.RuneCountInString(t)
	}
	room := s.Size - length(pairText(q, ""))
	if s.Size <= 0 || length(whole) <= s.Size {
		return []Piece{{Text: whole, Metadata: m}}, nil
	}
	sp.TitleEnhance = false
	under := room >= s.Size/3 // each part of the answer under its question
	src := strings.TrimSpace(a)
	if under {
		sp.Size, sp.Overlap = room, min(s.Overlap, room/4)
	} else {
		src = whole // a question too long to repeat: the pair cut as prose
	}
	cs, err := sp.SplitContext(ctx, src)
	if err != nil {
		return nil, err
	}
	out := make([]Piece, 0, len(cs))
	for _, c := range cs {
		t := c.Text
		if under {
			t = pairText(q, t)
		}
		out = append(out, Piece{Text: t, Metadata: maps.Clone(m)})
	}
	return out, nil
}

// sectionMeta is a copy of meta with "section" set to the headings (when
// there are any).
func sectionMeta(meta map[string]any, headings []string) map[string]any {
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]any{}
	}
	if len(headings) > 0 {
		m["section"] = strings.Join(headings, " > ")
	}
	return m
}

// stripHeadings is t without its Markdown heading lines.
func stripHeadings(t string) string {
	var b strings.Builder
	for _, l := range strings.Split(t, "\n") {
		if !mdHeadingLine.MatchString(strings.TrimSpace(l)) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// qaColumns finds the question and the answer among a row's column names
// (or JSON keys): the indexes, or -1, -1.
func qaColumns(names []string) (q, a int) {
	q, a = -1, -1
	for i, n := range names {
		switch strings.ToLower(strings.TrimSpace(n)) {
		case "question", "questions", "q", "问题", "问", "問題", "問", "提问", "提問":
			if q < 0 {
				q = i
			}
		case "answer", "answers", "a", "答案", "答", "回答", "答复", "答覆":
			if a < 0 {
				a = i
			}
		}
	}
	if q < 0 || a < 0 {
		return -1, -1
	}
	return q, a
}

// reservedMeta are the metadata keys a row's other columns do not take.
var reservedMeta = map[string]bool{"source": true, "section": true, "question": true, "row": true, "seq_num": true}

// pairDoc is a row's pair as a document: the pair's text, metadata
// "question", and the row's other non-empty columns as metadata.
func pairDoc(q, a string, other map[string]string, meta map[string]any) (Document, bool) {
	q, a = strings.TrimSpace(q), strings.TrimSpace(a)
	if q == "" || a == "" {
		return Document{}, false
	}
	if meta == nil {
		meta = map[string]any{}
	}
	for k, v := range other {
		if k = strings.TrimSpace(k); k != "" && !reservedMeta[k] && strings.TrimSpace(v) != "" {
			meta[k] = strings.TrimSpace(v)
		}
	}
	meta["question"] = q
	return Document{Text: pairText(q, a), Metadata: meta}, true
}

// qaParagraph reads a Markdown paragraph that starts with a question
// marker and holds an answer marker on a later line ("Q: …\nA: …"): its
// text with each marked line (and the lines that continue it) on a line
// of its own.
func qaParagraph(n ast.Node, src []byte) (string, bool) {
	lines := strings.Split(inlineRaw(n, src), "\n")
	if _, ok := markerText(qMarker, strings.TrimSpace(lines[0])); !ok {
		return "", false
	}
	var runs []string
	answered := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		_, isQ := markerText(qMarker, l)
		_, isA := markerText(aMarker, l)
		answered = answered || (isA && len(runs) > 0)
		if isQ || isA || len(runs) == 0 {
			runs = append(runs, l)
			continue
		}
		runs[len(runs)-1] = joinWrapped(runs[len(runs)-1] + "\n" + l)
	}
	if !answered {
		return "", false
	}
	return strings.Join(runs, "\n"), true
}

// boldQuestion reads a Markdown paragraph that is a bold question
// ("**How do I apply?**"): the question.
func boldQuestion(n ast.Node, src []byte) (string, bool) {
	first := n.FirstChild()
	if first == nil || first.NextSibling() != nil {
		return "", false
	}
	e, ok := first.(*ast.Emphasis)
	if !ok || e.Level < 2 {
		return "", false
	}
	q := strings.TrimSpace(inlineText(e, src))
	if !asks(q) {
		return "", false
	}
	if m, ok := markerText(qMarker, q); ok && m != "" {
		q = m
	}
	return q, true
}
