package memory

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Strategy names: how the history a model sees is assembled from a
// conversation's memory. Every strategy but Buffer keeps the history within
// Config.MaxTokenLimit (SummaryBuffer its verbatim turns; its summary
// comes on top).
const (
	// Buffer is the whole history, as stored.
	Buffer = "buffer"
	// Window is the last Config.WindowK exchanges.
	Window = "window"
	// TokenBuffer is the most recent turns that fit Config.MaxTokenLimit.
	TokenBuffer = "token_buffer"
	// Summary is a running summary of the conversation, updated
	// progressively in the background, plus the turns it does not cover yet.
	Summary = "summary"
	// SummaryBuffer is LangChain's summary buffer: the newest turns that
	// fit Config.MaxTokenLimit verbatim, plus the summary (at most
	// Compression.SummaryMaxTokens, on top of the limit) of exactly the
	// turns that fall out of it, folded in when they fall out.
	SummaryBuffer = "summary_buffer"
	// Entity is the facts kept about the entities (people, places, things)
	// the question touches, plus the last Config.RecentTurns exchanges.
	Entity = "entity"
	// KnowledgeGraph is the (subject, relation, object) triples touching the
	// question, plus the last Config.RecentTurns exchanges.
	KnowledgeGraph = "knowledge_graph"
	// Retrieval is the past messages most relevant to the question (hybrid
	// lexical + vector retrieval, as the knowledge bases use) plus the most
	// recent turns.
	Retrieval = "retrieval"
	// Compressed is, for a follow-up question, the facts of the last
	// Config.Condense.MaxPairs exchanges needed to answer it (one LLM call);
	// for a self-contained question, those exchanges verbatim.
	Compressed = "compressed"
	// Combined is the summary, the facts about the entities the question
	// names, the relevant past messages and the recent turns, sharing the
	// budget.
	Combined = "combined"
)

// strategyNames lists the strategies in the order Strategies reports them.
var strategyNames = []string{Buffer, Window, TokenBuffer, Summary, SummaryBuffer, Entity, KnowledgeGraph, Retrieval, Compressed, Combined}

// Config sets how conversations are remembered. The YAML keys are those of
// the memory section of the configuration file.
type Config struct {
	// Strategy is the default strategy (a request may name another).
	Strategy string `yaml:"strategy"`
	// HistoryLen is how many turns a request asking for "the last turns"
	// (history_len -1 in Chatchat's API) gets when the strategy is the
	// plain last-turns one; it is also the default of WindowK.
	HistoryLen int `yaml:"history_len"`
	// WindowK is the number of exchanges of the window strategy; 0 means
	// HistoryLen.
	WindowK int `yaml:"window_k"`
	// MaxTokenLimit is the token budget of the history every strategy but
	// buffer assembles (system messages included).
	MaxTokenLimit int `yaml:"max_token_limit"`
	// RecentTurns is how many of the latest exchanges the entity,
	// knowledge_graph, retrieval and combined strategies always include
	// (when they fit).
	RecentTurns int `yaml:"recent_turns"`
	// TimeZone names the zone dates are shown and parsed in ("" or "Local":
	// the machine's; "UTC"; an IANA name such as "Asia/Shanghai").
	TimeZone string `yaml:"time_zone"`
	// Model names the configured model that writes summaries, extracts
	// facts and rewrites follow-up questions ("" = the default model). The
	// wiring resolves it into Options: the offline model's are the
	// extractive stand-ins, which call no model.
	Model string `yaml:"model"`
	// Rewrite is the policy of the follow-up rewrite (RewriteAuto,
	// RewriteAlways, RewriteNever). "auto": whenever the conversation
	// has history the Rewriter is asked and judges — a model's rewriter
	// always asks the model, which decides the standalone question; the
	// offline rewriter leaves a question that names its subject as it is.
	// "always": the offline rewriter rewrites even such a question.
	// "never": follow-ups are used as asked.
	Rewrite string `yaml:"rewrite"`
	// Language is the language of memory's headings and long-term memory
	// message: "zh", "en", or "" (auto: the question's).
	Language string `yaml:"language"`
	// CacheConversations bounds how many conversations' memories are kept
	// in process memory (least recently used are dropped): as many whose
	// retrieval index is kept, and as many more read only for their last
	// exchanges (a knowledge-base chat's follow-ups), which hold a few turns.
	CacheConversations int `yaml:"cache_conversations"`

	Retrieval   RetrievalConfig   `yaml:"retrieval"`
	Compression CompressionConfig `yaml:"compression"`
	Condense    CondenseConfig    `yaml:"condense"`
	LongTerm    LongTermConfig    `yaml:"long_term"`
}

// RetrievalConfig tunes the retrieval of past messages.
type RetrievalConfig struct {
	// VectorWeight is the share of the vector similarity in the hybrid score
	// (the rest is BM25), in [0,1].
	VectorWeight float64 `yaml:"vector_weight"`
	// NeighborWeight is how much a message's score lends to the next
	// message (the reply to it) and half of it to the previous one; 0 turns
	// neighbour smoothing off.
	NeighborWeight float64 `yaml:"neighbor_weight"`
	// SessionGap splits a conversation into sessions: messages further
	// apart than this belong to different sessions (no smoothing across,
	// a session prior within).
	SessionGap time.Duration `yaml:"session_gap"`
	// EmbedDim is the dimension of the offline hashing embedder used when
	// no embedding model is given.
	EmbedDim int `yaml:"embed_dim"`
}

