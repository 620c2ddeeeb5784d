package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/retrieve"
)

// Options are a Manager's collaborators. All are optional.
type Options struct {
	// Rewriter makes follow-up questions stand alone, Summarizer writes
	// the running summaries and the user's long-term summary, Extractor
	// reads entity facts, triples and user facts. The wiring gives either
	// a model's (NewModelRewriter, NewModelSummarizer,
	// NewModelExtractor) or the offline ones (pkg/extractive). Without a
	// Rewriter follow-ups are used as asked; without a Summarizer nothing
	// is summarized (the summary strategies show the turns verbatim);
	// without an Extractor no facts or triples are kept.
	Rewriter   Rewriter
	Summarizer Summarizer
	Extractor  Extractor
	// Model, when set, fills those of Rewriter, Summarizer and Extractor
	// that are nil with its model implementations. It must be a
	// generative model: memory sends it the memory_* prompts and reads
	// its replies as such.
	Model llm.Model
	// ModelName is put in the requests to Model (llm.Request.Model).
	ModelName string
	// Embedder embeds messages for retrieval; nil means the offline
	// retrieve.HashEmbedder of Config.Retrieval.EmbedDim dimensions.
	Embedder llm.Embedder
	// EmbedDim is the dimension of Embedder's vectors (required with
	// Embedder).
	EmbedDim int
	// Tokens counts tokens for the budgets; nil means llm.Estimate.
	Tokens llm.TokenCounter
	// Log receives failures of background work (compression, idle
	// closing), which have no caller to return them to.
	Log *slog.Logger
}

// Manager is the conversation memory: it assembles the history a model sees
// for a question with the configured strategy (Recall), compresses older
// turns in the background after each reply (Remember), rewrites follow-up
// questions (Condense) and keeps users' long-term memory, with the
// Rewriter, Summarizer and Extractor it is given. It satisfies the
// server's Recaller. Safe for concurrent use; Close it to stop background
// work.
type Manager struct {
	cfg        Config
	store      Store
	state      StateStore
	rewriter   Rewriter
	summarizer Summarizer
	extractor  Extractor
	embedder   llm.Embedder
	embedDim   int
	tokens     llm.TokenCounter
	log        *slog.Logger
	loc        *time.Location

	mu     sync.Mutex
	cache  convLRU // conversations whose retrieval index is kept
	light  convLRU // conversations read a little (see entry)
	jobs   map[string]*job
	queue  chan string
	closed bool

	ctx    context.Context // background work; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	idle   sync.WaitGroup

	// userLocks serialise the consolidations and edits of a user's
	// long-term memory; a user id hashes to one of them, so their number
	// stays fixed however many users come and go.
	userLocks [userLockStripes]sync.Mutex

	stats struct {
		jobs, failures, dropped, closed atomic.Int64
	}
}

