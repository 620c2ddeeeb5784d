package extractive

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// This file is the model's reading of structured material: the headings
// that give each line its section path, questions that ask for the source
// of a quoted phrase, and questions that ask for a part of a hexagram (卦辞,
// 爻辞, 彖, 象) from text laid out as the Zhouyi is.

// ctxLine is one line of the material with where it stands.
type ctxLine struct {
	text  string
	path  string // the section path: its evidence's, then the headings above it, " > " between
	cite  int    // its evidence's citation number, 0 when it has none
	entry int    // index of its entry (a passage, or a message)
	// speaker is who said it: speakerNone for the evidence.
	speaker int
}

// maxReplyRunes is the length the generic reading keeps a reply within
// (its first sentence excepted, which clip shortens): an answer, not a
// dump of the material.
const maxReplyRunes = 180

// isHeading reports whether a line names what follows rather than says
// something: a section path ("a > b"), or a short line that ends no
// sentence and has no clause punctuation.
func isHeading(line string) bool {
	if strings.Contains(line, " > ") {
		return true
	}
	if utf8.RuneCountInString(line) > 40 {
		return false
	}
	return !strings.ContainsAny(line, "。！？；，：.!?;,:")
}

// joinPath puts heading h under path: the document's title stays, a
// heading the path already ends with is not repeated.
func joinPath(path, h string) string {
	switch {
	case path == "":
		return h
	case strings.HasSuffix(path, h):
		return path
	}
	if i := strings.Index(path, " > "); i >= 0 {
		return path[:i] + " > " + h
	}
	return path + " > " + h
}

// withCite puts the citation [n] at the end of s, before its closing
// punctuation ("…利貞[1]。").
func withCite(s string, n int) string {
	if n <= 0 {
		return s
	}
	body := strings.TrimRightFunc(s, func(r rune) bool { return strings.ContainsRune("。！？；!?;.…”’\"'」』", r) })
	mark := "[" + itoaSmall(n) + "]"
	if last, _ := utf8.DecodeLastRuneInString(body); body != "" && (unicode.IsLetter(last) || unicode.IsDigit(last)) && !text.IsCJK(last) {
		mark = " " + mark
	}
	return body + mark + s[len(body):]
}

func itoaSmall(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoaSmall(n/10) + string(rune('0'+n%10))
}