// CompressionConfig controls the background compression of older turns
// into a summary, entity facts and triples. It runs after the reply is
// sent and never delays one.
type CompressionConfig struct {
	// TriggerTokens: when the turns the summary does not cover exceed this
	// many tokens, the oldest of them are folded into the summary, GroupSize
	// exchanges at a time, until they fit again.
	TriggerTokens int `yaml:"trigger_tokens"`
	// TriggerWords, when positive, also triggers compression by the word
	// count (CJK characters count as words) of the uncovered turns.
	TriggerWords int `yaml:"trigger_words"`
	// GroupSize is how many exchanges one summarisation step folds.
	GroupSize int `yaml:"group_size"`
	// SummaryMaxTokens bounds the summary.
	SummaryMaxTokens int `yaml:"summary_max_tokens"`
	// MaxEntities, MaxFactsPerEntity and MaxTriples bound the extracted
	// facts; the oldest go first.
	MaxEntities       int `yaml:"max_entities"`
	MaxFactsPerEntity int `yaml:"max_facts_per_entity"`
	MaxTriples        int `yaml:"max_triples"`
	// Workers is the number of background workers; Queue the number of
	// conversations waiting for one (further requests are dropped and picked
	// up with the conversation's next turn).
	Workers int `yaml:"workers"`
	Queue   int `yaml:"queue"`
	// Timeout bounds one compression job (its LLM calls included).
	Timeout time.Duration `yaml:"timeout"`
	// CloseTimeout is how long Close waits for pending jobs before
	// cancelling them.
	CloseTimeout time.Duration `yaml:"close_timeout"`
}

// CondenseConfig controls follow-up question rewriting.
type CondenseConfig struct {
	// MaxPairs is the most question/answer pairs read (at most 5); the
	// compressed strategy condenses as many.
	MaxPairs int `yaml:"max_pairs"`
	// MaxTokens bounds the pairs read.
	MaxTokens int `yaml:"max_tokens"`
	// MessageTokens cuts each message read to its first sentences within
	// this many tokens (0: whole messages): a follow-up's referents are
	// named in the question and the start of the answer, and the rewrite
	// runs on every turn with history.
	MessageTokens int `yaml:"message_tokens"`
	// Timeout bounds the LLM call.
	Timeout time.Duration `yaml:"timeout"`
}

