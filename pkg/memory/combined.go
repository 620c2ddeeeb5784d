package memory

import (
	"context"
	"strings"

	"github.com/mixchat/mixchat/pkg/llm"
)

// combined assembles the combined strategy: the summary lines and entity
// facts that bear on the question, the retrieved messages and the recent
// turns. A summary line or fact that only repeats a message already shown
// (offline, both are sentences of the messages) is dropped and its tokens
// go to more retrieved messages, so combined never shows less of the
// conversation than retrieval would in the same budget.
func (m *Manager) combined(ctx context.Context, v *view, lb labels, question string, budget int) []llm.Message {
	rec, recUsed := m.recentUsed(v, max(0, len(v.turns)-m.cfg.RecentTurns), int(float64(budget)*combinedRecentShare))
	// Retrieved messages get what the retrieval strategy gives them; the
	// summary and facts share what combined saves on recent turns.
	_, recRUsed := m.recentUsed(v, max(0, len(v.turns)-m.cfg.RecentTurns), int(float64(budget)*retrievalRecentShare))
	memBudget := max(0, recRUsed-recUsed)
	sum, n := m.relevantSummary(v, lb, question, min(memBudget, int(float64(budget)*combinedSummaryShare)))
	facts, nf := m.factsMessage(v, lb, question, min(memBudget-n, int(float64(budget)*combinedFactsShare)), true)
	memUsed := n + nf // pack's count is messagesTokens' (count adds up over lines)
	ex, _ := m.retrieved(ctx, v, lb, question, budget-recUsed-memUsed, len(rec))
	shown := m.messagesText(ex) + "\n" + m.messagesText(rec)
	sum, facts = m.withoutShown(sum, shown), m.withoutShown(facts, shown)
	if n := m.messagesTokens(sum) + m.messagesTokens(facts); n < memUsed {
		ex, _ = m.retrieved(ctx, v, lb, question, budget-recUsed-n, len(rec))
	}
	out := append(append(sum, facts...), ex...)
	return append(out, rec...)
}

func (m *Manager) messagesText(msgs []llm.Message) string {
	var b strings.Builder
	for _, msg := range msgs {
		b.WriteString(msg.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

// withoutShown drops from a memory message (a heading, then one item per
// line) the items whose text — after a "- entity — " prefix — is already
// in shown; nil when no item is left.
func (m *Manager) withoutShown(msgs []llm.Message, shown string) []llm.Message {
	var out []llm.Message
	for _, msg := range msgs {
		lines := strings.Split(msg.Content, "\n")
		kept := lines[:1]
		for _, l := range lines[1:] {
			item := l
			if _, rest, ok := strings.Cut(l, " — "); ok && strings.HasPrefix(l, "- ") {
				item = rest
			}
			// The speaker label: a sentence of a message follows it.
			if label, rest, ok := strings.Cut(item, ": "); ok && len(label) <= 40 {
				item = rest
			}
			if !strings.Contains(shown, strings.TrimSuffix(item, "…")) {
				kept = append(kept, l)
			}
		}
		if len(kept) > 1 {
			out = append(out, llm.Message{Role: msg.Role, Content: strings.Join(kept, "\n")})
		}
	}
	return out
}
