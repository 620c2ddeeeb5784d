package memory

import (
	"cmp"
	"context"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// The strategies. Each assembles, within budget tokens, the messages that
// follow the conversation's system messages: memory rendered as system
// messages (summary, facts, earlier excerpts) first, then recent turns as
// user and assistant messages.

// Shares of the budget the combined strategy gives its parts (at most:
// the summary and facts share only what combined saves on recent turns
// against retrieval, and what a part leaves goes to retrieved messages).
const (
	combinedSummaryShare = 0.15
	combinedFactsShare   = 0.10
	combinedRecentShare  = 0.20
	// summaryRelevance is the least cosine with the question a summary
	// line needs to enter the combined strategy's history.
	summaryRelevance     = 0.2
	factsShare           = 0.5 // entity and knowledge_graph: facts vs recent turns
	retrievalRecentShare = 0.3
)

func (m *Manager) assemble(ctx context.Context, strategy string, v *view, question string, budget, windowK int) ([]llm.Message, error) {
	budget = max(budget, 0)
	lb := m.labelsFor(v.turns, question)
	switch strategy {
	case Buffer:
		return m.turnsAsMessages(v.turns), nil
	case Window:
		if windowK <= 0 {
			windowK = m.cfg.windowK()
		}
		from := max(0, len(v.turns)-windowK)
		return m.recent(v, from, budget), nil
	case TokenBuffer:
		return m.recent(v, 0, budget), nil
	case Summary:
		out, used := m.summaryMessage(v, lb, budget)
		from := len(v.turns)
		for from > 0 && v.turns[from-1].ID > v.digest.Through {
			from--
		}
		return append(out, m.recent(v, from, budget-used)...), nil
	case SummaryBuffer:
		return m.summaryBuffer(ctx, v, lb, budget)
	case Entity:
		out, used := m.factsMessage(v, lb, question, int(float64(budget)*factsShare), false)
		return append(out, m.recent(v, max(0, len(v.turns)-m.cfg.RecentTurns), budget-used)...), nil
	case KnowledgeGraph:
		out, used := m.graphMessage(v, lb, question, int(float64(budget)*factsShare))
		return append(out, m.recent(v, max(0, len(v.turns)-m.cfg.RecentTurns), budget-used)...), nil
	case Retrieval:
		rec, used := m.recentUsed(v, max(0, len(v.turns)-m.cfg.RecentTurns), int(float64(budget)*retrievalRecentShare))
		out, _ := m.retrieved(ctx, v, lb, question, budget-used, len(rec))
		return append(out, rec...), nil
	case Compressed:
		return m.compressed(ctx, v, lb, question, budget)
	case Combined:
		return m.combined(ctx, v, lb, question, budget), nil
	}
	return nil, ErrUnknownStrategy
}

// exchanges returns the user and assistant messages of what assemble
// returns, without memory's system messages: for retrieval and combined,
// their recent turns, which the retrieved messages do not change, so no
// index is searched.
func (m *Manager) exchanges(ctx context.Context, strategy string, v *view, question string, budget, windowK int) ([]llm.Message, error) {
	budget = max(budget, 0)
	switch strategy {
	case Retrieval:
		return m.recent(v, max(0, len(v.turns)-m.cfg.RecentTurns), int(float64(budget)*retrievalRecentShare)), nil
	case Combined:
		return m.recent(v, max(0, len(v.turns)-m.cfg.RecentTurns), int(float64(budget)*combinedRecentShare)), nil
	}
	msgs, err := m.assemble(ctx, strategy, v, question, budget, windowK)
	if err != nil {
		return nil, err
	}
	out := msgs[:0:0]
	for _, msg := range msgs {
		if msg.Role != llm.RoleSystem {
			out = append(out, msg)
		}
	}
	return out, nil
}

func (m *Manager) messagesTokens(msgs []llm.Message) int {
	n := 0
	for _, msg := range msgs {
		n += m.messageTokens(msg.Content)
	}
	return n
}

func (m *Manager) turnsAsMessages(turns []Turn) []llm.Message {
	var out []llm.Message
	for _, t := range turns {
		out = append(out, turnMessages(t)...)
	}
	return out
}

// recent returns the latest turns from index from on that fit budget, as
// messages (whole turns only).
func (m *Manager) recent(v *view, from, budget int) []llm.Message {
	msgs, _ := m.recentUsed(v, from, budget)
	return msgs
}

// recentUsed is recent with the messages' tokens (messagesTokens of them,
// known from the turns').
func (m *Manager) recentUsed(v *view, from, budget int) ([]llm.Message, int) {
	start := len(v.turns)
	used := 0
	for start > from && used+v.tokens[start-1] <= budget {
		start--
		used += v.tokens[start]
	}
	return m.turnsAsMessages(v.turns[start:]), used
}

// labels are the headings of memory messages, in the conversation's
// language.
type labels struct {
	summary, excerpts, facts, graph, condensed, restated string
}

var (
	labelsEN = labels{
		summary:   "Summary of the earlier conversation:",
		excerpts:  "Earlier in this conversation:",
		facts:     "What is known from this conversation:",
		graph:     "Known facts (subject | relation | object):",
		condensed: "Facts from the conversation needed for the next question:",
		restated:  "The next question, restated:",
	}
	labelsZH = labels{
		summary:   "此前对话的摘要：",
		excerpts:  "本次对话中较早的相关内容：",
		facts:     "从本次对话得知：",
		graph:     "已知事实（主语 | 关系 | 宾语）：",
		condensed: "回答下一个问题所需的对话事实：",
		restated:  "下一个问题的完整表述：",
	}
)

// labelsFor picks the headings: in Config.Language when set, else in the
// language of the question, else of the user's latest questions — never
// of the answers (an English answer does not make a Chinese user's
// headings English).
func (m *Manager) labelsFor(turns []Turn, question string) labels {
	if m.chinese(turns, question) {
		return labelsZH
	}
	return labelsEN
}

// labelTurns is how many of the latest turns labelsFor reads.
const labelTurns = 3

// chinese reports whether memory speaks Chinese for question in a
// conversation with turns (see labelsFor).
func (m *Manager) chinese(turns []Turn, question string) bool {
	switch m.cfg.Language {
	case LanguageZH:
		return true
	case LanguageEN:
		return false
	}
	if strings.TrimSpace(question) != "" {
		return isCJKText(question)
	}
	var b strings.Builder
	for i := max(0, len(turns)-labelTurns); i < len(turns); i++ {
		b.WriteString(turns[i].Question.Content)
	}
	return isCJKText(b.String())
}

// summaryMessage renders the digest's summary within budget (its latest
// lines when it does not fit), or nothing when there is none.
func (m *Manager) summaryMessage(v *view, lb labels, budget int) ([]llm.Message, int) {
	if v.derived == nil || len(v.derived.summary) == 0 || v.digest.Through == 0 {
		return nil, 0
	}
	used := m.messageTokens(lb.summary)
	ls := v.derived.summary
	i := len(ls)
	for i > 0 && used+ls[i-1].tokens <= budget {
		i--
		used += ls[i].tokens
	}
	if i == len(ls) {
		return nil, 0
	}
	var b strings.Builder
	b.WriteString(lb.summary)
	for _, l := range ls[i:] {
		b.WriteString("\n")
		b.WriteString(l.text)
	}
	return []llm.Message{{Role: llm.RoleSystem, Content: b.String()}}, used
}

// relevantSummary renders the summary lines that share terms with
// question (at least summaryRelevance cosine), within budget, in summary
// order: the combined strategy's summary, which competes for the budget
// with retrieved messages and so takes only what bears on the question.
func (m *Manager) relevantSummary(v *view, lb labels, question string, budget int) ([]llm.Message, int) {
	if v.derived == nil || len(v.derived.summary) == 0 || v.digest.Through == 0 {
		return nil, 0
	}
	qv := text.Count(queryTerms(question))
	var cands []candidate
	for i, l := range v.derived.summary {
		if s := text.Cosine(qv, l.vec); s >= summaryRelevance {
			cands = append(cands, candidate{i, s, i, l.tokens})
		}
	}
	return m.pack(lb.summary, cands, budget, func(i int) string { return "\n" + v.derived.summary[i].text })
}

// factsMessage renders the entity facts relevant to question within
// budget. With namedOnly, only entities the question names (or the user,
// for a first-person question) count.
func (m *Manager) factsMessage(v *view, lb labels, question string, budget int, namedOnly bool) ([]llm.Message, int) {
	if v.derived == nil || len(v.derived.facts) == 0 {
		return nil, 0
	}
	qv := text.Count(queryTerms(question))
	fp := firstPerson(question)
	named := map[string]float64{}
	var facts []candidate
	for i := range v.derived.facts {
		f := &v.derived.facts[i]
		es, ok := named[f.entity]
		if !ok {
			switch {
			case containsWord(question, f.entity):
				es = 2
			case fp && f.entity == UserLabel:
				es = 1.5
			case namedOnly:
				es = -1
			}
			named[f.entity] = es
		}
		if es < 0 {
			continue
		}
		if s := es + text.Cosine(qv, f.vec) + 0.001*float64(f.order); s > 0.05 {
			facts = append(facts, candidate{i, s, f.order, f.tokens})
		}
	}
	return m.pack(lb.facts, facts, budget, func(i int) string {
		f := &v.derived.facts[i]
		return "\n- " + f.entity + " — " + f.text
	})
}

// graphMessage renders the triples touching question within budget.
func (m *Manager) graphMessage(v *view, lb labels, question string, budget int) ([]llm.Message, int) {
	if v.derived == nil || len(v.derived.triples) == 0 {
		return nil, 0
	}
	qv := text.Count(queryTerms(question))
	fp := firstPerson(question)
	mentioned := map[string]bool{}
	mention := func(s string) bool {
		ok, seen := mentioned[s]
		if !seen {
			ok = containsWord(question, s)
			mentioned[s] = ok
		}
		return ok
	}
	var ts []candidate
	for i := range v.derived.triples {
		t := &v.derived.triples[i]
		s := text.Cosine(qv, t.subjObj) + 0.5*text.Cosine(qv, t.rel)
		if mention(t.t.Subject) || mention(t.t.Object) {
			s += 1
		}
		if fp && t.t.Subject == UserLabel {
			s += 0.5
		}
		if s > 0.05 {
			ts = append(ts, candidate{i, s + 0.0001*float64(t.order), t.order, t.tokens})
		}
	}
	return m.pack(lb.graph, ts, budget, func(i int) string {
		t := v.derived.triples[i].t
		return "\n" + t.Subject + " | " + t.Relation + " | " + t.Object
	})
}

// candidate is one line a system message may hold: its index in the
// caller's list, relevance, position in the digest and size in tokens.
type candidate struct {
	i      int
	score  float64
	order  int
	tokens int
}

// pack keeps the best-scored candidates that fit budget together with
// header, puts them back in digest order and renders them under header as
// one system message (line renders candidate i); nil when none fits.
func (m *Manager) pack(header string, cands []candidate, budget int, line func(i int) string) ([]llm.Message, int) {
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].score > cands[b].score })
	used := m.messageTokens(header)
	var chosen []candidate
	for _, c := range cands {
		if used+c.tokens > budget {
			continue
		}
		used += c.tokens
		chosen = append(chosen, c)
	}
	if len(chosen) == 0 {
		return nil, 0
	}
	sort.Slice(chosen, func(a, b int) bool { return chosen[a].order < chosen[b].order })
	var b strings.Builder
	b.WriteString(header)
	for _, c := range chosen {
		b.WriteString(line(c.i))
	}
	return []llm.Message{{Role: llm.RoleSystem, Content: b.String()}}, used
}

