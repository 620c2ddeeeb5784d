package memory

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
	"github.com/mixchat/mixchat/prompts"
)

// Summaries, entity facts and triples. With a generative model they come
// from the memory_* prompts; with the offline model (or none) they are
// extractive: selected sentences and lexical patterns, never invented text.

// Prompt groups of prompts/.
const (
	summaryGroup  = "memory_summary"
	entityGroup   = "memory_entity"
	triplesGroup  = "memory_triples"
	condenseGroup = "memory_condense"
	factsGroup    = "memory_facts"
	longTermGroup = "memory_longterm"
)

func hasPrompt(group, name string) bool { return prompts.Has(group, name) }

// What the memory_* templates see.
type (
	// summaryData: memory_summary.
	summaryData struct {
		Summary  string   // the current summary ("" at first)
		Lines    []string // new lines, "Speaker: text"
		MaxWords int
	}
	// linesData: memory_entity, memory_triples, memory_facts.
	linesData struct {
		Lines []string
		Known []string // entity names, or facts, already known
	}
	// condenseData: memory_condense.
	condenseData struct {
		Lines    []string
		Question string
	}
	// longTermData: memory_longterm.
	longTermData struct {
		Summary string
		Facts   []string
	}
)

// UserLabel is the entity name of the person talking to the assistant when
// messages carry no speaker name.
const UserLabel = "user"

// line is one message as summaries and extraction read it.
type line struct {
	turn    int64
	role    string
	speaker string // the speaker's name; "" when unknown
	text    string
}

// label names the line's speaker: the name when known, else Human or AI
// (the labels of the conversation prompt).
func (l line) label() string {
	if l.speaker != "" {
		return l.speaker
	}
	if l.role == llm.RoleAssistant {
		return "AI"
	}
	return "Human"
}

// entity is the entity a line's first-person statements are about: the
// speaker's name, "user" for an unnamed user, "" for the unnamed AI.
func (l line) entity() string {
	if l.speaker != "" {
		return l.speaker
	}
	if l.role == llm.RoleUser {
		return UserLabel
	}
	return ""
}

func (l line) String() string { return l.label() + ": " + l.text }

// SpeakerKey is the Metadata.Extra key naming a message's speaker, for
// conversations between named people (an imported chat log, a group chat).
const SpeakerKey = "speaker"

// speakerOf returns the speaker name a message carries, or "".
func speakerOf(m Message) string {
	if s, ok := m.Metadata.Extra[SpeakerKey].(string); ok {
		return strings.TrimSpace(s)
	}
	return ""
}

// turnLines returns the non-empty messages of turns as lines.
func turnLines(turns []Turn) []line {
	out := make([]line, 0, 2*len(turns))
	for _, t := range turns {
		for _, m := range []Message{t.Question, t.Answer} {
			if c := strings.TrimSpace(m.Content); c != "" {
				out = append(out, line{turn: t.ID, role: m.Role, speaker: speakerOf(m), text: c})
			}
		}
	}
	return out
}

func lineStrings(ls []line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}

// generative reports whether memory calls a model (rather than working
// extractively).
func (m *Manager) generative() bool { return m.model != nil && !m.extractive }

// complete renders prompt group with data and asks the model, returning the
// trimmed reply.
func (m *Manager) complete(ctx context.Context, group string, data any, maxTokens int, question string, context []string) (string, error) {
	p, err := prompts.Render(group, "default", data)
	if err != nil {
		return "", err
	}
	zero := float32(0)
	resp, err := m.model.Complete(ctx, llm.Request{
		Model:       m.modelName,
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: p}},
		Temperature: &zero,
		MaxTokens:   maxTokens,
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", group, err)
	}
	return strings.TrimSpace(resp.Text), nil
}

// summarize folds lines into the summary prev, keeping it within maxTokens.
func (m *Manager) summarize(ctx context.Context, prev string, lines []line, maxTokens int) (string, error) {
	if !m.generative() {
		return extractiveSummary(prev, lines, maxTokens, m.count), nil
	}
	data := summaryData{Summary: prev, Lines: lineStrings(lines), MaxWords: max(20, maxTokens*3/4)}
	s, err := m.complete(ctx, summaryGroup, data, maxTokens*2, "", nil)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", fmt.Errorf("%s: empty reply", summaryGroup)
	}
	return fitTokens(s, maxTokens, m.count), nil
}

