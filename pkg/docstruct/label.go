package docstruct

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// Label is what names a part: its kind, its number and its name. A part
// may have any of them: "第三十六条" has kind 条 and number 36, "学而篇第一"
// kind 篇, number 1 and name 学而, "1.3" the dotted path [1 3] (Num 3), "(a)"
// number 1 and no kind, "## Preamble" only a name.
type Label struct {
	// Kind is the kind of part as written: a Chinese classifier ("条",
	// "章", "篇"), an English kind word in lower case ("article",
	// "section"; "§" is read as "section"), or "" for a dotted number or
	// an enumeration. Kinds compare case-insensitively (SameKind).
	Kind string
	// Num is the part's number, 0 when it has none; for a dotted number
	// it is the last component.
	Num int
	// Path is a dotted number's components ("3.2.1" → [3 2 1]), nil else.
	Path []int
	// Name is the words that name the part: 学而 in "学而篇第一", 总则 in
	// "第一章 总则", "Preamble" for a heading with no number.
	Name string
	// Notation is how the number was written, so a reply can write it the
	// document's way (Article VII, 第十六章).
	Notation Notation
	// form tells enumerations apart ("(1)", "(a)", "一、", "1."), so that a
	// list inside a list nests; "" for other labels.
	form string
	// soft marks an address step that may name no part (a name before
	// 第N, which may be the document's own): Resolve skips it then.
	soft bool
}

// IsZero reports whether the label names nothing.
func (l Label) IsZero() bool {
	return l.Kind == "" && l.Num == 0 && len(l.Path) == 0 && l.Name == ""
}

// HasNumber reports whether the label carries a number.
func (l Label) HasNumber() bool { return l.Num > 0 || len(l.Path) > 0 }

// SameKind reports whether two kinds are the same, ignoring case and the
// difference between traditional and simplified characters, and taking
// the usual Chinese classifier of an English structural word as that word
// (kindPairs: 条 is an article, 节 a section, 章 a chapter).
func SameKind(a, b string) bool {
	fa, fb := strings.ToLower(text.Fold(a)), strings.ToLower(text.Fold(b))
	if fa == fb {
		return true
	}
	for _, p := range kindPairs {
		if (fa == p[0] && fb == p[1]) || (fa == p[1] && fb == p[0]) {
			return true
		}
	}
	return false
}

// Anchors returns the spans of s where it writes what any text that
// ParseAddress reads as the step l holds: l's name when it has one; else
// a spelling of its kind (SameKind; "§" for a section); else, for a dotted
// number, a dot between two digits. Text is compared folded (text.Fold)
// and in lower case. A stretch of s that holds none of the spans is not
// read as l, so a search for where s writes l need parse only the
// stretches around them. A label of none of these (ParseAddress makes
// none) may be written anywhere: every character boundary of s is then an
// empty span.
func (l Label) Anchors(s string) []Span {
	var keys []string
	switch {
	case l.Name != "":
		keys = []string{l.Name}
	case l.Kind != "":
		keys = []string{l.Kind}
		k := strings.ToLower(text.Fold(l.Kind))
		for _, p := range kindPairs {
			if k == p[0] {
				keys = append(keys, p[1])
			} else if k == p[1] {
				keys = append(keys, p[0])
			}
		}
		if SameKind(l.Kind, "section") {
			keys = append(keys, "§")
		}
	case len(l.Path) > 0:
		// A dotted number's dot between two digits.
		var out []Span
		for i := 1; i+1 < len(s); i++ {
			if s[i] == '.' && isDigit(s[i-1]) && isDigit(s[i+1]) {
				out = append(out, Span{i - 1, i + 2})
			}
		}
		return out
	default:
		var out []Span
		for i := range s {
			out = append(out, Span{i, i})
		}
		return append(out, Span{len(s), len(s)})
	}
	// Folding twice reaches a fixed point (one traditional character
	// folds to another that folds again): a kind or a name folded as
	// ParseAddress and SameKind fold it is found whichever form s writes.
	fold := func(r rune) rune { return unicode.ToLower(text.FoldRune(text.FoldRune(r))) }
	type at struct {
		r    rune
		i, n int
	}
	rs := make([]at, 0, len(s))
	for i, r := range s {
		_, n := utf8.DecodeRuneInString(s[i:])
		rs = append(rs, at{fold(r), i, n})
	}
	var out []Span
	for _, key := range keys {
		kr := []rune(strings.Map(fold, key))
		if len(kr) == 0 {
			continue
		}
	next:
		for i := 0; i+len(kr) <= len(rs); i++ {
			for j, r := range kr {
				if rs[i+j].r != r {
					continue next
				}
			}
			last := rs[i+len(kr)-1]
			out = append(out, Span{rs[i].i, last.i + last.n})
		}
	}
	slices.SortFunc(out, func(a, b Span) int { return a.Start - b.Start })
	return out
}

