package llm

import (
	"cmp"
	"context"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// OfflineName is the offline model's name when none is configured.
const OfflineName = "offline-extractive"

// Replies of the offline model when nothing in the context is relevant.
const (
	offlineNothingZH = "（离线抽取式模型）在已知内容中没有找到与问题相关的信息。"
	offlineNothingEN = "(offline extractive model) Nothing in the given context is relevant to the question."
)

// IsOfflineNothing reports whether text is the offline model's reply when
// nothing in its context is relevant (it quotes nothing).
func IsOfflineNothing(text string) bool {
	text = strings.TrimSpace(text)
	return text == offlineNothingZH || text == offlineNothingEN
}

// OfflineOptions configures the offline model. The zero value is usable.
type OfflineOptions struct {
	// Name is reported in Response.Model; empty means OfflineName.
	Name string
	// MaxSentences caps the sentences of a reply; 0 means 3.
	MaxSentences int
	// MinScore is the relevance in [0,1] a sentence needs to be used: the
	// share of the question's content (its characters and words, weighted
	// by rarity in the context) that the sentence contains. 0 means 0.25.
	MinScore float64
}

// Offline is the extractive model that needs no network and no weights. It
// answers the question from the sentences of the context it is given: it
// ranks them by lexical similarity to the question (CJK characters and
// bigrams, English stems, weighted by their rarity in the context), drops
// near duplicates (maximal marginal relevance), keeps the best few in their
// original order and says plainly when nothing is relevant. It never
// invents text: every sentence of a reply is a sentence of the context,
// except the fixed phrases that say who said it or that nothing was found.
//
// The question is Request.Question, or the last user message. The context
// is Request.Context, or, when that is nil, every message but the
// question's. A question message that carries a whole rendered prompt
// (history lines such as "Human: ..." / "AI: ..." and the question as the
// last "Human:" line) is split into question and context. Template
// boilerplate is dropped and speaker prefixes are stripped; a sentence the
// user said is reported as such ("你之前说过：“...”" / "You said earlier: ...").
//
// Replies are deterministic. Offline is safe for concurrent use.
type Offline struct {
	name     string
	maxSent  int
	minScore float64
	tok      *Tokenizer
}

// NewOffline returns the offline model.
func NewOffline(opts OfflineOptions) *Offline {
	o := &Offline{name: opts.Name, maxSent: opts.MaxSentences, minScore: opts.MinScore}
	if o.name == "" {
		o.name = OfflineName
	}
	if o.maxSent <= 0 {
		o.maxSent = 3
	}
	if o.minScore <= 0 {
		o.minScore = 0.25
	}
	o.tok = NewTokenizer(o.name)
	return o
}

// Name returns the configured name.
func (o *Offline) Name() string { return o.name }

// Extractive reports true: replies are assembled from the context.
func (o *Offline) Extractive() bool { return true }

// Complete answers req from its context.
func (o *Offline) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	return o.answer(req), nil
}

// Stream answers req from its context, in pieces of a few characters (a
// Latin word is never split). It stops when ctx is done or fn fails.
func (o *Offline) Stream(ctx context.Context, req Request, fn func(delta string) error) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	resp := o.answer(req)
	if fn == nil {
		return resp, nil
	}
	for _, p := range pieces(resp.Text, 8) {
		if err := ctx.Err(); err != nil {
			return Response{}, err
		}
		if err := fn(p); err != nil {
			return Response{}, err
		}
	}
	return resp, nil
}

func (o *Offline) answer(req Request) Response {
	if reply, ok := fuse(req); ok {
		return o.respond(req, req.Question, reply)
	}
	q, sents, lines := material(req)
	zh := isChinese(q, sents)
	reply, ok := readStructured(q, lines)
	if !ok {
		if holds := partHolder(q); holds != nil {
			sents = slices.DeleteFunc(slices.Clone(sents), func(s sentence) bool { return !holds(s.text, s.scope) })
		}
		picked := o.pick(q, sents, req.MaxTokens)
		reply = render(picked, zh)
	}
	if reply == "" {
		reply = offlineNothingEN
		if zh {
			reply = offlineNothingZH
		}
	}
	return o.respond(req, q, endSentence(reply))
}

