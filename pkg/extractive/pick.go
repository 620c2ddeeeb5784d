package extractive

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// This file is the generic reading: sentences ranked by how much of the
// question they hold, the best few kept in their order and rendered.

var (
	stopChars = func() map[rune]bool {
		m := map[rune]bool{}
		for _, r := range "我你您他她它们們的地得是在有和与與及或了着著过過吗嗎呢吧啊呀么麼什甚怎样樣哪谁誰这這那个個一不也就都而之其以于於为為乎者所则則乃矣焉哉曰请請" {
			m[r] = true
		}
		return m
	}()
	stopWords = func() map[string]bool {
		m := map[string]bool{}
		for _, t := range text.Terms("what who whom whose which where when why how do does did done doing " +
			"i me my mine myself you your yours we us our he him his she her hers its they them " +
			"can could would should shall may might must am were been being has have had having " +
			"tell please about from so than too very just any some all also know said say") {
			m[t] = true
		}
		return m
	}()
)

// query holds the content terms of a question: single CJK characters and
// Latin stems (chars), and CJK bigrams and Latin stems (grams), each with an
// index.
type query struct {
	chars        map[rune]int   // CJK character → index into charW
	words        map[string]int // Latin stem → index into charW
	grams        map[string]int // CJK bigram or Latin stem → index into gramW
	nChar, nGram int
	// related maps the terms of words related to the question's Latin
	// words (text.Related: "silent" for "quiet") to that word's stem: a
	// sentence that says the thing asked in other words holds it.
	related map[string]string
	// wordTerms caches wordTerm.
	wordTerms map[string]string
}

func newQuery(q string) query {
	q = text.Fold(q) // either script matches the other
	// "Sala Thong's beer" asks of Sala Thong: the name's own terms.
	q = text.DropPossessives(q)
	qr := query{chars: map[rune]int{}, words: map[string]int{}, grams: map[string]int{}, related: map[string]string{}, wordTerms: make(map[string]string, 64)}
	free := map[string]bool{} // the words outside quoted passages, which are read as written
	for _, t := range text.Terms(text.Unquoted(q)) {
		free[t] = true
	}
	for _, r := range q {
		if text.IsCJK(r) && !stopChars[r] {
			if _, ok := qr.chars[r]; !ok {
				qr.chars[r] = qr.nChar
				qr.nChar++
			}
		}
	}
	for _, t := range text.Terms(q) {
		if isStop(t) {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(t); !text.IsCJK(r) {
			if _, ok := qr.words[t]; !ok {
				qr.words[t] = qr.nChar
				qr.nChar++
				if free[t] {
					for _, rt := range text.Related(t) {
						if _, ok := qr.related[rt]; !ok {
							qr.related[rt] = t
						}
					}
				}
			}
		}
		if _, ok := qr.grams[t]; !ok {
			qr.grams[t] = qr.nGram
			qr.nGram++
		}
	}
	return qr
}

// match records which of the question's terms a sentence has.
type match struct {
	chars, grams []bool
	// near marks the question's Latin words (by their index in chars)
	// that the sentence says only in related words: they count
	// nearWeight.
	near []bool
	size int // CJK characters and Latin words: the sentence's length
}

func (qr query) match(s string) match {
	s = text.DropPossessives(text.Fold(s))   // as the question's words
	has := make([]bool, 2*qr.nChar+qr.nGram) // one allocation for the three
	m := match{chars: has[:qr.nChar:qr.nChar], grams: has[qr.nChar : qr.nChar+qr.nGram : qr.nChar+qr.nGram], near: has[qr.nChar+qr.nGram:]}
	// One pass over s that reads the terms text.Terms would, without
	// making them: a run of CJK characters gives its bigrams (its
	// character when it is alone), which are slices of s; a run of letters
	// and digits gives one word, whose term text.Terms says once per
	// reading (query.wordTerm).
	gram := func(t string) {
		if k, ok := qr.grams[t]; ok {
			m.grams[k] = true
		}
	}
	word := func(w string) {
		t, ok := qr.wordTerm(w)
		if !ok {
			return
		}
		gram(t)
		m.size++
		if k, ok := qr.words[t]; ok {
			m.chars[k] = true
		} else if w, ok := qr.related[t]; ok {
			m.near[qr.words[w]] = true
		}
	}
	wordAt := -1         // the start of the word being read, -1 for none
	cjkAt, cjkN := -1, 0 // the start of the run's last CJK character, and the run's length
	endCJK := func() {
		if cjkN == 1 {
			_, n := utf8.DecodeRuneInString(s[cjkAt:])
			gram(s[cjkAt : cjkAt+n])
		}
		cjkN = 0
	}
	for i, r := range s {
		switch {
		case text.IsCJK(r):
			if wordAt >= 0 {
				word(s[wordAt:i])
				wordAt = -1
			}
			m.size++
			if k, ok := qr.chars[r]; ok {
				m.chars[k] = true
			}
			if cjkN > 0 {
				gram(s[cjkAt : i+utf8.RuneLen(r)])
			}
			cjkAt = i
			cjkN++
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (r == '\'' && wordAt >= 0):
			endCJK()
			if wordAt < 0 {
				wordAt = i
			}
		default:
			if wordAt >= 0 {
				word(s[wordAt:i])
				wordAt = -1
			}
			endCJK()
		}
	}
	if wordAt >= 0 {
		word(s[wordAt:])
	}
	endCJK()
	return m
}

// wordTerm returns the term of w, a run of letters and digits as
// text.Terms reads words, and false when it has none (a stop word): the
// term text.Terms gives w, kept for the rest of the reading.
func (qr query) wordTerm(w string) (string, bool) {
	if numeric(w) {
		return w, true // text.Terms keeps such a word as it is: no stop word has a digit, and it stems none
	}
	if t, ok := qr.wordTerms[w]; ok {
		return t, t != ""
	}
	t := ""
	if ts := text.Terms(w); len(ts) > 0 {
		t = ts[0]
	}
	qr.wordTerms[w] = t
	return t, t != ""
}

// numeric reports whether w is ASCII digits and lower-case letters, with
// a digit among them ("1997", "4g").
func numeric(w string) bool {
	digit := false
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c < 'a' || c > 'z':
			return false
		}
	}
	return digit
}

