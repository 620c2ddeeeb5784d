package memory

import (
	"context"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
	"github.com/mixchat/mixchat/prompts"
)

// Summaries, entity facts and triples: what the Summarizer and the
// Extractor read and what memory makes of their replies.

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

// label names the line's speaker (Line.Label).
func (l line) label() string { return l.export().Label() }

func (l line) String() string { return l.export().String() }

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

// summarize folds lines into the summary prev with the Summarizer (the
// caller checks there is one), cut to whole sentences within maxTokens.
func (m *Manager) summarize(ctx context.Context, prev string, lines []line, maxTokens int) (string, error) {
	s, err := m.summarizer.Summarize(ctx, prev, exportLines(lines), maxTokens)
	if err != nil {
		return "", err
	}
	return fitTokens(strings.TrimSpace(s), maxTokens, m.count), nil
}

// SummaryLines splits a summary into lines, keeping the speaker label a
// line of an extractive summary starts with ("Human: ..."); a line
// without one is the Summary's.
func SummaryLines(summary string) []Line { return exportLines(summaryLines(summary)) }

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

// extractEntities returns the facts lines state about entities, read by
// the Extractor (the caller checks there is one).
func (m *Manager) extractEntities(ctx context.Context, lines []line, known []string) ([]EntityFact, error) {
	return m.extractor.Entities(ctx, exportLines(lines), known)
}

// extractTriples returns the triples lines state, read by the Extractor.
func (m *Manager) extractTriples(ctx context.Context, lines []line) ([]Triple, error) {
	return m.extractor.Triples(ctx, exportLines(lines))
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

// mergeEntities adds facts (from turn) to ents, dropping repeated facts,
// keeping each entity's last maxFacts facts and the maxEntities entities
// most recently mentioned.
func mergeEntities(ents []EntityFacts, facts []EntityFact, turn int64, maxEntities, maxFacts int) []EntityFacts {
	ents = cloneDigest(Digest{Entities: ents}).Entities
	index := map[string]int{}
	for i, e := range ents {
		index[strings.ToLower(e.Name)] = i
	}
	for _, f := range facts {
		name, fact := strings.TrimSpace(f.Name), strings.TrimSpace(f.Fact)
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
