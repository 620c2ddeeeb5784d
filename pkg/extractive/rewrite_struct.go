package extractive

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/text"
)

// Follow-ups that move through a document's structure ("那第四条呢？",
// "下一条呢？", "上一章", "What about Section 9?", "and the next one?",
// "劳动合同法呢？") are completed against the part the conversation last
// addressed (docstruct.Address.Follow) and written as the question that
// addressed it, with the part or the document changed: "劳动法第三条是什么？"
// + "那第四条呢？" → "劳动法第四条是什么？".

// rwState is one rewrite's state: the vocabulary, what the documents say
// of their structure, and the standalone forms of the earlier questions
// already worked out (by their index in the history).
type rwState struct {
	vocab Vocabulary
	docs  Documents
	known docstruct.Known
	depth int
	memo  map[int]string
}

// maxRewriteDepth bounds how far back earlier follow-ups are made to
// stand alone.
const maxRewriteDepth = 4

func newRWState(vocab Vocabulary) *rwState {
	st := &rwState{vocab: vocab, docs: documentsOf(vocab), memo: map[int]string{}}
	if st.docs != nil {
		st.known = st.docs.Structure()
	}
	return st
}

// standaloneAt returns the user message history[at] made to stand alone
// against the history before it.
func (st *rwState) standaloneAt(f memory.FollowUp, at int) string {
	q := strings.TrimSpace(f.History[at].Content)
	if s, ok := st.memo[at]; ok {
		return s
	}
	out := q
	if at > 0 && st.depth < maxRewriteDepth && (dependsOnHistory(q) || st.addressed(q)) {
		st.depth++
		out = st.rewrite(memory.FollowUp{Topic: f.Topic, History: f.History[:at], Question: q}, q)
		st.depth--
	}
	st.memo[at] = out
	return out
}

// addressed reports whether q addresses a part of a document.
func (st *rwState) addressed(q string) bool {
	return !st.parseAddress(q, st.known).IsZero()
}

// parseAddress is docstruct.ParseAddress, except that a document's name
// written before one of the profile's classifiers names a part, not the
// document: with the classifier 篇, "学而篇" asks for the part 学而 even
// where a document is called 学而.
func (st *rwState) parseAddress(q string, kn docstruct.Known) docstruct.Address {
	a := parseAddr(q, kn)
	cls := st.classifiers()
	if !a.DocKnown || len(cls) == 0 || strings.Contains(q, "《") {
		return a
	}
	other := kn
	other.Titles = slices.DeleteFunc(slices.Clone(kn.Titles), func(t docstruct.Title) bool {
		for _, n := range append([]string{t.Title}, t.Aliases...) {
			for _, c := range cls {
				if n != "" && strings.Contains(q, n+c) {
					return true
				}
			}
		}
		return false
	})
	if len(other.Titles) == len(kn.Titles) {
		return a
	}
	if b := parseAddr(q, other); len(b.Steps) > 0 {
		return b
	}
	return a
}

// profileKinds are the kinds the profile's positions are of.
func (st *rwState) profileKinds() []string {
	p := st.known.Profile
	if p == nil {
		return nil
	}
	var out []string
	for _, pos := range p.Positions {
		if pos.Kind != "" && !slices.Contains(out, pos.Kind) {
			out = append(out, pos.Kind)
		}
	}
	return out
}

// classifiers are the profile's classifiers ("学而篇": 篇).
func (st *rwState) classifiers() []string {
	if st.known.Profile == nil {
		return nil
	}
	return st.known.Profile.Classifiers
}

// Wrappers of an elliptical follow-up around what it names.
var (
	reZhWrap = regexp.MustCompile(`^\s*(?:那么|那|还有|而|换成|如果是|要是)?\s*(.*?)\s*(?:的呢|呢)?\s*[？?。！!]*\s*$`)
	reEnWrap = regexp.MustCompile(`(?i)^\s*(?:(?:and\s+)?(?:what|how)\s+about|and|or|then|now)?\s*(?:in\s+|of\s+)?(.*?)\s*[?.!]*\s*$`)
)

// reZhRelative matches a move to the next or the previous part of a kind.
var reZhRelative = regexp.MustCompile(`^(?:下|上)一(\p{Han})`)

