package main

// "mixchat-eval locomo": the conversation-memory benchmark on LoCoMo
// (snap-research/LoCoMo, locomo10.json: 10 long two-person conversations,
// 1,986 questions with the ids of their evidence turns).
//
// Every conversation is stored turn by turn in an in-memory SQLite store as
// mixchat stores chats (the first speaker's messages as questions, the
// second's as answers, with the session's date as timestamp and the speaker's
// name in the message metadata), its background compression is run, and then
// each question is asked as the next message:
//
//   - recall@k: the k messages a strategy ranks first (the retriever's top k
//     for retrieval and combined, the k latest messages for the others); a
//     question's recall is the fraction of its evidence turns among them;
//   - evidence in context: the history the strategy assembles within
//     --budget tokens; the fraction of evidence turns whose text is in it,
//     and the mean tokens it takes.
//
// The evidence labels are only read to score; nothing at query time sees
// them or the answers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// locomoCategories names LoCoMo's question categories.
var locomoCategories = map[int]string{1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}

type locomoSample struct {
	ID   string                     `json:"sample_id"`
	QA   []locomoQA                 `json:"qa"`
	Conv map[string]json.RawMessage `json:"conversation"`
}

type locomoQA struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

type locomoTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

// locomoConv is one conversation as loaded: its messages by dia_id and its
// questions with their evidence normalised.
type locomoConv struct {
	id        string
	content   map[string]string // dia_id → message content as stored
	order     map[string]int    // dia_id → position in the conversation
	questions []locomoQuestion
	turns     [][2]memory.Message
}

type locomoQuestion struct {
	text     string
	category int
	evidence []string // dia_ids present in the conversation
}

// locomoResult is the figures of one strategy.
type locomoResult struct {
	Strategy  string  `json:"strategy"`
	K         int     `json:"k"`
	RecallAtK float64 `json:"recall_at_k"`
	// Ranked is false for strategies that rank nothing: their recall_at_k
	// is the evidence they keep in context.
	Ranked bool `json:"ranked"`
	// KeptMessages is the mean number of conversation messages the
	// context holds verbatim.
	KeptMessages      float64            `json:"kept_messages"`
	ByCategory        map[string]float64 `json:"by_category"`
	BudgetTokens      int                `json:"budget_tokens"`
	EvidenceInContext float64            `json:"evidence_in_context"`
	ContextByCategory map[string]float64 `json:"evidence_in_context_by_category"`
	AvgContextTokens  float64            `json:"avg_context_tokens"`
	MaxContextTokens  int                `json:"max_context_tokens"`
}

// locomoReport is the --json output: the figures of the first strategy at
// the top level, every strategy's in Strategies.
type locomoReport struct {
	locomoResult
	Questions             int            `json:"questions"`
	QuestionsScored       int            `json:"questions_scored"`
	Conversations         int            `json:"conversations"`
	Messages              int            `json:"messages"`
	EvidenceIDs           int            `json:"evidence_ids"`
	NormalisedEvidenceIDs int            `json:"normalised_evidence_ids"`
	DroppedEvidenceIDs    int            `json:"dropped_evidence_ids"`
	Tokenizer             string         `json:"tokenizer"`
	Seconds               float64        `json:"seconds"`
	Strategies            []locomoResult `json:"strategies"`
}

// locomoDefaultStrategies are the strategies run when --strategy is not
// given, the default (best) one first.
var locomoDefaultStrategies = []string{memory.Combined, memory.Retrieval, memory.SummaryBuffer, memory.TokenBuffer, memory.Window,
	memory.Summary, memory.Entity, memory.KnowledgeGraph, memory.Compressed, memory.Buffer}

