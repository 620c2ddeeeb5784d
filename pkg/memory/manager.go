package memory

import (
	"container/list"
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
	cache  map[string]*list.Element // of *convState
	lru    *list.List
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
		cache:      map[string]*list.Element{},
		lru:        list.New(),
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

// convState is the cached memory of one conversation. Turns only grow; a
// view takes the slice as it is, so readers never see it change.
type convState struct {
	mu     sync.Mutex
	id     string
	loaded bool
	conv   Conversation
	turns  []Turn
	tokens []int // per turn: its messages' tokens
	state  State
	index  *turnIndex
	// derived caches what recalls compute from state.Digest; nil when the
	// digest changed since.
	derived *derived
}

func (c *convState) lastID() int64 {
	if len(c.turns) == 0 {
		return 0
	}
	return c.turns[len(c.turns)-1].ID
}

// entry returns the cache entry of id, creating it, and marks it recently
// used; the least recently used entries beyond the limit are dropped.
func (m *Manager) entry(id string) *convState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.cache[id]; ok {
		m.lru.MoveToFront(e)
		return e.Value.(*convState)
	}
	cs := &convState{id: id}
	m.cache[id] = m.lru.PushFront(cs)
	for m.lru.Len() > m.cfg.CacheConversations {
		old := m.lru.Back()
		m.lru.Remove(old)
		delete(m.cache, old.Value.(*convState).id)
	}
	return cs
}

func (m *Manager) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.cache[id]; ok {
		m.lru.Remove(e)
		delete(m.cache, id)
	}
}

// load returns the conversation's state brought up to date with the store
// (nil when the conversation does not exist), locked; the caller unlocks it.
func (m *Manager) load(ctx context.Context, id string) (*convState, error) {
	cs := m.entry(id)
	cs.mu.Lock()
	last, err := m.store.Turns(ctx, id, 1)
	if errors.Is(err, ErrNotFound) {
		cs.mu.Unlock()
		m.forget(id)
		return nil, nil
	}
	if err != nil {
		cs.mu.Unlock()
		return nil, fmt.Errorf("load memory of %s: %w", id, err)
	}
	if !cs.loaded {
		if err := m.fill(ctx, cs); err != nil {
			cs.mu.Unlock()
			return nil, err
		}
		return cs, nil
	}
	if (len(last) == 0 && cs.lastID() > 0) || (len(last) == 1 && last[0].ID < cs.lastID()) {
		// The conversation was deleted and made again elsewhere.
		cs.loaded = false
		if err := m.fill(ctx, cs); err != nil {
			cs.mu.Unlock()
			return nil, err
		}
		return cs, nil
	}
	if len(last) == 1 && last[0].ID > cs.lastID() {
		// Turn ids count up by one, so the missing turns are the last
		// (newest - cached) ones, unless more arrived meanwhile: then ask
		// again for as many as the reply shows are missing.
		need := last[0].ID - cs.lastID()
		for {
			fresh, err := m.store.Turns(ctx, id, int(need))
			if err != nil {
				cs.mu.Unlock()
				return nil, fmt.Errorf("load memory of %s: %w", id, err)
			}
			if len(fresh) == 0 {
				break
			}
			if first := fresh[0].ID; first > cs.lastID()+1 && int64(len(fresh)) >= need {
				need = fresh[len(fresh)-1].ID - cs.lastID()
				continue
			}
			var add []Turn
			for _, t := range fresh {
				if t.ID > cs.lastID() {
					add = append(add, t)
				}
			}
			m.appendTurns(cs, add)
			break
		}
	}
	return cs, nil
}

// fill loads a conversation into an empty cache entry.
func (m *Manager) fill(ctx context.Context, cs *convState) error {
	conv, err := m.store.Conversation(ctx, cs.id)
	if err != nil {
		return fmt.Errorf("load memory of %s: %w", cs.id, err)
	}
	turns, err := m.store.Turns(ctx, cs.id, 0)
	if err != nil {
		return fmt.Errorf("load memory of %s: %w", cs.id, err)
	}
	st, err := m.state.State(ctx, cs.id)
	if err != nil {
		return fmt.Errorf("load memory of %s: %w", cs.id, err)
	}
	cs.conv, cs.state, cs.turns, cs.tokens, cs.index, cs.derived = conv, st, nil, nil, nil, nil
	m.appendTurns(cs, turns)
	cs.loaded = true
	return nil
}