// respond wraps a reply with its usage (estimated).
func (o *Offline) respond(req Request, q, reply string) Response {
	var prompt int
	if req.Context != nil {
		prompt = o.tok.Count(q)
		for _, c := range req.Context {
			prompt += o.tok.Count(c)
		}
	} else {
		prompt = o.tok.CountMessages(req.Messages)
	}
	completion := o.tok.Count(reply)
	return Response{
		Text:         reply,
		Model:        o.name,
		FinishReason: "stop",
		Extractive:   true,
		Usage:        Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion, Estimated: true},
	}
}

// speaker of a sentence.
const (
	speakerNone = iota
	speakerHuman
	speakerAI
)

type sentence struct {
	text    string
	speaker int
	pos     int  // order in the context
	line    int  // index of its line in the context's lines
	cite    int  // the context entry's number ("[n] ..."), 0 when unnumbered
	heading bool // a document heading (see appendSentences)
	// scope is the section path of a numbered entry's sentence: the
	// question's terms it holds count as the sentence's own (a question
	// naming the book or section is answered by any sentence of it).
	scope string
}

type entry struct {
	text    string
	speaker int
	doc     bool // from Request.Context: a document, which may have headings
}

// material finds the question and the context sentences of req, and the
// context's lines with their section paths.
func material(req Request) (string, []sentence, []ctxLine) {
	q := strings.TrimSpace(req.Question)
	qIdx := -1
	if q == "" {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == RoleUser {
				qIdx, q = i, req.Messages[i].Content
				break
			}
		}
	}
	var entries []entry
	if req.Context != nil {
		for _, c := range req.Context {
			entries = append(entries, entry{text: c, doc: true})
		}
	} else {
		for i, m := range req.Messages {
			if i == qIdx {
				continue
			}
			entries = append(entries, entry{text: m.Content, speaker: roleSpeaker(m.Role)})
		}
	}
	if qIdx >= 0 {
		// A question message that carries a rendered prompt: the last
		// "Human:" line is the question, the lines before it context.
		if before, question, ok := splitPrompt(q); ok {
			q = question
			if req.Context == nil {
				entries = append(entries, entry{text: before})
			}
		}
	}
	q = strings.TrimSpace(q)
	var out []sentence
	var lines []ctxLine
	for i, e := range entries {
		out, lines = appendSentences(out, lines, e, i)
	}
	// The question itself, and questions the user asked before, answer
	// nothing.
	qn := normalize(q)
	out = slices.DeleteFunc(out, func(s sentence) bool {
		n := normalize(s.text)
		return n == "" || n == qn || (s.speaker == speakerHuman && isQuestion(s.text))
	})
	for i := range out {
		out[i].pos = i
	}
	return q, out, lines
}

func roleSpeaker(role string) int {
	switch role {
	case RoleUser:
		return speakerHuman
	case RoleAssistant:
		return speakerAI
	}
	return speakerNone
}

// splitPrompt splits a rendered prompt at its last "Human:" line.
func splitPrompt(s string) (before, question string, ok bool) {
	if !strings.Contains(s, "\n") {
		return "", "", false
	}
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if sp, rest, found := speakerPrefix(strings.TrimSpace(lines[i])); found && sp == speakerHuman {
			if strings.TrimSpace(rest) == "" {
				continue
			}
			return strings.Join(lines[:i], "\n"), rest, true
		}
	}
	return "", "", false
}

var speakerNames = map[string]int{
	"human": speakerHuman, "user": speakerHuman, "用户": speakerHuman, "人类": speakerHuman,
	"ai": speakerAI, "assistant": speakerAI, "bot": speakerAI, "助手": speakerAI, "机器人": speakerAI,
}

// speakerPrefix recognises "Human: ...", "AI：...", "用户：..." and the like.
func speakerPrefix(line string) (speaker int, rest string, ok bool) {
	i := strings.IndexAny(line, ":：")
	if i <= 0 || i > 16 {
		return 0, "", false
	}
	sp, ok := speakerNames[strings.ToLower(strings.TrimSpace(line[:i]))]
	if !ok {
		return 0, "", false
	}
	_, size := utf8.DecodeRuneInString(line[i:])
	return sp, strings.TrimSpace(line[i+size:]), true
}

