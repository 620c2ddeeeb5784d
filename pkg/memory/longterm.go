package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mixchat/mixchat/pkg/text"
	"github.com/mixchat/mixchat/prompts"
)

// Long-term memory: when a conversation ends (CloseConversation, or idle
// for Config.LongTerm.IdleClose) its short-term memory is consolidated into
// its user's memory, a summary plus facts. New conversations of the user
// start with it as a system message. Memories are keyed by the
// conversation's user id as the store records it; a conversation without a
// user contributes to no one's memory and receives none.

// ErrNoUser is returned when a user id is empty.
var ErrNoUser = errors.New("no user id")

// Closed is the outcome of closing a conversation.
type Closed struct {
	ConversationID string `json:"conversation_id"`
	UserID         string `json:"user_id,omitempty"`
	// Consolidated is true when turns were added to the user's memory.
	Consolidated bool       `json:"consolidated"`
	Memory       UserMemory `json:"memory"`
}

// CloseConversation ends a conversation: its turns not consolidated yet
// are folded into its user's long-term memory (when it has a user and
// long-term memory is enabled) and it is marked closed. Closing again after
// new turns consolidates those. ErrNotFound if it does not exist.
func (m *Manager) CloseConversation(ctx context.Context, conversationID string) (Closed, error) {
	cs, err := m.open(ctx, conversationID, true, 1)
	if err != nil {
		return Closed{}, err
	}
	if cs == nil {
		return Closed{}, fmt.Errorf("conversation %s: %w", conversationID, ErrNotFound)
	}
	userID := cs.conv.UserID
	cs.mu.Unlock()
	if userID != "" {
		// One close of the user's conversations at a time, from reading
		// what is consolidated to marking it so: two closes of the same
		// conversation (an explicit one and the idle closer, here or on
		// another replica sharing the store) must not fold the same turns
		// twice.
		unlock, err := m.lockUser(ctx, userID)
		if err != nil {
			return Closed{}, fmt.Errorf("close conversation %s: %w", conversationID, err)
		}
		defer unlock()
	}
	cs, err = m.load(ctx, conversationID)
	if err != nil {
		return Closed{}, err
	}
	if cs == nil {
		return Closed{}, fmt.Errorf("conversation %s: %w", conversationID, ErrNotFound)
	}
	v := m.snapshot(cs, false, false)
	consolidated := cs.state.ConsolidatedThrough
	cs.mu.Unlock()
	// Another process may have consolidated meanwhile: its mark is in the
	// store, not in this process's cache.
	st, err := m.state.State(ctx, conversationID)
	if err != nil {
		return Closed{}, err
	}
	consolidated = max(consolidated, st.ConsolidatedThrough)

	out := Closed{ConversationID: conversationID, UserID: v.conv.UserID}
	var last int64
	if len(v.turns) > 0 {
		last = v.turns[len(v.turns)-1].ID
	}
	if v.conv.UserID != "" && m.cfg.LongTerm.Enabled && last > consolidated {
		mem, err := m.consolidate(ctx, v, consolidated)
		if err != nil {
			return Closed{}, fmt.Errorf("close conversation %s: %w", conversationID, err)
		}
		out.Consolidated, out.Memory = true, mem
	} else if v.conv.UserID != "" {
		mem, err := m.state.UserMemory(ctx, v.conv.UserID)
		if err != nil {
			return Closed{}, err
		}
		out.Memory = mem
	}
	now := nowMillis()
	if err := m.state.MarkClosed(ctx, conversationID, now, last); err != nil {
		return Closed{}, err
	}
	if cs, err := m.open(ctx, conversationID, true, 1); err == nil && cs != nil {
		cs.state.ClosedAt, cs.state.ConsolidatedThrough = now, max(cs.state.ConsolidatedThrough, last)
		cs.mu.Unlock()
	}
	m.stats.closed.Add(1)
	return out, nil
}

// userLockStripes is the number of locks user ids share (see
// Manager.userLocks).
const userLockStripes = 64