// retrieved renders the past messages most relevant to question that fit
// budget, leaving out the last skipMessages messages (already present as
// recent turns), in conversation order under date headings.
func (m *Manager) retrieved(ctx context.Context, v *view, lb labels, question string, budget, skipMessages int) ([]llm.Message, int) {
	if v.index == nil || budget <= 0 {
		return nil, 0
	}
	ranked := v.index.search(ctx, question, m.cfg.Retrieval.VectorWeight, m.cfg.Retrieval.NeighborWeight, m.loc)
	if ranked.len() == 0 {
		return nil, 0
	}
	// The walk reads about as many messages as the budget holds at their
	// mean size, and those of the recent turns.
	w := &excerptWalk{m: m, budget: budget, used: m.messageTokens(lb.excerpts) + 1, skipFrom: math.MaxInt64,
		skip: map[string]bool{}, days: map[string]int{}, names: dayNames{loc: m.loc}}
	first := skipMessages + v.index.fits(budget)
	// Messages of the recent turns (from turn skipFrom on) are already
	// there.
	for i := len(v.turns) - 1; i >= 0 && skipMessages > 0; i-- {
		for _, msg := range []Message{v.turns[i].Answer, v.turns[i].Question} {
			if msg.Content != "" && skipMessages > 0 {
				w.skip[docID(v.turns[i].ID, msg.Role)] = true
				w.skipFrom = min(w.skipFrom, v.turns[i].ID)
				skipMessages--
			}
		}
	}
	if len(v.turns) > 0 {
		w.lastTurn = v.turns[len(v.turns)-1].ID
	}
	w.chosen = make([]excerpt, 0, min(first, ranked.len()))
	ranked.fill(first, w)
	chosen, used := w.chosen, w.used
	if len(chosen) == 0 {
		return nil, 0
	}
	// used sums the lines' tokens, each with its line break: an upper bound
	// of the whole text's (a tokenizer may merge a break with the
	// punctuation before it, never split a line further).
	s := m.renderExcerpts(lb.excerpts, chosen)
	return []llm.Message{{Role: llm.RoleSystem, Content: s}}, used
}