// nearWeight is what a question's word counts for in a sentence that says
// it only in related words (query.related), against 1 for the word itself.
const nearWeight = 0.7

// isStop reports whether a term is a function word, or a CJK bigram made
// with a function character.
func isStop(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	if !text.IsCJK(r) {
		return stopWords[t]
	}
	for _, r := range t {
		if stopChars[r] {
			return true
		}
	}
	return false
}

type scored struct {
	sentence
	rel  float64 // share of the question's content present (text or section path), in [0,1]
	own  float64 // the same in the text alone
	rank float64 // rel with a penalty for length
}

// pick returns the sentences of the reply, in the material's order.
//
// weights, when not nil, are the corpus weights of the question's terms
// (llm.Grounding.Weights): a term's rarity among the few sentences read
// is tempered by its rarity in the collection they were retrieved from.
func (m *Model) pick(q string, sents []sentence, maxTokens int, weights map[string]float64) []sentence {
	qr := newQuery(q)
	if len(sents) == 0 || qr.nChar+qr.nGram == 0 {
		return nil
	}
	zh := isChinese(q, sents)
	sents, kinds := shape(sents, zh)
	asked := askedValues(q)
	own := make([]match, len(sents))
	// The matches of the sentences with a section path: of the path
	// (scope), and of text and path together (inPath); nil when none has
	// one. The match of a sentence's text and path is matchOf.
	var scope, inPath []match
	charDF, gramDF := make([]int, qr.nChar), make([]int, qr.nGram)
	total := 0
	// A long conversation repeats its sentences, and the sentences of a
	// passage share their section path: each text is matched once. The
	// matches are shared, never written.
	ownOf, scopeOf := make(map[string]int, len(sents)), map[string]int{} // text → the first sentence of it
	first := make([]int, len(sents))                                     // the first sentence of the same text
	for i, s := range sents {
		if j, ok := ownOf[s.text]; ok {
			own[i], first[i] = own[j], j
		} else {
			own[i], first[i] = qr.match(s.text), i
			ownOf[s.text] = i
		}
		mt := own[i]
		if s.scope != "" {
			if scope == nil {
				scope, inPath = make([]match, len(sents)), make([]match, len(sents))
			}
			if j, ok := scopeOf[s.scope]; ok {
				scope[i] = scope[j]
			} else {
				scope[i] = qr.match(s.scope)
				scopeOf[s.scope] = i
			}
			sm := scope[i]
			mt = match{chars: slices.Clone(mt.chars), grams: slices.Clone(mt.grams), near: mt.near, size: mt.size}
			for k, ok := range sm.chars {
				mt.chars[k] = mt.chars[k] || ok
			}
			for k, ok := range sm.grams {
				mt.grams[k] = mt.grams[k] || ok
			}
			inPath[i] = mt
		}
		total += mt.size
		// Rarity is counted in the sentences' own text: a term every
		// sentence's section path holds is still a term of the question.
		for k, ok := range own[i].chars {
			if ok {
				charDF[k]++
			}
		}
		for k, ok := range own[i].grams {
			if ok {
				gramDF[k]++
			}
		}
	}
	matchOf := func(i int) match {
		if sents[i].scope != "" {
			return inPath[i]
		}
		return own[i]
	}
	n := float64(len(sents))
	avg := math.Max(float64(total)/n, 1)
	// BM25's idf; a term found nowhere weighs like one found once.
	idf := func(df []int) []float64 {
		w := make([]float64, len(df))
		for k, d := range df {
			d := float64(max(d, 1))
			w[k] = math.Log(1 + (n-d+0.5)/(d+0.5))
		}
		return w
	}
	charW, gramW := idf(charDF), idf(gramDF)
	if weights != nil {
		scaleByCorpus(charW, qr.words, weights)
		scaleByCorpus(gramW, qr.grams, weights)
	}
	coverage := func(has []bool, w []float64, near ...bool) (float64, bool) {
		var got, all float64
		for k, x := range w {
			all += x
			if has[k] {
				got += x
			} else if k < len(near) && near[k] {
				got += nearWeight * x
			}
		}
		if all == 0 {
			return 0, false
		}
		return got / all, true
	}
	// relOf is the share of the question's content m holds; the terms
	// skip holds (a section path) are left out of the question.
	relOf := func(mt, skip match) float64 {
		cw, gw := charW, gramW
		if skip.chars != nil {
			cw, gw = slices.Clone(charW), slices.Clone(gramW)
			for k, ok := range skip.chars {
				if ok {
					cw[k] = 0
				}
			}
			for k, ok := range skip.grams {
				if ok {
					gw[k] = 0
				}
			}
		}
		cc, okc := coverage(mt.chars, cw, mt.near...)
		cg, okg := coverage(mt.grams, gw)
		if !okc && !okg && skip.chars != nil {
			// The path holds the whole question: count it all.
			cc, okc = coverage(mt.chars, charW, mt.near...)
			cg, okg = coverage(mt.grams, gramW)
		}
		switch {
		case okc && okg:
			return 0.6*cc + 0.4*cg
		case okc:
			return cc
		}
		return cg
	}
	frame := selfFrame(q)
	cands := make([]scored, len(sents))
	fits, states := make([]float64, len(sents)), make([]bool, len(sents))
	unit, quantity := askedQuantity(q)
	for i, s := range sents {
		c := &cands[i]
		c.sentence = s
		// The question's terms the sentence's section path holds count
		// for relevance; its own text must answer the rest (the question
		// about a document's subject asks what the document says of it).
		skip := match{}
		if scope != nil {
			skip = scope[i]
		}
		c.rel, c.own = relOf(matchOf(i), match{}), relOf(own[i], skip)
		if kinds[i].kind == kindAnswer {
			// A pair is one unit: its question counts half toward the
			// answer's own text.
			pair := qr.match(kinds[i].question)
			for k, ok := range own[i].chars {
				pair.chars[k] = pair.chars[k] || ok
			}
			for k, ok := range own[i].grams {
				pair.grams[k] = pair.grams[k] || ok
			}
			c.own = (c.own + relOf(pair, match{})) / 2
		}
		c.rank = (c.rel + c.own) / 2 / (1 + 0.5*math.Log1p(float64(matchOf(i).size)/avg))
		if c.rel > 0 && isQuestion(c.text) {
			c.rank *= 0.75 // a question rarely answers one
		}
		if c.heading || kinds[i].kind == kindCells {
			c.rank *= 0.7 // a heading names what follows; it seldom says it
		}
		// A question of quantity ("多少天") is answered by a sentence that
		// states one, in its unit; a sentence (a table row) whose
		// condition excludes the question's ("满1年不满5年" for "满5年")
		// answers another case.
		if j := first[i]; j < i {
			// What the text says of the question's quantity and
			// condition is read once.
			states[i], fits[i] = states[j], fits[j]
		} else {
			states[i] = quantity && statesQuantity(s.text, unit)
			fits[i] = conditionFit(asked, s.text)
		}
		if states[i] {
			c.rank *= 1.3
		}
		if fits[i] < 0 {
			c.rank *= 0.4
		}
		if frame != "" && s.speaker == speakerHuman && strings.Contains(text.Fold(s.text), frame) {
			// "我叫韩梅梅" answers "我叫什么名字？": the user said it of
			// themselves in the question's own words.
			c.rel, c.own = max(c.rel, 1), max(c.own, 1)
			c.rank = max(c.rank, 1)
		}
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	byRank := func() {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cands[b].rank, cands[a].rank) })
	}
	byRank()
	if cands[order[0]].rel < m.minScore {
		return nil
	}
	// Of the sentences that hold enough of the question (condRel of the
	// most relevant one's relevance), those whose condition holds for the
	// question's most closely ("满5年" in "满5年不满10年") come first, and
	// are relevant enough; those whose condition excludes it answer
	// another case. A table's rows are as relevant as the table (its most
	// relevant row): which row answers is the condition's to say; a
	// sentence that states the quantity asked for counts half as much
	// again.
	const condRel = 0.4
	top, topRel, bestFit := 0.0, 0.0, 0.0
	tableRel := map[int]float64{}
	for i, c := range cands {
		top, topRel = max(top, c.rank), max(topRel, c.rel)
		if t := kinds[i].table; t > 0 {
			tableRel[t] = max(tableRel[t], c.rel)
		}
	}
	relOfRow := func(i int) float64 {
		r := max(cands[i].rel, tableRel[kinds[i].table])
		if states[i] {
			r *= 1.5 // it states the quantity asked for
		}
		return r
	}
	for i := range cands {
		if relOfRow(i) >= condRel*topRel {
			bestFit = max(bestFit, fits[i])
		}
	}
	fitting := bestFit > 0
	fitsBest := func(i int) bool { return fitting && fits[i] == bestFit && relOfRow(i) >= condRel*topRel }
	if fitting {
		for i := range cands {
			if fitsBest(i) {
				cands[i].rank += 2 * top
			}
		}
		byRank()
	}
	minScore := func(i int) bool { return cands[i].rel >= m.minScore || fitsBest(i) }
	// A question of the material never answers: the best is the best of
	// the other sentences; when one holds the question's condition most
	// closely, those that hold it less closely go too.
	order = slices.DeleteFunc(order, func(i int) bool {
		return kinds[i].kind == kindQuestion || (fitting && fits[i] != 0 && fits[i] < bestFit)
	})
	if len(order) == 0 || !minScore(order[0]) {
		return nil
	}
	best := cands[order[0]]
	// Maximal marginal relevance over the sentences that are relevant
	// enough, near duplicates of a chosen one excluded. Besides MinScore, a
	// sentence must cover nearly as much of the question as the best one
	// (relCut) and not rank far below it (rankCut): a reply is better short
	// than padded with sentences that share one word with the question.
	const lambda, nearDup, relCut, rankCut = 0.7, 0.8, 0.7, 0.4
	var chosen []int
	vecs := newCharVecs(len(cands))
	vec := func(i int) charVec { return vecs.of(i, cands[i].text) }
	// sims[i] is the similarity of candidate i to the nearest of the first
	// simTo[i] chosen sentences: each pair is compared once.
	sims, simTo := make([]float64, len(cands)), make([]int, len(cands))
	used := map[int]bool{}
	tokens, runes := 0, 0
	for len(chosen) < m.maxSent {
		pickAt, pickScore := -1, math.Inf(-1)
		for _, i := range order {
			c := &cands[i]
			if used[i] || !minScore(i) || c.rel < relCut*best.rel || c.own < relCut*best.own || c.rank < rankCut*best.rank {
				continue
			}
			for ; simTo[i] < len(chosen); simTo[i]++ {
				sims[i] = math.Max(sims[i], vec(i).cosine(vec(chosen[simTo[i]])))
			}
			sim := sims[i]
			if sim >= nearDup {
				used[i] = true
				continue
			}
			if s := lambda*c.rank/best.rank - (1-lambda)*sim; s > pickScore {
				pickAt, pickScore = i, s
			}
		}
		if pickAt < 0 {
			break
		}
		used[pickAt] = true
		if n := replyRunes(cands[pickAt].text, zh); len(chosen) > 0 && runes+n > maxReplyRunes {
			continue
		}
		runes += replyRunes(cands[pickAt].text, zh)
		if maxTokens > 0 {
			t := m.tok.Count(cands[pickAt].text)
			if len(chosen) > 0 && tokens+t > maxTokens {
				continue
			}
			tokens += t
		}
		chosen = append(chosen, pickAt)
	}
	// A sentence another chosen one holds whole ("天行健" beside "《象》曰：
	// 天行健，君子以自強不息") says nothing more.
	norm := make(map[int]string, len(chosen))
	for _, i := range chosen {
		norm[i] = normalize(cands[i].text)
	}
	chosen = slices.DeleteFunc(chosen, func(i int) bool {
		for j, nj := range norm {
			if j != i && norm[i] != "" && len(nj) > len(norm[i]) && strings.Contains(nj, norm[i]) {
				return true
			}
		}
		return false
	})
	var out []sentence
	for _, i := range chosen {
		c := cands[i].sentence
		c.text = clip(qr, c.text)
		out = append(out, c)
		// A heading is followed by what it heads.
		if n := i + 1; c.heading && n < len(cands) && !cands[n].heading && !used[n] && cands[n].line != c.line {
			used[n] = true
			out = append(out, cands[n].sentence)
		}
		// A sentence cut inside brackets or quotes (at a ";" in "(符号: Kz;
		// 代码: AOA)") goes on to where they close.
		text := c.text
		for n := i + 1; unbalanced(text) && n < len(cands) && cands[n].line == c.line && !used[n] &&
			replyRunes(text, zh)+replyRunes(cands[n].text, zh) <= maxReplyRunes; n++ {
			used[n] = true
			text += cands[n].text
			out = append(out, cands[n].sentence)
		}
	}
	slices.SortFunc(out, func(a, b sentence) int { return cmp.Compare(a.pos, b.pos) })
	if len(chosen) > 0 && len(out) > 0 {
		if yn, ok := settles(q, cands[chosen[0]], kinds[chosen[0]].kind == kindAnswer); ok && !saysYesNo(out[0].text) {
			out = append([]sentence{{text: yn, pos: out[0].pos - 1}}, out...)
		}
	}
	return out
}