// summaryLines splits a summary into lines, keeping the speaker label an
// extractive summary line starts with ("Human: ...").
func summaryLines(summary string) []line {
	var out []line
	for _, s := range strings.Split(summary, "\n") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if label, rest, ok := strings.Cut(s, ": "); ok && utf8.RuneCountInString(label) <= 30 && !strings.ContainsAny(label, "。.!?！？") {
			out = append(out, line{speaker: label, text: rest})
			continue
		}
		out = append(out, line{speaker: "Summary", text: s})
	}
	return out
}

// fitTokens cuts s to whole sentences within maxTokens (the first
// sentence cut by runes when even it does not fit).
func fitTokens(s string, maxTokens int, count func(string) int) string {
	if count(s) <= maxTokens {
		return s
	}
	var b strings.Builder
	used := 0
	for _, sent := range text.Sentences(s) {
		n := count(sent) + 1
		if used+n > maxTokens {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sent)
		used += n
	}
	if b.Len() == 0 {
		rs := []rune(s)
		for len(rs) > 1 && count(string(rs)) > maxTokens {
			rs = rs[:len(rs)*3/4]
		}
		return string(rs)
	}
	return b.String()
}

// extractiveSummary is the offline progressive summary: the sentences of
// the previous summary and the new lines that carry the most information,
// within maxTokens, in their original order, one per line with its
// speaker's label.
//
// A sentence's weight is the sum over its distinct terms of 1 + ln(df),
// df being the number of candidate sentences sharing the term (terms the
// conversation keeps returning to are its topics), divided by its length,
// then raised for first-person statements (what people say about
// themselves), names and numbers and sentences already in the summary, and
// lowered for questions and fragments. Near-duplicates of a chosen sentence
// are skipped.
func extractiveSummary(prev string, lines []line, maxTokens int, count func(string) int) string {
	type cand struct {
		text  string
		terms []string
		score float64
		pos   int
	}
	var cs []cand
	// add takes a candidate line and its body (the line without its
	// speaker label); bodies of fewer than two terms ("Hi!", "OK.") carry
	// nothing worth keeping.
	add := func(s, body string, bonus float64) {
		s = strings.TrimSpace(s)
		terms := distinct(docTerms(body))
		if s == "" || len(terms) < 2 {
			return
		}
		cs = append(cs, cand{text: s, terms: terms, score: bonus, pos: len(cs)})
	}
	for _, l := range summaryLines(prev) {
		add(l.String(), l.text, 1.2)
	}
	for _, l := range lines {
		for _, s := range text.Sentences(l.text) {
			bonus := 1.0
			body := s
			if isQuestion(body) {
				bonus *= 0.5
			} else if l.entity() != "" && firstPerson(body) {
				bonus *= 1.6
			}
			if hasNameOrNumber(body) {
				bonus *= 1.3
			}
			add(l.label()+": "+s, body, bonus)
		}
	}
	if len(cs) == 0 {
		return ""
	}
	df := map[string]int{}
	for _, c := range cs {
		for _, t := range c.terms {
			df[t]++
		}
	}
	for i := range cs {
		c := &cs[i]
		if len(c.terms) < 3 {
			c.score *= 0.3
		}
		var w float64
		for _, t := range c.terms {
			w += 1 + math.Log(float64(df[t]))
		}
		c.score *= w / (4 + float64(count(c.text))*0.25)
	}
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cs[order[a]].score > cs[order[b]].score })
	var chosen []int
	used := 0
	for _, i := range order {
		n := count(cs[i].text) + 1
		if used+n > maxTokens {
			continue
		}
		dup := false
		for _, j := range chosen {
			if text.Cosine(text.Count(cs[i].terms), text.Count(cs[j].terms)) > 0.8 {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		chosen = append(chosen, i)
		used += n
	}
	sort.Ints(chosen)
	out := make([]string, len(chosen))
	for k, i := range chosen {
		out[k] = cs[i].text
	}
	return strings.Join(out, "\n")
}

func distinct(ts []string) []string {
	seen := make(map[string]bool, len(ts))
	out := ts[:0:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func isQuestion(s string) bool {
	s = strings.TrimRight(strings.TrimSpace(s), `"'”’)）`)
	return strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") || strings.HasSuffix(s, "吗") || strings.HasSuffix(s, "呢")
}

// hasNameOrNumber reports whether s has a digit, a capitalised word after
// its first, or a quoted title.
func hasNameOrNumber(s string) bool {
	if strings.ContainsAny(s, "0123456789《「“") {
		return true
	}
	ws := words(s)
	for i, w := range ws {
		if i > 0 && w != "I" && startsUpper(w) {
			return true
		}
	}
	return false
}

func startsUpper(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}

// entityFact is one extracted fact before merging.
type entityFact struct {
	name, fact string
}

// extractEntities returns the facts lines state about entities.
func (m *Manager) extractEntities(ctx context.Context, lines []line, known []string) ([]entityFact, error) {
	if !m.generative() {
		return lexicalEntities(lines, known), nil
	}
	data := linesData{Lines: lineStrings(lines), Known: known}
	return extractRows(ctx, m, entityGroup, data, lines, 2, func(row []string, said string) (entityFact, bool) {
		return entityFact{name: row[0], fact: row[1]}, grounded(row[0], said) && groundedTerms(row[1], said)
	})
}

// extractTriples returns the triples lines state.
func (m *Manager) extractTriples(ctx context.Context, lines []line) ([]Triple, error) {
	if !m.generative() {
		return lexicalTriples(lines), nil
	}
	data := linesData{Lines: lineStrings(lines)}
	return extractRows(ctx, m, triplesGroup, data, lines, 3, func(row []string, said string) (Triple, bool) {
		// A triple the conversation does not state (the prompt's example,
		// a guess) is dropped.
		return Triple{Subject: row[0], Relation: row[1], Object: row[2]}, grounded(row[0], said) && grounded(row[2], said)
	})
}

// extractRows asks the model group's prompt with data about lines and
// returns what keep makes of each row of n fields of its reply, dropping
// the rows keep finds not grounded in what the lines said.
func extractRows[T any](ctx context.Context, m *Manager, group string, data linesData, lines []line, n int, keep func(row []string, said string) (T, bool)) ([]T, error) {
	out, err := m.complete(ctx, group, data, 800, "", nil)
	if err != nil {
		return nil, err
	}
	var res []T
	said := linesText(lines)
	for _, row := range splitRows(out, n) {
		if v, ok := keep(row, said); ok {
			res = append(res, v)
		}
	}
	return res, nil
}

// splitRows parses "a | b [| c]" lines of a model's reply into n fields,
// skipping NONE, headers and malformed lines. A leading "- " or "(" and a
// trailing ")" are tolerated.
func splitRows(out string, n int) [][]string {
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "- ")
		l = strings.TrimPrefix(l, "* ")
		if strings.HasPrefix(l, "(") && strings.HasSuffix(l, ")") {
			l = l[1 : len(l)-1]
		}
		if l == "" || strings.EqualFold(l, "none") {
			continue
		}
		parts := strings.Split(l, "|")
		if len(parts) < n {
			continue
		}
		if len(parts) > n { // the last field may contain '|'
			parts = append(parts[:n-1], strings.Join(parts[n-1:], "|"))
		}
		ok := true
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
			if parts[i] == "" {
				ok = false
			}
		}
		if ok {
			rows = append(rows, parts)
		}
	}
	return rows
}

