package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

const evalCostUsage = `mixchat-eval cost [flags]

Counts the model tokens a conversation costs: the same ten-turn script
(follow-up questions about the Zhouyi) asked through /chat/chat (the
plain LLM chat) and through /chat/mix_chat in both fusion modes, each in a
fresh app with the demo's knowledge base and local search engine, the
conversation memory on the test model (its background work is waited for
after every turn and counted with it). Tokens are llm.Estimate of every
prompt and reply the test model sees, by kind of call: the answers and
fusion, the follow-up rewrite, the background memory work.
`

// costScript is the conversation every run asks, in order.
var costScript = []string{
	"乾卦的卦辞是什么？",
	"它的初九爻辞是什么意思？",
	"那九二呢？",
	"坤卦和乾卦有什么不同？",
	"坤卦的卦辞怎么解释？",
	"“元亨利贞”这四个字分别指什么？",
	"屯卦讲的是什么？",
	"它和蒙卦是什么关系？",
	"学习周易应该从哪里入手？",
	"能总结一下我们聊过的内容吗？",
}

// costReply is the test model's answer to a question: about the length of
// a short real answer (some 120 characters).
const costReply = "乾卦的卦辞是“元亨利贞”。元为万物之始，亨为通达，利为和宜，贞为正固。" +
	"《彖传》说：“大哉乾元，万物资始，乃统天。”君子观乾之象，当自强不息，" +
	"守正而行，不可妄动；初九潜龙勿用，九二见龙在田，利见大人，皆言因时而动。"

// Kinds of model call the cost run tells apart.
const (
	callAnswer   = "llm"      // the LLM-chat answerer's, the plain chat's
	callKB       = "kb"       // the knowledge-base answerer's
	callSearch   = "search"   // the search answerer's
	callFusion   = "fusion"   // fusing the answers
	callContext  = "context"  // the context mode's one answer
	callCondense = "condense" // the follow-up rewrite
	callMemory   = "memory"   // background summary and extraction
)

// costMeter is the test model: it answers and counts what each kind of
// call costs.
type costMeter struct {
	mu     sync.Mutex
	counts map[string]*costCount
	// show, when set, receives every prompt with its kind (-show-prompts).
	show io.Writer
}

// costCount is what one kind of call cost.
type costCount struct {
	Calls      int `json:"calls"`
	Prompt     int `json:"prompt_tokens"`
	Completion int `json:"completion_tokens"`
}

func (m *costMeter) reply(req openai.ChatCompletionRequest) llmtest.Reply {
	last := req.Messages[len(req.Messages)-1].Content
	kind, text := callAnswer, costReply
	switch {
	case strings.Contains(last, "Follow-up question:"):
		q := last[strings.LastIndex(last, "Follow-up question:")+len("Follow-up question:"):]
		kind, text = callCondense, "FACTS:\n- none\nQUESTION: 周易"+strings.TrimSpace(q)
	case strings.HasPrefix(last, "Progressively summarize"), strings.HasPrefix(last, "Extract "):
		kind, text = callMemory, "- 用户在学习周易的乾、坤、屯、蒙诸卦。"
	case strings.Contains(last, "几份回答"):
		kind = callFusion
	case strings.Contains(last, "检索到的资料"):
		kind = callContext
	case strings.HasPrefix(last, "<指令>以下是搜索引擎"):
		kind = callSearch
	case strings.HasPrefix(last, "<指令>根据已知信息"):
		kind = callKB
	}
	if kind != callCondense && kind != callMemory {
		// Answers that differ, as real ones do, so nothing is the same
		// text twice by accident.
		text = "（" + kind + "）" + text
	}
	prompt := 0
	for _, msg := range req.Messages {
		prompt += llm.Estimate(msg.Content)
	}
	m.mu.Lock()
	c := m.counts[kind]
	if c == nil {
		c = &costCount{}
		m.counts[kind] = c
	}
	c.Calls++
	c.Prompt += prompt
	c.Completion += llm.Estimate(text)
	if m.show != nil {
		fmt.Fprintf(m.show, "=== %s call, %d prompt tokens\n", kind, prompt)
		for _, msg := range req.Messages {
			fmt.Fprintf(m.show, "--- %s (%d)\n%s\n", msg.Role, llm.Estimate(msg.Content), msg.Content)
		}
	}
	m.mu.Unlock()
	return llmtest.Reply{Text: text}
}

// total returns the counts so far, by kind and in all.
func (m *costMeter) total() (map[string]costCount, costCount) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]costCount{}
	var all costCount
	for k, c := range m.counts {
		out[k] = *c
		all.Calls += c.Calls
		all.Prompt += c.Prompt
		all.Completion += c.Completion
	}
	return out, all
}