// NewManager returns a manager over store. When store is also a StateStore
// (the SQLite and PostgreSQL stores are) digests, system messages and
// long-term memories are kept there; otherwise in process memory.
func NewManager(store Store, cfg Config, opts Options) (*Manager, error) {
	if store == nil {
		return nil, errors.New("memory manager: nil store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	loc, _ := loadZone(cfg.TimeZone)
	m := &Manager{
		cfg:        cfg,
		store:      store,
		rewriter:   opts.Rewriter,
		summarizer: opts.Summarizer,
		extractor:  opts.Extractor,
		embedder:   opts.Embedder,
		embedDim:   opts.EmbedDim,
		tokens:     opts.Tokens,
		log:        opts.Log,
		loc:        loc,
		cache:      newConvLRU(),
		light:      newConvLRU(),
		jobs:       map[string]*job{},
		queue:      make(chan string, cfg.Compression.Queue),
	}
	if opts.Model != nil {
		if m.rewriter == nil {
			m.rewriter = NewModelRewriter(opts.Model, opts.ModelName)
		}
		if m.summarizer == nil {
			m.summarizer = NewModelSummarizer(opts.Model, opts.ModelName)
		}
		if m.extractor == nil {
			m.extractor = NewModelExtractor(opts.Model, opts.ModelName)
		}
	}
	if ss, ok := store.(StateStore); ok {
		m.state = ss
	} else {
		m.state = newMemStateStore(store)
	}
	if m.embedder == nil {
		m.embedder = retrieve.NewHashEmbedder(cfg.Retrieval.EmbedDim)
		m.embedDim = cfg.Retrieval.EmbedDim
	} else if m.embedDim <= 0 {
		return nil, errors.New("memory manager: Options.EmbedDim must be set with Options.Embedder")
	}
	if m.tokens == nil {
		m.tokens = estimator{}
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for range cfg.Compression.Workers {
		m.wg.Add(1)
		go m.worker()
	}
	if cfg.LongTerm.Enabled && cfg.LongTerm.IdleClose > 0 {
		m.idle.Add(1)
		go m.idleCloser()
	}
	return m, nil
}

type estimator struct{}

func (estimator) Count(s string) int { return llm.Estimate(s) }

// count returns the tokens of s, counted line by line: the sum over its
// lines plus one per line break. That is an upper bound of the tokens of
// the whole (a tokenizer may merge a line break with the punctuation before
// it, never split a line further), and the parts of an assembled history
// then add up exactly.
func (m *Manager) count(s string) int {
	if !strings.Contains(s, "\n") {
		return m.tokens.Count(s)
	}
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n += m.tokens.Count(l) + 1
	}
	return n - 1
}

// messageTokens is the cost of one chat message: its content and the chat
// format's overhead (as llm.Tokenizer.CountMessages counts it).
func (m *Manager) messageTokens(content string) int { return m.count(content) + 4 }

// Config returns the configuration in use.
func (m *Manager) Config() Config { return m.cfg }

// Strategies lists the strategy names Recall accepts.
func (m *Manager) Strategies() []string { return slices.Clone(strategyNames) }

// view is a consistent snapshot of a conversation's memory for one recall.
type view struct {
	conv    Conversation
	turns   []Turn
	tokens  []int
	digest  Digest
	derived *derived
	system  []string
	index   *turnIndex // nil unless asked for
}

// snapshot takes a view of cs (locked by the caller), building the
// retrieval index first when withIndex (cs then holds every turn: ensure
// with needAll), and with what recalls derive from the digest when
// withDerived.
func (m *Manager) snapshot(cs *convState, withIndex, withDerived bool) view {
	if withIndex && cs.index == nil {
		cs.index = newTurnIndex(m.embedder, m.embedDim, m.cfg.Retrieval.SessionGap, m.count)
		cs.index.add(cs.turns)
	}
	if withDerived && cs.derived == nil {
		cs.derived, cs.stale = m.derive(cs.state.Digest, cs.stale), nil
	}
	v := view{
		derived: cs.derived,
		conv:    cs.conv,
		turns:   cs.turns[:len(cs.turns):len(cs.turns)],
		tokens:  cs.tokens[:len(cs.tokens):len(cs.tokens)],
		digest:  cloneDigest(cs.state.Digest),
		system:  slices.Clone(cs.state.System),
	}
	if withIndex {
		v.index = cs.index
	}
	return v
}

// needsIndex reports whether strategy retrieves past messages.
func needsIndex(strategy string) bool { return strategy == Retrieval || strategy == Combined }

// needsDerived reports whether strategy reads the digest's summary, facts
// or triples (through derived).
func needsDerived(strategy string) bool {
	switch strategy {
	case Summary, SummaryBuffer, Entity, KnowledgeGraph, Combined:
		return true
	}
	return false
}

// Recall returns the history the model should see before question in the
// conversation: the conversation's system messages, then what strategy
// ("" means the configured one) assembles within Config.MaxTokenLimit.
// historyLen >= 0 asks for exactly the last historyLen turns instead of a
// strategy. A conversation that does not exist has no history.
func (m *Manager) Recall(ctx context.Context, conversationID, question, strategy string, historyLen int) ([]llm.Message, error) {
	return m.recall(ctx, conversationID, question, strategy, historyLen, 0, false)
}

// recall is Recall with the window strategy's size (0 = configured) and,
// with exchanges, only the exchanges of the history (Choice.Exchanges).
func (m *Manager) recall(ctx context.Context, conversationID, question, strategy string, historyLen, windowK int, exchanges bool) ([]llm.Message, error) {
	if strategy == "" {
		strategy = m.cfg.Strategy
	}
	if !validStrategy(strategy) {
		return nil, fmt.Errorf("%w %q", ErrUnknownStrategy, strategy)
	}
	retrieves := historyLen < 0 && needsIndex(strategy) && !exchanges
	first := 0 // every turn
	if n := m.need(strategy, historyLen, windowK, 0, Digest{}); !retrieves && !n.all {
		first = max(n.last, 1)
		if n.tokens >= 0 {
			// Read back through a budget: a few turns tell little of
			// how many it takes.
			first = max(first, fillTurns)
		}
	}
	cs, err := m.open(ctx, conversationID, !exchanges, first)
	if err != nil || cs == nil {
		return nil, err
	}
	if err := m.initSystem(ctx, cs, question); err != nil {
		cs.mu.Unlock()
		return nil, err
	}
	out := systemMessages(cs.state.System)
	budget := m.cfg.MaxTokenLimit
	for _, s := range out {
		budget -= m.messageTokens(s.Content)
	}
	n := m.need(strategy, historyLen, windowK, max(budget, 0), cs.state.Digest)
	if retrieves {
		n = needAll
	}
	if err := m.ensure(ctx, cs, n); err != nil {
		cs.mu.Unlock()
		return nil, err
	}
	v := m.snapshot(cs, retrieves, historyLen < 0 && needsDerived(strategy))
	cs.mu.Unlock()

	if historyLen >= 0 {
		from := max(0, len(v.turns)-historyLen)
		for _, t := range v.turns[from:] {
			out = append(out, turnMessages(t)...)
		}
		return out, nil
	}
	if exchanges {
		msgs, err := m.exchanges(ctx, strategy, &v, question, budget, windowK)
		if err != nil {
			return nil, err
		}
		return append(out, msgs...), nil
	}
	msgs, err := m.assemble(ctx, strategy, &v, question, budget, windowK)
	if err != nil {
		return nil, err
	}
	return append(out, msgs...), nil
}

// need returns the turns strategy reads (see assemble) within budget, for
// a conversation whose digest is d; historyLen >= 0 asks for that many.
// Retrieval reads every turn through its index; without it (for the
// exchanges alone) it reads its recent turns.
func (m *Manager) need(strategy string, historyLen, windowK, budget int, d Digest) need {
	if historyLen >= 0 {
		return needLast(historyLen)
	}
	n := needLast(labelTurns)
	switch strategy {
	case Buffer:
		return needAll
	case Window:
		if windowK <= 0 {
			windowK = m.cfg.windowK()
		}
		n.last = max(n.last, windowK)
	case TokenBuffer:
		n.tokens = budget
	case Summary:
		// The turns the summary does not cover, as far back as the budget.
		n.after, n.tokens, n.either = d.Through, budget, true
	case SummaryBuffer:
		// The turns the buffer holds, and those the summary does not
		// cover, which are folded into it or shown.
		n.after, n.tokens = d.Through, budget
	case Entity, KnowledgeGraph, Retrieval, Combined:
		n.last = max(n.last, m.cfg.RecentTurns)
	case Compressed:
		n.last = max(n.last, m.cfg.Condense.MaxPairs)
	}
	return n
}

func systemMessages(system []string) []llm.Message {
	out := make([]llm.Message, 0, len(system))
	for _, s := range system {
		if s != "" {
			out = append(out, llm.Message{Role: llm.RoleSystem, Content: s})
		}
	}
	return out
}

// Remember is told of each stored turn: it adds the turn to the
// conversation's cached memory when it is the next one (so that the next
// turn need not read it back from the store), schedules the conversation's
// background compression and returns at once. It never blocks: when the
// cached memory is in use the next turn reads the turn from the store, and
// when the queue is full the turn is compressed with the conversation's
// next one.
func (m *Manager) Remember(ctx context.Context, conversationID string, t Turn) {
	if cs, ok := m.cached(conversationID); ok && cs.mu.TryLock() {
		if cs.loaded && t.ID == cs.lastID()+1 {
			m.appendTurns(cs, []Turn{t})
		}
		cs.mu.Unlock()
	}
	m.schedule(conversationID)
}

// Stats are counters of background work.
type Stats struct {
	Jobs     int64 `json:"jobs"`     // compression jobs run
	Failures int64 `json:"failures"` // jobs that failed (their turns stay uncompressed)
	Dropped  int64 `json:"dropped"`  // schedules dropped because the queue was full
	Closed   int64 `json:"closed"`   // conversations closed (consolidated)
	Pending  int   `json:"pending"`  // conversations queued or being compressed
	Cached   int   `json:"cached"`   // conversations whose memory is held in process memory
}

// Stats returns the counters of background work and the cache's size.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	pending, cached := len(m.jobs), m.cache.list.Len()+m.light.list.Len()
	m.mu.Unlock()
	return Stats{
		Jobs: m.stats.jobs.Load(), Failures: m.stats.failures.Load(), Dropped: m.stats.dropped.Load(),
		Closed: m.stats.closed.Load(), Pending: pending, Cached: cached,
	}
}

// View is a conversation's memory as an operator inspects it.
type View struct {
	ConversationID string `json:"conversation_id"`
	Strategy       string `json:"strategy"`
	// Messages is the history the strategy gives the model for the next
	// question (before the question is known, retrieval uses none), and
	// Tokens its size.
	Messages []llm.Message `json:"messages"`
	Tokens   int           `json:"tokens"`
	Turns    int           `json:"turns"`
	System   []string      `json:"system"`
	Digest   Digest        `json:"digest"`
	// Pending is true while background compression is queued or running.
	Pending bool `json:"pending"`
}

// Inspect returns the conversation's memory as strategy ("" = configured)
// holds it. ErrNotFound if the conversation does not exist.
func (m *Manager) Inspect(ctx context.Context, conversationID, strategy string) (View, error) {
	if strategy == "" {
		strategy = m.cfg.Strategy
	}
	msgs, err := m.Recall(ctx, conversationID, "", strategy, -1)
	if err != nil {
		return View{}, err
	}
	cs, err := m.load(ctx, conversationID)
	if err != nil {
		return View{}, err
	}
	if cs == nil {
		return View{}, fmt.Errorf("conversation %s: %w", conversationID, ErrNotFound)
	}
	v := m.snapshot(cs, false, false)
	cs.mu.Unlock()
	m.mu.Lock()
	_, pending := m.jobs[conversationID]
	m.mu.Unlock()
	if msgs == nil {
		msgs = []llm.Message{}
	}
	tokens := 0
	for _, msg := range msgs {
		tokens += m.messageTokens(msg.Content)
	}
	sys := v.system
	if sys == nil {
		sys = []string{}
	}
	return View{ConversationID: conversationID, Strategy: strategy, Messages: msgs, Tokens: tokens,
		Turns: len(v.turns), System: sys, Digest: v.digest, Pending: pending}, nil
}

// SystemMessages returns the system messages of a running conversation.
func (m *Manager) SystemMessages(ctx context.Context, conversationID string) ([]string, error) {
	cs, err := m.open(ctx, conversationID, true, 1)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return nil, fmt.Errorf("conversation %s: %w", conversationID, ErrNotFound)
	}
	defer cs.mu.Unlock()
	if err := m.initSystem(ctx, cs, ""); err != nil {
		return nil, err
	}
	out := slices.Clone(cs.state.System)
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// SetSystemMessages replaces the system messages of a running conversation;
// the next Recall starts with them.
func (m *Manager) SetSystemMessages(ctx context.Context, conversationID string, msgs []string) error {
	cs, err := m.open(ctx, conversationID, true, 1)
	if err != nil {
		return err
	}
	if cs == nil {
		return fmt.Errorf("conversation %s: %w", conversationID, ErrNotFound)
	}
	defer cs.mu.Unlock()
	if err := m.state.SetSystem(ctx, conversationID, msgs); err != nil {
		return err
	}
	cs.state.System, cs.state.SystemSet = slices.Clone(msgs), true
	return nil
}