// Boilerplate of prompt templates: lines that start so, and blocks between
// instruction tags, are not context.
var (
	boilerplate = []string{
		"The following is a friendly conversation",
		"Current conversation:",
		"The AI is talkative",
		"If the AI does not know",
	}
	instructionTag = regexp.MustCompile(`(?is)<(指令|instructions?|system)>.*?</(指令|instructions?|system)>`)
	tag            = regexp.MustCompile(`</?[\p{Han}A-Za-z_]{1,16}>`)
)

// appendSentences adds the sentences and lines of context entry e (the
// idx-th). An entry numbered "[n] " is cited as [n]; its first line, when
// it reads as a heading and text follows, is its section path and no
// sentence. In a document (Request.Context), a heading (a short line that
// ends no sentence, followed by more text) sets the path of the lines after
// it and is a sentence marked as a heading.
func appendSentences(out []sentence, lines []ctxLine, e entry, idx int) ([]sentence, []ctxLine) {
	t := instructionTag.ReplaceAllString(e.text, "\n")
	t = tag.ReplaceAllString(t, "\n")
	cite := 0
	if m := entryNumber.FindStringSubmatch(t); m != nil && e.doc {
		cite = atoiSmall(m[1])
		t = t[len(m[0]):]
	}
	speaker := e.speaker
	path := ""
	var body []string
	for _, line := range strings.Split(t, "\n") {
		if line = strings.TrimSpace(line); line != "" && !isBoilerplate(line) {
			body = append(body, line)
		}
	}
	for i, line := range body {
		heading := e.doc && i+1 < len(body) && isHeading(line)
		if heading {
			path = joinPath(path, line)
			if i == 0 && cite > 0 {
				continue // the section path the answerer put above the text
			}
		}
		if sp, rest, ok := speakerPrefix(line); ok {
			speaker, line = sp, rest
		}
		lines = append(lines, ctxLine{text: line, path: path, cite: cite, entry: idx, doc: e.doc})
		for _, s := range text.Sentences(line) {
			sn := sentence{text: s, speaker: speaker, line: len(lines) - 1, cite: cite, heading: heading}
			if cite > 0 {
				sn.scope = path
			}
			out = append(out, sn)
		}
	}
	return out, lines
}

func isBoilerplate(line string) bool {
	for _, b := range boilerplate {
		if strings.HasPrefix(line, b) {
			return true
		}
	}
	return false
}

func isQuestion(s string) bool {
	s = strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("”’\"'」』)）", r) })
	return strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") || strings.HasSuffix(s, "吗")
}

// normalize keeps letters and digits, lower-cased, for equality tests.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

func isChinese(q string, sents []sentence) bool {
	if c, l := text.CountLetters(q); c > 0 || l > 0 {
		return c > 0
	}
	var c, l int
	for _, s := range sents {
		a, b := text.CountLetters(s.text)
		c, l = c+a, l+b
	}
	return c >= l/4 && c > 0
}

// Function characters and words carry no topic: a question and a sentence
// that share only these are not related. Used for scoring only.
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
}

func newQuery(q string) query {
	q = text.Fold(q) // either script matches the other
	qr := query{chars: map[rune]int{}, words: map[string]int{}, grams: map[string]int{}}
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
	size         int // CJK characters and Latin words: the sentence's length
}

func (qr query) match(s string) match {
	s = text.Fold(s)
	m := match{chars: make([]bool, qr.nChar), grams: make([]bool, qr.nGram)}
	for _, t := range text.Terms(s) {
		if k, ok := qr.grams[t]; ok {
			m.grams[k] = true
		}
		if r, _ := utf8.DecodeRuneInString(t); !text.IsCJK(r) {
			m.size++
			if k, ok := qr.words[t]; ok {
				m.chars[k] = true
			}
		}
	}
	for _, r := range s {
		if text.IsCJK(r) {
			m.size++
			if k, ok := qr.chars[r]; ok {
				m.chars[k] = true
			}
		}
	}
	return m
}

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