func (m *Manager) appendTurns(cs *convState, turns []Turn) {
	for _, t := range turns {
		t.Question.Metadata, t.Answer.Metadata = leanMetadata(t.Question.Metadata), leanMetadata(t.Answer.Metadata)
		cs.turns = append(cs.turns, t)
		cs.tokens = append(cs.tokens, m.turnTokens(t))
	}
	if cs.index != nil && len(turns) > 0 {
		cs.index.add(turns)
	}
}

// leanMetadata keeps of md what memory reads: where the message came from,
// whether it was cut short, and the speaker's name. The rest (intermediate
// answers, sources, timings, usage, feedback) can be many kilobytes per mix
// turn and stays in the store, so a cached conversation costs little more
// than its text.
func leanMetadata(md Metadata) Metadata {
	lean := Metadata{Source: md.Source, Interrupted: md.Interrupted, Model: md.Model, Extractive: md.Extractive}
	if sp, ok := md.Extra[SpeakerKey]; ok {
		lean.Extra = map[string]any{SpeakerKey: sp}
	}
	return lean
}

func (m *Manager) turnTokens(t Turn) int {
	n := 0
	for _, msg := range turnMessages(t) {
		n += m.messageTokens(msg.Content)
	}
	return n
}

// turnMessages returns a turn's non-empty messages as chat messages; a
// message with a speaker name is prefixed with it.
func turnMessages(t Turn) []llm.Message {
	var out []llm.Message
	for _, msg := range []Message{t.Question, t.Answer} {
		if msg.Content == "" {
			continue
		}
		role := msg.Role
		if role == "" {
			role = llm.RoleUser
		}
		c := msg.Content
		if sp := speakerOf(msg); sp != "" {
			c = sp + ": " + c
		}
		out = append(out, llm.Message{Role: role, Content: c})
	}
	return out
}

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
// retrieval index first when withIndex.
func (m *Manager) snapshot(cs *convState, withIndex bool) view {
	if withIndex && cs.index == nil {
		cs.index = newTurnIndex(m.embedder, m.embedDim, m.cfg.Retrieval.SessionGap, m.count)
		cs.index.add(cs.turns)
	}
	if cs.derived == nil {
		cs.derived = m.derive(cs.state.Digest)
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

// Recall returns the history the model should see before question in the
// conversation: the conversation's system messages, then what strategy
// ("" means the configured one) assembles within Config.MaxTokenLimit.
// historyLen >= 0 asks for exactly the last historyLen turns instead of a
// strategy. A conversation that does not exist has no history.
func (m *Manager) Recall(ctx context.Context, conversationID, question, strategy string, historyLen int) ([]llm.Message, error) {
	return m.recall(ctx, conversationID, question, strategy, historyLen, 0)
}

// recall is Recall with the window strategy's size (0 = configured).
func (m *Manager) recall(ctx context.Context, conversationID, question, strategy string, historyLen, windowK int) ([]llm.Message, error) {
	if strategy == "" {
		strategy = m.cfg.Strategy
	}
	if !validStrategy(strategy) {
		return nil, fmt.Errorf("%w %q", ErrUnknownStrategy, strategy)
	}
	cs, err := m.load(ctx, conversationID)
	if err != nil || cs == nil {
		return nil, err
	}
	if err := m.initSystem(ctx, cs, question); err != nil {
		cs.mu.Unlock()
		return nil, err
	}
	v := m.snapshot(cs, historyLen < 0 && needsIndex(strategy))
	cs.mu.Unlock()

	out := systemMessages(v.system)
	if historyLen >= 0 {
		from := max(0, len(v.turns)-historyLen)
		for _, t := range v.turns[from:] {
			out = append(out, turnMessages(t)...)
		}
		return out, nil
	}
	budget := m.cfg.MaxTokenLimit
	for _, s := range out {
		budget -= m.messageTokens(s.Content)
	}
	msgs, err := m.assemble(ctx, strategy, &v, question, budget, windowK)
	if err != nil {
		return nil, err
	}
	return append(out, msgs...), nil
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

// Remember is told of each stored turn: it schedules the conversation's
// background compression and returns at once. It never blocks: when the
// queue is full the turn is compressed with the conversation's next one.
func (m *Manager) Remember(ctx context.Context, conversationID string, t Turn) {
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
	pending, cached := len(m.jobs), m.lru.Len()
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
	v := m.snapshot(cs, false)
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
	cs, err := m.load(ctx, conversationID)
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
	cs, err := m.load(ctx, conversationID)
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
