package memory

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// Condensed is a follow-up question made to stand alone.
type Condensed struct {
	// Standalone is the question rewritten so it can be understood without
	// the conversation; the question itself when Skipped.
	Standalone string `json:"standalone"`
	// Context holds the facts of the recent exchanges needed to answer
	// the question ("" when Skipped).
	Context string `json:"context"`
	// Skipped is true when the question was not rewritten and no model
	// was called (Reason says why).
	Skipped bool   `json:"skipped"`
	Reason  string `json:"reason,omitempty"`
	// Extractive is true when the rewrite was made without a generative
	// model (the offline rewriter of pkg/extractive): the context is
	// selected sentences and the standalone question has its referents
	// resolved by rules.
	Extractive bool `json:"extractive,omitempty"`
	// Memory is the part of Context that memory had put before the
	// conversation (long-term memory, summary, facts): kept after a
	// rewrite so a prompt showing Context instead of the conversation
	// still has them.
	Memory string    `json:"memory,omitempty"`
	Usage  llm.Usage `json:"usage"`
}

// Reasons for skipping a rewrite (Condensed.Reason).
const (
	ReasonNoHistory = "no history"
	// ReasonSelfContained: the Rewriter judged the question to stand
	// alone without asking a model.
	ReasonSelfContained = "self-contained question"
	// ReasonNever: the rewrite policy is "never" (Config.Rewrite).
	ReasonNever = "rewrite policy never"
	// ReasonNoRewriter: the memory was given no Rewriter.
	ReasonNoRewriter = "no rewriter"
)

// Condense rewrites a follow-up question into a standalone one and returns
// the facts of the recent history needed to answer it (CondenseQuestion).
// On a failure it returns the question unchanged with the error.
func (m *Manager) Condense(ctx context.Context, history []llm.Message, question string) (standalone, context string, err error) {
	c, err := m.CondenseQuestion(ctx, history, question)
	return c.Standalone, c.Context, err
}

// CondenseUsage is Condense that also returns the tokens the rewrite used
// (zero when it was skipped or extractive), so the mix pipeline counts them
// in a reply's usage (mix.UsageCondenser).
func (m *Manager) CondenseUsage(ctx context.Context, history []llm.Message, question string) (standalone, context string, usage llm.Usage, err error) {
	c, err := m.CondenseQuestion(ctx, history, question)
	return c.Standalone, c.Context, c.Usage, err
}

// CondenseQuestion rewrites a follow-up question into a standalone one
// with the Rewriter, under the configured policy (Config.Rewrite): with
// "never", without history or without a Rewriter the question is used as
// asked (Skipped, Reason says why); otherwise the Rewriter reads the last
// question/answer pairs that fit Config.Condense and decides, within
// Config.Condense.Timeout. On a failure it returns the question as asked
// with the error.
//
// The context it returns starts with the memory messages of history (the
// system messages a recall put there: the user's long-term memory, the
// summary, known facts — not the earlier exchanges it quoted verbatim),
// so a prompt that shows the context in place of the conversation keeps
// them; Memory holds them alone.
func (m *Manager) CondenseQuestion(ctx context.Context, history []llm.Message, question string) (Condensed, error) {
	question = strings.TrimSpace(question)
	if m.cfg.Rewrite == RewriteNever {
		return Condensed{Standalone: question, Skipped: true, Reason: ReasonNever}, nil
	}
	lines := m.lastPairs(history)
	if len(lines) == 0 {
		return Condensed{Standalone: question, Skipped: true, Reason: ReasonNoHistory}, nil
	}
	if m.rewriter == nil {
		return Condensed{Standalone: question, Skipped: true, Reason: ReasonNoRewriter}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Condense.Timeout)
	defer cancel()
	c, err := m.rewriter.Rewrite(ctx, FollowUp{History: history, Recent: exportLines(lines), Question: question,
		Always: m.cfg.Rewrite == RewriteAlways})
	if err != nil {
		return Condensed{Standalone: question, Usage: c.Usage}, fmt.Errorf("condense question: %w", err)
	}
	if strings.TrimSpace(c.Standalone) == "" {
		c.Standalone = question
	}
	if c.Skipped {
		c.Context = ""
		return c, nil
	}
	return withMemory(c, memoryContext(history)), nil
}

// ReasonMalformed is Condensed.Reason when the model's rewrite was
// discarded for not being a standalone question in the asked format.
const ReasonMalformed = "malformed rewrite discarded"

// memoryContext joins the system messages of history: what memory put
// before the conversation (the user's long-term memory, the summary,
// known facts), except the earlier exchanges it quoted word for word:
// the rewrite has resolved what the question takes from the
// conversation, and a prompt showing the context would otherwise repeat
// them on every turn.
func memoryContext(history []llm.Message) string {
	var out []string
	for _, h := range history {
		if h.Role == llm.RoleSystem {
			if c := strings.TrimSpace(h.Content); c != "" && !isExcerpts(c) {
				out = append(out, c)
			}
		}
	}
	return strings.Join(out, "\n")
}

// isExcerpts reports whether a memory message is the earlier exchanges
// quoted verbatim (its heading is labels.excerpts).
func isExcerpts(msg string) bool {
	return strings.HasPrefix(msg, labelsEN.excerpts) || strings.HasPrefix(msg, labelsZH.excerpts)
}