// pick returns the sentences of the reply, in context order.
func (o *Offline) pick(q string, sents []sentence, maxTokens int) []sentence {
	qr := newQuery(q)
	if len(sents) == 0 || qr.nChar+qr.nGram == 0 {
		return nil
	}
	matches, own, scope := make([]match, len(sents)), make([]match, len(sents)), make([]match, len(sents))
	charDF, gramDF := make([]int, qr.nChar), make([]int, qr.nGram)
	total := 0
	for i, s := range sents {
		m := qr.match(s.text)
		own[i] = m
		if s.scope != "" {
			sm := qr.match(s.scope)
			scope[i] = sm
			m = match{chars: slices.Clone(m.chars), grams: slices.Clone(m.grams), size: m.size}
			for k, ok := range sm.chars {
				m.chars[k] = m.chars[k] || ok
			}
			for k, ok := range sm.grams {
				m.grams[k] = m.grams[k] || ok
			}
		}
		matches[i] = m
		total += m.size
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
	coverage := func(has []bool, w []float64) (float64, bool) {
		var got, all float64
		for k, x := range w {
			all += x
			if has[k] {
				got += x
			}
		}
		if all == 0 {
			return 0, false
		}
		return got / all, true
	}
	// relOf is the share of the question's content m holds; the terms
	// skip holds (a section path) are left out of the question.
	relOf := func(m, skip match) float64 {
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
		cc, okc := coverage(m.chars, cw)
		cg, okg := coverage(m.grams, gw)
		if !okc && !okg && skip.chars != nil {
			// The path holds the whole question: count it all.
			cc, okc = coverage(m.chars, charW)
			cg, okg = coverage(m.grams, gramW)
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
	for i, s := range sents {
		c := &cands[i]
		c.sentence = s
		// The question's terms the sentence's section path holds count
		// for relevance; its own text must answer the rest (the question
		// about a document's subject asks what the document says of it).
		c.rel, c.own = relOf(matches[i], match{}), relOf(own[i], scope[i])
		c.rank = (c.rel + c.own) / 2 / (1 + 0.5*math.Log1p(float64(matches[i].size)/avg))
		if c.rel > 0 && isQuestion(c.text) {
			c.rank *= 0.75 // a question rarely answers one
		}
		if c.heading {
			c.rank *= 0.7 // a heading names what follows; it seldom says it
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
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cands[b].rank, cands[a].rank) })
	best := cands[order[0]]
	if best.rel < o.minScore {
		return nil
	}
	// Maximal marginal relevance over the sentences that are relevant
	// enough, near duplicates of a chosen one excluded. Besides MinScore, a
	// sentence must cover nearly as much of the question as the best one
	// (relCut) and not rank far below it (rankCut): a reply is better short
	// than padded with sentences that share one word with the question.
	const lambda, nearDup, relCut, rankCut = 0.7, 0.8, 0.7, 0.4
	var chosen []int
	vecs := map[int]text.Vector{}
	vec := func(i int) text.Vector {
		v, ok := vecs[i]
		if !ok {
			v = text.Count(text.Chars(cands[i].text))
			vecs[i] = v
		}
		return v
	}
	used := map[int]bool{}
	tokens, runes := 0, 0
	for len(chosen) < o.maxSent {
		pickAt, pickScore := -1, math.Inf(-1)
		for _, i := range order {
			c := cands[i]
			if used[i] || c.rel < o.minScore || c.rel < relCut*best.rel || c.own < relCut*best.own || c.rank < rankCut*best.rank {
				continue
			}
			sim := 0.0
			for _, j := range chosen {
				sim = math.Max(sim, text.Cosine(vec(i), vec(j)))
			}
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
		if n := utf8.RuneCountInString(cands[pickAt].text); len(chosen) > 0 && runes+n > maxReplyRunes {
			continue
		}
		runes += utf8.RuneCountInString(cands[pickAt].text)
		if maxTokens > 0 {
			t := o.tok.Count(cands[pickAt].text)
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
			utf8.RuneCountInString(text)+utf8.RuneCountInString(cands[n].text) <= maxReplyRunes; n++ {
			used[n] = true
			text += cands[n].text
			out = append(out, cands[n].sentence)
		}
	}
	slices.SortFunc(out, func(a, b sentence) int { return cmp.Compare(a.pos, b.pos) })
	return out
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
// one numbered context entry ends with its citation ("…利贞[1]。").
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