// fragment returns what an elliptical follow-up names (q without "那…呢",
// "What about …?") and whether q is elliptical: a wrapper was taken off, or
// q is short.
func fragment(q string) (string, bool) {
	re := reEnWrap
	if text.MostlyCJK(q) {
		re = reZhWrap
	}
	m := re.FindStringSubmatch(q)
	if m == nil {
		return q, false
	}
	x := strings.TrimSpace(m[1])
	wrapped := len(x) < len(strings.TrimRight(strings.TrimSpace(q), "？?。！!.")) || strings.HasSuffix(strings.TrimSpace(q), "呢") ||
		strings.HasSuffix(strings.TrimRight(strings.TrimSpace(q), "？?"), "呢")
	if text.MostlyCJK(q) {
		return x, wrapped || utf8.RuneCountInString(x) <= 6
	}
	return x, wrapped || len(strings.Fields(x)) <= 3
}

// followStructure rewrites q when it addresses a part (or a document)
// and leans on the part the conversation last addressed. It reports false
// when q is no such follow-up, or the conversation addressed no part.
func (st *rwState) followStructure(f memory.FollowUp, q string) (string, bool) {
	x, elliptical := fragment(q)
	if x == "" || !elliptical && st.hasPronoun(q) {
		// "它的第二款是什么？" is the pronoun's to resolve.
		return "", false
	}
	// The earlier question that addressed a part, made standalone.
	lastAt := -1
	var form string
	var prev docstruct.Address
	for i, n := len(f.History)-1, 0; i >= 0 && n < 4; i-- {
		h := f.History[i]
		if h.Role != llm.RoleUser || strings.TrimSpace(h.Content) == "" {
			continue
		}
		n++
		if lastAt < 0 {
			lastAt = i
		}
		s := st.standaloneAt(f, i)
		if a := st.parseAddress(s, st.known); !a.IsZero() && (len(a.Steps) > 0 || a.Doc != "") {
			prev, form = a, s
			break
		}
	}
	if form == "" {
		return "", false
	}
	kn := st.known
	kn.Kinds = slices.Clone(kn.Kinds)
	for _, s := range prev.Steps {
		if s.Kind != "" {
			kn.Kinds = append(kn.Kinds, s.Kind)
		}
	}
	kn.Kinds = append(kn.Kinds, st.profileKinds()...)
	if m := reZhRelative.FindStringSubmatch(x); m != nil {
		// "下一章" after "1.3": the kind the follow-up moves by.
		kn.Kinds = append(kn.Kinds, m[1])
	}
	a := st.parseAddress(x, kn)
	if (a.IsZero() || len(a.Steps) == 0 && a.Relative == 0 && prev.Doc == "") && text.AllCJK(x) && utf8.RuneCountInString(x) <= 2 && !ofAKind(x) {
		// A bare name of the kind named before ("那为政呢？" after 学而篇)
		// takes its classifier, even where a document has that name.
		for _, s := range prev.Steps {
			if s.Name != "" && s.Num == 0 && slices.Contains(st.classifiers(), s.Kind) && !strings.HasSuffix(x, s.Kind) {
				if b := st.parseAddress(x+s.Kind, kn); len(b.Steps) == 1 {
					a, x = b, x+s.Kind
				}
				break
			}
		}
	}
	if a.IsZero() {
		return "", false
	}
	if !elliptical && a.Relative == 0 && (a.Doc != "" || len(prev.Steps) == 0) {
		// It names its part itself.
		return q, a.Doc != "" && len(a.Steps) > 0
	}
	if saysMore(x, form, kn) {
		// A question of its own that also addresses a part ("I am
		// learning to cook, which spices should I buy first? (question
		// 13)" after "… (question 12)") is not form asked of another
		// part: the other rules read it.
		return "", false
	}
	// A new subject after a question that addressed nothing is a topic
	// change: the last question's form is asked of it (swapEllipsis).
	if lastFormAt := lastAt; lastFormAt >= 0 && st.parseAddress(st.standaloneAt(f, lastFormAt), st.known).IsZero() &&
		a.Relative == 0 && !anyNumbered(a.Steps) {
		return "", false
	}
	b := a.Follow(prev)
	if a.Relative == 0 && len(a.Steps) == 1 && !a.Steps[0].HasNumber() && a.Steps[0].Name != "" && len(b.Steps) < len(prev.Steps) {
		// A new subject in the place of one ("为政篇呢？" after "学而篇的
		// 第三章是什么？") is asked the same of: the parts under it stay.
		b.Steps = append(b.Steps, prev.Steps[len(b.Steps):]...)
	}
	if b.Relative != 0 {
		var ok bool
		if b, ok = moveRelative(b); !ok {
			return "", false
		}
	}
	return st.writeAddress(form, prev, b, x, a, kn)
}

