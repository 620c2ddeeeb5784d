package extractive

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file reads the evidence retrieval marks as found by structure
// (llm.Evidence.Match): the part a question addresses by number or name,
// which is the reply from its label on, and the statement that the
// addressed part or document does not exist, which is the reply as it is.

// maxFirstRunes is the longest first sentence of a part a reply keeps
// whole; a longer one is cut at a clause within maxReplyRunes.
const maxFirstRunes = 400

// absentStatement is the text of the evidence that says the addressed part
// or document does not exist, when retrieval gave one.
func absentStatement(ev []llm.Evidence) (string, bool) {
	for _, e := range ev {
		if e.Match == rag.MatchAbsent {
			if s := strings.TrimSpace(e.Text); s != "" {
				return s, true
			}
		}
	}
	return "", false
}

// addressedPart is the evidence retrieval found as the part the question
// addresses.
func addressedPart(ev []llm.Evidence) (llm.Evidence, bool) {
	for _, e := range ev {
		if e.Match == rag.MatchPart && strings.TrimSpace(e.Text) != "" {
			return e, true
		}
	}
	return llm.Evidence{}, false
}

// partLines are the non-empty lines of a part's text with their Markdown
// marks dropped (heading hashes, list markers, bold), each marked as a
// heading or not.
func partLines(t string) (lines []string, heads []bool) {
	for _, l := range strings.Split(t, "\n") {
		l = strings.TrimSpace(l)
		h := false
		if s := strings.TrimLeft(l, "#"); s != l && (s == "" || s[0] == ' ' || s[0] == '\t') {
			l, h = strings.TrimSpace(s), true
		}
		l = strings.TrimSpace(dropListMarker(l))
		l = strings.ReplaceAll(strings.ReplaceAll(l, "**", ""), "__", "")
		if l == "" || strings.Trim(l, "-*_=|: ") == "" {
			continue
		}
		lines = append(lines, l)
		heads = append(heads, h)
	}
	return lines, heads
}

// dropListMarker drops a bullet ("- ", "* ", "+ ", "• ") that starts a line;
// numbered items keep their number, which labels them.
func dropListMarker(l string) string {
	for _, m := range []string{"- ", "* ", "+ ", "• ", "・"} {
		if strings.HasPrefix(l, m) {
			return l[len(m):]
		}
	}
	return l
}

// readPart is the reply for the addressed part e: its label (the last
// segment of its path, when its text does not start with it) and its
// headings, then its text from the start, whole when short, else its first
// sentences within maxReplyRunes, with its citation.
func readPart(q string, e llm.Evidence, zh bool) string {
	lines, heads := partLines(e.Text)
	if len(lines) == 0 {
		return ""
	}
	var label []string
	if l := lastSegment(e.Path); l != "" && !strings.HasPrefix(foldNorm(lines[0]), foldNorm(l)) {
		label = append(label, strings.TrimSpace(strings.TrimLeft(l, "# ")))
	}
	i := 0
	for ; i < len(lines) && (heads[i] || (i+1 < len(lines) && isHeading(lines[i]))); i++ {
		label = append(label, lines[i])
	}
	body := ""
	n := 0
	used := map[string]bool{}
	first, firstOK := partLabel{}, false
	if i < len(lines) {
		first, firstOK = lineLabel(lines[i])
	}
	for start := i; i < len(lines); i++ {
		if i > start && (heads[i] || (firstOK && sameStyle(first, lines[i]))) {
			break // the next sub-part: the opening ends
		}
		carry := ""
		for _, s := range text.Sentences(lines[i]) {
			if bareLabel(s) { // "1." before its item's text: one with it
				carry += s + " "
				continue
			}
			s, carry = carry+s, ""
			r := utf8.RuneCountInString(s)
			if body != "" && n+r > maxReplyRunes {
				i = len(lines)
				break
			}
			used[s] = true
			if body == "" && r > maxFirstRunes {
				s = cutAtClause(s, maxReplyRunes)
			}
			if body == "" {
				body = s
			} else if strings.HasSuffix(body, "\n") {
				body += s
			} else {
				body = join(body, s)
			}
			n += utf8.RuneCountInString(s)
		}
		if body != "" && !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
	}
	body = strings.TrimSpace(body)
	if strings.HasSuffix(body, "…") && utf8.RuneCountInString(body) <= 1 {
		body = ""
	}
	if more := within(q, e, lines, used); more != "" {
		body += sepOf(zh, " … ", "……") + more
	}
	head := strings.Join(label, sepOf(zh, ", ", " "))
	out := body
	switch {
	case head == "":
	case body == "":
		out = head
	default:
		out = head + sepOf(zh, ": ", "：") + body
	}
	return withCite(out, e.ID)
}

