package text

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is the splitter the knowledge bases (pkg/kb) chunk documents
// with and the search answerer (pkg/search) cuts fetched pages into
// passages with, so both index and rank the same kind of pieces.

// Splitter cuts text into chunks of at most Size (measured by Len)
// that end at sentence boundaries (Chinese 。！？； and English . ! ?),
// start a new chunk at every heading and prefer paragraph boundaries. Each
// chunk after the first of a section repeats the last sentences of the
// previous one, up to Overlap.
//
// A sentence longer than Size is cut at clause punctuation (，、：, : and
// spaces) and, failing that, at Size.
type Splitter struct {
	Size    int
	Overlap int
	// Len measures text; nil counts characters (runes).
	Len func(string) int
	// TitleEnhance prefixes each chunk that follows a title-like line with
	// "下文与(标题)有关。" (Langchain-Chatchat's zh_title_enhance).
	TitleEnhance bool
	// LineParagraphs makes every line a paragraph of its own, for text
	// with one block per line and no blank lines (a web page's text);
	// otherwise only a blank line ends a paragraph. Headings are found as
	// without it.
	LineParagraphs bool
}

// Chunk is one piece of a text as the splitter cut it.
type Chunk struct {
	Text string
	// Headings are the headings the chunk falls under, outermost first
	// (nil before the first heading).
	Headings []string
}

func (s Splitter) length(t string) int {
	if s.Len != nil {
		return s.Len(t)
	}
	return utf8.RuneCountInString(t)
}

// segment is a sentence (or part of one) and how it joins the previous one.
type segment struct {
	text    string
	newLine bool // starts a line of its own in the source
	newPara bool // starts a paragraph
	heading bool // is a heading line
}

var mdHeading = regexp.MustCompile(`^(#{1,6})\s+(.+?)\s*#*\s*$`)

// section is a heading and the lines under it.
type section struct {
	title string   // heading text ("" for text before the first heading)
	path  []string // enclosing headings, outermost first, this one last
	lines []string // the body; "" marks a paragraph break
	head  string   // the heading line as written ("" when none)
}

// Split returns the chunks of src in order. A Size below 1 counts as 1
// and Overlap is kept within 0..Size-1. Its time grows linearly with the
// text's length, long unbroken lines included.
func (s Splitter) Split(src string) []Chunk {
	out, _ := s.SplitContext(context.Background(), src)
	return out
}

// SplitContext is Split that stops, returning ctx's cause, once ctx is
// done.
func (s Splitter) SplitContext(ctx context.Context, src string) ([]Chunk, error) {
	size := max(s.Size, 1)
	overlap := min(max(s.Overlap, 0), size-1)
	var out []Chunk
	for _, sec := range sections(src) {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		segs, err := s.segments(ctx, sec, size)
		if err != nil {
			return nil, err
		}
		if len(segs) == 0 {
			continue
		}
		var cur []segment
		curLen := 0
		first := true
		emit := func() {
			if len(cur) == 0 {
				return
			}
			t := joinSegments(cur)
			if s.TitleEnhance && sec.title != "" && !first {
				t = "下文与(" + sec.title + ")有关。" + t
			}
			out = append(out, Chunk{Text: t, Headings: slices.Clone(sec.path)})
			first = false
		}
		for i := 0; i < len(segs); i++ {
			seg := segs[i]
			l := s.length(seg.text)
			if len(cur) > 0 {
				fits := curLen+1+l <= size
				// Prefer to break before a paragraph that would not fit
				// whole when the chunk is already half full.
				if fits && seg.newPara && curLen >= size/2 {
					if curLen+1+s.length(paragraphFrom(segs[i:])) > size {
						fits = false
					}
				}
				if !fits {
					emit()
					cur, curLen = s.overlapTail(cur, overlap, size, l)
				}
			}
			cur = append(cur, seg)
			if curLen > 0 {
				curLen++
			}
			curLen += l
		}
		emit()
	}
	return out, nil
}

// overlapTail returns the trailing segments of cur to repeat at the start
// of the next chunk: as many whole sentences as fit in overlap and leave
// room for the next segment of length next.
func (s Splitter) overlapTail(cur []segment, overlap, size, next int) ([]segment, int) {
	if overlap <= 0 {
		return nil, 0
	}
	n, total := 0, 0
	for i := len(cur) - 1; i >= 0; i-- {
		if cur[i].heading {
			break
		}
		l := s.length(cur[i].text)
		add := l
		if n > 0 {
			add++
		}
		if total+add > overlap || total+add+1+next > size {
			break
		}
		total += add
		n++
	}
	if n == 0 {
		return nil, 0
	}
	tail := append([]segment(nil), cur[len(cur)-n:]...)
	return tail, total
}

