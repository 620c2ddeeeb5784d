package mix

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/prompts"
)

// PromptGroup is the prompts/ group of the fusion templates.
const PromptGroup = "mix_chat"

// DefaultPersona is the fusion prompt's persona when mix.persona is not
// set: a neutral expert on the user's documents (the demo knowledge base
// brings a persona of its own).
const DefaultPersona = "你是一位严谨的专家，熟悉用户提供的文档和资料"

// Config is the Mixer's configuration, the "mix" section of mixchat's
// configuration file.
type Config struct {
	// Answerers lists the answerers this deployment runs, in the order
	// their answers are shown to the fusion prompt. A request may switch
	// some off, never one that is not listed here.
	Answerers []string `yaml:"answerers"`
	// Timeouts bound each step; an answerer that runs out of time is
	// reported as failed and fusion goes on with the others.
	Timeouts Timeouts `yaml:"timeouts"`
	// Persona opens the fusion prompt: who the model speaks as, one
	// sentence without final punctuation.
	Persona string `yaml:"persona"`
	// Fusion is the default fusion mode: "answers" (run every answerer, fuse
	// their answers) or "context" (one model call over the retrieved
	// evidence).
	Fusion string `yaml:"fusion"`
	// FusionModel names the model that fuses; "" means the request's
	// model_name, else the default model.
	FusionModel string `yaml:"fusion_model"`
	// FusionTemperature and FusionMaxTokens tune the fusion call; nil and
	// 0 mean the request's values, else the model's defaults.
	FusionTemperature *float32 `yaml:"fusion_temperature"`
	FusionMaxTokens   int      `yaml:"fusion_max_tokens"`
	// Prompt and ContextPrompt name the mix_chat templates of the two
	// modes (prompts/mix_chat.NAME.tmpl); "" means "default" and "context".
	// A request's prompt_name overrides them.
	Prompt        string `yaml:"prompt"`
	ContextPrompt string `yaml:"context_prompt"`
	// Condense rewrites follow-up questions into standalone ones for
	// retrieval when the conversation has history.
	Condense bool `yaml:"condense"`
	// AnswererHistory is the history the knowledge-base and search
	// answerers and the fusion (or context-mode) prompt see: "none",
	// "all", or "" (auto): once the follow-up was rewritten, the
	// answerers get none and the prompt the condenser's context (the
	// facts the question needs) instead of the dialog; without a rewrite,
	// all of it. The LLM-chat answerer always sees the history.
	AnswererHistory string `yaml:"answerer_history"`
	// EvidenceTokens bounds the evidence one prompt carries: the context
	// mode's passages, and the search answerer's results
	// (Query.EvidenceTokens); the best come first and the last is cut to
	// fit. 0 means no limit.
	EvidenceTokens int `yaml:"evidence_tokens"`
}

// Values of Config.AnswererHistory.
const (
	HistoryAuto = "auto"
	HistoryNone = "none"
	HistoryAll  = "all"
)

// Timeouts are the time limits of each step; 0 means no limit of its own
// (the request's context and the LLM client's per-call timeout still
// apply).
type Timeouts struct {
	// Answerers bound each answerer, keyed by its name (in the
	// configuration file, the keys of mix.timeouts beside condense and
	// fusion: llm, kb, search); an answerer without one has no limit of its
	// own.
	Answerers map[string]time.Duration `yaml:",inline"`
	Condense  time.Duration            `yaml:"condense"`
	Fusion    time.Duration            `yaml:"fusion"`
}

// For returns the timeout of the answerer called name.
func (t Timeouts) For(name string) time.Duration { return t.Answerers[name] }

// DefaultEvidenceTokens is the default evidence budget of a prompt: about
// three passages of 130 Chinese characters or 90 English words.
const DefaultEvidenceTokens = 400