// kindPairs are English structural words and the Chinese classifier that
// translates each, so a question in one language finds a part labelled in
// the other ("美国宪法第一条" for Article I).
var kindPairs = [][2]string{
	{"article", "条"}, {"section", "节"}, {"chapter", "章"}, {"clause", "款"}, {"volume", "卷"},
	{"paragraph", "段"}, {"item", "项"}, {"part", "编"}, {"part", "部分"}, {"amendment", "修正案"},
}

// style is what parts of one list level share: the kind, or the form of a
// kind-less label with the depth of a dotted number.
func (l Label) style() string {
	if l.Kind != "" {
		return strings.ToLower(text.Fold(l.Kind))
	}
	if len(l.Path) > 0 {
		return "dotted" + strings.Repeat(".", len(l.Path))
	}
	return l.form
}

// String writes the label as a document would: "第三十六条", "Article VII",
// "1.3", "学而篇", "(a)".
func (l Label) String() string {
	switch {
	case len(l.Path) > 0:
		parts := make([]string, len(l.Path))
		for i, n := range l.Path {
			parts[i] = FormatNumber(n, Arabic)
		}
		if isCJKKind(l.Kind) {
			return "第" + strings.Join(parts, ".") + l.Kind
		}
		if l.Kind != "" {
			return titleWord(l.Kind) + " " + strings.Join(parts, ".")
		}
		return strings.Join(parts, ".")
	case l.Num > 0 && isCJKKind(l.Kind):
		return "第" + FormatNumber(l.Num, Chinese) + l.Kind
	case l.Num > 0 && l.Kind != "":
		nt := l.Notation
		if nt == Chinese || nt == Letter {
			nt = Arabic
		}
		return titleWord(l.Kind) + " " + FormatNumber(l.Num, nt)
	case l.Num > 0:
		return FormatNumber(l.Num, l.Notation)
	case l.Name != "" && isCJKKind(l.Kind):
		return l.Name + l.Kind
	case l.Name != "":
		return l.Name
	}
	return l.Kind
}

func isCJKKind(k string) bool {
	r, _ := utf8.DecodeRuneInString(k)
	return k != "" && text.IsCJK(r)
}

func titleWord(w string) string {
	r, n := utf8.DecodeRuneInString(w)
	return string(unicode.ToUpper(r)) + w[n:]
}

// StructuralWords is the small list of English words that name a part of
// a document. A capitalised word before a number is a kind in a heading
// whatever it is ("Canto 3"); at the start of a paragraph, and in a
// question, the kind is one of these or a kind the documents use, so that
// "In 1990, …" or "Did I …" is no label.
var StructuralWords = []string{
	"act", "amendment", "appendix", "article", "book", "canto", "chapter", "clause", "division",
	"lesson", "paragraph", "part", "question", "rule", "schedule", "section", "step", "title", "unit", "verse", "volume",
}

var (
	// 第N+one CJK classifier: 第三十六条, 第 36 条, 第一回.
	reDi = regexp.MustCompile(`^第\s*(` + numClass + `)\s*(\p{Han})`)
	// NAME(+classifier)第N as a whole heading: 学而篇第一.
	reNamedDi = regexp.MustCompile(`^(\p{Han}{1,12}?)\s*第\s*(` + numClass + `)$`)
	// English: Kind N, with N in digits, a Roman numeral or words.
	reKindNum = regexp.MustCompile(`^([A-Z][A-Za-z]+|[A-Z]{2,}|§+)\.?\s*([0-9]+(?:\.[0-9]+)*|[IVXLCDMivxlcdm]+|[A-Za-z]+(?:-[A-Za-z]+)?)\b`)
	// English: the Fourteenth Amendment, 14th Amendment.
	reOrdKind = regexp.MustCompile(`^(?i:the\s+)?([A-Za-z]+(?:-[A-Za-z]+)?|[0-9]+(?:st|nd|rd|th))\s+([A-Z][a-z]+)\b`)
	// a dotted number: 3.2.1, 1.3
	reDotted = regexp.MustCompile(`^([0-9]{1,6}(?:\.[0-9]{1,6})+)\.?(?:\s|$)`)
	// enumerations
	reParen    = regexp.MustCompile(`^[(（]\s*(` + numClass + `|[a-zA-Z]|[ivxlcdm]+)\s*[)）]`)
	reCNComma  = regexp.MustCompile(`^(` + numClass + `)\s*[、．]`)
	reNumDot   = regexp.MustCompile(`^([0-9]{1,4}|[０-９]{1,4}|[a-z]|[ivxlcdm]{1,6})([.)．])(?:\s|$)`)
	reNumSpace = regexp.MustCompile(`^([0-9]{1,3})[ \t　]+[^\s0-9]`)
	reBookMark = regexp.MustCompile(`^《[^》]{1,40}》\s*`)
)