// LongTermConfig controls long-term (per user) memory.
type LongTermConfig struct {
	// Enabled turns consolidation and injection on.
	Enabled bool `yaml:"enabled"`
	// IdleClose closes (and consolidates) a conversation with no turn for
	// this long; 0 disables idle closing (POST .../close still works).
	IdleClose time.Duration `yaml:"idle_close"`
	// MaxFacts bounds a user's facts; MaxSummaryTokens the user's summary.
	MaxFacts         int `yaml:"max_facts"`
	MaxSummaryTokens int `yaml:"max_summary_tokens"`
	// Prompt is the variant of the memory_longterm template that renders
	// the system message new conversations get ("default" English, "zh",
	// or "auto": by language, see LongTermAuto).
	Prompt string `yaml:"prompt"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Strategy:           Combined,
		HistoryLen:         10,
		MaxTokenLimit:      2000,
		RecentTurns:        3,
		Rewrite:            RewriteAuto,
		CacheConversations: 256,
		Retrieval: RetrievalConfig{
			VectorWeight:   0.3,
			NeighborWeight: 0.6,
			SessionGap:     2 * time.Hour,
			EmbedDim:       512,
		},
		Compression: CompressionConfig{
			TriggerTokens:     800,
			GroupSize:         5,
			SummaryMaxTokens:  400,
			MaxEntities:       100,
			MaxFactsPerEntity: 8,
			MaxTriples:        300,
			Workers:           2,
			Queue:             1024,
			Timeout:           2 * time.Minute,
			CloseTimeout:      10 * time.Second,
		},
		Condense: CondenseConfig{MaxPairs: 2, MaxTokens: 1500, MessageTokens: 30, Timeout: 30 * time.Second},
		LongTerm: LongTermConfig{
			Enabled:          true,
			IdleClose:        time.Hour,
			MaxFacts:         50,
			MaxSummaryTokens: 300,
			Prompt:           LongTermAuto,
		},
	}
}

// Languages of Config.Language.
const (
	LanguageAuto = ""
	LanguageZH   = "zh"
	LanguageEN   = "en"
)

// LongTermAuto is the LongTermConfig.Prompt that picks the template by
// language (Config.Language, else the first question's): "zh" for
// Chinese, "default" otherwise.
const LongTermAuto = "auto"

// ErrUnknownStrategy is returned for a strategy name that does not exist.
var ErrUnknownStrategy = errors.New("unknown memory strategy")

// Validate checks the configuration, naming each wrong field by its
// configuration key (memory.strategy, memory.compression.group_size...).
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, value any, want string) {
		errs = append(errs, fmt.Errorf("memory.%s: %v is invalid: %s", field, value, want))
	}
	within := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			bad(field, v, fmt.Sprintf("want %d to %d", lo, hi))
		}
	}
	atLeast := func(field string, v, lo int) {
		if v < lo {
			bad(field, v, fmt.Sprintf("want at least %d", lo))
		}
	}
	positive := func(field string, d time.Duration) {
		if d <= 0 {
			bad(field, d, "want a positive duration")
		}
	}
	if !validStrategy(c.Strategy) {
		bad("strategy", fmt.Sprintf("%q", c.Strategy), "want one of "+strings.Join(strategyNames, ", "))
	}
	within("history_len", c.HistoryLen, 0, 1000)
	if c.WindowK < 0 || c.WindowK > 1000 {
		bad("window_k", c.WindowK, "want 0 (history_len) to 1000")
	}
	within("max_token_limit", c.MaxTokenLimit, 100, 1_000_000)
	within("recent_turns", c.RecentTurns, 0, 100)
	if _, err := loadZone(c.TimeZone); err != nil {
		bad("time_zone", fmt.Sprintf("%q", c.TimeZone), err.Error())
	}
	atLeast("cache_conversations", c.CacheConversations, 1)
	r := c.Retrieval
	if r.VectorWeight < 0 || r.VectorWeight > 1 {
		bad("retrieval.vector_weight", r.VectorWeight, "want 0 to 1")
	}
	if r.NeighborWeight < 0 || r.NeighborWeight > 1 {
		bad("retrieval.neighbor_weight", r.NeighborWeight, "want 0 to 1")
	}
	if r.SessionGap < 0 {
		bad("retrieval.session_gap", r.SessionGap, "want a non-negative duration")
	}
	within("retrieval.embed_dim", r.EmbedDim, 16, 8192)
	p := c.Compression
	atLeast("compression.trigger_tokens", p.TriggerTokens, 50)
	if p.TriggerWords < 0 {
		bad("compression.trigger_words", p.TriggerWords, "want 0 (off) or more")
	}
	within("compression.group_size", p.GroupSize, 1, 50)
	atLeast("compression.summary_max_tokens", p.SummaryMaxTokens, 50)
	if p.MaxEntities < 1 || p.MaxFactsPerEntity < 1 || p.MaxTriples < 1 {
		bad("compression.max_entities/max_facts_per_entity/max_triples",
			fmt.Sprintf("%d/%d/%d", p.MaxEntities, p.MaxFactsPerEntity, p.MaxTriples), "want at least 1 each")
	}
	within("compression.workers", p.Workers, 1, 64)
	atLeast("compression.queue", p.Queue, 1)
	positive("compression.timeout", p.Timeout)
	if p.CloseTimeout < 0 {
		bad("compression.close_timeout", p.CloseTimeout, "want a non-negative duration")
	}
	switch c.Rewrite {
	case RewriteAuto, RewriteAlways, RewriteNever:
	default:
		bad("rewrite", fmt.Sprintf("%q", c.Rewrite), "want auto, always or never")
	}
	d := c.Condense
	within("condense.max_pairs", d.MaxPairs, 1, 5)
	atLeast("condense.max_tokens", d.MaxTokens, 50)
	if d.MessageTokens != 0 && d.MessageTokens < 10 {
		bad("condense.message_tokens", d.MessageTokens, "want 0 (whole messages) or at least 10")
	}
	positive("condense.timeout", d.Timeout)
	l := c.LongTerm
	if l.IdleClose < 0 {
		bad("long_term.idle_close", l.IdleClose, "want 0 (off) or a positive duration")
	}
	atLeast("long_term.max_facts", l.MaxFacts, 1)
	atLeast("long_term.max_summary_tokens", l.MaxSummaryTokens, 20)
	switch c.Language {
	case LanguageAuto, LanguageZH, LanguageEN:
	default:
		bad("language", fmt.Sprintf("%q", c.Language), `want "" (auto), "zh" or "en"`)
	}
	if l.Prompt != LongTermAuto && !hasPrompt(longTermGroup, l.Prompt) {
		bad("long_term.prompt", fmt.Sprintf("%q", l.Prompt), "want auto or a variant of prompts/"+longTermGroup+".*.tmpl")
	}
	return errors.Join(errs...)
}

func validStrategy(name string) bool {
	for _, s := range strategyNames {
		if s == name {
			return true
		}
	}
	return false
}

// windowK returns the window size in exchanges.
func (c Config) windowK() int {
	if c.WindowK > 0 {
		return c.WindowK
	}
	return c.HistoryLen
}

// loadZone resolves Config.TimeZone.
func loadZone(name string) (*time.Location, error) {
	switch name {
	case "", "Local", "local":
		return time.Local, nil
	case "UTC", "utc":
		return time.UTC, nil
	}
	return time.LoadLocation(name)
}