// zhParticles are Chinese characters that say nothing of what a question
// is about: particles and conjunctions.
const zhParticles = "的之是了啊呀和与及或在"

// zhLead are words a Chinese follow-up may start with that say nothing of
// what it asks (enLead's).
var zhLead = []string{"谢谢", "多谢", "好的", "好吧", "对了", "嗯", "哦", "噢"}

// saysMore reports whether x, a follow-up that addresses a part, says
// something of its own besides the address: a word (in Chinese two
// characters) outside where x writes the address (ParseAddressSpans) that
// is no question word, reference, particle or lead word ("thanks", "ok",
// enLead) and that form, the earlier question it would be written as, does
// not have. "and question 13?",
// "那第13章呢？", "What happens in Chapter 13?" after "What happens in
// Chapter 11 of Walden?" say nothing more; "what spices should I buy
// first? (question 13)" does.
func saysMore(x, form string, kn docstruct.Known) bool {
	_, spans := docstruct.ParseAddressSpans(x, kn)
	rest := []byte(x)
	for _, sp := range spans {
		for i := sp.Start; i < sp.End; i++ {
			rest[i] = ' '
		}
	}
	r := string(rest)
	for _, ws := range [][]string{zhLead, zhReferences} {
		for _, w := range ws {
			r = strings.ReplaceAll(r, w, " ")
		}
	}
	formTerms := map[string]bool{}
	for _, t := range text.Terms(form) {
		formTerms[t] = true
	}
	ownWords, ownChars := 0, 0
	ws := text.Words(r)
	// pair reports whether ws[j] and ws[j+1] make a Chinese question word
	// ("什么").
	pair := func(j int) bool { return j >= 0 && j+1 < len(ws) && text.IsQuestionWord(ws[j]+ws[j+1]) }
	for i, w := range ws {
		c, _ := utf8.DecodeRuneInString(w)
		if text.IsCJK(c) {
			if strings.ContainsRune(zhParticles, c) || text.IsQuestionWord(w) || pair(i-1) || pair(i) || strings.Contains(form, w) {
				continue
			}
			ownChars++
			continue
		}
		lw := strings.ToLower(w)
		ts := text.Terms(lw)
		if referenceWords[lw] || enLead[lw] || len(ts) == 0 || text.IsQuestionWord(ts[0]) || formTerms[ts[0]] {
			continue
		}
		ownWords++
	}
	return ownWords > 0 || ownChars >= 2
}

// anyNumbered reports whether a step has a number.
func anyNumbered(steps []docstruct.Label) bool {
	return slices.ContainsFunc(steps, func(l docstruct.Label) bool { return l.HasNumber() })
}

// moveRelative turns a relative address into the part it names: the last
// step of its kind (the last step, for "the next one") moved by Relative.
// It reports false when that step has no number or the move goes below 1.
func moveRelative(a docstruct.Address) (docstruct.Address, bool) {
	idx := -1
	for i := len(a.Steps) - 1; i >= 0; i-- {
		if a.RelativeKind == "" || docstruct.SameKind(a.Steps[i].Kind, a.RelativeKind) {
			idx = i
			break
		}
	}
	if idx < 0 && len(a.Steps) > 0 && a.Steps[len(a.Steps)-1].Kind == "" {
		// A numbered part without a kind ("1.3") moved by a kind ("下一章").
		idx = len(a.Steps) - 1
	}
	if idx < 0 || !a.Steps[idx].HasNumber() {
		return a, false
	}
	s := a.Steps[idx]
	s.Num += a.Relative
	if len(s.Path) > 0 {
		s.Path = slices.Clone(s.Path)
		s.Path[len(s.Path)-1] += a.Relative
	}
	if s.Num < 1 {
		return a, false
	}
	out := a
	out.Steps = append(slices.Clone(a.Steps[:idx]), s)
	out.Relative, out.RelativeKind = 0, ""
	return out, true
}