// maxLabelBytes is how much of a line's start a label is looked for in.
const maxLabelBytes = 240

// labelSep is what may follow a label at the start of a paragraph.
func labelSep(rest string) bool {
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return unicode.IsSpace(r) || strings.ContainsRune("：:、.．,，;；—-)）　", r)
}

// ParseLabel reads the label at the start of line: a heading's text
// (heading true) or the first line of a paragraph or list item. It returns
// the label and the byte length of line it takes (leading spaces and a
// book title in 《》 before it included), or ok false when line starts with
// no label. A heading with no label is no label here either: Parse names
// such a part by its heading. The profile, when not nil, adds its named
// positions ("九二：…") and classifiers.
func ParseLabel(line string, heading bool, p *Profile) (l Label, n int, ok bool) {
	trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
	off := len(line) - len(trimmed)
	if m := reBookMark.FindString(trimmed); m != "" && heading {
		off += len(m)
		trimmed = trimmed[len(m):]
	}
	// A label is at the start: reading a long paragraph's head is enough.
	if len(trimmed) > maxLabelBytes {
		cut := maxLabelBytes
		for cut > 0 && !utf8.RuneStart(trimmed[cut]) {
			cut--
		}
		trimmed = trimmed[:cut]
	}
	l, n, ok = parseLabelAt(trimmed, heading, p)
	if !ok {
		return Label{}, 0, false
	}
	return l, off + n, true
}

func parseLabelAt(s string, heading bool, p *Profile) (Label, int, bool) {
	if s == "" {
		return Label{}, 0, false
	}
	if p != nil {
		if pos, name, ok := p.positionAt(s); ok {
			rest := s[len(name):]
			if r, _ := utf8.DecodeRuneInString(rest); rest == "" || strings.ContainsRune("：:，,　 ", r) {
				return Label{Kind: pos.Kind, Num: pos.Number, Name: name, Notation: Chinese}, len(name), true
			}
		}
	}
	if m := reDi.FindStringSubmatchIndex(s); m != nil {
		num, nt, ok := ParseNumber(s[m[2]:m[3]])
		kind := s[m[4]:m[5]]
		for _, mk := range multiKinds {
			if strings.HasPrefix(s[m[4]:], mk) {
				kind, m[5] = mk, m[4]+len(mk)
			}
		}
		if ok && !strings.Contains(notKinds, kind) {
			l := Label{Kind: kind, Num: num, Notation: nt}
			end := m[5]
			rest := s[end:]
			if heading {
				l.Name = firstField(rest)
				return l, end, true
			}
			if labelSep(rest) || (p != nil && p.isClassifier(kind)) {
				return l, end, true
			}
		}
	}
	if heading {
		if m := reNamedDi.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
			if num, nt, ok := ParseNumber(m[2]); ok {
				name, kind := splitClassifier(m[1], p)
				return Label{Kind: kind, Num: num, Name: name, Notation: nt}, len(s), true
			}
		}
	}
	if m := reDotted.FindStringSubmatch(s); m != nil {
		var path []int
		for _, c := range strings.Split(m[1], ".") {
			n, _ := arabicNumber(c)
			path = append(path, n)
		}
		return Label{Num: path[len(path)-1], Path: path, Notation: Arabic}, len(m[1]), true
	}
	if m := reOrdKind.FindStringSubmatchIndex(s); m != nil {
		kind := strings.ToLower(s[m[4]:m[5]])
		if n, ord, ok := englishNumber(s[m[2]:m[3]]); ok && ord && n > 0 && (heading || isStructural(kind)) {
			return Label{Kind: kind, Num: n, Notation: Word}, m[5], true
		}
	}
	// A kind word glued to letters is one word ("ALLENBELL" is no kind
	// "Allenbel" numbered L); glued digits ("Section3") still count.
	if m := reKindNum.FindStringSubmatchIndex(s); m != nil && !strings.EqualFold(s[m[2]:m[3]], "the") &&
		(m[3] < m[4] || strings.HasPrefix(s[m[2]:m[3]], "§") || isDigit(s[m[4]])) {
		word, numText := s[m[2]:m[3]], s[m[4]:m[5]]
		kind := strings.ToLower(word)
		if strings.HasPrefix(word, "§") {
			kind = "section"
		}
		if heading || isStructural(kind) || strings.HasPrefix(word, "§") {
			if l, ok := kindNumber(kind, numText); ok && (heading || labelSep(s[m[5]:])) {
				if heading {
					l.Name = strings.TrimSpace(strings.TrimLeft(s[m[5]:], ".:：—- "))
				}
				return l, m[5], true
			}
		}
	}
	if m := reParen.FindStringSubmatch(s); m != nil {
		if l, ok := enumeration(m[1], "()"); ok {
			return l, len(m[0]), true
		}
	}
	if m := reCNComma.FindStringSubmatch(s); m != nil {
		if n, nt, ok := ParseNumber(m[1]); ok && n > 0 {
			return Label{Num: n, Notation: nt, form: notationForm(nt) + "、"}, len(m[0]), true
		}
	}
	if m := reNumDot.FindStringSubmatch(s); m != nil {
		if l, ok := enumeration(m[1], m[2]); ok {
			return l, len(m[1]) + len(m[2]), true
		}
	}
	if m := reNumSpace.FindStringSubmatch(s); m != nil && heading {
		// A numbered heading: "4 Scope".
		if n, ok := arabicNumber(m[1]); ok && n > 0 {
			return Label{Num: n, Notation: Arabic, form: "1 "}, len(m[1]), true
		}
	}
	return Label{}, 0, false
}

