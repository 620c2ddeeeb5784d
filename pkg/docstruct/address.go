package docstruct

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// Title is a document's title and the other names it goes by, as the
// caller knows them (Doc.Title and Doc.Aliases).
type Title struct {
	Title   string
	Aliases []string
	// folded is the names folded for matching (foldName), Title's first,
	// as TitlesOf computes them once; a Title made otherwise, or changed
	// since, is folded at each use (see names).
	folded []foldedName
}

// foldedName is a name of a title, its folded form and the number of
// runes of that.
type foldedName struct {
	name, key string
	runes     int
}

func newFoldedName(name string) foldedName {
	key := foldName(name)
	return foldedName{name, key, utf8.RuneCountInString(key)}
}

// foldName is a name as a question's words are matched with it: script
// folded (text.Fold), then lower case.
func foldName(s string) string { return strings.ToLower(text.Fold(s)) }

// withFolded is t with its names' folded forms computed.
func (t Title) withFolded() Title {
	t.folded = make([]foldedName, 0, 1+len(t.Aliases))
	t.folded = append(t.folded, newFoldedName(t.Title))
	for _, a := range t.Aliases {
		t.folded = append(t.folded, newFoldedName(a))
	}
	return t
}

// names is the title and its aliases (Doc.Aliases hold the distinctive
// part, Distinguish makes it unique in the knowledge base), folded: those
// TitlesOf computed when they are still t's names (comparing a string
// with itself costs no reading of it), else folded now.
func (t Title) names() []foldedName {
	if f := t.folded; len(f) == 1+len(t.Aliases) && f[0].name == t.Title {
		fresh := true
		for i, a := range t.Aliases {
			if f[i+1].name != a {
				fresh = false
				break
			}
		}
		if fresh {
			return f
		}
	}
	return t.withFolded().folded
}

// Known is what ParseAddress knows of the knowledge base: the titles of
// its documents, the kinds of parts they use (KindsOf) and the profile in
// force, if any.
type Known struct {
	Titles  []Title
	Kinds   []string
	Profile *Profile
}

// KindsOf lists the kinds of parts the documents use, each once.
func KindsOf(docs ...*Doc) []string {
	var out []string
	for _, d := range docs {
		d.Root.Walk(func(p *Part) bool {
			if k := p.Label.Kind; k != "" && !slices.ContainsFunc(out, func(x string) bool { return SameKind(x, k) }) {
				out = append(out, k)
			}
			return true
		})
	}
	return out
}

// TitlesOf is the titles and aliases of the documents, for Known, their
// folded forms computed once for every question matched with them.
//
// A question is matched with every name of a base, and most names are in
// no question: the time goes to reading them, not comparing. The titles'
// aliases, folded names and the bytes of those are each laid out in one
// block, read in order, rather than one small allocation each, scattered
// and out of the caches when a search comes.
func TitlesOf(docs ...*Doc) []Title {
	n := 0
	for _, d := range docs {
		n += 1 + len(d.Aliases)
	}
	names := make([]string, 0, n) // each document's title, then its aliases
	for _, d := range docs {
		names = append(names, d.Title)
		names = append(names, d.Aliases...)
	}
	var b strings.Builder
	ends := make([]int, len(names))
	for i, nm := range names {
		b.WriteString(foldName(nm))
		ends[i] = b.Len()
	}
	keys := b.String()
	folded := make([]foldedName, len(names))
	start := 0
	for i, nm := range names {
		key := keys[start:ends[i]]
		folded[i] = foldedName{nm, key, utf8.RuneCountInString(key)}
		start = ends[i]
	}
	out := make([]Title, len(docs))
	j := 0
	for i, d := range docs {
		m := 1 + len(d.Aliases)
		out[i] = Title{Title: d.Title, Aliases: d.Aliases, folded: folded[j : j+m : j+m]}
		if len(d.Aliases) > 0 {
			out[i].Aliases = names[j+1 : j+m : j+m]
		}
		j += m
	}
	return out
}

// Address is a part of a document as a question names it.
type Address struct {
	// Doc is the document named: a known title (DocKnown), or the title
	// a question writes in 《》 that no known document has; "" when the
	// question names no document.
	Doc      string
	DocKnown bool
	// Steps go from the outer part down: "Article I, Section 8" is
	// [article 1, section 8], "学而篇第三章" [篇 named 学而, 章 3], "1.3" one
	// step with the path [1 3].
	Steps []Label
	// Relative is +1 for "the next one", "下一条", -1 for "上一章", 0
	// otherwise; RelativeKind is the kind it names, if any.
	Relative     int
	RelativeKind string
}