// scaleByCorpus weighs each question term the corpus weighs (terms maps a
// term to its index in w) by the geometric mean of its weight among the
// sentences read and its corpus weight, the corpus weights scaled to the
// same mean as the weights among the sentences of the terms they weigh: a
// word common in the collection but rare in what was retrieved ("good")
// weighs less than one the retrieved sentences share because the question
// is about it. A term the corpus does not weigh (a single CJK character)
// keeps its weight.
func scaleByCorpus(w []float64, terms map[string]int, corpus map[string]float64) {
	var sum, local float64
	n := 0
	for t, k := range terms {
		if c, ok := corpus[t]; ok {
			sum += c
			local += w[k]
			n++
		}
	}
	if n == 0 || sum <= 0 {
		return
	}
	for t, k := range terms {
		if c, ok := corpus[t]; ok {
			w[k] = math.Sqrt(w[k] * c * local / sum)
		}
	}
}

// settles returns the yes or no that answers q, a yes/no question, when
// the best sentence c settles it: it holds most of the question (in its
// text and section path, or in the question it answers), its own text a
// good part of it unless it answers a question of the document, it weighs
// nothing against anything, and its polarity against the question's says
// which.
func settles(q string, c scored, answer bool) (string, bool) {
	verb, ok := polar(q)
	if !ok || c.rel < 0.7 || (c.own < 0.25 && !answer) || c.speaker == speakerHuman || contrasts(c.text) {
		return "", false
	}
	return yesNo(verb, negated(c.text) == negated(q)), true
}

