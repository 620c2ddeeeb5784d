package memory

import (
	"context"
	"slices"
	"sync"
)

// Digest is what background compression has made of a conversation: a
// running summary of its older turns and the facts extracted from its
// turns. The raw turns are never changed by compression; a digest can always
// be rebuilt from them.
type Digest struct {
	// Summary covers the turns up to and including turn Through.
	Summary string `json:"summary"`
	Through int64  `json:"through"`
	// Entities and Triples were extracted from the turns up to and including
	// ExtractedThrough.
	Entities         []EntityFacts `json:"entities"`
	Triples          []Triple      `json:"triples"`
	ExtractedThrough int64         `json:"extracted_through"`
	UpdatedAt        int64         `json:"updated_at"` // Unix milliseconds
}

// EntityFacts are the facts known about one entity (a person, place, thing;
// "user" for the person talking to the assistant).
type EntityFacts struct {
	Name  string   `json:"name"`
	Facts []string `json:"facts"`
	// Turn is the last turn a fact came from (recency, for eviction).
	Turn int64 `json:"turn"`
}

// Triple is one (subject, relation, object) statement of the knowledge graph.
type Triple struct {
	Subject  string `json:"subject"`
	Relation string `json:"relation"`
	Object   string `json:"object"`
	Turn     int64  `json:"turn"`
}

// State is the memory kept about one conversation besides its turns.
type State struct {
	Digest Digest `json:"digest"`
	// System are the system messages the conversation's model sees first
	// (long-term memory injected at its start, or set through the API).
	// SystemSet tells an empty list set on purpose from one never set.
	System    []string `json:"system"`
	SystemSet bool     `json:"system_set"`
	// ClosedAt is when the conversation was last closed (Unix
	// milliseconds; 0: never); ConsolidatedThrough the last turn
	// consolidated into the user's long-term memory.
	ClosedAt            int64 `json:"closed_at"`
	ConsolidatedThrough int64 `json:"consolidated_through"`
}

// UserMemory is one user's long-term memory: what their closed
// conversations taught, injected into their new conversations.
type UserMemory struct {
	UserID  string   `json:"user_id"`
	Summary string   `json:"summary"`
	Facts   []string `json:"facts"`
	// Version increases with every save; SaveUserMemory refuses a memory
	// whose version is not the stored one (ErrConflict).
	Version   int64 `json:"version"`
	UpdatedAt int64 `json:"updated_at"` // Unix milliseconds
}

// Empty reports whether m holds nothing.
func (m UserMemory) Empty() bool { return m.Summary == "" && len(m.Facts) == 0 }

// StateStore keeps conversation memory state and users' long-term memories.
// SQLStore implements it (tables of migration 0002); NewManager
// keeps state in process memory for a Store that does not.
//
// Each method writes only its own fields, so compression saving a digest
// and a client setting system messages never undo each other. (Hence more
// than four methods: one per field group, plus the users' memories that
// live beside them.)
type StateStore interface {
	// State returns a conversation's state; the zero State when none was
	// saved.
	State(ctx context.Context, conversationID string) (State, error)
	// SaveDigest replaces the conversation's digest. ErrNotFound if the
	// conversation does not exist.
	SaveDigest(ctx context.Context, conversationID string, d Digest) error
	// SetSystem replaces the conversation's system messages (and marks
	// them set). ErrNotFound if the conversation does not exist.
	SetSystem(ctx context.Context, conversationID string, msgs []string) error
	// MarkClosed records that the conversation was closed at closedAt with
	// its turns up to through consolidated.
	MarkClosed(ctx context.Context, conversationID string, closedAt, through int64) error
	// IdleConversations lists up to limit conversations of known users
	// (user_id not empty) whose last turn is older than before and which
	// have had turns since they were last closed, oldest first.
	IdleConversations(ctx context.Context, before int64, limit int) ([]Conversation, error)
	// UserMemory returns a user's long-term memory; a zero memory (Version
	// 0) with UserID set when none was saved.
	UserMemory(ctx context.Context, userID string) (UserMemory, error)
	// SaveUserMemory stores m if the stored version is still m.Version
	// (0: none stored) and returns it with its new version and time;
	// ErrConflict otherwise.
	SaveUserMemory(ctx context.Context, m UserMemory) (UserMemory, error)
	// DeleteUserMemory forgets a user's long-term memory.
	DeleteUserMemory(ctx context.Context, userID string) error
}

// memStateStore is a StateStore in process memory, for Stores without
// their own (and tests). Its conversation checks go to the Store.
type memStateStore struct {
	store Store
	mu    sync.Mutex
	convs map[string]State
	users map[string]UserMemory
}

func newMemStateStore(store Store) *memStateStore {
	return &memStateStore{store: store, convs: map[string]State{}, users: map[string]UserMemory{}}
}

func (s *memStateStore) exists(ctx context.Context, id string) error {
	_, err := s.store.Conversation(ctx, id)
	return err
}

func (s *memStateStore) State(ctx context.Context, id string) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneState(s.convs[id]), nil
}

func (s *memStateStore) SaveDigest(ctx context.Context, id string, d Digest) error {
	if err := s.exists(ctx, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.convs[id]
	st.Digest = cloneDigest(d)
	s.convs[id] = st
	return nil
}

func (s *memStateStore) SetSystem(ctx context.Context, id string, msgs []string) error {
	if err := s.exists(ctx, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.convs[id]
	st.System, st.SystemSet = slices.Clone(msgs), true
	s.convs[id] = st
	return nil
}

func (s *memStateStore) MarkClosed(ctx context.Context, id string, closedAt, through int64) error {
	if err := s.exists(ctx, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.convs[id]
	st.ClosedAt, st.ConsolidatedThrough = closedAt, max(st.ConsolidatedThrough, through)
	s.convs[id] = st
	return nil
}

func (s *memStateStore) IdleConversations(ctx context.Context, before int64, limit int) ([]Conversation, error) {
	all, err := s.store.Conversations(ctx, "")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Conversation
	for i := len(all) - 1; i >= 0 && len(out) < limit; i-- { // oldest first
		c := all[i]
		if c.UserID != "" && c.UpdatedAt < before && s.convs[c.ID].ClosedAt < c.UpdatedAt {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *memStateStore) UserMemory(ctx context.Context, userID string) (UserMemory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.users[userID]
	if !ok {
		return UserMemory{UserID: userID}, nil
	}
	m.Facts = slices.Clone(m.Facts)
	return m, nil
}

func (s *memStateStore) SaveUserMemory(ctx context.Context, m UserMemory) (UserMemory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[m.UserID].Version != m.Version {
		return UserMemory{}, ErrConflict
	}
	m.Version++
	m.UpdatedAt = nowMillis()
	m.Facts = slices.Clone(m.Facts)
	s.users[m.UserID] = m
	return m, nil
}

func (s *memStateStore) DeleteUserMemory(ctx context.Context, userID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.users, userID)
	return nil
}

func cloneDigest(d Digest) Digest {
	d.Entities = slices.Clone(d.Entities)
	for i := range d.Entities {
		d.Entities[i].Facts = slices.Clone(d.Entities[i].Facts)
	}
	d.Triples = slices.Clone(d.Triples)
	return d
}

func cloneState(s State) State {
	s.Digest = cloneDigest(s.Digest)
	s.System = slices.Clone(s.System)
	return s
}