// IsZero reports whether the question addresses nothing.
func (a Address) IsZero() bool {
	return a.Doc == "" && len(a.Steps) == 0 && a.Relative == 0
}

// Follow completes a follow-up against the address asked before:
// "那第四条呢？" keeps the document, "What about Section 9?" after "Article I,
// Section 8" keeps Article I, "劳动合同法呢？" keeps the part and changes
// the document. A relative address keeps prev's steps and its Relative:
// ResolveRelative moves from the part they name.
func (a Address) Follow(prev Address) Address {
	out := a
	if out.Doc == "" {
		out.Doc, out.DocKnown = prev.Doc, prev.DocKnown
	}
	switch {
	case a.Relative != 0:
		out.Steps = slices.Clone(prev.Steps)
	case len(a.Steps) == 0:
		out.Steps = slices.Clone(prev.Steps)
	default:
		first := a.Steps[0]
		for _, s := range a.Steps {
			if !s.soft {
				first = s
				break
			}
		}
		for i, s := range prev.Steps {
			if first.Kind != "" && SameKind(s.Kind, first.Kind) || (first.Kind == "" && len(first.Path) > 0 && len(s.Path) > 0) {
				out.Steps = append(slices.Clone(prev.Steps[:i]), a.Steps...)
				return out
			}
		}
		if a.Doc == "" && len(prev.Steps) > 0 {
			// A deeper kind than any asked before nests under them.
			out.Steps = append(slices.Clone(prev.Steps), a.Steps...)
		}
	}
	return out
}

var (
	reBookTitle = regexp.MustCompile(`《([^《》]{1,60})》`)
	reQDiDotted = regexp.MustCompile(`第\s*([0-9]{1,4}(?:\.[0-9]{1,4})+)\s*(\p{Han})`)
	reQNameDi   = regexp.MustCompile(`(\p{Han}{1,8})第\s*` + numClass)
	reQDi       = regexp.MustCompile(`第\s*(` + numClass + `)\s*(\p{Han})`)
	reQNumKind  = regexp.MustCompile(`([0-9]{1,6}|[０-９]{1,6})\s*(\p{Han})`)
	reQNameKind = regexp.MustCompile(`(\p{Han}{1,8})`)
	reQSection  = regexp.MustCompile(`§+\s*([0-9]+(?:\.[0-9]+)*)`)
	reQWord     = regexp.MustCompile(`[A-Za-z0-9]+(?:[-.][A-Za-z0-9]+)*`)
	reQNamedEn  = regexp.MustCompile(`\bthe\s+((?:[A-Z][a-z]+\s+){1,3})([A-Za-z]+)\b`)
	reQDotted   = regexp.MustCompile(`(?:^|[^0-9.A-Za-z])([0-9]{1,4}(?:\.[0-9]{1,4})+)(?:[^0-9.A-Za-z]|$)`)
	reQNextZH   = regexp.MustCompile(`(下|后)一(\p{Han})`)
	reQPrevZH   = regexp.MustCompile(`(上|前)一(\p{Han})`)
	reQNextEN   = regexp.MustCompile(`(?i)\b(next|following)\b(?:\s+([a-z]+))?`)
	reQPrevEN   = regexp.MustCompile(`(?i)\b(previous|preceding)\b(?:\s+([a-z]+))?`)
)

// multiKinds are kinds of more than one character that follow 第N.
var multiKinds = []string{"部分", "修正案"}

// commonKinds are the classifiers that usually number parts of documents;
// after 第N in a question, another character is a kind only when the
// documents use it (第三方 is no part).
const commonKinds = "条章节篇卷回款项编则集册课段句首幕场页行部"

// notKinds are characters that follow 第N without naming a kind.
const notKinds = "的之是个年月日号时時天次名位种種和与或"

type span struct {
	start, end int
	l          Label
}

// ParseAddress finds the document and the part a question names. It reads
// the document from 《…》 or from a known title or alias in the question
// (case-insensitively, traditional and simplified alike); the part from
// labels in any notation ("第三十六条", "36条", "Article I, Section 8",
// "the Fourteenth Amendment", "Amendment IV", "1.3", "学而篇第三章"), the
// profile's named positions ("九二") and names before a classifier
// ("学而篇"); and relative forms ("下一条", "the next one"). A question that
// names nothing gives the zero Address.
func ParseAddress(q string, k Known) Address {
	a, _ := parseAddress(q, k, false)
	return a
}

// Span is where a question writes a piece of its address: q[Start:End].
type Span struct{ Start, End int }