// unbalanced reports whether s opens more brackets or quotes than it
// closes.
func unbalanced(s string) bool {
	for _, p := range [][2]rune{{'(', ')'}, {'（', '）'}, {'《', '》'}, {'「', '」'}, {'“', '”'}, {'[', ']'}} {
		if strings.Count(s, string(p[0])) > strings.Count(s, string(p[1])) {
			return true
		}
	}
	return false
}

// render joins the chosen sentences; consecutive sentences the user said
// are quoted together as what the user said, and a run of sentences from
// one cited passage ends with its citation ("…利贞[1]。").
func render(sents []sentence, zh bool) string {
	out := ""
	for i := 0; i < len(sents); {
		s := sents[i]
		piece := s.text
		next := i + 1
		if s.speaker == speakerHuman {
			quote := s.text
			for next < len(sents) && sents[next].speaker == speakerHuman && sents[next].pos == sents[next-1].pos+1 {
				quote = join(quote, sents[next].text)
				next++
			}
			if zh {
				piece = "你之前说过：“" + quote + "”"
			} else {
				piece = `You said earlier: "` + quote + `"`
			}
		} else if s.cite > 0 {
			for next < len(sents) && sents[next].cite == s.cite && sents[next].pos == sents[next-1].pos+1 {
				piece = join(piece, sents[next].text)
				next++
			}
			piece = withCite(piece, s.cite)
		}
		out = join(out, piece)
		i = next
	}
	return out
}