// notNames are capitalised words that start English sentences but name
// nothing.
var notNames = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`I I'm I've I'd I'll The A An It It's Its This That These Those There Here Yes No Not Hey Hi Hello
		Thanks Thank Wow Oh Ooh Yeah Yep Yup Sure Great Awesome Cool So And But Or Also Well Ok Okay OK My Your Our Their His Her
		We You He She They Me Us Them What When Where Who Why How Which Congrats Congratulations Haha Lol Absolutely Definitely
		Totally Nice Good Love Glad Sorry Just Really Do Did Does Have Has Had Let's Let Can Could Would Should Will Maybe Perhaps
		Amazing Exactly True Right Agreed Anyway Btw Hmm Ah Aw Aww Bye See Take Keep Sounds Sounds Looks Hope Happy Definitely
		If As At In On Of For With From To By After Before Since Then Now Today Yesterday Tomorrow Last Next Every Some Any All
		Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August September
		October November December Mr Mrs Ms Dr AI Human Book Reserve Find Give Show Please Get Make Try Check Recommend
		Suggest Need Want Cancel Add Send Call Pick Choose Tell`) {
		notNames[w] = true
	}
}

// names returns the names in an English sentence: runs of capitalised
// words, a sentence-initial one only when it is a known name or followed
// by another capitalised word. In Chinese, titles in 《》 and quoted terms.
func names(s string, known map[string]bool) []string {
	var out []string
	for _, pair := range [][2]string{{"《", "》"}, {"「", "」"}, {"“", "”"}} {
		rest := s
		for {
			i := strings.Index(rest, pair[0])
			if i < 0 {
				break
			}
			rest = rest[i+len(pair[0]):]
			j := strings.Index(rest, pair[1])
			if j < 0 {
				break
			}
			if n := strings.TrimSpace(rest[:j]); n != "" && utf8.RuneCountInString(n) <= 20 {
				out = append(out, n)
			}
			rest = rest[j+len(pair[1]):]
		}
	}
	ws := words(s)
	for i := 0; i < len(ws); i++ {
		if !startsUpper(ws[i]) || notNames[ws[i]] {
			continue
		}
		j := i
		for j+1 < len(ws) && startsUpper(ws[j+1]) && !notNames[ws[j+1]] {
			j++
		}
		name := strings.Join(ws[i:j+1], " ")
		if i > 0 || j > i || known[name] {
			out = append(out, name)
		}
		i = j
	}
	return out
}

