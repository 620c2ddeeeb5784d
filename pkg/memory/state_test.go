package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/memory"
)

// stateStore is a Store that also keeps memory state, as the SQL stores do.
type stateStore interface {
	memory.Store
	memory.StateStore
}

func TestStateSQLite(t *testing.T) {
	testStateStore(t, openSQLite(t, filepath.Join(t.TempDir(), "memory.db")))
}

func TestStatePostgres(t *testing.T) {
	postgresDSN(t)
	testStateStore(t, openPostgres(t, newPostgresSchema(t)))
}

// testStateStore checks a StateStore: each method writes its own fields,
// versions guard user memories, and deleting a conversation deletes its
// state.
func testStateStore(t *testing.T, s stateStore) {
	ctx := context.Background()
	if st, err := s.State(ctx, "c"); err != nil || st.SystemSet || st.Digest.Through != 0 {
		t.Fatalf("State of an unknown conversation = %+v, %v; want zero", st, err)
	}
	d := memory.Digest{Summary: "Human: hi", Through: 2, ExtractedThrough: 3, UpdatedAt: 42,
		Entities: []memory.EntityFacts{{Name: "user", Facts: []string{"likes tea"}, Turn: 3}},
		Triples:  []memory.Triple{{Subject: "user", Relation: "likes", Object: "tea", Turn: 3}}}
	if err := s.SaveDigest(ctx, "c", d); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("SaveDigest before the conversation exists = %v, want ErrNotFound", err)
	}
	if err := s.SetSystem(ctx, "c", []string{"x"}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("SetSystem before the conversation exists = %v, want ErrNotFound", err)
	}
	if _, err := s.CreateConversation(ctx, memory.Conversation{ID: "c", UserID: "u", CreatedAt: 1, UpdatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveDigest(ctx, "c", d); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSystem(ctx, "c", []string{"be brief", "用中文"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkClosed(ctx, "c", 100, 2); err != nil {
		t.Fatal(err)
	}
	d2 := d
	d2.Summary, d2.Through, d2.Entities, d2.Triples = "newer", 4, nil, nil
	if err := s.SaveDigest(ctx, "c", d2); err != nil {
		t.Fatal(err)
	}
	st, err := s.State(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Digest.Summary != "newer" || st.Digest.Through != 4 || len(st.Digest.Entities) != 0 || st.Digest.ExtractedThrough != 3 ||
		!st.SystemSet || !slices.Equal(st.System, []string{"be brief", "用中文"}) || st.ClosedAt != 100 || st.ConsolidatedThrough != 2 {
		t.Errorf("State = %+v", st)
	}
	if err := s.SaveDigest(ctx, "c", d); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State(ctx, "c"); !slices.Equal(st.Digest.Triples, d.Triples) || st.Digest.Entities[0].Facts[0] != "likes tea" {
		t.Errorf("digest round trip = %+v", st.Digest)
	}
	// An empty list set on purpose stays set.
	if err := s.SetSystem(ctx, "c", nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State(ctx, "c"); !st.SystemSet || len(st.System) != 0 {
		t.Errorf("after SetSystem(nil): %+v", st)
	}
	// MarkClosed never moves consolidation back.
	if err := s.MarkClosed(ctx, "c", 200, 1); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State(ctx, "c"); st.ClosedAt != 200 || st.ConsolidatedThrough != 2 {
		t.Errorf("after a second close: %+v", st)
	}

	// Idle conversations: a known user's, with turns after its last close.
	if _, err := s.AppendTurn(ctx, "c", memory.Message{Content: "q", Timestamp: 10}, memory.Message{Content: "a", Timestamp: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendTurn(ctx, "anon", memory.Message{Content: "q", Timestamp: 10}, memory.Message{Content: "a", Timestamp: 10}); err != nil {
		t.Fatal(err)
	}
	idle, err := s.IdleConversations(ctx, 1000, 10)
	if err != nil || len(idle) != 0 {
		t.Errorf("IdleConversations with turn 1 consolidated (through 2) = %v, %v", idle, err)
	}
	if _, err := s.AppendTurn(ctx, "c", memory.Message{Content: "q", Timestamp: 20}, memory.Message{Content: "a", Timestamp: 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendTurn(ctx, "c", memory.Message{Content: "q", Timestamp: 20}, memory.Message{Content: "a", Timestamp: 20}); err != nil {
		t.Fatal(err)
	}
	idle, err = s.IdleConversations(ctx, 1000, 10)
	if err != nil || len(idle) != 1 || idle[0].ID != "c" || idle[0].UserID != "u" {
		t.Errorf("IdleConversations = %+v, %v; want c", idle, err)
	}
	if idle, _ := s.IdleConversations(ctx, 5, 10); len(idle) != 0 {
		t.Errorf("IdleConversations(before 5) = %+v, want none", idle)
	}

	// User memories: versions.
	m, err := s.UserMemory(ctx, "u")
	if err != nil || m.UserID != "u" || m.Version != 0 || !m.Empty() {
		t.Fatalf("UserMemory of a new user = %+v, %v", m, err)
	}
	m.Summary, m.Facts = "likes tea", []string{"lives in Hangzhou"}
	saved, err := s.SaveUserMemory(ctx, m)
	if err != nil || saved.Version != 1 || saved.UpdatedAt == 0 {
		t.Fatalf("SaveUserMemory = %+v, %v", saved, err)
	}
	if _, err := s.SaveUserMemory(ctx, m); !errors.Is(err, memory.ErrConflict) {
		t.Errorf("saving a stale version (0) = %v, want ErrConflict", err)
	}
	saved.Summary = "likes green tea"
	if saved, err = s.SaveUserMemory(ctx, saved); err != nil || saved.Version != 2 {
		t.Errorf("SaveUserMemory(v1) = %+v, %v", saved, err)
	}
	got, err := s.UserMemory(ctx, "u")
	if err != nil || got.Summary != "likes green tea" || !slices.Equal(got.Facts, []string{"lives in Hangzhou"}) || got.Version != 2 {
		t.Errorf("UserMemory = %+v, %v", got, err)
	}
	if other, _ := s.UserMemory(ctx, "v"); !other.Empty() {
		t.Errorf("another user's memory = %+v", other)
	}
	if err := s.DeleteUserMemory(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.UserMemory(ctx, "u"); !got.Empty() || got.Version != 0 {
		t.Errorf("after delete: %+v", got)
	}

	// Deleting the conversation deletes its state.
	if err := s.DeleteConversation(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateConversation(ctx, memory.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if st, err := s.State(ctx, "c"); err != nil || st.SystemSet || st.Digest.Summary != "" {
		t.Errorf("state of a re-created conversation = %+v, %v; want zero", st, err)
	}
}

// plainStore hides the SQL store's StateStore methods: the manager keeps
// state in process memory.
type plainStore struct{ memory.Store }

func TestStateInProcess(t *testing.T) {
	ctx := context.Background()
	store := plainStore{openSQLite(t, ":memory:")}
	m := newManager(t, store, func(c *memory.Config) { c.Compression.TriggerTokens = 60 }, memory.Options{})
	createConv(t, store, "a", "alice")
	add(t, store, m, "a", englishChat...)
	flush(t, m)
	v, err := m.Inspect(ctx, "a", memory.Summary)
	if err != nil || v.Digest.Through == 0 {
		t.Fatalf("Inspect = %+v, %v; want a digest", v, err)
	}
	if _, err := m.CloseConversation(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	createConv(t, store, "a2", "alice")
	createConv(t, store, "b", "bob")
	if msgs, _ := m.Recall(ctx, "a2", "q", "", -1); len(msgs) != 1 || !strings.Contains(msgs[0].Content, "Li Lei") {
		t.Errorf("alice's new conversation: %q", joined(msgs))
	}
	if msgs, _ := m.Recall(ctx, "b", "q", "", -1); len(msgs) != 0 {
		t.Errorf("bob's conversation: %q", joined(msgs))
	}
}

// TestManagerPostgres runs the manager over PostgreSQL: digest, system
// messages and long-term memory in the database.
func TestManagerPostgres(t *testing.T) {
	postgresDSN(t)
	ctx := context.Background()
	store := openPostgres(t, newPostgresSchema(t))
	m := newManager(t, store, func(c *memory.Config) { c.Compression.TriggerTokens = 60 }, memory.Options{})
	createConv(t, store, "a", "alice")
	add(t, store, m, "a", englishChat...)
	flush(t, m)
	if st, err := store.State(ctx, "a"); err != nil || st.Digest.Through == 0 || len(st.Digest.Entities) == 0 {
		t.Fatalf("State = %+v, %v", st, err)
	}
	msgs, err := m.Recall(ctx, "a", "Who is my teacher?", memory.Combined, -1)
	if err != nil || !strings.Contains(joined(msgs), "Wang Fang") {
		t.Errorf("Recall = %q, %v", joined(msgs), err)
	}
	if _, err := m.CloseConversation(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	createConv(t, store, "a2", "alice")
	if msgs, _ := m.Recall(ctx, "a2", "q", "", -1); len(msgs) != 1 || !strings.Contains(msgs[0].Content, "Li Lei") {
		t.Errorf("alice's new conversation: %q", joined(msgs))
	}
}
