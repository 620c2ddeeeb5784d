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
//
// turns holds the conversation's latest turns, not necessarily all of
// them (complete says when it does): an operation reads as far back as it
// needs (ensure), so a turn late in a long conversation reads what its
// strategy shows, not the whole conversation. The retrieval index, built
// once from every turn, is then kept up to date turn by turn.
type convState struct {
	mu       sync.Mutex
	id       string
	loaded   bool
	complete bool // turns holds every turn of the conversation
	conv     Conversation
	turns    []Turn
	tokens   []int // per turn: its messages' tokens
	tokenSum int   // of tokens
	state    State
	index    *turnIndex // nil until a recall needs it; then over every turn
	// derived caches what recalls compute from state.Digest; nil when the
	// digest changed since (stale then holds what it was, for derive to
	// reuse).
	derived, stale *derived
}

func (c *convState) lastID() int64 {
	if len(c.turns) == 0 {
		return 0
	}
	return c.turns[len(c.turns)-1].ID
}

// need is what an operation reads of a conversation's turns, counting back
// from the latest: at least the last turns; every turn after turn after
// (-1: no such need); turns until their tokens exceed tokens, the budget a
// strategy walks back through (-1: no such need) — with either, whichever of
// those two comes first, else both; or, with all, every turn.
type need struct {
	all    bool
	last   int
	after  int64
	tokens int
	either bool
}

// needAll asks for every turn.
var needAll = need{all: true, after: -1, tokens: -1}

// needLast asks for the last k turns.
func needLast(k int) need { return need{last: k, after: -1, tokens: -1} }

// met reports whether c holds the turns n asks for.
func (c *convState) met(n need) bool {
	if c.complete {
		return true
	}
	if n.all || len(c.turns) < n.last {
		return false
	}
	reached := n.after >= 0 && len(c.turns) > 0 && c.turns[0].ID <= n.after+1
	covered := n.tokens >= 0 && c.tokenSum > n.tokens
	if n.either {
		return reached || covered || (n.after < 0 && n.tokens < 0)
	}
	return (n.after < 0 || reached) && (n.tokens < 0 || covered)
}

// fillTurns is the fewest turns ensure reads at a time.
const fillTurns = 16

// entry returns the cache entry of id, marking it recently used. A
// conversation not cached is cached when keep is set (the least recently
// used entries beyond the limit are dropped); otherwise it gets an entry of
// its own, dropped after use.
func (m *Manager) entry(id string, keep bool) *convState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.cache[id]; ok {
		m.lru.MoveToFront(e)
		return e.Value.(*convState)
	}
	cs := &convState{id: id}
	if !keep {
		return cs
	}
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

// load returns the conversation's state brought up to date with the store,
// holding every turn (nil when the conversation does not exist), cached and
// locked; the caller unlocks it.
func (m *Manager) load(ctx context.Context, id string) (*convState, error) {
	cs, err := m.open(ctx, id, true, 0)
	if err != nil || cs == nil {
		return cs, err
	}
	if err := m.ensure(ctx, cs, needAll); err != nil {
		cs.mu.Unlock()
		return nil, err
	}
	return cs, nil
}