// lexicalEntities is offline entity extraction: each statement (not a
// question, at least four terms) is a fact about the names it mentions and,
// when it is in the first person, about its speaker.
func lexicalEntities(lines []line, known []string) []entityFact {
	knownSet := map[string]bool{}
	for _, k := range known {
		knownSet[k] = true
	}
	for _, l := range lines {
		if l.speaker != "" {
			knownSet[l.speaker] = true
		}
	}
	var out []entityFact
	for _, l := range lines {
		if !statesFacts(l) {
			continue
		}
		for _, s := range statements(l.text) {
			if len(docTerms(s)) < 3 {
				continue
			}
			fact := truncateRunes(l.label()+": "+s, 240)
			seen := map[string]bool{}
			if e := l.entity(); e != "" && firstPerson(s) {
				out = append(out, entityFact{e, fact})
				seen[e] = true
			}
			for _, n := range names(s, knownSet) {
				if !seen[n] {
					seen[n] = true
					out = append(out, entityFact{n, fact})
				}
			}
		}
	}
	return out
}

// mergeEntities adds facts (from turn) to ents, dropping repeated facts,
// keeping each entity's last maxFacts facts and the maxEntities entities
// most recently mentioned.
func mergeEntities(ents []EntityFacts, facts []entityFact, turn int64, maxEntities, maxFacts int) []EntityFacts {
	ents = cloneDigest(Digest{Entities: ents}).Entities
	index := map[string]int{}
	for i, e := range ents {
		index[strings.ToLower(e.Name)] = i
	}
	for _, f := range facts {
		name, fact := strings.TrimSpace(f.name), strings.TrimSpace(f.fact)
		if name == "" || fact == "" {
			continue
		}
		key := strings.ToLower(name)
		i, ok := index[key]
		if !ok {
			i = len(ents)
			index[key] = i
			ents = append(ents, EntityFacts{Name: name})
		}
		e := &ents[i]
		e.Turn = max(e.Turn, turn)
		dup := false
		for _, old := range e.Facts {
			if old == fact || text.Similarity(old, fact) > 0.9 {
				dup = true
				break
			}
		}
		if !dup {
			e.Facts = append(e.Facts, fact)
		}
		if len(e.Facts) > maxFacts {
			e.Facts = slices.Clone(e.Facts[len(e.Facts)-maxFacts:])
		}
	}
	if len(ents) > maxEntities {
		sort.SliceStable(ents, func(a, b int) bool { return ents[a].Turn > ents[b].Turn })
		ents = ents[:maxEntities]
	}
	return ents
}
