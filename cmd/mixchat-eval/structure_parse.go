package main

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/internal/evalqa"
)

// The structure eval reads the parts of a document the way a person
// addresses them: Markdown headings at every level, and lines that begin
// with a label (第N条/章/节/篇/卷…, NAME篇第N, Article/Section/… N, § N,
// dotted numbers 1.3 or 3.2.1, list items "1." and "一、"). Nothing here
// knows one corpus: the label forms are the common ones of legal texts,
// classics and manuals.

// stDoc is one document of the corpus and its parts.
type stDoc struct {
	File  string   // path relative to --data, as uploaded
	Title string   // the first H1 heading, else the first line, else the file name
	Lang  string   // "zh" when most letters are Han, else "en"
	Parts []stPart // in document order
}

// stPart is one part: a heading or a labelled line and what follows it up
// to the next part of the same or a higher level.
type stPart struct {
	Kind    string // "Article", "Section", "条", "章", "篇", "dotted", "list", "" (a heading without a label)
	Num     int    // the part's own number (the last of a dotted label); 0 when it has none
	Dotted  []int  // every number of a dotted label (1.3 → 1, 3)
	Written string // the label as the text writes it ("Article I", "1.3", "学而篇第一", "第一条")
	Form    string // how the number is written: roman, digits, chinese, dotted
	Name    string // the heading's words besides the label ("学而", "Preamble", "总则")
	Level   int    // 1-6 for Markdown headings, deeper for labelled lines
	Parent  int    // index of the enclosing part, -1 at the top
	style   string // what makes two labels siblings (kind, and a dotted label's depth)
	// nameForm: the name and kind make a name a person uses (学而篇 from
	// 学而篇第一, 乾卦 from 第一卦乾).
	nameForm bool
	own      []string
	Text     string // own text and that of every part below, labels left out
	Key      string // the first 12 characters of Text after evalqa.Normalize
}

var (
	mdHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// cnNum is a number in Chinese numerals or digits.
	cnNum = `[零〇一二两三四五六七八九十百千万廿卅\d０-９]+`
	// 第N kind at the start (after an optional 《book》).
	cnOrdinal = regexp.MustCompile(`^(?:《[^》]{1,20}》\s*)?(第(` + cnNum + `)\s*([条章节篇卷回款项部编卦集册讲课则幕]))(\s*)(.*)$`)
	// NAME篇第N: a named part and its number.
	cnNamed = regexp.MustCompile(`^(\p{Han}{1,8}?)(篇|卷|部|编)第(` + cnNum + `)\s*(.*)$`)
	// Article/Section/… N.
	enLabel     = regexp.MustCompile(`^((Article|Section|Chapter|Part|Rule|Amendment|Clause|Title|Book|Schedule|Paragraph|Item)\s+([IVXLCDM]+|\d+))\b[.:]?\s*(.*)$`)
	sectionSign = regexp.MustCompile(`^(§\s*(\d+))\s*(.*)$`)
	dotted      = regexp.MustCompile(`^(\d{1,3}(?:\.\d{1,3})+)[\s　]+(.*)$`)
	listNum     = regexp.MustCompile(`^((\d{1,3})[.)])\s+(.*)$`)
	cnEnum      = regexp.MustCompile(`^(([一二三四五六七八九十]+)、)\s*(.*)$`)
	// Markdown decoration left out of text: bold, links, list markers.
	mdDecor = strings.NewReplacer("**", "", "__", "", "`", "")
)