// ParseAddressSpans is ParseAddress that also says where q writes the
// address: the document's name (with its 《》), a relative form ("the
// next one", "下一条") and each step, in the order they start. What q says
// outside them is what it says besides the address.
func ParseAddressSpans(q string, k Known) (Address, []Span) {
	return parseAddress(q, k, true)
}

// parseAddress is ParseAddress, with the spans it read when withSpans.
func parseAddress(q string, k Known, withSpans bool) (Address, []Span) {
	if len(q) > 4096 {
		q = q[:4096]
	}
	fq := text.Fold(q)
	var a Address
	var bookPart *Label
	var read []Span // the document's name and the relative form
	blank := func(s string, i, j int) string {
		if withSpans {
			read = append(read, Span{i, j})
		}
		return s[:i] + strings.Repeat(" ", j-i) + s[j:]
	}
	if m := reBookTitle.FindStringSubmatchIndex(fq); m != nil {
		name := strings.TrimSpace(fq[m[2]:m[3]])
		if i := strings.IndexAny(name, "·・:："); i > 0 {
			// 《论语·学而》: the book and a part of it by name.
			if t, ok := k.lookup(name[:i]); ok {
				_, n := utf8.DecodeRuneInString(name[i:])
				if part := strings.TrimSpace(name[i+n:]); part != "" {
					bookPart = &Label{Name: part, soft: true}
				}
				name = t
			}
		}
		if t, ok := k.lookup(name); ok {
			a.Doc, a.DocKnown = t, true
		} else {
			a.Doc = name
		}
		fq = blank(fq, m[0], m[1])
	} else if t, i, j := k.find(fq); t != "" {
		a.Doc, a.DocKnown = t, true
		fq = blank(fq, i, j)
	}
	var spans []span
	taken := func(i, j int) bool {
		for _, s := range spans {
			if i < s.end && s.start < j {
				return true
			}
		}
		return false
	}
	addSpan := func(i, j int, l Label) {
		if !taken(i, j) {
			spans = append(spans, span{i, j, l})
		}
	}
	// Relative forms.
	if m := reQNextZH.FindStringSubmatchIndex(fq); m != nil && k.isKind(fq[m[4]:m[5]]) {
		a.Relative, a.RelativeKind = 1, fq[m[4]:m[5]]
		fq = blank(fq, m[0], m[1])
	} else if m := reQPrevZH.FindStringSubmatchIndex(fq); m != nil && k.isKind(fq[m[4]:m[5]]) {
		a.Relative, a.RelativeKind = -1, fq[m[4]:m[5]]
		fq = blank(fq, m[0], m[1])
	} else if m := reQNextEN.FindStringSubmatchIndex(fq); m != nil {
		a.Relative = 1
		if m[4] >= 0 && k.isKind(fq[m[4]:m[5]]) {
			a.RelativeKind = strings.ToLower(fq[m[4]:m[5]])
		}
		fq = blank(fq, m[0], m[1])
	} else if m := reQPrevEN.FindStringSubmatchIndex(fq); m != nil {
		a.Relative = -1
		if m[4] >= 0 && k.isKind(fq[m[4]:m[5]]) {
			a.RelativeKind = strings.ToLower(fq[m[4]:m[5]])
		}
		fq = blank(fq, m[0], m[1])
	}
	// A profile's named positions, the longest name first.
	if p := k.Profile; p != nil {
		type named struct {
			name string
			pos  Position
		}
		var names []named
		for _, pos := range p.Positions {
			for _, n := range pos.Names {
				names = append(names, named{text.Fold(n), pos})
			}
		}
		sort.SliceStable(names, func(i, j int) bool { return len(names[i].name) > len(names[j].name) })
		for _, n := range names {
			for off := 0; ; {
				i := strings.Index(fq[off:], n.name)
				if i < 0 {
					break
				}
				i += off
				addSpan(i, i+len(n.name), Label{Kind: n.pos.Kind, Num: n.pos.Number, Name: n.name, Notation: Chinese})
				off = i + len(n.name)
			}
		}
	}
	for _, m := range reQDiDotted.FindAllStringSubmatchIndex(fq, -1) {
		// 第 4.2 节
		var path []int
		for _, c := range strings.Split(fq[m[2]:m[3]], ".") {
			n, _ := arabicNumber(c)
			path = append(path, n)
		}
		addSpan(m[0], m[1], Label{Kind: fq[m[4]:m[5]], Num: path[len(path)-1], Path: path, Notation: Arabic})
	}
	for _, m := range reQDi.FindAllStringSubmatchIndex(fq, -1) {
		kind := fq[m[4]:m[5]]
		for _, mk := range multiKinds {
			if strings.HasPrefix(fq[m[4]:], mk) {
				kind, m[1] = mk, m[4]+len(mk)
			}
		}
		if strings.Contains(notKinds, kind) || !(k.isKind(kind) || strings.Contains(commonKinds, kind) || len(kind) > 3) {
			// "第三方": a kind neither the documents nor documents
			// usually have.
			continue
		}
		if n, nt, ok := ParseNumber(fq[m[2]:m[3]]); ok && n > 0 {
			addSpan(m[0], m[1], Label{Kind: kind, Num: n, Notation: nt})
		}
	}
	for _, m := range reQNumKind.FindAllStringSubmatchIndex(fq, -1) {
		kind := fq[m[4]:m[5]]
		if !k.isKind(kind) {
			continue
		}
		if n, ok := arabicNumber(fq[m[2]:m[3]]); ok && n > 0 {
			addSpan(m[0], m[1], Label{Kind: kind, Num: n, Notation: Arabic})
		}
	}
	// Names before a classifier: 学而篇, 总则章.
	for _, m := range reQNameKind.FindAllStringIndex(fq, -1) {
		run := fq[m[0]:m[1]]
		for off := 0; off < len(run); {
			r, size := utf8.DecodeRuneInString(run[off:])
			c := string(r)
			at := m[0] + off
			off += size
			if !k.isClassifier(c) || taken(at, at+size) {
				continue
			}
			name := run[:off-size]
			if i := strings.LastIndexAny(name, "的之是在"); i >= 0 {
				_, n := utf8.DecodeRuneInString(name[i:])
				name = name[i+n:]
			}
			// A name ends where a span already read starts.
			for _, s := range spans {
				if s.end <= at && s.end > at-len(name) {
					name = fq[s.end:at]
				}
			}
			if name == "" {
				continue
			}
			addSpan(at-len(name), at+size, Label{Kind: c, Name: name})
			run = run[off:]
			m[0] += off
			off = 0
		}
	}
	// An ordinal before a kind: the Fourteenth Amendment, 14th Amendment,
	// the twenty first article.
	words := reQWord.FindAllStringIndex(fq, -1)
	for i := 0; i+1 < len(words); i++ {
		kind := strings.ToLower(fq[words[i+1][0]:words[i+1][1]])
		if !k.isKind(kind) || strings.TrimSpace(fq[words[i][1]:words[i+1][0]]) != "" {
			continue
		}
		start := words[i][0]
		n, ord, ok := englishNumber(fq[start:words[i][1]])
		if i > 0 && strings.TrimSpace(fq[words[i-1][1]:words[i][0]]) == "" {
			if n2, ord2, ok2 := englishNumber(fq[words[i-1][0]:words[i][1]]); ok2 && ord2 {
				n, ord, ok, start = n2, ord2, ok2, words[i-1][0]
			}
		}
		if ok && ord && n > 0 {
			addSpan(start, words[i+1][1], Label{Kind: kind, Num: n, Notation: Word})
		}
	}
	// Kind N: Article I, Section 8, Amendment 4, Article Four, § 12.
	for _, m := range reQSection.FindAllStringSubmatchIndex(fq, -1) {
		if l, ok := kindNumber("section", fq[m[2]:m[3]]); ok {
			addSpan(m[0], m[1], l)
		}
	}
	for i := 0; i+1 < len(words); i++ {
		kind := strings.ToLower(fq[words[i][0]:words[i][1]])
		if !k.isKind(kind) || strings.Trim(fq[words[i][1]:words[i+1][0]], " .") != "" {
			continue
		}
		num := fq[words[i+1][0]:words[i+1][1]]
		if r, _ := utf8.DecodeRuneInString(num); r >= 'a' && r <= 'z' {
			if _, ok := romanNumber(num); ok {
				continue // "part i" is too likely a word
			}
		}
		if l, ok := kindNumber(kind, num); ok {
			addSpan(words[i][0], words[i+1][1], l)
		}
	}
	for _, m := range reQNamedEn.FindAllStringSubmatchIndex(fq, -1) {
		kind := strings.ToLower(fq[m[4]:m[5]])
		if k.isKind(kind) {
			addSpan(m[2], m[5], Label{Kind: kind, Name: strings.TrimSpace(fq[m[2]:m[3]])})
		}
	}
	for _, m := range reQDotted.FindAllStringSubmatchIndex(fq, -1) {
		var path []int
		for _, c := range strings.Split(fq[m[2]:m[3]], ".") {
			n, _ := arabicNumber(c)
			path = append(path, n)
		}
		addSpan(m[2], m[3], Label{Num: path[len(path)-1], Path: path, Notation: Arabic})
	}
	// A name right before 第N (为政第二章): a part named so, if there is one.
	for _, m := range reQNameDi.FindAllStringSubmatchIndex(fq, -1) {
		name := fq[m[2]:m[3]]
		if i := strings.LastIndexAny(name, "的之是在"); i >= 0 {
			_, n := utf8.DecodeRuneInString(name[i:])
			name = name[i+n:]
		}
		if utf8.RuneCountInString(name) >= 2 && !taken(m[3]-len(name), m[3]) {
			addSpan(m[3]-len(name), m[3], Label{Name: name, soft: true})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	if bookPart != nil {
		a.Steps = append(a.Steps, *bookPart)
	}
	for i, s := range spans {
		a.Steps = append(a.Steps, s.l)
		// "Section 8 of Article I" names the inner part first.
		if i > 0 && strings.Contains(strings.ToLower(fq[spans[i-1].end:s.start]), " of ") {
			n := len(a.Steps)
			a.Steps[n-1], a.Steps[n-2] = a.Steps[n-2], a.Steps[n-1]
		}
	}
	if !withSpans {
		return a, nil
	}
	for _, s := range spans {
		read = append(read, Span{s.start, s.end})
	}
	sort.SliceStable(read, func(i, j int) bool { return read[i].Start < read[j].Start })
	if fq != q {
		// Folding may write a character in another number of bytes: the
		// spans are q's.
		at := foldedOffsets(q)
		for i := range read {
			read[i] = Span{at[read[i].Start], at[read[i].End]}
		}
	}
	return a, read
}

// foldedOffsets maps each offset of text.Fold(q) at a character boundary
// to the offset of the same character in q. Fold maps character to
// character, but may write one in another number of bytes (a byte that is
// not UTF-8 becomes U+FFFD once a character was folded before it).
func foldedOffsets(q string) []int {
	fq := text.Fold(q)
	at := make([]int, len(fq)+1)
	i, j := 0, 0
	for i < len(q) && j < len(fq) {
		at[j] = i
		_, n := utf8.DecodeRuneInString(q[i:])
		_, m := utf8.DecodeRuneInString(fq[j:])
		i, j = i+n, j+m
	}
	at[len(fq)] = len(q)
	return at
}

// lookup finds the known document a name in 《》 names.
func (k Known) lookup(name string) (string, bool) {
	f := foldName(name)
	for _, t := range k.Titles {
		for _, n := range t.names() {
			if n.key == f {
				return t.Title, true
			}
		}
	}
	// A distinctive part or a longer form: 《劳动法》 for 中华人民共和国劳动法.
	for _, t := range k.Titles {
		for _, n := range t.names() {
			ln := n.key
			if utf8.RuneCountInString(f) >= 2 && (strings.HasSuffix(ln, f) || strings.HasSuffix(f, ln)) {
				return t.Title, true
			}
		}
	}
	return "", false
}

// find finds the longest known title or alias in fq.
func (k Known) find(fq string) (title string, i, j int) {
	lq := strings.ToLower(fq)
	best := 0
	for _, t := range k.Titles {
		for _, n := range t.names() {
			ln := n.key
			if n.runes < 2 || len(ln) <= best {
				continue
			}
			if x := strings.Index(lq, ln); x >= 0 && (len(lq) == len(fq)) {
				if !wordBounded(lq, x, x+len(ln)) {
					continue
				}
				title, i, j, best = t.Title, x, x+len(ln), len(ln)
			}
		}
	}
	return title, i, j
}

// wordBounded reports whether s[i:j] is not part of a longer Latin word.
func wordBounded(s string, i, j int) bool {
	isWord := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
	return (i == 0 || !isWord(s[i-1]) || !isWord(s[i])) && (j == len(s) || !isWord(s[j]) || !isWord(s[j-1]))
}

// isKind reports whether w names a kind of part: one the documents use,
// a profile's classifier, or an English structural word.
func (k Known) isKind(w string) bool {
	if w == "" {
		return false
	}
	if slices.ContainsFunc(k.Kinds, func(x string) bool { return SameKind(x, w) }) || k.Profile.isClassifier(w) {
		return true
	}
	return isStructural(w)
}

// isClassifier reports whether c follows a name to say what it names: a
// CJK kind the documents use, or a profile's classifier.
func (k Known) isClassifier(c string) bool {
	return isCJKKind(c) && k.isKind(c)
}