// paragraphFrom is the text of the paragraph starting at segs[0].
func paragraphFrom(segs []segment) string {
	end := 1
	for end < len(segs) && !segs[end].newPara && !segs[end].heading {
		end++
	}
	return joinSegments(segs[:end])
}

// joinSegments rebuilds text from segments: a newline before a segment that
// started a line, nothing between CJK sentences, a space otherwise.
func joinSegments(segs []segment) string {
	var b strings.Builder
	for i, sg := range segs {
		if i > 0 {
			switch {
			case sg.newLine || sg.heading || segs[i-1].heading:
				b.WriteByte('\n')
			default:
				last, _ := utf8.DecodeLastRuneInString(segs[i-1].text)
				first, _ := utf8.DecodeRuneInString(sg.text)
				if !(wide(last) || wide(first)) {
					b.WriteByte(' ')
				}
			}
		}
		b.WriteString(sg.text)
	}
	return b.String()
}

// segments turns a section into sentences no longer than size.
func (s Splitter) segments(ctx context.Context, sec section, size int) ([]segment, error) {
	var segs []segment
	if sec.head != "" {
		for _, h := range strings.Split(sec.head, "\n") {
			ps, err := s.cut(ctx, h, size)
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				segs = append(segs, segment{text: p, newLine: true, newPara: true, heading: true})
			}
		}
	}
	para := true
	for _, line := range sec.lines {
		if line == "" {
			para = true
			continue
		}
		para = para || s.LineParagraphs
		startLine := true
		for _, sent := range Sentences(line) {
			ps, err := s.cut(ctx, sent, size)
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				segs = append(segs, segment{text: p, newLine: startLine, newPara: para})
				startLine, para = false, false
			}
		}
	}
	return segs, nil
}

// clauseBreak reports whether a long sentence may be cut after r.
func clauseBreak(r rune) bool {
	switch r {
	case '，', '、', '：', ',', ':', '）', ')', '”', '」':
		return true
	}
	return false
}