// withMemory puts mem before c's context.
func withMemory(c Condensed, mem string) Condensed {
	c.Memory = mem
	switch {
	case mem == "":
	case c.Context == "":
		c.Context = mem
	default:
		c.Context = mem + "\n" + c.Context
	}
	return c
}

// plausibleRewrite reports whether s can be the standalone form of
// question: one line, a question in the same script, and not much longer
// than the question with its referents spelled out.
func plausibleRewrite(question, s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "\n\r") {
		return false
	}
	if isCJKText(s) != isCJKText(question) {
		return false
	}
	if n, qn := utf8.RuneCountInString(s), utf8.RuneCountInString(question); n > 3*qn+80 {
		return false
	}
	if strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") {
		return true
	}
	// A question asked without its mark ("tell me more about X"): it must
	// end as the question does.
	last, _ := utf8.DecodeLastRuneInString(strings.TrimSpace(question))
	end, _ := utf8.DecodeLastRuneInString(s)
	return !unicode.IsPunct(last) && !unicode.IsPunct(end) || last == end
}

// lastPairs returns the user and assistant messages of the last
// question/answer pairs of history that fit Config.Condense.MaxTokens, at
// most Config.Condense.MaxPairs pairs, each message cut to its first
// sentences within Config.Condense.MessageTokens.
func (m *Manager) lastPairs(history []llm.Message) []line {
	var ls []line
	users := 0
	used := 0
	for i := len(history) - 1; i >= 0; i-- {
		h := history[i]
		if h.Role != llm.RoleUser && h.Role != llm.RoleAssistant {
			continue
		}
		c := strings.TrimSpace(h.Content)
		if c == "" {
			continue
		}
		if users == m.cfg.Condense.MaxPairs {
			break
		}
		if mt := m.cfg.Condense.MessageTokens; mt > 0 {
			c = headOf(c, mt, m.count)
		}
		n := m.count(c) + 2
		if used+n > m.cfg.Condense.MaxTokens && len(ls) > 0 {
			break
		}
		used += n
		if h.Role == llm.RoleUser {
			users++
		}
		ls = append(ls, line{role: h.Role, text: c})
	}
	for i, j := 0, len(ls)-1; i < j; i, j = i+1, j-1 {
		ls[i], ls[j] = ls[j], ls[i]
	}
	return ls
}

// parseCondensed reads the FACTS and QUESTION parts of a condense reply.
// It accepts the English and Chinese headings and tolerates bold markers
// and list bullets. ok is false when the reply is not in that format (no
// QUESTION heading, or text before the FACTS heading): such a reply is
// not a rewrite and none of it may be used.
func parseCondensed(out string) (facts, question string, ok bool) {
	var fs []string
	inFacts := false
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.ReplaceAll(l, "**", ""))
		switch {
		case l == "":
		case hasHeading(l, "QUESTION", "STANDALONE QUESTION", "问题", "独立问题"):
			if question != "" {
				return "", "", false
			}
			question = afterColon(l)
			inFacts = false
		case hasHeading(l, "FACTS", "事实"):
			inFacts = true
			if rest := afterColon(l); rest != "" && !isNone(rest) {
				fs = append(fs, rest)
			}
		case !inFacts:
			// Text outside the FACTS list: an answer or a banner.
			return "", "", false
		default:
			f := strings.TrimSpace(strings.TrimLeft(l, "-*•"))
			if f != "" && !isNone(f) {
				fs = append(fs, f)
			}
		}
	}
	if question == "" {
		return "", "", false
	}
	return strings.Join(fs, "\n"), question, true
}

func isNone(s string) bool {
	s = strings.TrimRight(strings.TrimSpace(s), ".。")
	return strings.EqualFold(s, "none") || s == "无" || s == "没有"
}

// hasHeading reports whether l starts with one of the headings (any case)
// followed by ':' or '：'.
func hasHeading(l string, headings ...string) bool {
	for _, h := range headings {
		if len(l) > len(h) && strings.EqualFold(l[:len(h)], h) {
			rest := strings.TrimSpace(l[len(h):])
			if strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "：") {
				return true
			}
		}
	}
	return false
}

// afterColon returns what follows the first ':' or '：' of l, trimmed.
func afterColon(l string) string {
	i := strings.IndexAny(l, ":：")
	if i < 0 {
		return ""
	}
	_, size := utf8.DecodeRuneInString(l[i:])
	return strings.TrimSpace(l[i+size:])
}

// headOf returns the start of s within maxTokens: its first sentences as
// written, then "…" when it was cut (the first sentence cut by runes when
// even it does not fit).
func headOf(s string, maxTokens int, count func(string) int) string {
	if count(s) <= maxTokens {
		return s
	}
	end, rest := 0, s
	for _, sent := range text.Sentences(s) {
		i := strings.Index(rest, sent)
		if i < 0 {
			break
		}
		next := end + i + len(sent)
		if count(s[:next]) > maxTokens {
			break
		}
		end, rest = next, s[next:]
	}
	if end == 0 {
		return fitTokens(s, maxTokens, count) + "…"
	}
	return s[:end] + "…"
}