// excerptWalk chooses retrieved's excerpts: the messages of a ranking
// that fit budget, best first, each day's first under a heading of that
// day (a filler).
type excerptWalk struct {
	m            *Manager
	budget, used int
	skip         map[string]bool // messages already shown, from turn skipFrom on
	skipFrom     int64
	lastTurn     int64          // messages of later turns are not shown
	days         map[string]int // the tokens of each day's heading; -1 once it is shown
	names        dayNames
	chosen       []excerpt
	// The day heading last looked up, and its tokens (-1 once shown):
	// messages of one day come in runs.
	lastDay  string
	lastDayN int
}

func (w *excerptWalk) room() int { return w.budget - w.used }

// passes reports whether d (whose docHot is h) is passed over however
// much room is left.
func (w *excerptWalk) passes(d *indexDoc, h *docHot) bool {
	return h.turn > w.lastTurn || (h.turn >= w.skipFrom && w.skip[d.id])
}

// heading returns the day of a message of h and its heading's tokens, 0
// when it is shown already (or the message has no day).
func (w *excerptWalk) heading(h *docHot) (string, int) {
	day := w.names.of(h.at)
	if day == "" {
		return "", 0
	}
	if day != w.lastDay {
		n, ok := w.days[day]
		if !ok {
			n = w.m.count("["+day+"]") + 1
			w.days[day] = n
		}
		w.lastDay, w.lastDayN = day, n
	}
	return day, max(w.lastDayN, 0)
}