// parseStructure reads one document's parts.
func parseStructure(file string, src []byte) stDoc {
	d := stDoc{File: file}
	body := strings.ReplaceAll(string(src), "\r\n", "\n")
	var stack []int // indexes into d.Parts of the open parts
	top := func() int {
		if len(stack) == 0 {
			return -1
		}
		return stack[len(stack)-1]
	}
	open := func(p stPart) {
		p.Parent = top()
		d.Parts = append(d.Parts, p)
		stack = append(stack, len(d.Parts)-1)
	}
	firstLine := ""
	for _, raw := range strings.Split(body, "\n") {
		line := strings.TrimSpace(mdDecor.Replace(raw))
		if line == "" || line == "---" || line == "***" {
			continue
		}
		if firstLine == "" {
			firstLine = line
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil {
			level := len(m[1])
			for len(stack) > 0 && d.Parts[top()].Level >= level {
				stack = stack[:len(stack)-1]
			}
			p, ok := readLabel(m[2], true)
			if !ok {
				p = stPart{Name: m[2]}
			}
			p.Level = level
			if level == 1 && d.Title == "" && p.Kind == "" {
				d.Title = m[2]
			}
			open(p)
			continue
		}
		if p, ok := readLabel(line, false); ok {
			// A sibling of an open part of the same style closes it and
			// what is below it; otherwise the label opens a child.
			sib := -1
			for i := len(stack) - 1; i >= 0; i-- {
				if d.Parts[stack[i]].style == p.style {
					sib = i
					break
				}
			}
			if sib >= 0 {
				p.Level = d.Parts[stack[sib]].Level
				stack = stack[:sib]
			} else if t := top(); t >= 0 {
				p.Level = d.Parts[t].Level + 1
			} else {
				p.Level = 7
			}
			p.Level = max(p.Level, 7) // below every Markdown heading
			open(p)
			continue
		}
		if t := top(); t >= 0 {
			d.Parts[t].own = append(d.Parts[t].own, line)
		}
	}
	if d.Title == "" {
		d.Title = strings.TrimSuffix(strings.TrimSuffix(pathBase(file), ".md"), ".txt")
		if firstLine != "" && utf8.RuneCountInString(firstLine) <= 20 && !strings.ContainsAny(firstLine, "。，.,:：") {
			if _, ok := readLabel(firstLine, false); !ok {
				d.Title = firstLine
			}
		}
	}
	d.Lang = docLang(body)
	// Text runs to the next part of the same level: own text, then the
	// text of every part below, in order.
	for i := len(d.Parts) - 1; i >= 0; i-- {
		d.Parts[i].Text = strings.Join(d.Parts[i].own, "\n")
	}
	children := d.children()
	var full func(i int) string
	full = func(i int) string {
		var b strings.Builder
		b.WriteString(strings.Join(d.Parts[i].own, "\n"))
		for _, c := range children[i] {
			b.WriteString("\n")
			b.WriteString(full(c))
		}
		return b.String()
	}
	// The key is taken from the first piece of text alone (the part's own,
	// else its first child's), so that no label between two pieces breaks
	// it in a chunk or a reply that quotes them with their labels: the
	// first line's (or lines' until 4 characters), cut at 12.
	var first func(i int) string
	first = func(i int) string {
		t := ""
		for _, l := range d.Parts[i].own {
			if t += evalqa.Normalize(l); utf8.RuneCountInString(t) >= 4 {
				break
			}
		}
		if t != "" {
			return t
		}
		for _, c := range children[i] {
			if t := first(c); t != "" {
				return t
			}
		}
		return ""
	}
	for i := range d.Parts {
		d.Parts[i].Text = strings.TrimSpace(full(i))
		d.Parts[i].Key = firstRunes(first(i), 12)
	}
	return d
}

// readLabel reads a label at the start of line. In a heading the rest is
// the part's name; on a line of text the rest is the part's first text
// unless it is short and has no sentence punctuation (a heading written
// as a plain line, "第一章 总则", "《易經》第一卦乾 乾為天").
func readLabel(line string, heading bool) (stPart, bool) {
	var p stPart
	var rest string
	switch {
	case cnOrdinal.MatchString(line):
		m := cnOrdinal.FindStringSubmatch(line)
		n, form := parseNumber(m[2])
		if n <= 0 {
			return p, false
		}
		p = stPart{Kind: m[3], Num: n, Written: m[1], Form: form}
		rest = m[5]
		// A short name written right after the label, with no space
		// (第一卦乾 乾為天): its first word names the part with its kind.
		if f := strings.Fields(rest); m[4] == "" && len(f) > 0 && utf8.RuneCountInString(f[0]) <= 3 &&
			!strings.ContainsAny(f[0], "，。；：？！、:") {
			p.Name, p.nameForm = f[0], true
		}
	case cnNamed.MatchString(line):
		m := cnNamed.FindStringSubmatch(line)
		n, form := parseNumber(m[3])
		if n <= 0 || m[4] != "" && !heading {
			return p, false
		}
		p = stPart{Kind: m[2], Num: n, Written: m[1] + m[2] + "第" + m[3], Form: form, Name: m[1], nameForm: true}
		rest = m[4]
	case enLabel.MatchString(line):
		m := enLabel.FindStringSubmatch(line)
		n, form := parseNumber(m[3])
		if n <= 0 {
			return p, false
		}
		p = stPart{Kind: m[2], Num: n, Written: m[1], Form: form}
		rest = m[4]
	case sectionSign.MatchString(line):
		m := sectionSign.FindStringSubmatch(line)
		n, _ := strconv.Atoi(m[2])
		p = stPart{Kind: "§", Num: n, Written: m[1], Form: "digits"}
		rest = m[3]
	case dotted.MatchString(line):
		m := dotted.FindStringSubmatch(line)
		for _, f := range strings.Split(m[1], ".") {
			n, _ := strconv.Atoi(f)
			p.Dotted = append(p.Dotted, n)
		}
		p.Kind, p.Num, p.Written, p.Form = "dotted", p.Dotted[len(p.Dotted)-1], m[1], "dotted"
		rest = m[2]
	case !heading && listNum.MatchString(line):
		m := listNum.FindStringSubmatch(line)
		n, _ := strconv.Atoi(m[2])
		p = stPart{Kind: "list", Num: n, Written: m[1], Form: "digits"}
		rest = m[3]
	case !heading && cnEnum.MatchString(line):
		m := cnEnum.FindStringSubmatch(line)
		n, _ := parseNumber(m[2])
		p = stPart{Kind: "enum", Num: n, Written: m[1], Form: "chinese"}
		rest = m[3]
	default:
		return p, false
	}
	p.style = p.Kind
	if p.Kind == "dotted" {
		p.style = "dotted" + strconv.Itoa(len(p.Dotted))
	}
	rest = strings.TrimLeft(rest, " 　:：.、-—")
	switch {
	case heading:
		if p.Name == "" {
			p.Name = rest
		}
	case rest != "" && (utf8.RuneCountInString(rest) > 30 || strings.ContainsAny(rest, "，。；：？！,;?!")):
		p.own = []string{rest}
	default:
		if p.Name == "" {
			p.Name = rest
		}
	}
	return p, true
}

// children lists each part's direct children, in order.
func (d stDoc) children() map[int][]int {
	c := map[int][]int{}
	for i, p := range d.Parts {
		c[p.Parent] = append(c[p.Parent], i)
	}
	return c
}

// docLang is "zh" when Han characters outnumber Latin letters.
func docLang(s string) string {
	han, latin := 0, 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r):
			han++
		case r < 0x80 && unicode.IsLetter(r):
			latin++
		}
	}
	if han*3 > latin {
		return "zh"
	}
	return "en"
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func firstRunes(s string, n int) string {
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

// parseNumber reads a number written in digits (also full-width), Chinese
// numerals (零〇一二两…十百千万, 廿 30… as 二十, 卅) or Roman numerals; form
// says which. It returns 0 for what is none of them.
func parseNumber(s string) (int, string) {
	if s == "" {
		return 0, ""
	}
	var ascii strings.Builder
	digits := true
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			ascii.WriteRune(r)
		case r >= '０' && r <= '９':
			ascii.WriteRune(r - '０' + '0')
		default:
			digits = false
		}
	}
	if digits {
		n, err := strconv.Atoi(ascii.String())
		if err != nil {
			return 0, ""
		}
		return n, "digits"
	}
	if n := parseRoman(s); n > 0 {
		return n, "roman"
	}
	if n := parseChinese(s); n > 0 {
		return n, "chinese"
	}
	return 0, ""
}