// DefaultConfig returns the defaults: all three answerers, fused answers,
// the neutral persona.
func DefaultConfig() Config {
	return Config{
		Answerers: []string{rag.LLM, rag.KB, rag.Search},
		Timeouts: Timeouts{
			Answerers: map[string]time.Duration{rag.LLM: 60 * time.Second, rag.KB: 60 * time.Second, rag.Search: 60 * time.Second},
			Condense:  20 * time.Second, Fusion: 0,
		},
		Persona:        DefaultPersona,
		Fusion:         FusionAnswers,
		Prompt:         "default",
		ContextPrompt:  "context",
		Condense:       true,
		EvidenceTokens: DefaultEvidenceTokens,
	}
}

// KnownAnswerers are the answerer names Config.Answerers and requests may
// use.
var KnownAnswerers = []string{rag.LLM, rag.KB, rag.Search}

// Validate checks c; every message names the field (under "mix.") and what
// is allowed.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v any, allowed string) {
		errs = append(errs, fmt.Errorf("config: mix.%s: %v is not valid; %s", field, v, allowed))
	}
	if len(c.Answerers) == 0 {
		bad("answerers", "[]", "want at least one of "+strings.Join(KnownAnswerers, ", "))
	}
	seen := map[string]bool{}
	for i, a := range c.Answerers {
		switch {
		case !slices.Contains(KnownAnswerers, a):
			bad(fmt.Sprintf("answerers[%d]", i), strconv.Quote(a), "allowed: "+strings.Join(KnownAnswerers, ", "))
		case seen[a]:
			bad(fmt.Sprintf("answerers[%d]", i), strconv.Quote(a), "listed twice")
		}
		seen[a] = true
	}
	for _, name := range slices.Sorted(maps.Keys(c.Timeouts.Answerers)) {
		switch d := c.Timeouts.Answerers[name]; {
		case !slices.Contains(KnownAnswerers, name):
			bad("timeouts."+name, d, "the keys are the answerers ("+strings.Join(KnownAnswerers, ", ")+"), condense and fusion")
		case d < 0:
			bad("timeouts."+name, d, "want 0 (no limit) or a positive duration such as 60s")
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"condense", c.Timeouts.Condense}, {"fusion", c.Timeouts.Fusion}} {
		if d.v < 0 {
			bad("timeouts."+d.name, d.v, "want 0 (no limit) or a positive duration such as 60s")
		}
	}
	if strings.TrimSpace(c.Persona) == "" {
		bad("persona", `""`, "want the expert the fusion prompt speaks as, e.g. "+DefaultPersona)
	}
	switch c.Fusion {
	case FusionAnswers, FusionContext:
	default:
		bad("fusion", strconv.Quote(c.Fusion), "allowed: answers, context")
	}
	switch c.AnswererHistory {
	case "", HistoryAuto, HistoryNone, HistoryAll:
	default:
		bad("answerer_history", strconv.Quote(c.AnswererHistory), "allowed: auto (none once the question is rewritten), none, all")
	}
	if t := c.FusionTemperature; t != nil && (*t < 0 || *t > 2) {
		bad("fusion_temperature", *t, "want 0 to 2")
	}
	if c.EvidenceTokens < 0 {
		bad("evidence_tokens", c.EvidenceTokens, "want 0 (no limit) or a positive number of tokens")
	}
	if c.FusionMaxTokens < 0 {
		bad("fusion_max_tokens", c.FusionMaxTokens, "want 0 (no limit) or a positive number")
	}
	for _, p := range []struct {
		field, name string
		context     bool
	}{{"prompt", c.Prompt, false}, {"context_prompt", c.ContextPrompt, true}} {
		var fit []string
		for _, n := range prompts.Names(PromptGroup) {
			if contextPrompt(n) == p.context {
				fit = append(fit, n)
			}
		}
		if p.name != "" && !slices.Contains(fit, p.name) {
			bad(p.field, strconv.Quote(p.name), "allowed: "+strings.Join(fit, ", ")+" (prompts/mix_chat.NAME.tmpl; context-mode templates are named context*)")
		}
	}
	return errors.Join(errs...)
}