func (w *excerptWalk) offer(d *indexDoc, h *docHot) (stop bool) {
	if w.passes(d, h) {
		return false
	}
	room := w.room()
	tokens := int(h.tokens)
	if tokens > room { // with its day's heading, all the more
		return room < walkRoom
	}
	day, n := w.heading(h)
	if tokens+n > room {
		return room < walkRoom
	}
	w.used += tokens + n
	if day != "" && w.lastDayN >= 0 { // heading made day the last day
		w.days[day] = -1
		w.lastDayN = -1
	}
	w.chosen = append(w.chosen, newExcerpt(d, h, day))
	return false
}

// dayNames formats dates for headings ("2 Jan 2006" in loc, "" for an
// unset time), formatting a day once however many messages it has in a
// row, and reading the date of a time of that day only to see that it is.
type dayNames struct {
	loc      *time.Location
	from, to int64 // the day named name, in Unix milliseconds: [from, to)
	name     string
}

// of returns the name of the day of ms (Unix milliseconds).
func (n *dayNames) of(ms int64) string {
	if ms <= 0 {
		return ""
	}
	if n.name != "" && ms >= n.from && ms < n.to {
		return n.name
	}
	t := time.UnixMilli(ms).In(n.loc)
	y, m, d := t.Date()
	from := time.Date(y, m, d, 0, 0, 0, 0, n.loc)
	n.from, n.to = from.UnixMilli(), from.AddDate(0, 0, 1).UnixMilli()
	n.name = t.Format("2 Jan 2006")
	return n.name
}

// excerpt is a retrieved message and its day's heading; order sorts
// excerpts in conversation order (by turn, the user's message first).
type excerpt struct {
	order int64
	doc   *indexDoc
	day   string
}

func newExcerpt(d *indexDoc, h *docHot, day string) excerpt {
	o := 2 * h.turn
	if h.flags&docUser == 0 {
		o++
	}
	return excerpt{order: o, doc: d, day: day}
}