// userLock returns the lock serialising changes to userID's memory.
func (m *Manager) userLock(userID string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(userID))
	return &m.userLocks[h.Sum32()%userLockStripes]
}

// UserLocker is a StateStore shared by several processes that can
// serialise changes to a user's memory among them (the PostgreSQL store,
// with an advisory lock). Lock blocks until the user's lock is held or ctx
// ends; unlock releases it.
type UserLocker interface {
	LockUser(ctx context.Context, userID string) (unlock func(), err error)
}

// lockUser holds userID's lock in this process and, when the state store
// is shared (UserLocker), across the processes sharing it.
func (m *Manager) lockUser(ctx context.Context, userID string) (func(), error) {
	l := m.userLock(userID)
	l.Lock()
	ul, ok := m.state.(UserLocker)
	if !ok {
		return l.Unlock, nil
	}
	unlock, err := ul.LockUser(ctx, userID)
	if err != nil {
		l.Unlock()
		return nil, fmt.Errorf("lock the memory of user %s: %w", userID, err)
	}
	return func() {
		unlock()
		l.Unlock()
	}, nil
}

// consolidate folds the turns of v after turn `after` into the user's
// memory and saves it, retrying when another process saved meanwhile. The
// caller holds the user's lock (lockUser).
func (m *Manager) consolidate(ctx context.Context, v view, after int64) (UserMemory, error) {
	// The material: the digest's summary when it covers new turns, and the
	// new turns it does not cover.
	var lines []line
	start := len(v.turns)
	for start > 0 && v.turns[start-1].ID > after {
		start--
	}
	from := start
	if v.digest.Summary != "" && v.digest.Through > after {
		lines = summaryLines(v.digest.Summary)
		for from < len(v.turns) && v.turns[from].ID <= v.digest.Through {
			from++
		}
	}
	lines = append(lines, turnLines(v.turns[from:])...)
	newLines := turnLines(v.turns[start:])

	for attempt := 0; ; attempt++ {
		mem, err := m.state.UserMemory(ctx, v.conv.UserID)
		if err != nil {
			return UserMemory{}, err
		}
		summary := mem.Summary
		if m.summarizer != nil {
			summary, err = m.summarize(ctx, mem.Summary, lines, m.cfg.LongTerm.MaxSummaryTokens)
			if err != nil {
				return UserMemory{}, err
			}
		}
		facts, err := m.userFacts(ctx, newLines, mem.Facts)
		if err != nil {
			return UserMemory{}, err
		}
		mem.Summary = summary
		mem.Facts = mergeFacts(mem.Facts, facts, m.cfg.LongTerm.MaxFacts)
		saved, err := m.state.SaveUserMemory(ctx, mem)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			continue
		}
		return saved, err
	}
}

// userFacts returns durable facts about the user from the new turns, read
// by the Extractor (none without one).
func (m *Manager) userFacts(ctx context.Context, lines []line, known []string) ([]string, error) {
	if m.extractor == nil {
		return nil, nil
	}
	return m.extractor.UserFacts(ctx, exportLines(lines), known)
}

// mergeFacts adds new facts to old, skipping near-duplicates, keeping the
// last max.
func mergeFacts(old, add []string, maxFacts int) []string {
	out := slices.Clone(old)
	for _, f := range add {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		dup := false
		for _, o := range out {
			if o == f || text.Similarity(o, f) > 0.85 {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, f)
		}
	}
	if len(out) > maxFacts {
		out = slices.Clone(out[len(out)-maxFacts:])
	}
	return out
}