func runEvalLoCoMo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval locomo", "", stderr)
	data := fs.String("data", "", "path of locomo10.json (required; "+locomoData.source+")")
	k := fs.Int("k", 10, "recall@k: messages retrieved per question")
	budget := fs.Int("budget", 2000, "token budget of the assembled history")
	strategy := fs.String("strategy", "", "comma-separated strategies (default: all, combined first)")
	tokenizer := fs.String("tokenizer", "gpt-4o", "model whose tokenizer counts tokens (o200k_base for gpt-4o; other names: estimate)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	limit := fs.Int("conversations", 0, "evaluate only the first N conversations (0 = all)")
	skip := fs.Int("skip", 0, "leave out the first N conversations (with --conversations 5: one half, --skip 5 the other)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *skip < 0 || *limit < 0 {
		return fmt.Errorf("eval locomo: --skip and --conversations must not be negative (got %d, %d)", *skip, *limit)
	}
	if *k <= 0 || *budget < 100 {
		return fmt.Errorf("eval locomo: --k must be positive and --budget at least 100 (got %d, %d)", *k, *budget)
	}
	if err := locomoData.check(*data); err != nil {
		return fmt.Errorf("eval locomo: %w", err)
	}
	strategies := locomoDefaultStrategies
	if *strategy != "" {
		strategies = strings.Split(*strategy, ",")
	}
	start := time.Now()
	convs, stats, err := loadLoCoMo(*data, *skip, *limit)
	if err != nil {
		return err
	}
	cfg := memory.DefaultConfig()
	cfg.MaxTokenLimit = *budget
	cfg.TimeZone = "UTC"
	cfg.LongTerm.Enabled = false
	cfg.Compression.Workers = max(1, runtime.GOMAXPROCS(0))
	cfg.Compression.Queue = len(convs) + 1
	tok := llm.NewTokenizer(*tokenizer)

	store, err := sqlite.OpenConversations(ctx, ":memory:")
	if err != nil {
		return err
	}
	defer store.Close()
	// The offline summarizer and extractor, as the server has them
	// without a model.
	mgr, err := memory.NewManager(store, cfg, memory.Options{Tokens: tok,
		Summarizer: extractive.NewSummarizer(tok), Extractor: extractive.NewExtractor(), Rewriter: extractive.NewRewriter(nil, tok)})
	if err != nil {
		return err
	}
	defer mgr.Close()
	for _, s := range strategies {
		if !slices.Contains(mgr.Strategies(), s) {
			return fmt.Errorf("eval locomo: unknown strategy %q; available: %s", s, strings.Join(mgr.Strategies(), ", "))
		}
	}
	for _, c := range convs {
		for _, t := range c.turns {
			turn, err := store.AppendTurn(ctx, c.id, t[0], t[1])
			if err != nil {
				return fmt.Errorf("store %s: %w", c.id, err)
			}
			mgr.Remember(ctx, c.id, turn)
		}
	}
	if err := mgr.Flush(ctx); err != nil {
		return err
	}
	if s := mgr.Stats(); s.Failures > 0 {
		return fmt.Errorf("eval locomo: %d compression jobs failed", s.Failures)
	}

	results := make([]locomoResult, len(strategies))
	for i, s := range strategies {
		r, err := evalLoCoMoStrategy(ctx, mgr, tok, convs, s, *k, *budget)
		if err != nil {
			return err
		}
		results[i] = r
	}
	rep := locomoReport{
		locomoResult: results[0], Questions: stats.questions, QuestionsScored: stats.scored, Conversations: len(convs),
		Messages: stats.messages, EvidenceIDs: stats.ids, NormalisedEvidenceIDs: stats.normalised,
		DroppedEvidenceIDs: stats.dropped, Tokenizer: tok.Name(), Seconds: locomoRound(time.Since(start).Seconds()),
		Strategies: results,
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	printLoCoMo(stdout, rep)
	return nil
}

func printLoCoMo(w io.Writer, rep locomoReport) {
	fmt.Fprintf(w, "LoCoMo: %d conversations, %d messages, %d questions (%d with evidence); evidence ids %d, %d normalised, %d dropped\n",
		rep.Conversations, rep.Messages, rep.Questions, rep.QuestionsScored, rep.EvidenceIDs, rep.NormalisedEvidenceIDs, rep.DroppedEvidenceIDs)
	fmt.Fprintf(w, "tokens counted with %s; budget %d; %.1fs\n\n", rep.Tokenizer, rep.BudgetTokens, rep.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "strategy\trecall@%d\tin context@%d\tavg tokens\tmax tokens\tmessages kept\t\n", rep.K, rep.BudgetTokens)
	for _, r := range rep.Strategies {
		recall := fmt.Sprintf("%.3f", r.RecallAtK)
		if !r.Ranked {
			recall = "(kept) " + recall
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.0f\t%d\t%.1f\t\n", r.Strategy, recall, r.EvidenceInContext, r.AvgContextTokens, r.MaxContextTokens, r.KeptMessages)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nby category (%s)\n", rep.Strategy)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "category\trecall@%d\tin context\t\n", rep.K)
	for _, c := range slices.Sorted(maps.Keys(locomoCategories)) {
		name := locomoCategories[c]
		fmt.Fprintf(tw, "%d %s\t%.3f\t%.3f\t\n", c, name, rep.ByCategory[name], rep.ContextByCategory[name])
	}
	tw.Flush()
}

func locomoRound(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// evalLoCoMoStrategy scores one strategy over every question, the
// conversations two at a time.
func evalLoCoMoStrategy(ctx context.Context, mgr *memory.Manager, tok *llm.Tokenizer, convs []*locomoConv, strategy string, k, budget int) (locomoResult, error) {
	type acc struct {
		recall, inCtx [6]float64
		n             [6]int
		kept          float64
		tokens        float64
		maxTokens     int
	}
	accs := make([]acc, len(convs))
	counter := &lineCounter{tok: tok, seen: map[string]int{}}
	g := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	errs := make([]error, len(convs))
	for ci, c := range convs {
		wg.Add(1)
		g <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-g }()
			a := &accs[ci]
			for _, q := range c.questions {
				if len(q.evidence) == 0 {
					continue
				}
				var top map[string]bool
				if strategy == memory.Retrieval || strategy == memory.Combined {
					hits, err := mgr.Search(ctx, c.id, q.text, k)
					if err != nil {
						errs[ci] = err
						return
					}
					top = map[string]bool{}
					for _, h := range hits {
						top[h.Content] = true
					}
				}
				msgs, err := mgr.Recall(ctx, c.id, q.text, strategy, -1)
				if err != nil {
					errs[ci] = err
					return
				}
				var b strings.Builder
				tokens := 0
				for _, m := range msgs {
					b.WriteString(m.Content)
					b.WriteByte('\n')
					tokens += counter.count(m.Content) + 4
				}
				ctxText := b.String()
				found, inCtx := 0, 0
				for _, id := range q.evidence {
					content := c.content[id]
					if strings.Contains(ctxText, content) {
						inCtx++
					}
					if top != nil && top[content] || top == nil && strings.Contains(ctxText, content) {
						found++
					}
				}
				for _, content := range c.content {
					if strings.Contains(ctxText, content) {
						a.kept++
					}
				}
				n := float64(len(q.evidence))
				for _, cat := range []int{0, q.category} {
					a.recall[cat] += float64(found) / n
					a.inCtx[cat] += float64(inCtx) / n
					a.n[cat]++
				}
				a.tokens += float64(tokens)
				a.maxTokens = max(a.maxTokens, tokens)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return locomoResult{}, err
	}
	var total acc
	for _, a := range accs {
		for i := range total.n {
			total.recall[i] += a.recall[i]
			total.inCtx[i] += a.inCtx[i]
			total.n[i] += a.n[i]
		}
		total.tokens += a.tokens
		total.kept += a.kept
		total.maxTokens = max(total.maxTokens, a.maxTokens)
	}
	r := locomoResult{Strategy: strategy, K: k, Ranked: strategy == memory.Retrieval || strategy == memory.Combined, BudgetTokens: budget, ByCategory: map[string]float64{}, ContextByCategory: map[string]float64{},
		MaxContextTokens: total.maxTokens}
	if total.n[0] > 0 {
		n := float64(total.n[0])
		r.RecallAtK = locomoRound(total.recall[0] / n)
		r.EvidenceInContext = locomoRound(total.inCtx[0] / n)
		r.AvgContextTokens = math.Round(total.tokens / n)
		r.KeptMessages = math.Round(total.kept/n*10) / 10
	}
	for c, name := range locomoCategories {
		if total.n[c] > 0 {
			r.ByCategory[name] = locomoRound(total.recall[c] / float64(total.n[c]))
			r.ContextByCategory[name] = locomoRound(total.inCtx[c] / float64(total.n[c]))
		}
	}
	return r, nil
}

// lineCounter counts the tokens of a text line by line, each line once
// (the same messages come back in many contexts): the sum over its lines
// plus one per line break, an upper bound of the whole text's tokens (a
// tokenizer may merge a line break with the punctuation before it, never
// split a line further).
type lineCounter struct {
	tok  *llm.Tokenizer
	mu   sync.Mutex
	seen map[string]int
}

func (c *lineCounter) count(s string) int {
	lines := strings.Split(s, "\n")
	n := len(lines) - 1
	for _, l := range lines {
		c.mu.Lock()
		k, ok := c.seen[l]
		c.mu.Unlock()
		if !ok {
			k = c.tok.Count(l)
			c.mu.Lock()
			c.seen[l] = k
			c.mu.Unlock()
		}
		n += k
	}
	return n
}

type locomoStats struct {
	questions, scored, messages, ids, normalised, dropped int
}

// locomoEvidence matches one dia_id inside a malformed evidence string:
// "D:11:26" is D11:26, "D30:05" is D30:5, "D8:6; D9:17" is two ids.
var locomoEvidence = regexp.MustCompile(`D:?(\d+):(\d+)`)

// locomoID is the canonical dia_id of a locomoEvidence match.
func locomoID(m []string) string {
	sess, _ := strconv.Atoi(m[1])
	turn, _ := strconv.Atoi(m[2])
	return fmt.Sprintf("D%d:%d", sess, turn)
}

// loadLoCoMo reads locomo10.json into conversations ready to store,
// leaving out the first skip; limit > 0 keeps the first limit of the rest.
func loadLoCoMo(path string, skip, limit int) ([]*locomoConv, locomoStats, error) {
	var st locomoStats
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, st, fmt.Errorf("eval locomo: %w", err)
	}
	var samples []locomoSample
	if err := json.Unmarshal(b, &samples); err != nil {
		return nil, st, fmt.Errorf("eval locomo: %s: %w", path, err)
	}
	samples = samples[min(skip, len(samples)):]
	if limit > 0 && limit < len(samples) {
		samples = samples[:limit]
	}
	var convs []*locomoConv
	for _, s := range samples {
		c := &locomoConv{id: s.ID, content: map[string]string{}, order: map[string]int{}}
		var speakerA string
		_ = json.Unmarshal(s.Conv["speaker_a"], &speakerA)
		for i := 1; ; i++ {
			raw, ok := s.Conv["session_"+strconv.Itoa(i)]
			if !ok {
				break
			}
			var date string
			if err := json.Unmarshal(s.Conv["session_"+strconv.Itoa(i)+"_date_time"], &date); err != nil {
				return nil, st, fmt.Errorf("eval locomo: %s session %d: date: %w", s.ID, i, err)
			}
			at, err := time.ParseInLocation("3:04 pm on 2 January, 2006", date, time.UTC)
			if err != nil {
				return nil, st, fmt.Errorf("eval locomo: %s session %d: %w", s.ID, i, err)
			}
			var turns []locomoTurn
			if err := json.Unmarshal(raw, &turns); err != nil {
				return nil, st, fmt.Errorf("eval locomo: %s session %d: %w", s.ID, i, err)
			}
			var cur *[2]memory.Message
			for j, t := range turns {
				content := strings.TrimSpace(t.Text)
				if t.Caption != "" {
					content += " [shares " + t.Caption + "]"
				}
				c.content[t.DiaID] = content
				c.order[t.DiaID] = len(c.order)
				st.messages++
				msg := memory.Message{Content: content, Timestamp: at.Add(time.Duration(j) * time.Second).UnixMilli(),
					Metadata: memory.Metadata{Source: "import", Extra: map[string]any{memory.SpeakerKey: t.Speaker}}}
				if t.Speaker == speakerA {
					msg.Role = llm.RoleUser
					c.turns = append(c.turns, [2]memory.Message{msg, {Role: llm.RoleAssistant}})
					cur = &c.turns[len(c.turns)-1]
					continue
				}
				msg.Role = llm.RoleAssistant
				if cur != nil && cur[1].Content == "" {
					cur[1].Content, cur[1].Timestamp, cur[1].Metadata = msg.Content, msg.Timestamp, msg.Metadata
				} else {
					c.turns = append(c.turns, [2]memory.Message{{Role: llm.RoleUser, Timestamp: msg.Timestamp}, msg})
				}
				cur = nil
			}
		}
		for _, qa := range s.QA {
			st.questions++
			q := locomoQuestion{text: qa.Question, category: qa.Category}
			seen := map[string]bool{}
			for _, e := range qa.Evidence {
				st.ids++
				ms := locomoEvidence.FindAllStringSubmatch(e, -1)
				if len(ms) == 0 {
					st.dropped++
					continue
				}
				if len(ms) > 1 || locomoID(ms[0]) != e {
					st.normalised++
				}
				for _, m := range ms {
					id := locomoID(m)
					if _, ok := c.content[id]; !ok {
						st.dropped++
						continue
					}
					if !seen[id] {
						seen[id] = true
						q.evidence = append(q.evidence, id)
					}
				}
			}
			if len(q.evidence) > 0 {
				st.scored++
			}
			c.questions = append(c.questions, q)
		}
		convs = append(convs, c)
	}
	if len(convs) == 0 {
		return nil, st, fmt.Errorf("eval locomo: %s has no conversations", path)
	}
	return convs, st, nil
}
