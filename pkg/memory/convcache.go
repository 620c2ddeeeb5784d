package memory

// The per-conversation cache: what the Manager holds of a conversation,
// how much of it an operation reads (need), and how it is brought up to
// date with the store.

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mixchat/mixchat/pkg/llm"
)

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

// convLRU is a set of cached conversations, the least recently used
// first to go.
type convLRU struct {
	byID map[string]*list.Element // of *convState
	list *list.List
}

func newConvLRU() convLRU { return convLRU{byID: map[string]*list.Element{}, list: list.New()} }

// get returns the entry of id, marking it recently used.
func (c convLRU) get(id string) (*convState, bool) {
	e, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	c.list.MoveToFront(e)
	return e.Value.(*convState), true
}

// peek returns the entry of id without marking it used.
func (c convLRU) peek(id string) (*convState, bool) {
	e, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	return e.Value.(*convState), true
}

// add adds cs, dropping the least recently used entries beyond limit.
func (c convLRU) add(cs *convState, limit int) {
	c.byID[cs.id] = c.list.PushFront(cs)
	for c.list.Len() > limit {
		old := c.list.Back()
		c.list.Remove(old)
		delete(c.byID, old.Value.(*convState).id)
	}
}

// remove drops the entry of id, returning it.
func (c convLRU) remove(id string) (*convState, bool) {
	e, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	c.list.Remove(e)
	delete(c.byID, id)
	return e.Value.(*convState), true
}

// entry returns the cache entry of id, marking it recently used. The cache
// has two parts of CacheConversations entries each: conversations whose
// retrieval index is worth keeping (keep), and those that work reading
// little of a conversation opened (light: a knowledge-base chat's rewrite
// reads the last exchanges), so that the second never evicts the first
// while a conversation of either kind is read from the store once, not at
// every turn. A light entry that keep opens moves to the first part.
func (m *Manager) entry(id string, keep bool) *convState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cs, ok := m.cache.get(id); ok {
		return cs
	}
	if !keep {
		if cs, ok := m.light.get(id); ok {
			return cs
		}
		cs := &convState{id: id}
		m.light.add(cs, m.cfg.CacheConversations)
		return cs
	}
	cs, ok := m.light.remove(id)
	if !ok {
		cs = &convState{id: id}
	}
	m.cache.add(cs, m.cfg.CacheConversations)
	return cs
}

// cached returns the cache entry of id, if any, without marking it used.
func (m *Manager) cached(id string) (*convState, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cs, ok := m.cache.peek(id); ok {
		return cs, true
	}
	return m.light.peek(id)
}

func (m *Manager) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cache.remove(id)
	m.light.remove(id)
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
	// refill reads the conversation's latest turns afresh.
	refill := func() (*convState, error) {
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
	cs.mu.Lock()
	if !cs.loaded {
		return refill()
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
		return refill()
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