var cnDigit = map[rune]int{'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}
var cnUnit = map[rune]int{'十': 10, '百': 100, '千': 1000, '万': 10000}

// parseChinese reads a Chinese numeral: 十二, 二十, 一百零五, 廿三, 卅, and
// digit by digit (一〇五). It returns 0 for what is not one.
func parseChinese(s string) int {
	s = strings.NewReplacer("廿", "二十", "卅", "三十").Replace(s)
	rs := []rune(s)
	if len(rs) == 0 {
		return 0
	}
	hasUnit := false
	for _, r := range rs {
		if _, ok := cnUnit[r]; ok {
			hasUnit = true
		} else if _, ok := cnDigit[r]; !ok {
			return 0
		}
	}
	if !hasUnit {
		n := 0
		for _, r := range rs {
			n = n*10 + cnDigit[r]
		}
		return n
	}
	total, section, digit := 0, 0, -1
	for _, r := range rs {
		if d, ok := cnDigit[r]; ok {
			digit = d
			continue
		}
		u := cnUnit[r]
		if u == 10000 {
			if digit > 0 {
				section += digit
			}
			total += section * u
			section, digit = 0, -1
			continue
		}
		if digit < 0 {
			digit = 1 // 十二: one ten
		}
		section += digit * u
		digit = -1
	}
	if digit > 0 {
		section += digit
	}
	return total + section
}

var romanVal = map[byte]int{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}

// parseRoman reads an upper-case Roman numeral written canonically; 0 for
// anything else.
func parseRoman(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		v, ok := romanVal[s[i]]
		if !ok {
			return 0
		}
		if i+1 < len(s) && romanVal[s[i+1]] > v {
			n -= v
		} else {
			n += v
		}
	}
	if n <= 0 || n >= 4000 || roman(n) != s {
		return 0
	}
	return n
}