// endSentence ends a reply whose last piece was cut at a clause mark
// ("天行健[1]；") with a full stop.
func endSentence(s string) string {
	last, n := utf8.DecodeLastRuneInString(s)
	switch last {
	case '；', '，', '、', '：':
		return s[:len(s)-n] + "。"
	case ';', ',', ':':
		return s[:len(s)-n] + "."
	}
	return s
}

// join appends b to a with the separator the languages need: nothing after
// a Chinese sentence end, a space after an English one, a line break after
// a line that does not end a sentence (a heading).
func join(a, b string) string {
	if a == "" {
		return b
	}
	last, _ := utf8.DecodeLastRuneInString(a)
	switch {
	case strings.ContainsRune("。！？；…”」』）", last):
		return a + b
	case strings.ContainsRune(".!?;\"')", last):
		return a + " " + b
	}
	return a + "\n" + b
}

// pieces splits s into stream pieces of about n runes, never inside a
// Latin word.
func pieces(s string, n int) []string {
	var out []string
	rs := []rune(s)
	for start := 0; start < len(rs); {
		end := min(start+n, len(rs))
		for end < len(rs) && isLatin(rs[end-1]) && isLatin(rs[end]) {
			end++
		}
		out = append(out, string(rs[start:end]))
		start = end
	}
	return out
}

func isLatin(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !text.IsCJK(r)
}

// selfFrame returns what a Chinese question about the user says before
// its question word ("我叫什么名字？" → "我叫", "我住在哪里？" → "我住在",
// "我的生日是哪天？" → "我的生日是"), folded; "" for other questions or a
// frame shorter than two characters.
func selfFrame(q string) string {
	f := strings.TrimSpace(text.Fold(q))
	if !strings.HasPrefix(f, "我") {
		return ""
	}
	at := len(f)
	for _, w := range []string{"什么", "哪", "谁", "几", "多少", "怎么", "吗"} {
		if i := strings.Index(f, w); i >= 0 && i < at {
			at = i
		}
	}
	frame := strings.TrimSpace(f[:at])
	if at == len(f) || utf8.RuneCountInString(frame) < 2 {
		return ""
	}
	return frame
}
