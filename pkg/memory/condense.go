package memory

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
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
	// has its referents resolved offline (RewriteFollowUp).
	Extractive bool `json:"extractive,omitempty"`
	// Memory is the part of Context that memory had put before the
	// conversation (long-term memory, summary, facts): kept after a
	// rewrite so a prompt showing Context instead of the conversation
	// still has them.
	Memory string    `json:"memory,omitempty"`
	Usage  llm.Usage `json:"usage"`
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
//
// The context it returns starts with the memory messages of history (the
// system messages a recall put there: the user's long-term memory, the
// summary, known facts — not the earlier exchanges it quoted verbatim),
// so a prompt that shows the context in place of the conversation keeps
// them; Memory holds them alone.
func (m *Manager) CondenseQuestion(ctx context.Context, history []llm.Message, question string) (Condensed, error) {
	question = strings.TrimSpace(question)
	lines := m.lastPairs(history)
	if len(lines) == 0 {
		return Condensed{Standalone: question, Skipped: true, Reason: ReasonNoHistory}, nil
	}
	if !dependsOnHistory(question) && !m.asksOfKnownSubject(history, question) {
		return Condensed{Standalone: question, Skipped: true, Reason: ReasonSelfContained}, nil
	}
	mem := memoryContext(history)
	lines = neededPairs(lines)
	if !m.generative() {
		return withMemory(m.extractiveCondense(history, lines, question), mem), nil
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
	})
	if err != nil {
		return Condensed{Standalone: question}, fmt.Errorf("condense question: %w", err)
	}
	facts, standalone, ok := parseCondensed(resp.Text)
	if !ok || !plausibleRewrite(question, standalone) {
		// Not the asked format, or not a question: the reply is discarded
		// (it may be an answer, a refusal or a banner) and the offline
		// rewrite stands in.
		c := m.extractiveCondense(history, lines, question)
		c.Usage, c.Reason = resp.Usage, ReasonMalformed
		return withMemory(c, mem), nil
	}
	return withMemory(Condensed{Standalone: standalone, Context: facts, Usage: resp.Usage}, mem), nil
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

// neededPairs drops from lines (whole exchanges, oldest first) the
// exchanges before the latest question that stood on its own: the
// referents of a follow-up are named there or after it, so the rewrite
// reads only that stretch of the conversation ("那九二呢？" after
// "它的初九爻辞…" after "乾卦的卦辞…" reads all three; after a question
// naming its subject, that exchange alone).
func neededPairs(lines []line) []line {
	for i := len(lines) - 1; i > 0; i-- {
		if lines[i].role == llm.RoleUser && !dependsOnHistory(lines[i].text) {
			return lines[i:]
		}
	}
	return lines
}

// Words that make a question lean on what was said before: pronouns,
// demonstratives and references ("their", "that one", "the former",
// "它", "这个", "上面"), conjunctions opening a follow-up ("and", "what
// about", "那么"), and the first person (a question about what the user
// said of themselves).
var (
	referenceWords = map[string]bool{}
	followUpStarts = []string{"and ", "but ", "so ", "also ", "what about", "how about", "and?", "then ", "why?", "why not", "same ", "or "}
	// zhNonReferences are common words holding a reference character
	// that refer to nothing ("应该" is "should", not "该").
	zhNonReferences = []string{"应该", "该当", "其实", "尤其", "极其", "也许"}
	zhReferences    = []string{"它", "他", "她", "这", "那", "其", "该", "此", "上述", "上面", "前者", "后者", "刚才", "之前", "以上", "还有", "另外", "再", "也", "呢", "继续", "然后", "我们", "咱", "我"}
)

func init() {
	for _, w := range strings.Fields(`it its itself they them their theirs themselves this that these those he him his she her hers
		there then one ones former latter same such other others another else too again above previous earlier
		both either neither my me mine myself we us our ours`) {
		referenceWords[w] = true
	}
}

// asksOfKnownSubject reports whether an English question that names
// nothing but speaks of "the" something ("Can I get the phone number?",
// "What is the address?") follows turns that name a thing the knowledge
// bases know (a known name written capitalised or of several words): it
// asks about that thing.
func (m *Manager) asksOfKnownSubject(history []llm.Message, question string) bool {
	if m.vocab == nil || isCJKText(question) || !theNoun.MatchString(question) ||
		len(m.vocab.NamesIn(question)) > 0 || len(properNouns(question)) > 0 {
		return false
	}
	for _, h := range recentMessages(history, 2) {
		for _, n := range m.vocab.NamesIn(h.Content) {
			if hasUpper(n) || strings.Contains(n, " ") {
				return true
			}
		}
	}
	return false
}

// theNoun matches "the" before a word.
var theNoun = regexp.MustCompile(`(?i)\bthe\s+\pL`)

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
		for _, w := range zhNonReferences {
			q = strings.ReplaceAll(q, w, "")
		}
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

// extractiveCondense is the offline rewrite: the context is the sentences
// of the exchanges that share most with the question (and the last
// exchange's), and the standalone question has its referents resolved
// (RewriteFollowUp over the recent history, names of the vocabulary
// preferred).
func (m *Manager) extractiveCondense(history []llm.Message, lines []line, question string) Condensed {
	qv := text.Count(text.Chars(question))
	type sent struct {
		s     string
		score float64
		pos   int
	}
	var ss []sent
	for i, l := range lines {
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
		n := m.count(s.s) + 1
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
	standalone := RewriteFollowUp(FollowUp{History: history, Question: question}, m.vocab)
	return Condensed{Standalone: standalone, Context: strings.Join(ctx, "\n"), Extractive: true}
}