// cut splits a sentence longer than size at clause punctuation, then at
// spaces, then anywhere. Its cost grows with the sentence's length, not
// its square: each chunk is found by galloping over prefixes (longestFit).
func (s Splitter) cut(ctx context.Context, sent string, size int) ([]string, error) {
	if s.length(sent) <= size {
		return []string{sent}, nil
	}
	// Clauses first: ends[i] is where clause i ends; clause i starts at
	// ends[i-1] (0 for the first).
	var ends []int
	for i, r := range sent {
		if clauseBreak(r) {
			ends = append(ends, i+utf8.RuneLen(r))
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] < len(sent) {
		ends = append(ends, len(sent))
	}
	var out []string
	for i, start := 0, 0; i < len(ends); {
		if err := checkEvery(ctx, len(out)); err != nil {
			return nil, err
		}
		k := s.longestFit(len(ends)-i, 1, size, func(k int) string { return sent[start:ends[i+k-1]] })
		if k == 0 {
			// One clause longer than size.
			pieces, err := s.hardCut(ctx, sent[start:ends[i]], size)
			if err != nil {
				return nil, err
			}
			out = append(out, pieces...)
			k = 1
		} else if t := strings.TrimSpace(sent[start:ends[i+k-1]]); t != "" {
			out = append(out, t)
		}
		start = ends[i+k-1]
		i += k
	}
	return out, nil
}

// longestFit returns the largest k in 0..n with length(prefix(k)) <= size,
// for prefixes that grow with k (Len is assumed not to shrink as text
// grows). It gallops from guess (doubling, then a binary search), so every
// prefix it measures is at most about twice as long as the answer's, and
// the cost of one chunk does not depend on how much text follows it.
func (s Splitter) longestFit(n, guess, size int, prefix func(k int) string) int {
	if n <= 0 {
		return 0
	}
	lo, hi := 0, n+1 // length(prefix(lo)) <= size; hi fails (n+1: unknown)
	for k := min(max(guess, 1), n); ; k = min(2*k, n) {
		if s.length(prefix(k)) > size {
			hi = k
			break
		}
		lo = k
		if k == n {
			return n
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if s.length(prefix(mid)) <= size {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// hardCut cuts t into pieces of at most size, at the last space of each
// window when there is one (so English words stay whole).
func (s Splitter) hardCut(ctx context.Context, t string, size int) ([]string, error) {
	var out []string
	t = strings.TrimSpace(t)
	left := utf8.RuneCountInString(t)
	var ends []int // ends[i]: byte offset in t where rune i ends
	for left > 0 {
		if err := checkEvery(ctx, len(out)); err != nil {
			return nil, err
		}
		ends = ends[:0]
		runesTo := func(k int) int { // byte length of t's first k runes
			for len(ends) < k {
				p := 0
				if len(ends) > 0 {
					p = ends[len(ends)-1]
				}
				_, w := utf8.DecodeRuneInString(t[p:])
				ends = append(ends, p+w)
			}
			return ends[k-1]
		}
		// Len may count tokens: guess size runes, then gallop.
		n := max(s.longestFit(left, size, size, func(k int) string { return t[:runesTo(k)] }), 1)
		if n < left {
			for j := n; j > n/2; j-- {
				r, _ := utf8.DecodeLastRuneInString(t[:runesTo(j)])
				if unicode.IsSpace(r) {
					n = j
					break
				}
			}
		}
		end := runesTo(n)
		if p := strings.TrimSpace(t[:end]); p != "" {
			out = append(out, p)
		}
		t = t[end:]
		left -= n
	}
	return out, nil
}

// checkEvery returns ctx's error every 64th call (by count), so long loops
// stop soon after a cancellation without paying for a check each time.
func checkEvery(ctx context.Context, count int) error {
	if count%64 != 0 {
		return nil
	}
	return context.Cause(ctx)
}

// sections splits text at headings: Markdown "#" lines when the text has
// any, else title-like plain lines standing alone between blank lines.
func sections(t string) []section {
	lines := strings.Split(t, "\n")
	hasMD := false
	for _, l := range lines {
		if mdHeading.MatchString(strings.TrimSpace(l)) {
			hasMD = true
			break
		}
	}
	var out []section
	cur := section{}
	var stack []struct {
		level int
		title string
	}
	push := func(level int, title, head string) {
		if len(cur.lines) > 0 {
			out = append(out, cur)
		} else if cur.head != "" {
			// A heading with no body of its own stays with the next one.
			head = cur.head + "\n" + head
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, struct {
			level int
			title string
		}{level, title})
		path := make([]string, len(stack))
		for i, e := range stack {
			path[i] = e.title
		}
		cur = section{title: title, path: path, head: head}
	}
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		if hasMD {
			if m := mdHeading.FindStringSubmatch(l); m != nil {
				push(len(m[1]), m[2], l)
				continue
			}
		} else if l != "" && plainHeading(lines, i) {
			push(1, l, l)
			continue
		}
		if l == "" {
			if n := len(cur.lines); n > 0 && cur.lines[n-1] != "" {
				cur.lines = append(cur.lines, "")
			}
			continue
		}
		cur.lines = append(cur.lines, l)
	}
	if len(cur.lines) > 0 || cur.head != "" {
		out = append(out, cur)
	}
	return out
}

// plainHeading reports whether lines[i] of plain text reads as a heading: a
// short line (at most 40 characters) with no sentence-ending punctuation,
// with a blank line (or the start) before it and a blank line after it, or
// a line Chatchat's title test accepts.
func plainHeading(lines []string, i int) bool {
	l := strings.TrimSpace(lines[i])
	if isPossibleTitle(l) && (i == 0 || strings.TrimSpace(lines[i-1]) == "") {
		return true
	}
	if utf8.RuneCountInString(l) > 40 {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(l)
	if unicode.IsPunct(last) && !strings.ContainsRune("》」』）)】", last) {
		return false
	}
	before := i == 0 || strings.TrimSpace(lines[i-1]) == ""
	after := i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == ""
	return before && after
}

// isPossibleTitle is Langchain-Chatchat's title test (zh_title_enhance): at
// most 20 characters, not ending in punctuation, mostly letters (CJK
// included), not a bare number, and a digit (Arabic or Chinese numeral)
// within the first five characters ("1. 概述", "第一章 总则").
func isPossibleTitle(t string) bool {
	rs := []rune(strings.TrimSpace(t))
	if len(rs) == 0 || len(rs) > 20 {
		return false
	}
	last := rs[len(rs)-1]
	if !unicode.IsLetter(last) && !unicode.IsDigit(last) && !unicode.IsSpace(last) && last != '_' {
		return false
	}
	alpha, total := 0, 0
	numeric := true
	for _, r := range rs {
		if unicode.IsSpace(r) {
			continue
		}
		total++
		if unicode.IsLetter(r) && !isNumeral(r) {
			alpha++
		}
		if !isNumeral(r) {
			numeric = false
		}
	}
	if total == 0 || float64(alpha)/float64(total) < 0.5 || numeric {
		return false
	}
	for _, r := range rs[:min(5, len(rs))] {
		if isNumeral(r) {
			return true
		}
	}
	return false
}

// isNumeral reports whether r is a digit or a Chinese numeral (Python's
// str.isnumeric, which Chatchat's test uses, accepts both).
func isNumeral(r rune) bool {
	if unicode.IsDigit(r) || unicode.IsNumber(r) {
		return true
	}
	return strings.ContainsRune("〇一二三四五六七八九十百千万亿零壹贰叁肆伍陆柒捌玖拾佰仟两", r)
}

// wide reports whether r is a CJK character or CJK/full-width punctuation,
// which joins its neighbours without a space.
func wide(r rune) bool {
	return IsCJK(r) || (r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}