func sepOf(zh bool, en, cjk string) string {
	if zh {
		return cjk
	}
	return en
}

// bareLabel reports whether a sentence is only a label ("1.", "(a)", "IV."):
// no letter in it but those of a label that takes it whole.
func bareLabel(s string) bool {
	s = strings.TrimSpace(s)
	if lb, n, ok := docstruct.ParseLabel(s, false, nil); ok && !lb.IsZero() && strings.TrimSpace(strings.Trim(s[n:], ".)）、")) == "" {
		return true
	}
	for _, r := range s {
		if unicode.IsLetter(r) {
			return false
		}
	}
	return s != ""
}

// cutAtClause shortens s to its clauses within max runes, ending in "…"; a
// first clause longer than that is cut at max.
func cutAtClause(s string, max int) string {
	n, end := 0, 0
	for i, r := range s {
		n++
		if n > max {
			break
		}
		if strings.ContainsRune("，；：、,;:", r) {
			end = i + utf8.RuneLen(r)
		}
	}
	if end == 0 {
		end = len(string([]rune(s)[:min(max, utf8.RuneCountInString(s))]))
	}
	out := strings.TrimRight(s[:end], "，；：、,;: ")
	if out == s {
		return s
	}
	return out + "…"
}

// partLabel is a part's label as docstruct reads it.
type partLabel = docstruct.Label

// lineLabel is the label a line of text starts with.
func lineLabel(l string) (partLabel, bool) {
	lb, _, ok := docstruct.ParseLabel(l, false, nil)
	return lb, ok && !lb.IsZero()
}

// sameStyle reports whether line starts with a label of first's style (the
// same kind, both dotted or both not): a sibling, or the first's own
// child numbered alike, which starts another part.
func sameStyle(first partLabel, line string) bool {
	lb, ok := lineLabel(line)
	return ok && docstruct.SameKind(lb.Kind, first.Kind) && (lb.Path == nil) == (first.Path == nil)
}

// askWords are the words of a question that ask for a part's text rather
// than for something in it ("规定了什么", "what does it say").
var askWords = strings.NewReplacer("规定", "", "内容", "", "条文", "", "原文", "", "全文", "", "具体", "", "讲", "", "说", "",
	"写", "", "意思", "", "什么", "", "哪些", "")

var askWordsEN = map[string]bool{"say": true, "said": true, "state": true, "provide": true, "mean": true, "contain": true,
	"text": true, "content": true, "full": true, "whole": true, "read": true, "word": true}

// within is the sentence of the part e, besides its opening (used), that
// holds what the question asks besides the part's address: the words of q
// that neither the part's path nor its opening hold, when there are such
// (at least two CJK characters or one word) and one sentence holds 0.6 of
// them; "" else.
func within(q string, e llm.Evidence, lines []string, used map[string]bool) string {
	rest := strings.ToLower(text.Fold(q))
	for _, seg := range strings.Split(e.Path, " > ") {
		if seg = strings.ToLower(text.Fold(strings.TrimSpace(seg))); seg != "" {
			rest = strings.ReplaceAll(rest, seg, " ")
		}
	}
	if lb, ok := lineLabel(lines[0]); ok {
		rest = strings.ReplaceAll(rest, strings.ToLower(text.Fold(lb.String())), " ")
	}
	rest = askWords.Replace(rest)
	var kept []string
	for _, w := range strings.Fields(rest) {
		if !askWordsEN[strings.TrimSuffix(strings.Trim(w, "?？.,!"), "s")] {
			kept = append(kept, w)
		}
	}
	qr := newQuery(strings.Join(kept, " "))
	if len(qr.words) == 0 && qr.nChar < 2 {
		return ""
	}
	// Terms the address or the opening already hold are not asked.
	known := qr.match(e.Path)
	var open strings.Builder
	for s := range used {
		open.WriteString(s)
		open.WriteString(" ")
	}
	opened := qr.match(open.String())
	var want []int
	for k := range qr.nChar {
		if !known.chars[k] && !opened.chars[k] {
			want = append(want, k)
		}
	}
	if len(want) == 0 || (len(want) < 2 && len(qr.words) == 0) {
		return ""
	}
	best, bestShare := "", 0.0
	for _, l := range lines {
		for _, s := range text.Sentences(l) {
			if used[s] || utf8.RuneCountInString(s) > maxFirstRunes {
				continue
			}
			mt := qr.match(s)
			n := 0
			for _, k := range want {
				if mt.chars[k] {
					n++
				}
			}
			if share := float64(n) / float64(len(want)); share > bestShare {
				best, bestShare = s, share
			}
		}
	}
	if bestShare < 0.6 {
		return ""
	}
	return strings.TrimSpace(best)
}
