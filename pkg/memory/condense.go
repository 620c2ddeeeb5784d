package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
	"github.com/mixchat/mixchat/prompts"
)

// Condensed is a follow-up question made to stand alone.
type Condensed struct {
	// Standalone is the question rewritten so it can be understood without
	// the conversation; the question itself when Skipped.
	Standalone string `json:"standalone"`
	// Context holds the facts of the recent exchanges needed to answer
	// the question ("" when Skipped).
	Context string `json:"context"`
	// Skipped is true when the question does not depend on the history
	// (Reason says why) and no model was called.
	Skipped bool   `json:"skipped"`
	Reason  string `json:"reason,omitempty"`
	// Extractive is true when the rewrite was made without a generative
	// model: the context is selected sentences and the standalone question
	// is the question followed by the question it follows up.
	Extractive bool      `json:"extractive,omitempty"`
	Usage      llm.Usage `json:"usage"`
}

// Reasons for skipping a rewrite.
const (
	ReasonNoHistory     = "no history"
	ReasonSelfContained = "self-contained question"
)

// Condense rewrites a follow-up question into a standalone one and extracts
// the facts of the recent history needed to answer it, in one model call
// over the last question/answer pairs that fit (at most
// Config.Condense.MaxPairs). When the question does not depend on the
// history (no history, or no pronoun, reference or ellipsis) it returns the
// question and no context without calling the model; CondenseQuestion says
// so. On a model failure it returns the question unchanged with the error.
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

// CondenseQuestion is Condense with the details: whether the call was
// skipped and why, whether it was extractive, and the tokens used.
func (m *Manager) CondenseQuestion(ctx context.Context, history []llm.Message, question string) (Condensed, error) {
	question = strings.TrimSpace(question)
	lines := m.lastPairs(history)
	if len(lines) == 0 {
		return Condensed{Standalone: question, Skipped: true, Reason: ReasonNoHistory}, nil
	}
	if !dependsOnHistory(question) {
		return Condensed{Standalone: question, Skipped: true, Reason: ReasonSelfContained}, nil
	}
	if !m.generative() {
		return extractiveCondense(lines, question, m.count), nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Condense.Timeout)
	defer cancel()
	data := condenseData{Lines: lineStrings(lines), Question: question}
	p, err := prompts.Render(condenseGroup, "default", data)
	if err != nil {
		return Condensed{Standalone: question}, err
	}
	zero := float32(0)
	resp, err := m.model.Complete(ctx, llm.Request{
		Model:       m.modelName,
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: p}},
		Temperature: &zero,
		MaxTokens:   600,
		Question:    question,
		Context:     lineStrings(lines),
	})
	if err != nil {
		return Condensed{Standalone: question}, fmt.Errorf("condense question: %w", err)
	}
	facts, standalone := parseCondensed(resp.Text)
	if standalone == "" {
		standalone = question
	}
	return Condensed{Standalone: standalone, Context: facts, Usage: resp.Usage}, nil
}