// initSystem gives a new conversation (no turns, system messages never set)
// of a user with a long-term memory that memory as its system message. cs
// is locked by the caller.
func (m *Manager) initSystem(ctx context.Context, cs *convState, question string) error {
	if cs.state.SystemSet || len(cs.turns) > 0 || cs.conv.UserID == "" || !m.cfg.LongTerm.Enabled {
		return nil
	}
	mem, err := m.state.UserMemory(ctx, cs.conv.UserID)
	if err != nil {
		return err
	}
	if mem.Empty() {
		return nil
	}
	name := m.cfg.LongTerm.Prompt
	if name == LongTermAuto {
		name = "default"
		if m.cfg.Language == LanguageZH || m.cfg.Language == LanguageAuto &&
			(isCJKText(question) || strings.TrimSpace(question) == "" && isCJKText(mem.Summary+strings.Join(mem.Facts, ""))) {
			name = "zh"
		}
	}
	msg, err := RenderLongTerm(name, mem)
	if err != nil {
		return err
	}
	msgs := []string{msg}
	if err := m.state.SetSystem(ctx, cs.id, msgs); err != nil {
		return err
	}
	cs.state.System, cs.state.SystemSet = msgs, true
	return nil
}

// RenderLongTerm renders a user's memory as the system message of a new
// conversation with the memory_longterm template variant name;
// LongTermAuto picks "zh" for a memory written in Chinese.
func RenderLongTerm(name string, mem UserMemory) (string, error) {
	if name == LongTermAuto {
		name = "default"
		if isCJKText(mem.Summary + strings.Join(mem.Facts, "")) {
			name = "zh"
		}
	}
	s, err := prompts.Render(longTermGroup, name, longTermData{strings.ReplaceAll(strings.TrimSpace(mem.Summary), "\n", " "), mem.Facts})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

// UserMemory returns a user's long-term memory (empty when none).
func (m *Manager) UserMemory(ctx context.Context, userID string) (UserMemory, error) {
	if userID == "" {
		return UserMemory{}, ErrNoUser
	}
	mem, err := m.state.UserMemory(ctx, userID)
	if err != nil {
		return UserMemory{}, err
	}
	if mem.Facts == nil {
		mem.Facts = []string{}
	}
	return mem, nil
}

// SetUserMemory replaces a user's long-term memory with summary and facts
// (an edit by the user or an operator) and returns it as saved.
func (m *Manager) SetUserMemory(ctx context.Context, userID, summary string, facts []string) (UserMemory, error) {
	if userID == "" {
		return UserMemory{}, ErrNoUser
	}
	unlock, err := m.lockUser(ctx, userID)
	if err != nil {
		return UserMemory{}, err
	}
	defer unlock()
	clean := []string{}
	for _, f := range facts {
		if f = strings.TrimSpace(f); f != "" {
			clean = append(clean, f)
		}
	}
	for attempt := 0; ; attempt++ {
		cur, err := m.state.UserMemory(ctx, userID)
		if err != nil {
			return UserMemory{}, err
		}
		cur.Summary, cur.Facts = strings.TrimSpace(summary), clean
		saved, err := m.state.SaveUserMemory(ctx, cur)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			continue
		}
		return saved, err
	}
}

// DeleteUserMemory forgets a user's long-term memory.
func (m *Manager) DeleteUserMemory(ctx context.Context, userID string) error {
	if userID == "" {
		return ErrNoUser
	}
	unlock, err := m.lockUser(ctx, userID)
	if err != nil {
		return err
	}
	defer unlock()
	return m.state.DeleteUserMemory(ctx, userID)
}

// idleCloser closes conversations idle for Config.LongTerm.IdleClose.
func (m *Manager) idleCloser() {
	defer m.idle.Done()
	every := min(max(m.cfg.LongTerm.IdleClose/4, time.Second), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.closeIdle(m.ctx)
		}
	}
}

// closeIdle closes the conversations idle for Config.LongTerm.IdleClose
// now, at most 100 per call, and returns how many it closed.
func (m *Manager) closeIdle(ctx context.Context) int {
	before := time.Now().Add(-m.cfg.LongTerm.IdleClose).UnixMilli()
	convs, err := m.state.IdleConversations(ctx, before, 100)
	if err != nil {
		m.log.Warn("list idle conversations", "err", err)
		return 0
	}
	n := 0
	for _, c := range convs {
		cctx, cancel := context.WithTimeout(ctx, m.cfg.Compression.Timeout)
		_, err := m.CloseConversation(cctx, c.ID)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("close idle conversation", "conversation", c.ID, "err", err)
			}
			continue
		}
		n++
	}
	return n
}