// sortExcerpts puts excerpts in conversation order: by order, then role
// (two replies in a turn). When there are many and no two have the same
// order, which is then the whole of it, it sorts integers: each order,
// less the least, with the excerpt's index in the lowest bits.
func sortExcerpts(docs []excerpt) {
	n := len(docs)
	if n < fastSortMin {
		slowSortExcerpts(docs)
		return
	}
	lo, hi := docs[0].order, docs[0].order
	for _, e := range docs[1:] {
		lo, hi = min(lo, e.order), max(hi, e.order)
	}
	ib := bits.Len(uint(n - 1))
	if span := uint64(hi) - uint64(lo); hi-lo < 0 || bits.Len64(span)+ib > 64 {
		slowSortExcerpts(docs)
		return
	}
	buf := excerptScratch.Get().(*excerptBufs)
	defer excerptScratch.Put(buf)
	buf.keys, buf.sorted = grow(buf.keys, n), grow(buf.sorted, n)
	keys, sorted := buf.keys, buf.sorted
	for i, e := range docs {
		keys[i] = uint64(e.order-lo)<<ib | uint64(i)
	}
	slices.Sort(keys)
	for i := 1; i < n; i++ {
		if keys[i]>>ib == keys[i-1]>>ib {
			slowSortExcerpts(docs)
			return
		}
	}
	for j, k := range keys {
		sorted[j] = docs[k&(1<<ib-1)]
	}
	copy(docs, sorted)
	clear(sorted) // the pool keeps no message
}

// fastSortMin is the fewest excerpts sortExcerpts sorts as integers.
const fastSortMin = 48

// excerptBufs is sortExcerpts' scratch, kept in excerptScratch.
type excerptBufs struct {
	keys   []uint64
	sorted []excerpt
}

var excerptScratch = sync.Pool{New: func() any { return new(excerptBufs) }}

func slowSortExcerpts(docs []excerpt) {
	slices.SortFunc(docs, func(a, b excerpt) int {
		if c := cmp.Compare(a.order, b.order); c != 0 {
			return c
		}
		return strings.Compare(a.doc.line.role, b.doc.line.role) // two replies in a turn
	})
}

// renderExcerpts writes docs in conversation order with a date heading
// whenever the day changes.
func (m *Manager) renderExcerpts(title string, docs []excerpt) string {
	sortExcerpts(docs)
	// The size to grow b by, and the first byte of each text read (and
	// added, at most 1, to the size): these loads do not wait for one
	// another, so the texts, each somewhere in memory, are read at once
	// rather than one after the other as they are written.
	size := len(title)
	for _, e := range docs {
		t := e.doc.line.text
		size += len(e.day) + 3 + len(e.doc.line.speaker) + 5 + 3 + len(t) // label: speaker, Human or AI
		if len(t) > 0 {
			size += int(t[0] >> 7)
		}
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(title)
	last := ""
	for _, e := range docs {
		if e.day != "" && e.day != last {
			b.WriteString("\n[")
			b.WriteString(e.day)
			b.WriteString("]")
			last = e.day
		}
		b.WriteString("\n")
		b.WriteString(e.doc.line.label())
		b.WriteString(": ")
		b.WriteString(e.doc.line.text)
	}
	return b.String()
}

// compressed condenses the last exchanges for question: the facts needed
// and the restated question when it depends on them, else (or when the
// model fails) the exchanges verbatim.
func (m *Manager) compressed(ctx context.Context, v *view, lb labels, question string, budget int) ([]llm.Message, error) {
	pairs := m.recent(v, max(0, len(v.turns)-m.cfg.Condense.MaxPairs), min(budget, m.cfg.Condense.MaxTokens))
	if len(pairs) == 0 {
		return nil, nil
	}
	c, err := m.CondenseQuestion(ctx, pairs, question)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// The model failed: the exchanges themselves still serve.
		m.log.Warn("condense failed; recalling the last exchanges verbatim", "err", err)
		return pairs, nil
	}
	if c.Skipped || c.Context == "" {
		return pairs, nil
	}
	s := lb.condensed + "\n" + c.Context
	if c.Standalone != "" && c.Standalone != question {
		s += "\n" + lb.restated + " " + c.Standalone
	}
	return []llm.Message{{Role: llm.RoleSystem, Content: fitTokens(s, max(budget-4, 20), m.count)}}, nil
}