// clip shortens a sentence longer than maxReplyRunes to the run of its
// clauses around the one that holds most of the question's characters.
func clip(qr query, s string) string {
	const keep = 150
	if utf8.RuneCountInString(s) <= maxReplyRunes {
		return s
	}
	var clauses []string
	start := 0
	for i, r := range s {
		if strings.ContainsRune("，；：、,;:", r) {
			end := i + utf8.RuneLen(r)
			clauses = append(clauses, s[start:end])
			start = end
		}
	}
	if start < len(s) {
		clauses = append(clauses, s[start:])
	}
	best, bestScore := 0, -1
	for i, c := range clauses {
		score := 0
		for _, r := range c {
			if _, ok := qr.chars[text.FoldRune(r)]; ok {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	lo, hi := best, best+1
	n := utf8.RuneCountInString(clauses[best])
	for {
		grown := false
		if hi < len(clauses) && n+utf8.RuneCountInString(clauses[hi]) <= keep {
			n += utf8.RuneCountInString(clauses[hi])
			hi++
			grown = true
		}
		if lo > 0 && n+utf8.RuneCountInString(clauses[lo-1]) <= keep {
			lo--
			n += utf8.RuneCountInString(clauses[lo])
			grown = true
		}
		if !grown {
			break
		}
	}
	out := strings.Join(clauses[lo:hi], "")
	if utf8.RuneCountInString(out) > maxReplyRunes {
		out = string([]rune(out)[:keep]) + "…"
	}
	return out
}

var (
	quoted     = regexp.MustCompile(`[「“"‘『']([^「」“”"‘’『』']{2,60})[」”"’』']`)
	asksSource = regexp.MustCompile(`出自|出处|来自|源自|语出|哪一卦|哪个卦|哪卦|何卦|哪一篇|哪篇|哪部|哪本|哪一章|哪章|哪里`)
	// strictSource asks for a phrase's source and nothing else.
	strictSource = regexp.MustCompile(`出自|出处|语出|源自|哪一卦|哪个卦|哪卦|何卦`)
	// unquotedSource asks where an unquoted phrase before it comes from.
	unquotedSource = regexp.MustCompile(`出自|出处|语出|源自|是哪一卦|是哪个卦|是哪卦|是何卦`)
	// deixis ends an unquoted passage: "…这句话出自哪一章？", "…上述文字出自哪里？".
	deixis      = regexp.MustCompile(`[，,。\s]*(?:上面|上述|以上|前面)?(?:的)?(?:这一?句话?|这一?段话?|这段文字|这些文字|这些话|此句|此语|此段|文字|话|内容)$`)
	asksHex     = regexp.MustCompile(`哪一卦|哪个卦|哪卦|何卦|什么卦`)
	asksMeaning = regexp.MustCompile(`意思|含义|何意|意为|怎么理解|如何理解|解释|指什么`)
	hexPart     = regexp.MustCompile(`卦(?:的|之)?(卦辞|彖传|彖辞|彖|大象传|大象|象传|象辞|象|初[六九]|[六九][二三四五]|上[六九]|用[六九]|第[一二三四五六]爻)`)
	hexWhole    = regexp.MustCompile(`^(?:什么是|何为|何谓|请问|介绍一下|介绍)?\p{Han}{1,2}(卦)(?:是什么卦|是什么|是啥|讲什么|说什么|指什么|的意思|是什么意思)?[？?。！!]*$`)
	ordinals    = map[string]string{"一": "初", "二": "二", "三": "三", "四": "四", "五": "五", "六": "上"}
	linePos     = regexp.MustCompile(`^(初[六九]|[六九][二三四五]|上[六九]|用[六九])[：:，]`)
	greatImage  = regexp.MustCompile(`(君子|先王|后|大人|上)以`)
)

// readStructured answers a question whose form the material's structure
// settles: the source of a quoted phrase, or a named part of a hexagram.
// It returns false when the question has no such form or the material does
// not hold the answer; the generic reading then takes over. An empty reply
// with true means the material cannot answer that form.
func readStructured(q string, lines []ctxLine) (string, bool) {
	if len(lines) == 0 {
		return "", false
	}
	if p, kind, ok := whereFromEnglish(q); ok {
		nq := foldNorm(p)
		for _, i := range hitLines(lines, nq) {
			if r := sayWhereFrom(p, lines[i], kind, false, false); r != "" {
				return r, true
			}
		}
	}
	fq := text.Fold(q)
	if r, ok := readQuote(fq, lines); ok {
		return r, true
	}
	return readHexagram(fq, lines)
}

// foldNorm is the form lines and quotes are matched in: folded to
// simplified, letters and digits only.
func foldNorm(s string) string { return normalize(text.Fold(s)) }

// readQuote answers "「…」出自哪一卦/哪里？" with the source of the line that
// holds the quotation (the hexagram its section path names, or the
// section), and "「…」是什么意思？" with that line and the one after it.
func readQuote(fq string, lines []ctxLine) (string, bool) {
	m := quoted.FindStringSubmatchIndex(fq)
	quotedMark := m != nil
	if m == nil {
		// "天行健君子以自强不息出自哪一卦？": the phrase before the
		// question of source, unquoted.
		a := unquotedSource.FindStringIndex(fq)
		if a == nil {
			return "", false
		}
		phrase := strings.TrimRightFunc(fq[:a[0]], func(r rune) bool { return !unicode.IsLetter(r) || strings.ContainsRune("是在为", r) })
		phrase = strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(phrase, "请问"), "这句话"), "，, ")
		phrase = trimDeixis(phrase)
		if utf8.RuneCountInString(foldNorm(phrase)) < 4 {
			return "", false
		}
		i := strings.Index(fq, phrase)
		m = []int{i, i + len(phrase), i, i + len(phrase)}
	}
	quote := fq[m[2]:m[3]]
	nq := foldNorm(quote)
	if utf8.RuneCountInString(nq) < 2 {
		return "", false
	}
	rest := fq[:m[0]] + fq[m[1]:]
	hits := hitLines(lines, nq)
	if len(hits) == 0 {
		// Where a quoted phrase comes from is not said by a passage
		// without it: nothing found (rather than a sentence that shares
		// "出自"). An unquoted phrase may be a paraphrase: read on.
		return "", quotedMark && strictSource.MatchString(rest)
	}
	switch {
	case asksSource.MatchString(rest):
		kind := askedKind(rest)
		for _, i := range hits { // a path with a part of the kind asked
			if r := sayWhereFrom(quote, lines[i], kind, true, true); r != "" {
				return r, true
			}
		}
		wantHex := asksHex.MatchString(rest)
		for _, i := range hits {
			l := lines[i]
			src := sourceOf(l.path, wantHex)
			if src == "" || hexName(l.path) == "" {
				continue
			}
			return "「" + quote + "」出自" + src + "：" + withCite(quoteSpan(l.text, nq, 0), l.cite), true
		}
		if r := sayWhereFrom(quote, lines[hits[0]], kind, true, false); r != "" {
			return r, true
		}
		l := lines[hits[0]]
		return withCite(quoteSpan(l.text, nq, 0), l.cite), true
	case asksMeaning.MatchString(rest):
		// The sentence that holds the phrase and the one after it, which
		// in commentary text is what explains it.
		l := lines[hits[0]]
		return withCite(quoteSpan(l.text, nq, 1), l.cite), true
	}
	return "", false
}

// quoteSpan is the sentence of line that holds the normalised quote nq,
// with up to more sentences after it (within maxReplyRunes); the line when
// the quote spans sentences.
func quoteSpan(line, nq string, more int) string {
	ss := text.Sentences(line)
	for i, s := range ss {
		if !strings.Contains(foldNorm(s), nq) {
			continue
		}
		out := s
		for j := i + 1; j < len(ss) && j <= i+more && utf8.RuneCountInString(out)+utf8.RuneCountInString(ss[j]) <= maxReplyRunes; j++ {
			out = join(out, ss[j])
		}
		return out
	}
	return line
}

// sourceOf names where a line with this section path comes from: the
// hexagram ("乾卦") when hexagram is set (or "" when the path names none),
// else the innermost heading.
func sourceOf(path string, hexagram bool) string {
	if name := hexName(path); name != "" {
		return name + "卦（" + lastSegment(path) + "）"
	}
	if hexagram || path == "" {
		return ""
	}
	return "「" + lastSegment(path) + "」"
}

func lastSegment(path string) string {
	if i := strings.LastIndex(path, " > "); i >= 0 {
		return path[i+3:]
	}
	return path
}

// hexName is the hexagram a section path names (simplified), or "": a
// heading "第N卦NAME …" (the name then either stands alone before a space,
// or recurs after the two characters of its trigram image: "蒙山水蒙…"), or
// a commentary file on one hexagram ("彖传上-乾", "象传下-既济", "文言传-乾文言").
func hexName(path string) string {
	segs := strings.Split(path, " > ")
	for i := len(segs) - 1; i >= 0; i-- {
		seg := strings.TrimSpace(text.Fold(segs[i]))
		if k := strings.Index(seg, "卦"); k >= 0 && strings.Contains(seg[:k], "第") {
			rest := seg[k+len("卦"):]
			fields := strings.Fields(rest)
			if len(fields) >= 1 && utf8.RuneCountInString(fields[0]) <= 2 && (len(fields) >= 2 || allHan(fields[0])) {
				return fields[0] // "第一卦乾 乾為天 …", "第一卦 乾"
			}
			rs := []rune(strings.Join(fields, ""))
			for n := 1; n <= 2; n++ {
				if len(rs) >= 2*n+2 && string(rs[n+2:2*n+2]) == string(rs[:n]) {
					return string(rs[:n])
				}
				if (len(rs) > n && rs[n] == '为') || (len(rs) > 2*n && string(rs[n:2*n]) == string(rs[:n]) && rs[2*n] == '为') {
					return string(rs[:n])
				}
			}
			continue
		}
		if j := strings.LastIndex(seg, "-"); j >= 0 && (strings.HasPrefix(seg, "彖传") || strings.HasPrefix(seg, "象传") || strings.HasPrefix(seg, "文言")) {
			name := strings.TrimSuffix(seg[j+1:], "文言")
			if n := utf8.RuneCountInString(name); n >= 1 && n <= 2 {
				return name
			}
		}
	}
	return ""
}

func allHan(s string) bool {
	for _, r := range s {
		if !text.IsCJK(r) {
			return false
		}
	}
	return s != ""
}

// readHexagram answers "X卦的卦辞/初九/彖/大象是什么？" from the lines of
// the hexagram's section: the judgement is its line that starts with the
// name, a line text starts with its position (初九：…), the Tuan with
// 《彖》曰, the Great Image is the 《象》曰 line right after the judgement or
// the Tuan (or the first line of the hexagram's 象传 file).
func readHexagram(fq string, lines []ctxLine) (string, bool) {
	part, before, ok := askedPart(fq)
	if !ok {
		// "乾卦是什么？": the hexagram as a whole, its heading and judgement.
		fq = strings.NewReplacer("《", "", "》", "", " ", "").Replace(fq)
		m := hexWhole.FindStringSubmatchIndex(fq)
		if m == nil {
			return "", false
		}
		part, before = "", []rune(fq[:m[2]])
	}
	var name string
	for n := min(2, len(before)); n >= 1 && name == ""; n-- {
		cand := string(before[len(before)-n:])
		for _, l := range lines {
			if hexName(l.path) == cand {
				name = cand
				break
			}
		}
	}
	if name == "" {
		return "", false
	}
	in := func(l ctxLine) bool { return hexName(l.path) == name }
	reply := func(l ctxLine) (string, bool) { return withCite(l.text, l.cite), true }
	commentary := func(l ctxLine, prefix string) bool {
		return in(l) && strings.HasPrefix(text.Fold(lastSegment(l.path)), prefix)
	}
	switch {
	case part == "":
		for _, l := range lines {
			if in(l) && strings.HasPrefix(text.Fold(l.text), name) && !strings.HasPrefix(l.text, "《") && strings.Contains(text.Fold(l.path), "卦"+name) {
				return lastSegment(l.path) + "\n" + withCite(l.text, l.cite), true
			}
		}
		for _, l := range lines { // the judgement was not found: the heading says what it is
			if in(l) && strings.Contains(text.Fold(l.path), "卦"+name) {
				return withCite(lastSegment(l.path), l.cite), true
			}
		}
	case part == "卦辞":
		for _, l := range lines {
			if in(l) && strings.HasPrefix(text.Fold(l.text), name) && !strings.HasPrefix(l.text, "《") {
				return reply(l)
			}
		}
	case strings.HasPrefix(part, "彖"):
		for _, l := range lines {
			if in(l) && strings.HasPrefix(l.text, "《彖》") {
				return reply(l)
			}
		}
		for _, l := range lines {
			if commentary(l, "彖传") {
				return reply(l)
			}
		}
	case strings.HasPrefix(part, "象") || strings.HasPrefix(part, "大象"):
		for i, l := range lines {
			if !in(l) || !strings.HasPrefix(l.text, "《象》") || i == 0 || lines[i-1].entry != l.entry {
				continue
			}
			prev := lines[i-1].text
			if strings.HasPrefix(prev, "《彖》") || (strings.HasPrefix(text.Fold(prev), name) && linePos.FindString(prev) == "") {
				return reply(l)
			}
		}
		for i, l := range lines {
			if commentary(l, "象传") && (i == 0 || lines[i-1].entry != l.entry) {
				return reply(l)
			}
		}
		for _, l := range lines {
			if in(l) && strings.HasPrefix(l.text, "《象》") && greatImage.MatchString(l.text) && !strings.Contains(l.text, "「") {
				return reply(l)
			}
		}
	default: // a line position; a line cut at a chunk's end is shorter than its whole in the next
		ordinal := ""
		if strings.HasPrefix(part, "第") {
			ordinal = ordinals[string([]rune(part)[1])]
		}
		best := -1
		for i, l := range lines {
			p := linePos.FindStringSubmatch(text.Fold(l.text))
			if p != nil && (p[1] == part || (ordinal != "" && strings.Contains(p[1], ordinal))) && in(l) &&
				(best < 0 || len(l.text) > len(lines[best].text)) {
				best = i
			}
		}
		if best >= 0 {
			return reply(lines[best])
		}
		// A line named with the other number ("坤卦的九二": 坤's second line
		// is 六二): the line at that place, saying so; never another
		// hexagram's line of that name.
		if at := linePlace(part); at != "" {
			for _, l := range lines {
				if p := linePos.FindStringSubmatch(text.Fold(l.text)); p != nil && in(l) && linePlace(p[1]) == at {
					return name + "卦没有" + part + "，这一爻是" + withCite(l.text, l.cite), true
				}
			}
		}
		for _, l := range lines {
			if in(l) {
				return "", true // the hexagram is here, that line is not
			}
		}
	}
	return "", false
}

// partHolder returns, for a question asking for a named part of a
// hexagram ("乾卦的卦辞", "坤卦的六二", "蒙卦的彖传"), whether a sentence
// (its text, and the section path it is under) can be that part: it names
// the hexagram, in its text or path, and the judgement starts with the
// hexagram's name or says 卦辞, a line text names its position, a
// commentary names 彖 or 象. Text without the Zhouyi's layout (web pages,
// the conversation) is read sentence by sentence, and a sentence that only
// names the hexagram ("为乾卦"), or a part of another one ("乾卦·彖传上：大
// 哉乾元" for 坤卦的彖传), does not answer. It returns nil for other
// questions.
func partHolder(q string) func(text, path string) bool {
	part, before, ok := askedPart(text.Fold(q))
	if !ok || len(before) == 0 {
		return nil
	}
	// The hexagram's name is one or two characters ("乾", "既济"); its last
	// one names it in a text, both start its judgement.
	last := string(before[len(before)-1:])
	names := []string{last}
	if len(before) >= 2 {
		names = append(names, string(before[len(before)-2:]))
	}
	var holds func(f string) bool
	switch {
	case part == "卦辞":
		holds = func(f string) bool {
			if strings.Contains(f, "卦辞") {
				return true
			}
			for _, n := range names {
				if strings.HasPrefix(f, n+"，") || strings.HasPrefix(f, n+"：") {
					return true
				}
			}
			return false
		}
	case strings.HasPrefix(part, "彖"):
		holds = func(f string) bool { return strings.Contains(f, "彖") }
	case strings.HasPrefix(part, "象") || strings.HasPrefix(part, "大象"):
		holds = func(f string) bool { return strings.Contains(f, "象") }
	case strings.HasPrefix(part, "第"):
		holds = func(f string) bool { return strings.Contains(f, "爻") || linePos.MatchString(f) }
	default:
		holds = func(f string) bool { return strings.Contains(f, part) }
	}
	return func(s, path string) bool {
		f := text.Fold(s)
		return holds(f) && (strings.Contains(f, last) || strings.Contains(text.Fold(path), last))
	}
}

// askedPart reads a (folded) question asking for a named part of a
// hexagram ("乾卦的卦辞", "坤卦的六二", "蒙卦的彖传"): the part, and what
// the question says before it, the hexagram's name at its end.
func askedPart(fq string) (part string, before []rune, ok bool) {
	fq = strings.NewReplacer("《", "", "》", "", " ", "").Replace(fq)
	m := hexPart.FindStringSubmatchIndex(fq)
	if m == nil {
		return "", nil, false
	}
	return fq[m[2]:m[3]], []rune(fq[:m[0]]), true
}

// linePlace is the place of a line position, whatever its number: "初"
// for 初九 and 初六, "二" for 九二 and 六二, "上", "用"; "" for others.
func linePlace(pos string) string {
	rs := []rune(pos)
	if len(rs) != 2 {
		return ""
	}
	switch {
	case rs[0] == '初' || rs[0] == '上' || rs[0] == '用':
		return string(rs[0])
	case rs[0] == '九' || rs[0] == '六':
		return string(rs[1])
	}
	return ""
}