// sameStep reports whether two steps name the same part.
func sameStep(a, b docstruct.Label) bool {
	return docstruct.SameKind(a.Kind, b.Kind) && a.Num == b.Num && slices.Equal(a.Path, b.Path) && a.Name == b.Name
}

// maxSpanBytes bounds the text a step is looked for in.
const maxSpanBytes = 64

// maxStepParses bounds the stretches stepSpan parses: a step is written
// in one of the shortest stretches around its anchor, and a text that
// names its kind so often near it that more fail first is not searched
// further.
const maxStepParses = 128

// parseAddr is docstruct.ParseAddress; the tests count through it the
// parses that reading the earlier questions and finding their steps make.
var parseAddr = docstruct.ParseAddress

// stepSpan finds where s writes the step l: the shortest stretch of s
// (then the earliest) that ParseAddress reads as that one step. A stretch
// starts at a character that is neither a space nor punctuation, ends at
// a word's end and spans at most maxSpanBytes. Only the stretches holding
// one of l's anchors (its name or its kind as written, Label.Anchors) can
// be read as l: they are parsed, the shortest first, until one is, at
// most maxStepParses of them; the stretches are found in one pass over
// the text.
func stepSpan(s string, l docstruct.Label, kn docstruct.Known) (int, int, bool) {
	kn.Titles = nil
	anchors := l.Anchors(s)
	if len(anchors) == 0 {
		return -1, -1, false
	}
	// minEnd[k] is the first end of the anchors from the k-th on (they
	// are in the order they start): a stretch starting at or before
	// anchors[k].Start holds one once it reaches minEnd[k].
	minEnd := make([]int, len(anchors))
	for k := len(anchors) - 1; k >= 0; k-- {
		minEnd[k] = anchors[k].End
		if k+1 < len(anchors) && minEnd[k+1] < minEnd[k] {
			minEnd[k] = minEnd[k+1]
		}
	}
	// The stretches by their length, each length's in the order they
	// start: the shortest (then the earliest) is parsed first.
	var byLen [maxSpanBytes + 1][]int
	k := 0
	for i, r := range s {
		if unicode.IsSpace(r) || unicode.IsPunct(r) && r != '§' {
			continue
		}
		for k < len(anchors) && anchors[k].Start < i {
			k++
		}
		if k == len(anchors) {
			break
		}
		if minEnd[k]-i > maxSpanBytes {
			continue
		}
		for j := i + utf8.RuneLen(r); j <= len(s) && j-i <= maxSpanBytes; {
			last, _ := utf8.DecodeLastRuneInString(s[:j])
			if j >= minEnd[k] && (j == len(s) || !text.IsWordRune(last) || !text.IsWordRune(firstRune(s[j:])) || text.IsCJK(last) || text.IsCJK(firstRune(s[j:]))) {
				byLen[j-i] = append(byLen[j-i], i)
			}
			_, n := utf8.DecodeRuneInString(s[j:])
			if n == 0 {
				break
			}
			j += n
		}
	}
	parses := 0
	for n, starts := range byLen {
		for _, i := range starts {
			if parses == maxStepParses {
				return -1, -1, false
			}
			parses++
			if a := parseAddr(s[i:i+n], kn); a.Relative == 0 && len(a.Steps) == 1 && sameStep(a.Steps[0], l) {
				return i, i + n, true
			}
		}
	}
	return -1, -1, false
}