// roman writes n (1-3999) in Roman numerals.
func roman(n int) string {
	var b strings.Builder
	for _, v := range []struct {
		n int
		s string
	}{{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"}, {50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"}} {
		for n >= v.n {
			b.WriteString(v.s)
			n -= v.n
		}
	}
	return b.String()
}

// chinese writes n (1-9999) in Chinese numerals as a text numbers its
// parts: 三, 十二, 二十, 一百零五.
func chinese(n int) string {
	digits := []string{"零", "一", "二", "三", "四", "五", "六", "七", "八", "九"}
	if n <= 0 || n >= 10000 {
		return strconv.Itoa(n)
	}
	if n < 10 {
		return digits[n]
	}
	if n < 20 {
		if n == 10 {
			return "十"
		}
		return "十" + digits[n%10]
	}
	var b strings.Builder
	units := []struct {
		v int
		s string
	}{{1000, "千"}, {100, "百"}, {10, "十"}}
	zero := false
	started := false
	for _, u := range units {
		d := n / u.v
		n %= u.v
		if d == 0 {
			if started {
				zero = true
			}
			continue
		}
		if zero {
			b.WriteString("零")
			zero = false
		}
		b.WriteString(digits[d] + u.s)
		started = true
	}
	if n > 0 {
		if zero {
			b.WriteString("零")
		}
		b.WriteString(digits[n])
	}
	return b.String()
}

var ordinalOnes = []string{"", "First", "Second", "Third", "Fourth", "Fifth", "Sixth", "Seventh", "Eighth", "Ninth",
	"Tenth", "Eleventh", "Twelfth", "Thirteenth", "Fourteenth", "Fifteenth", "Sixteenth", "Seventeenth", "Eighteenth", "Nineteenth"}
var tensWords = []string{"", "", "Twenty", "Thirty", "Forty", "Fifty", "Sixty", "Seventy", "Eighty", "Ninety"}
var tensOrdinals = []string{"", "", "Twentieth", "Thirtieth", "Fortieth", "Fiftieth", "Sixtieth", "Seventieth", "Eightieth", "Ninetieth"}

// ordinal writes n (1-99) as an English ordinal word: First, Fourteenth,
// Twenty-Seventh; "" beyond.
func ordinal(n int) string {
	switch {
	case n <= 0 || n >= 100:
		return ""
	case n < 20:
		return ordinalOnes[n]
	case n%10 == 0:
		return tensOrdinals[n/10]
	}
	return tensWords[n/10] + "-" + ordinalOnes[n%10]
}