// kindNumber reads "Article" + "VII" and the like: the number in digits,
// a Roman numeral (upper case, or lower case when the kind is lower
// case), or number words.
func kindNumber(kind, numText string) (Label, bool) {
	if n, ok := arabicNumber(strings.Split(numText, ".")[0]); ok {
		if strings.Contains(numText, ".") {
			var path []int
			for _, c := range strings.Split(numText, ".") {
				v, _ := arabicNumber(c)
				path = append(path, v)
			}
			return Label{Kind: kind, Num: path[len(path)-1], Path: path, Notation: Arabic}, true
		}
		return Label{Kind: kind, Num: n, Notation: Arabic}, true
	}
	if n, ok := romanNumber(numText); ok {
		return Label{Kind: kind, Num: n, Notation: Roman}, true
	}
	if n, _, ok := englishNumber(numText); ok && n > 0 {
		return Label{Kind: kind, Num: n, Notation: Word}, true
	}
	return Label{}, false
}

// enumeration reads an enumeration's marker: a number in any notation, a
// letter, a lower-case Roman numeral.
func enumeration(marker, closer string) (Label, bool) {
	if n, ok := arabicNumber(marker); ok && n > 0 {
		return Label{Num: n, Notation: Arabic, form: "1" + closer}, true
	}
	if n, ok := chineseNumber(marker); ok && n > 0 {
		return Label{Num: n, Notation: Chinese, form: "一" + closer}, true
	}
	if len(marker) == 1 && marker != "i" && marker != "v" && marker != "x" {
		r := rune(marker[0])
		if r >= 'a' && r <= 'z' {
			return Label{Num: int(r-'a') + 1, Notation: Letter, form: "a" + closer}, true
		}
		if r >= 'A' && r <= 'Z' {
			return Label{Num: int(r-'A') + 1, Notation: Letter, form: "A" + closer}, true
		}
	}
	if n, ok := romanNumber(marker); ok {
		return Label{Num: n, Notation: Roman, form: "i" + closer}, true
	}
	return Label{}, false
}

func notationForm(nt Notation) string {
	if nt == Chinese {
		return "一"
	}
	return "1"
}

// splitClassifier splits "学而篇" into the name 学而 and the classifier 篇:
// the last character is a classifier when the profile names it, or when
// two or more characters precede it. "学而" alone is a name with no kind.
func splitClassifier(s string, p *Profile) (name, kind string) {
	rs := []rune(s)
	last := string(rs[len(rs)-1])
	if (p != nil && p.isClassifier(last)) || len(rs) >= 3 {
		return string(rs[:len(rs)-1]), last
	}
	return s, ""
}

// firstField is the name that follows a heading's label: "总则" in
// "第一章 总则", "王熙凤" in "第十二回 王熙凤 毒设相思局".
func firstField(rest string) string {
	rest = strings.TrimLeft(rest, " 　:：、.．-—")
	f := strings.FieldsFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '　' })
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], "，,。:：")
}

func isStructural(kind string) bool {
	return slices.Contains(StructuralWords, strings.ToLower(kind))
}

// isDigit reports whether b is an ASCII digit.
func isDigit(b byte) bool { return '0' <= b && b <= '9' }