// docSpan finds where s names the document title (its title or an alias,
// case-insensitively, with its 《》 when it has them), the longest first.
func docSpan(s, title string, kn docstruct.Known) (int, int, bool) {
	names := []string{title}
	for _, t := range kn.Titles {
		if t.Title == title {
			names = append(names, t.Aliases...)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	ls := strings.ToLower(s)
	for _, n := range names {
		ln := strings.ToLower(n)
		if ln == "" || len(ln) != len(n) {
			continue
		}
		i := strings.Index(ls, ln)
		if i < 0 {
			continue
		}
		j := i + len(ln)
		if strings.HasPrefix(s[j:], "》") && strings.HasSuffix(s[:i], "《") {
			i, j = i-len("《"), j+len("》")
		} else if i >= 4 && strings.EqualFold(s[i-4:i], "the ") {
			i -= 4
		}
		return i, j, true
	}
	return 0, 0, false
}

// writeAddress writes the address b as form (the question that addressed
// prev) with what changed replaced: the document as x (the follow-up's
// fragment, which addressed a) writes it, the steps as x writes them or,
// for a relative move, as form wrote the step moved from. A part deeper
// than any form named is asked of in a question of its own ("学而篇的第三
// 章是什么？"): form's question may be about another kind of part.
func (st *rwState) writeAddress(form string, prev, b docstruct.Address, x string, a docstruct.Address, kn docstruct.Known) (string, bool) {
	out := form
	zh := text.MostlyCJK(form)
	k := 0
	for k < len(prev.Steps) && k < len(b.Steps) && sameStep(prev.Steps[k], b.Steps[k]) {
		k++
	}
	if k < len(b.Steps) || k < len(prev.Steps) {
		if len(prev.Steps) == 0 {
			return "", false
		}
		spans := make([][2]int, len(prev.Steps))
		for i, s := range prev.Steps {
			p, q, ok := stepSpan(out, s, kn)
			if !ok {
				return "", false
			}
			spans[i] = [2]int{p, q}
		}
		var texts []string
		for i, s := range b.Steps[k:] {
			w := ""
			if slices.ContainsFunc(a.Steps, func(l docstruct.Label) bool { return sameStep(l, s) }) {
				if p, q, ok := stepSpan(x, s, kn); ok {
					w = x[p:q]
				}
			}
			if w == "" {
				w = st.writeStep(s, out, spans, k+i, prev)
			}
			if w == "" {
				return "", false
			}
			texts = append(texts, w)
		}
		last := spans[len(spans)-1][1]
		if k < len(prev.Steps) && len(b.Steps) == len(prev.Steps) && ordered(spans) {
			// Each step that changed in its place; the others as form
			// writes them.
			for i := len(prev.Steps) - 1; i >= k; i-- {
				if !sameStep(prev.Steps[i], b.Steps[i]) {
					out = out[:spans[i][0]] + texts[i-k] + out[spans[i][1]:]
				}
			}
		} else if k < len(prev.Steps) {
			if spans[k][0] > last {
				return "", false
			}
			out = out[:spans[k][0]] + st.joinSteps(texts, zh) + out[last:]
		} else if zh {
			sep := ""
			if st.isPosition(texts[0]) {
				sep = "的"
			}
			out = out[:last] + sep + st.joinSteps(texts, zh) + "是什么？"
		} else {
			doc := ""
			if i, j, ok := docSpan(out, prev.Doc, kn); ok && prev.Doc != "" && i >= last {
				doc = " of " + out[i:j]
			}
			out = "What does " + out[spans[0][0]:last] + ", " + st.joinSteps(texts, zh) + doc + " say?"
		}
	}
	if b.Doc != prev.Doc && b.Doc != "" {
		p, q, ok := docSpan(x, b.Doc, kn)
		if !ok {
			return "", false
		}
		newDoc := x[p:q]
		if i, j, ok := docSpan(out, prev.Doc, kn); ok && prev.Doc != "" {
			old := out[i:j]
			if strings.HasPrefix(strings.ToLower(old), "the ") != strings.HasPrefix(strings.ToLower(newDoc), "the ") {
				newDoc = strings.TrimPrefix(strings.TrimPrefix(newDoc, "the "), "The ")
				if strings.HasPrefix(strings.ToLower(old), "the ") {
					newDoc = old[:4] + newDoc
				}
			}
			out = out[:i] + newDoc + out[j:]
		} else if len(b.Steps) > 0 {
			i, _, ok := stepSpan(out, b.Steps[0], kn)
			_, j, ok2 := stepSpan(out, b.Steps[len(b.Steps)-1], kn)
			if !ok || !ok2 {
				return "", false
			}
			if zh {
				out = out[:i] + newDoc + out[i:]
			} else {
				if !strings.HasPrefix(strings.ToLower(newDoc), "the ") {
					newDoc = "the " + newDoc
				}
				out = out[:j] + " of " + newDoc + out[j:]
			}
		} else {
			return "", false
		}
	}
	if out == form {
		return "", false
	}
	return out, true
}

// ordered reports whether spans follow one another without overlapping.
func ordered(spans [][2]int) bool {
	for i := 1; i < len(spans); i++ {
		if spans[i][0] < spans[i-1][1] {
			return false
		}
	}
	return true
}

// joinSteps writes steps one after another: in Chinese run together, a
// position after "的" ("学而篇的序言"); in English after commas ("Article I,
// Section 9").
func (st *rwState) joinSteps(ws []string, zh bool) string {
	if !zh {
		return strings.Join(ws, ", ")
	}
	var b strings.Builder
	for i, w := range ws {
		if i > 0 && st.isPosition(w) {
			b.WriteString("的")
		}
		b.WriteString(w)
	}
	return b.String()
}

// isPosition reports whether w is a name of one of the profile's
// positions.
func (st *rwState) isPosition(w string) bool {
	p := st.known.Profile
	if p == nil {
		return false
	}
	for _, pos := range p.Positions {
		if slices.Contains(pos.Names, w) {
			return true
		}
	}
	return false
}

// writeStep writes the step s, moved to from the step at index k of prev
// (written at spans[k] of form), the way form wrote that step: a
// position's usual name, a Chinese, Roman or Arabic number as before, an
// ordinal word before the kind ("the Fifteenth Amendment").
func (st *rwState) writeStep(s docstruct.Label, form string, spans [][2]int, k int, prev docstruct.Address) string {
	if k >= len(prev.Steps) || k >= len(spans) {
		return ""
	}
	old := form[spans[k][0]:spans[k][1]]
	if p := st.known.Profile; p != nil {
		for _, pos := range p.Positions {
			if slices.Contains(pos.Names, old) {
				for _, q := range p.Positions {
					if docstruct.SameKind(q.Kind, s.Kind) && q.Number == s.Num && len(q.Names) > 0 {
						return q.Names[0]
					}
				}
				return ""
			}
		}
	}
	if s.Notation == docstruct.Word {
		if ws := strings.Fields(old); len(ws) == 2 && docstruct.SameKind(strings.ToLower(ws[1]), s.Kind) {
			return titleCase(ordinalWord(s.Num)) + " " + ws[1]
		}
		s.Notation = docstruct.Arabic
	}
	w := s.String()
	if s.Kind != "" && !text.MostlyCJK(w) {
		// The kind as form wrote it ("amendment" or "Amendment").
		if ws := strings.Fields(old); len(ws) > 1 && strings.EqualFold(ws[0], s.Kind) {
			w = ws[0] + w[len(ws[0]):]
		}
	}
	return w
}

func titleCase(w string) string {
	r, n := utf8.DecodeRuneInString(w)
	return string(unicode.ToUpper(r)) + w[n:]
}

// ordinalWord writes n as an English ordinal word ("fifteenth",
// "twenty-first").
func ordinalWord(n int) string {
	w := docstruct.FormatNumber(n, docstruct.Word)
	if n <= 0 || w == "" || unicode.IsDigit(firstRune(w)) {
		return ordinalSuffix(n)
	}
	i := strings.LastIndexAny(w, " -")
	head, last := w[:i+1], w[i+1:]
	switch last {
	case "one":
		last = "first"
	case "two":
		last = "second"
	case "three":
		last = "third"
	case "five":
		last = "fifth"
	case "eight":
		last = "eighth"
	case "nine":
		last = "ninth"
	case "twelve":
		last = "twelfth"
	default:
		if strings.HasSuffix(last, "y") {
			last = strings.TrimSuffix(last, "y") + "ieth"
		} else {
			last += "th"
		}
	}
	return head + last
}

// ordinalSuffix writes n with its ordinal suffix ("21st").
func ordinalSuffix(n int) string {
	suf := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suf = "st"
		case 2:
			suf = "nd"
		case 3:
			suf = "rd"
		}
	}
	return docstruct.FormatNumber(n, docstruct.Arabic) + suf
}

// hasPronoun reports whether q has a pronoun or a demonstrative.
func (st *rwState) hasPronoun(q string) bool {
	if text.MostlyCJK(q) {
		_, p := st.zhPronoun(q)
		return p != ""
	}
	for _, w := range text.Words(strings.ToLower(q)) {
		if enSubject[w] || enPossessive[w] || w == "her" || w == "this" || w == "that" || w == "these" || w == "those" {
			return true
		}
	}
	return false
}