// lastPairs returns the user and assistant messages of the last
// question/answer pairs of history that fit Config.Condense.MaxTokens, at
// most Config.Condense.MaxPairs pairs.
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
		if h.Role == llm.RoleUser && users == m.cfg.Condense.MaxPairs {
			break
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

// Words that make a question lean on what was said before: pronouns,
// demonstratives and references ("their", "that one", "the former",
// "它", "这个", "上面"), conjunctions opening a follow-up ("and", "what
// about", "那么"), and the first person (a question about what the user
// said of themselves).
var (
	referenceWords = map[string]bool{}
	followUpStarts = []string{"and ", "but ", "so ", "also ", "what about", "how about", "and?", "then ", "why?", "why not", "same ", "or "}
	zhReferences   = []string{"它", "他", "她", "这", "那", "其", "该", "此", "上述", "上面", "前者", "后者", "刚才", "之前", "以上", "还有", "另外", "再", "也", "呢", "继续", "然后", "我们", "咱", "我"}
)

func init() {
	for _, w := range strings.Fields(`it its itself they them their theirs themselves this that these those he him his she her hers
		there then one ones former latter same such other others another else too again above previous earlier
		both either neither my me mine myself we us our ours`) {
		referenceWords[w] = true
	}
}

// dependsOnHistory reports whether question seems to need the history to be
// understood.
func dependsOnHistory(question string) bool {
	q := strings.TrimSpace(question)
	if q == "" {
		return false
	}
	lq := strings.ToLower(q)
	for _, s := range followUpStarts {
		if strings.HasPrefix(lq, s) {
			return true
		}
	}
	for _, w := range words(lq) {
		if referenceWords[w] {
			return true
		}
	}
	cjk := 0
	for _, r := range q {
		if text.IsCJK(r) {
			cjk++
		}
	}
	if cjk > 0 {
		for _, z := range zhReferences {
			if strings.Contains(q, z) {
				return true
			}
		}
		// An elliptical question: "为什么？", "具体呢".
		if cjk <= 4 {
			return true
		}
		return false
	}
	// A very short question is elliptical ("Why?", "How much?").
	return len(queryTerms(q)) <= 1 && utf8.RuneCountInString(q) < 25
}

// parseCondensed reads the FACTS and QUESTION parts of a condense reply.
// It accepts the English and Chinese headings and tolerates bold markers.
func parseCondensed(out string) (facts, question string) {
	var fs []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.ReplaceAll(l, "**", ""))
		switch {
		case l == "":
		case hasHeading(l, "QUESTION", "STANDALONE QUESTION", "问题", "独立问题"):
			question = afterColon(l)
		case hasHeading(l, "FACTS", "事实"):
			if rest := afterColon(l); rest != "" && !strings.EqualFold(rest, "none") {
				fs = append(fs, rest)
			}
		default:
			f := strings.TrimSpace(strings.TrimLeft(l, "-*•"))
			if f != "" && !strings.EqualFold(f, "none") && f != "无" {
				fs = append(fs, f)
			}
		}
	}
	return strings.Join(fs, "\n"), question
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

// extractiveCondense is the offline rewrite: the context is the sentences
// of the exchanges that share most with the question (and the last
// exchange's), and the standalone question carries the question it follows
// up, which holds what its pronouns refer to.
func extractiveCondense(lines []line, question string, count func(string) int) Condensed {
	qv := text.Count(text.Chars(question))
	type sent struct {
		s     string
		score float64
		pos   int
	}
	var ss []sent
	lastUser := ""
	for i, l := range lines {
		if l.role == llm.RoleUser {
			lastUser = l.text
		}
		recency := float64(i+1) / float64(len(lines))
		for _, s := range text.Sentences(l.text) {
			sim := text.Cosine(qv, text.Count(text.Chars(s)))
			ss = append(ss, sent{l.label() + ": " + s, sim + 0.2*recency, len(ss)})
		}
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].score > ss[b].score })
	var chosen []sent
	used := 0
	for _, s := range ss {
		if len(chosen) == 5 {
			break
		}
		n := count(s.s) + 1
		if used+n > 300 {
			continue
		}
		used += n
		chosen = append(chosen, s)
	}
	sort.Slice(chosen, func(a, b int) bool { return chosen[a].pos < chosen[b].pos })
	ctx := make([]string, len(chosen))
	for i, s := range chosen {
		ctx[i] = s.s
	}
	standalone := question
	if lastUser != "" && lastUser != question {
		prev := truncateRunes(lastUser, 120)
		if isCJKText(question) {
			standalone = question + "（上文：" + prev + "）"
		} else {
			standalone = question + " (following up: " + prev + ")"
		}
	}
	return Condensed{Standalone: standalone, Context: strings.Join(ctx, "\n"), Extractive: true}
}
