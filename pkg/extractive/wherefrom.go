package extractive

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file answers where a passage comes from ("「…」出自哪里？", "上述文字出自
// 哪一篇？", "Which section says "…"?") with the document and the part path
// that hold it, named at the level the question asks: the section path of
// the line that holds the passage, and that line's own label.

var (
	// askedKindZH is the kind of part a Chinese where-from question asks
	// for: the character after 哪一/哪个/哪/何/什么 ("哪一章": 章).
	askedKindZH = regexp.MustCompile(`(?:哪一|哪个|哪|何|什么)(\p{Han})`)
	// whereFromEN asks where a passage comes from, in English: "Which
	// section says …", "What article contains …", "Where does … come
	// from", "In which chapter is …".
	whereFromEN = regexp.MustCompile(`(?i)\b(?:which|what)\s+([a-z]+)\s+(?:says?|said|contains?|mentions?|states?|includes?|reads?|is\s+(?:it|that|this)\s+from)\b|\bin\s+which\s+([a-z]+)\b|\bwhere\s+(?:does|did|is|do)\b.*\b(?:come|comes|from)\b`)
	quotedEN    = regexp.MustCompile(`"([^"]{2,300})"|“([^”]{2,300})”`)
	// sayThat is what stands between an English where-from question and
	// its unquoted passage ("Which section says that …?").
	sayThat = regexp.MustCompile(`(?i)^\s*(?:that\s+)?`)
)

// docKinds are the kinds a where-from question names the document by:
// the book, the work, the text.
var docKinds = map[string]bool{"部": true, "本": true, "书": true, "書": true, "book": true, "document": true, "text": true, "work": true, "file": true}

// whereFromEnglish reads an English where-from question: the passage (quoted,
// else what follows the verb) and the kind of part asked for ("" for any).
func whereFromEnglish(q string) (passage, kind string, ok bool) {
	m := whereFromEN.FindStringSubmatchIndex(q)
	if m == nil {
		return "", "", false
	}
	for _, g := range []int{2, 4} {
		if m[g] >= 0 {
			kind = strings.ToLower(q[m[g]:m[g+1]])
		}
	}
	switch kind {
	case "part", "passage", "place", "one", "verse", "line":
		if kind != "verse" && kind != "line" {
			kind = ""
		}
	}
	if qm := quotedEN.FindStringSubmatch(q); qm != nil {
		passage = qm[1] + qm[2]
	} else if m[2] >= 0 {
		passage = sayThat.ReplaceAllString(q[m[1]:], "")
		passage = strings.TrimRight(passage, "?？.! ")
	}
	if utf8.RuneCountInString(normalize(passage)) < 4 {
		return "", "", false
	}
	return passage, kind, true
}

// askedKind is the kind of part a Chinese where-from question asks for
// ("哪一篇": 篇), "" for any.
func askedKind(rest string) string {
	m := askedKindZH.FindStringSubmatch(rest)
	if m == nil {
		return ""
	}
	switch m[1] {
	case "里", "裡", "儿", "兒", "处", "處", "地", "方", "些":
		return ""
	}
	return m[1]
}

// hitLines are the lines of the evidence (never the conversation) that
// hold the normalised passage nq; a passage that runs over lines of one
// entry is found at the line it starts in.
func hitLines(lines []ctxLine, nq string) []int {
	var hits []int
	for i, l := range lines {
		if l.speaker == speakerNone && strings.Contains(foldNorm(l.text), nq) {
			hits = append(hits, i)
		}
	}
	if len(hits) > 0 {
		return hits
	}
	for i := 0; i < len(lines); {
		j := i
		var b strings.Builder
		var starts []int
		for ; j < len(lines) && lines[j].entry == lines[i].entry; j++ {
			starts = append(starts, b.Len())
			b.WriteString(foldNorm(lines[j].text))
		}
		if lines[i].speaker == speakerNone {
			if k := strings.Index(b.String(), nq); k >= 0 {
				at := i
				for n, s := range starts {
					if s <= k {
						at = i + n
					}
				}
				hits = append(hits, at)
			}
		}
		i = j
	}
	return hits
}

// sourceName names where line l comes from at the level of kind: the
// document ("" kind in docKinds), the path down to the part of that kind,
// or (kind "" or not found) the whole path and the line's own label. The
// document is the path's first segment, or its second when that is an
// unlabelled heading (the document's title under its file name). atKind
// reports whether the path has a part of the kind asked.
func sourceName(lines []ctxLine, i int, kind string, zh bool) (doc string, parts []string, atKind bool) {
	l := lines[i]
	segs := strings.Split(l.path, " > ")
	for i := range segs {
		segs[i] = strings.TrimSpace(strings.TrimLeft(segs[i], "# "))
	}
	if len(segs) == 0 || segs[0] == "" {
		return "", nil, false
	}
	doc, rest := segs[0], segs[1:]
	if len(rest) > 0 {
		if _, ok := headingLabel(rest[0]); !ok {
			doc, rest = rest[0], rest[1:]
		}
	}
	if docKinds[kind] {
		return doc, nil, true
	}
	if kind != "" {
		if lb, ok := ownLabel(lines, i); ok && lb.Kind != "" && docstruct.SameKind(lb.Kind, kind) {
			if zh {
				return doc, []string{lb.String()}, true
			}
			return doc, append(append([]string{}, rest...), lb.String()), true
		}
		for i := len(rest) - 1; i >= 0; i-- {
			if lb, ok := headingLabel(rest[i]); ok && lb.Kind != "" && docstruct.SameKind(lb.Kind, kind) {
				if zh { // 第N条, 第N章: numbered through the document
					return doc, []string{withName(rest[i], lb)}, true
				}
				named := append([]string{}, rest[:i]...)
				return doc, append(named, withName(rest[i], lb)), true
			}
		}
	}
	for _, seg := range rest {
		if lb, ok := headingLabel(seg); ok {
			seg = withName(seg, lb)
		}
		parts = append(parts, seg)
	}
	if lb, ok := ownLabel(lines, i); ok {
		s := lb.String()
		if len(parts) == 0 || !strings.HasSuffix(foldNorm(parts[len(parts)-1]), foldNorm(s)) {
			parts = append(parts, s)
		}
	}
	return doc, parts, false
}

// headingLabel is the label a path segment starts with.
func headingLabel(seg string) (partLabel, bool) {
	lb, _, ok := docstruct.ParseLabel(seg, true, nil)
	return lb, ok && lb.HasNumber()
}

// withName adds to a segment labelled with a CJK kind its name and kind as
// one says them ("第四回NAME…" of kind 回: "NAME回（第四回NAME…）"),
// unless the segment already says so ("学而篇第一").
func withName(seg string, lb partLabel) string {
	k, _ := utf8.DecodeRuneInString(lb.Kind)
	if !text.IsCJK(k) {
		return seg
	}
	name := shortName(lb.Name)
	if name == "" || strings.Contains(text.Fold(seg), text.Fold(name+lb.Kind)) {
		return seg
	}
	return name + lb.Kind + "（" + seg + "）"
}

// shortName is the name a heading's words give a part: its first word,
// when the words are several and it is short; else the longest start of
// them that recurs in them ("蒙山水蒙艮上坎下": 蒙, the name said again in
// the heading's description), or "" for none.
func shortName(words string) string {
	words = strings.TrimSpace(words)
	if f := strings.Fields(words); len(f) > 1 || (len(f) == 1 && utf8.RuneCountInString(f[0]) <= 2) {
		if utf8.RuneCountInString(f[0]) <= 4 {
			return f[0]
		}
		return ""
	}
	rs := []rune(words)
	for n := min(3, len(rs)/3); n >= 1; n-- {
		if strings.Contains(string(rs[n:]), string(rs[:n])) {
			return string(rs[:n])
		}
	}
	return ""
}

// sayWhereFrom is the reply to a where-from question for the passage
// quote, held by line l: "「…」出自《论语》学而篇第一 1.1[1]。", ""…" is in
// United States Constitution, Article I, Section 8 [1]."
// With a kind the path has no part of, it says nothing ("") when strict.
func sayWhereFrom(quote string, lines []ctxLine, i int, kind string, zh, strict bool) string {
	l := lines[i]
	doc, parts, atKind := sourceName(lines, i, kind, zh)
	if (doc == "" && len(parts) == 0) || (strict && kind != "" && !atKind) {
		return ""
	}
	// The sentence that holds the passage follows the name, as the
	// evidence for it, when it says more than the passage.
	span := strings.TrimSpace(dropListMarker(quoteSpan(l.text, foldNorm(quote), 0)))
	if foldNorm(span) == foldNorm(quote) || utf8.RuneCountInString(span) > maxFirstRunes {
		span = ""
	}
	if zh {
		name := strings.Join(parts, " ")
		if doc != "" && (!atKind || len(parts) == 0) {
			name = "《" + strings.Trim(doc, "《》") + "》" + name
		}
		if span != "" {
			return endSentence(withCite("「"+quote+"」出自"+name+"："+span, l.cite))
		}
		return withCite("「"+quote+"」出自"+name, l.cite) + "。"
	}
	names := parts
	if doc != "" {
		names = append([]string{doc}, parts...)
	}
	out := "\"" + quote + "\" is in " + strings.Join(names, ", ")
	if span != "" {
		out += ": " + span
	}
	out = endSentence(withCite(out, l.cite))
	if last, _ := utf8.DecodeLastRuneInString(out); !strings.ContainsRune(".!?\"'”’", last) {
		out += "."
	}
	return out
}

// trimDeixis drops the words that point back at an unquoted passage from
// its end ("巧言令色，鲜矣仁这句话": 巧言令色，鲜矣仁).
func trimDeixis(phrase string) string {
	return strings.TrimRightFunc(deixis.ReplaceAllString(phrase, ""), func(r rune) bool { return strings.ContainsRune("，,。 ", r) })
}

// asksWhereFrom reports whether q asks where a passage comes from: its
// answer is never a sentence the user said.
func asksWhereFrom(q string) bool {
	if _, _, ok := whereFromEnglish(q); ok {
		return true
	}
	fq := text.Fold(q)
	return strictSource.MatchString(fq) || (asksSource.MatchString(fq) && quoted.MatchString(fq))
}

// ownLabel is the label of the labelled paragraph a line is in: its own,
// or that of the nearest line before it of its entry and section that
// starts with one (a paragraph the chunk's lines split).
func ownLabel(lines []ctxLine, i int) (partLabel, bool) {
	for j := i; j >= 0 && lines[j].entry == lines[i].entry && lines[j].path == lines[i].path; j-- {
		if lb, ok := lineLabel(lines[j].text); ok {
			return lb, true
		}
	}
	return partLabel{}, false
}