// costRun is what one way of asking the script cost, per turn.
type costRun struct {
	Name  string `json:"name"`
	Turns int    `json:"turns"`
	// CallsPerTurn, PromptPerTurn and CompletionPerTurn are averages over
	// the turns, everything included.
	CallsPerTurn      float64 `json:"calls_per_turn"`
	PromptPerTurn     float64 `json:"prompt_tokens_per_turn"`
	CompletionPerTurn float64 `json:"completion_tokens_per_turn"`
	// MemoryCallsPerTurn is the background memory work's share of the
	// calls.
	MemoryCallsPerTurn float64 `json:"memory_calls_per_turn"`
	// PromptVsChat is PromptPerTurn over the plain chat's.
	PromptVsChat float64              `json:"prompt_vs_chat"`
	ByKind       map[string]costCount `json:"by_kind"`
}

func runEvalCost(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval cost", evalCostUsage, stderr)
	turns := fs.Int("turns", len(costScript), "turns of the script to ask (at most 10)")
	jsonOut := fs.Bool("json", false, "print the figures as JSON")
	show := fs.Bool("show-prompts", false, "write every prompt the test model sees to stderr")
	evidence := fs.Int("evidence-tokens", -1, "mix.evidence_tokens for the run (-1: the default; 0: no limit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *turns < 1 || *turns > len(costScript) {
		return fmt.Errorf("eval cost: -turns must be 1 to %d", len(costScript))
	}
	tb, dir, cleanup, err := evalTemp("cost")
	if err != nil {
		return err
	}
	defer cleanup()

	var runs []costRun
	for _, w := range []struct{ name, path, fusion string }{
		{"chat", "/chat/chat", ""},
		{"mix answers", "/chat/mix_chat", "answers"},
		{"mix context", "/chat/mix_chat", "context"},
	} {
		meter := &costMeter{counts: map[string]*costCount{}}
		if *show {
			meter.show = stderr
			fmt.Fprintf(stderr, "##### %s\n", w.name)
		}
		up := llmtest.NewServer(tb, llmtest.WithHandler(meter.reply), llmtest.WithoutRecording())
		a, err := startDemoApp(ctx, filepath.Join(dir, strings.ReplaceAll(w.name, " ", "-")), up.URL(), "", func(c *config.Config) {
			if *evidence >= 0 {
				c.Mix.EvidenceTokens = *evidence
			}
		})
		if err != nil {
			return err
		}
		for i, q := range costScript[:*turns] {
			body := map[string]any{"query": q, "conversation_id": "cost", "stream": false}
			if w.fusion != "" {
				body["fusion"] = w.fusion
				body["knowledge_base_name"] = "zhouyi"
			}
			if err := a.post(ctx, w.path, body); err != nil {
				a.close()
				return fmt.Errorf("%s turn %d: %w", w.name, i+1, err)
			}
			// The background memory work of the turn is part of its cost.
			if err := a.Memory.Flush(ctx); err != nil {
				a.close()
				return err
			}
		}
		a.close()
		byKind, all := meter.total()
		n := float64(*turns)
		runs = append(runs, costRun{Name: w.name, Turns: *turns, CallsPerTurn: float64(all.Calls) / n,
			PromptPerTurn: float64(all.Prompt) / n, CompletionPerTurn: float64(all.Completion) / n,
			MemoryCallsPerTurn: float64(byKind[callMemory].Calls) / n, ByKind: byKind})
	}
	for i := range runs {
		runs[i].PromptVsChat = runs[i].PromptPerTurn / runs[0].PromptPerTurn
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(runs)
	}
	fmt.Fprintf(stdout, "tokens per turn over a %d-turn conversation (llm.Estimate of every prompt and reply; background memory work included)\n", *turns)
	if *evidence >= 0 {
		fmt.Fprintf(stdout, "mix.evidence_tokens: %d\n", *evidence)
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tcalls/turn\tmemory calls/turn\tprompt tokens/turn\tcompletion tokens/turn\tprompt vs chat\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.0f\t%.0f\t%.2f×\t\n", r.Name, r.CallsPerTurn, r.MemoryCallsPerTurn, r.PromptPerTurn, r.CompletionPerTurn, r.PromptVsChat)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\ntargets: prompt vs chat <= 2.5× in answers mode, <= 1.5× in context mode")
	return nil
}

// startDemoApp starts mixchat in dataDir as mixchat serve would on a first
// run (the demo's knowledge base and local search pages), every model call
// going to upstream; memoryModel is memory.model ("" = upstream too,
// "offline" = no model calls).
func startDemoApp(ctx context.Context, dataDir, upstream, memoryModel string, edit ...func(*config.Config)) (*evalApp, error) {
	cfg := evalConfig(dataDir, upstream, memoryModel)
	cfg.Demo = true
	for _, e := range edit {
		e(&cfg)
	}
	return startEvalLoopback(ctx, cfg, app.Options{}, &http.Client{})
}

// post sends one non-streamed request and checks that it succeeded.
func (a *evalApp) post(ctx context.Context, path string, body any) error {
	return a.postFor(ctx, path, body, nil)
}

// postFor sends one non-streamed request, checks that it succeeded and,
// when out is not nil, decodes the reply into it.
func (a *evalApp) postFor(ctx context.Context, path string, body, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	if bytes.Contains(raw, []byte(`"error":`)) {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}
