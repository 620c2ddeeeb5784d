package extractive

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/text"
)

// Rewriter is the offline follow-up rewriter (memory.Rewriter): it judges
// by rules whether a question leans on the conversation (a pronoun, a
// demonstrative, an ellipsis, a question about "the" something after
// turns naming a known thing) and, when it does, resolves its referents
// with RewriteFollowUp; the context is the sentences of the recent
// exchanges that share most with the question. It calls no model.
type Rewriter struct {
	vocab  Vocabulary
	tokens llm.TokenCounter
}

// NewRewriter returns the offline rewriter preferring the names of vocab
// (may be nil) as referents; tokens (nil: llm.Estimate) bounds the
// context it selects.
func NewRewriter(vocab Vocabulary, tokens llm.TokenCounter) *Rewriter {
	return &Rewriter{vocab: vocab, tokens: tokens}
}

// Rewrite rewrites f.Question. A question that does not lean on the
// history is returned as it is (Skipped, memory.ReasonSelfContained)
// unless f.Always. Only the exchanges from the latest question that stood
// on its own are read (neededPairs). It never fails.
func (r *Rewriter) Rewrite(ctx context.Context, f memory.FollowUp) (memory.Condensed, error) {
	f = validFollowUp(f)
	q := strings.TrimSpace(f.Question)
	if !f.Always && !dependsOnHistory(q) && !r.asksOfKnownSubject(f.History, q) {
		return memory.Condensed{Standalone: q, Skipped: true, Reason: memory.ReasonSelfContained}, nil
	}
	return r.condense(f.History, neededPairs(f.Recent), q), nil
}

// neededPairs drops from lines (whole exchanges, oldest first) the
// exchanges before the latest question that stood on its own: the
// referents of a follow-up are named there or after it, so the rewrite
// reads only that stretch of the conversation ("那第三款呢？" after
// "它的第二款…" after "劳动法第十条…" reads all three; after a question
// naming its subject, that exchange alone).
func neededPairs(lines []memory.Line) []memory.Line {
	for i := len(lines) - 1; i > 0; i-- {
		if lines[i].Role == llm.RoleUser && !dependsOnHistory(lines[i].Text) {
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
func (r *Rewriter) asksOfKnownSubject(history []llm.Message, question string) bool {
	if docs := documentsOf(r.vocab); docs != nil && !text.MostlyCJK(question) && (asksEN(question) || statesWant.MatchString(question)) {
		// A question after turns naming a thing of the documents (in the
		// last thingReach messages), that names none in full ("Are the
		// bathrooms clean?", "Does Pizza hut deliver?"), asks about that
		// thing; so does a sentence saying what the user wants ("I need a
		// quiet room.").
		if len(docs.Named(question)) > 0 {
			return false
		}
		for _, h := range recentMessages(history, thingReach) {
			if len(docs.Named(h.Content)) > 0 {
				return true
			}
		}
	}
	if r.vocab == nil || text.MostlyCJK(question) || !theNoun.MatchString(question) ||
		len(r.vocab.NamesIn(question)) > 0 || len(text.ProperNouns(question)) > 0 {
		return false
	}
	for _, h := range recentMessages(history, 2) {
		for _, n := range r.vocab.NamesIn(h.Content) {
			if hasUpper(n) || strings.Contains(n, " ") {
				return true
			}
		}
	}
	return false
}

// asksEN reports whether an English sentence is a question: it ends with
// a question mark or starts with a question word.
func asksEN(q string) bool {
	if strings.HasSuffix(strings.TrimSpace(q), "?") {
		return true
	}
	ws := text.Words(strings.ToLower(q))
	return len(ws) > 0 && questionWords[ws[0]]
}

// statesWant matches a sentence that states what the speaker wants ("I
// need a quiet room", "I'd prefer a good view", "I am looking for …").
var statesWant = regexp.MustCompile(`(?i)\bI(?:'d| would| am| 'm|'m)?(?: \w+ly| also| only| just)? (?:need|want|prefer|require|like|looking for)\b`)

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
	for _, w := range text.Words(lq) {
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
	return len(text.QuestionTerms(q)) <= 1 && utf8.RuneCountInString(q) < 25
}

// condense is the offline rewrite: the context is the sentences of the
// exchanges that share most with the question (and the last exchange's),
// and the standalone question has its referents resolved
// (RewriteFollowUp over the recent history, names of the vocabulary
// preferred).
func (r *Rewriter) condense(history []llm.Message, lines []memory.Line, question string) memory.Condensed {
	qv := text.Count(text.Chars(question))
	type sent struct {
		s     string
		score float64
		pos   int
	}
	var ss []sent
	for i, l := range lines {
		recency := float64(i+1) / float64(len(lines))
		for _, s := range text.Sentences(l.Text) {
			sim := text.Cosine(qv, text.Count(text.Chars(s)))
			ss = append(ss, sent{l.Label() + ": " + s, sim + 0.2*recency, len(ss)})
		}
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].score > ss[b].score })
	var chosen []sent
	used := 0
	for _, s := range ss {
		if len(chosen) == 5 {
			break
		}
		n := countTokens(r.tokens, s.s) + 1
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
	standalone := RewriteFollowUp(memory.FollowUp{History: history, Question: question}, r.vocab)
	return memory.Condensed{Standalone: standalone, Context: strings.Join(ctx, "\n"), Extractive: true}
}

// countTokens returns the tokens of s as memory counts them: line by
// line, plus one per line break (tc nil: llm.Estimate).
func countTokens(tc llm.TokenCounter, s string) int {
	count := llm.Estimate
	if tc != nil {
		count = tc.Count
	}
	if !strings.Contains(s, "\n") {
		return count(s)
	}
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n += count(l) + 1
	}
	return n - 1
}

// validFollowUp returns f with the bytes that are not UTF-8 dropped from
// its texts (the rules read runes; what they return is valid UTF-8). The
// caller's slices are not changed.
func validFollowUp(f memory.FollowUp) memory.FollowUp {
	f.Question = validUTF8(f.Question)
	f.History = validEach(f.History, func(m *llm.Message) *string { return &m.Content })
	f.Recent = validEach(f.Recent, func(l *memory.Line) *string { return &l.Text })
	f.Topic = validEach(f.Topic, func(s *string) *string { return s })
	return f
}

// validEach returns xs with the text field of each made valid UTF-8, a
// copy when any changes.
func validEach[T any](xs []T, field func(*T) *string) []T {
	cloned := false
	for i := range xs {
		if s := *field(&xs[i]); !utf8.ValidString(s) {
			if !cloned {
				xs, cloned = slices.Clone(xs), true
			}
			*field(&xs[i]) = validUTF8(s)
		}
	}
	return xs
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "")
}