// open returns the conversation's state brought up to date with the store,
// holding its latest turns (nil when the conversation does not exist),
// locked; the caller unlocks it and calls ensure for more turns. A
// conversation not cached is read with its last first turns (0: all).
// keep caches a conversation not cached yet (see entry): work that reads
// little of a conversation (compression, the rewrite's recall) leaves the
// cache to the conversations whose retrieval index is worth keeping.
func (m *Manager) open(ctx context.Context, id string, keep bool, first int) (*convState, error) {
	cs := m.entry(id, keep)
	cs.mu.Lock()
	if !cs.loaded {
		if err := m.fill(ctx, cs, first); err != nil {
			cs.mu.Unlock()
			if errors.Is(err, ErrNotFound) {
				m.forget(id)
				return nil, nil
			}
			return nil, err
		}
		return cs, nil
	}
	newest, err := m.lastTurnID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		cs.mu.Unlock()
		m.forget(id)
		return nil, nil
	}
	if err != nil {
		cs.mu.Unlock()
		return nil, fmt.Errorf("load memory of %s: %w", id, err)
	}
	if newest < cs.lastID() {
		// The conversation was deleted and made again elsewhere.
		cs.loaded = false
		if err := m.fill(ctx, cs, first); err != nil {
			cs.mu.Unlock()
			if errors.Is(err, ErrNotFound) {
				m.forget(id)
				return nil, nil
			}
			return nil, err
		}
		return cs, nil
	}
	if newest > cs.lastID() {
		// Turn ids count up by one, so the missing turns are the last
		// (newest - cached) ones, unless more arrived meanwhile: then ask
		// again for as many as the reply shows are missing.
		need := newest - cs.lastID()
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

// lastTurnIDer is a Store that tells a conversation's newest turn id
// without reading the turn (SQLStore.LastTurnID).
type lastTurnIDer interface {
	LastTurnID(ctx context.Context, conversationID string) (int64, error)
}

// lastTurnID returns the id of the conversation's newest turn, 0 when it
// has none; ErrNotFound when it does not exist.
func (m *Manager) lastTurnID(ctx context.Context, id string) (int64, error) {
	if s, ok := m.store.(lastTurnIDer); ok {
		return s.LastTurnID(ctx, id)
	}
	last, err := m.store.Turns(ctx, id, 1)
	if err != nil || len(last) == 0 {
		return 0, err
	}
	return last[0].ID, nil
}

// fill loads a conversation's last first turns (0: all) into an empty
// cache entry.
func (m *Manager) fill(ctx context.Context, cs *convState, first int) error {
	conv, err := m.store.Conversation(ctx, cs.id)
	if err != nil {
		return fmt.Errorf("load memory of %s: %w", cs.id, err)
	}
	first = max(first, 0)
	turns, err := m.store.Turns(ctx, cs.id, first)
	if err != nil {
		return fmt.Errorf("load memory of %s: %w", cs.id, err)
	}
	st, err := m.state.State(ctx, cs.id)
	if err != nil {
		return fmt.Errorf("load memory of %s: %w", cs.id, err)
	}
	cs.conv, cs.state, cs.index, cs.derived, cs.stale = conv, st, nil, nil, nil
	m.setTurns(cs, turns, first == 0 || len(turns) < first)
	cs.loaded = true
	return nil
}

// ensure reads further back into the conversation until cs (locked) holds
// the turns n asks for. A conversation whose retrieval index exists holds
// them all already.
func (m *Manager) ensure(ctx context.Context, cs *convState, n need) error {
	for !cs.met(n) {
		want := 0 // every turn
		if !n.all {
			want = max(n.last, 2*len(cs.turns), fillTurns)
			if n.tokens >= 0 && cs.tokenSum > 0 {
				// As many more turns as the tokens missing take at the
				// turns' mean size, and a quarter more.
				mean := float64(cs.tokenSum) / float64(len(cs.turns))
				want = max(n.last, len(cs.turns)+int(1.25*float64(n.tokens-cs.tokenSum)/mean)+1, fillTurns)
			}
			if n.after >= 0 && !n.either {
				// Turn ids count up by one from 1.
				want = max(want, int(cs.lastID()-n.after))
			}
		}
		turns, err := m.store.Turns(ctx, cs.id, want)
		if err != nil {
			return fmt.Errorf("load memory of %s: %w", cs.id, err)
		}
		m.setTurns(cs, turns, want == 0 || len(turns) < want)
	}
	return nil
}

// setTurns replaces the turns of cs (which has no index) with turns, the
// latest of the conversation, every one of them when complete. Token
// counts already made are kept.
func (m *Manager) setTurns(cs *convState, turns []Turn, complete bool) {
	known := make(map[int64]int, len(cs.turns))
	for i, t := range cs.turns {
		known[t.ID] = cs.tokens[i]
	}
	cs.turns, cs.tokens, cs.tokenSum, cs.complete = make([]Turn, 0, len(turns)), make([]int, 0, len(turns)), 0, complete
	for _, t := range turns {
		t.Question.Metadata, t.Answer.Metadata = leanMetadata(t.Question.Metadata), leanMetadata(t.Answer.Metadata)
		n, ok := known[t.ID]
		if !ok {
			n = m.turnTokens(t)
		}
		cs.turns = append(cs.turns, t)
		cs.tokens = append(cs.tokens, n)
		cs.tokenSum += n
	}
}

func (m *Manager) appendTurns(cs *convState, turns []Turn) {
	for _, t := range turns {
		t.Question.Metadata, t.Answer.Metadata = leanMetadata(t.Question.Metadata), leanMetadata(t.Answer.Metadata)
		n := m.turnTokens(t)
		cs.turns = append(cs.turns, t)
		cs.tokens = append(cs.tokens, n)
		cs.tokenSum += n
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
