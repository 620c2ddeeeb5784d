// Package storetest is the conformance suite of memory.Store: every store
// implementation runs the same tests, from its own package's tests.
//
//	func TestSQLite(t *testing.T) {
//		storetest.Run(t, func(t testing.TB) memory.Store { ... a new, empty store ... })
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/memory"
)

// Opener returns a new, empty store over a database of its own, and
// registers the store's Close (and the database's removal) with t.Cleanup.
// It fails or skips t when it cannot.
type Opener func(t testing.TB) memory.Store

// SharedOpener returns two stores over one new, empty database, as two
// processes would open it, registering their cleanup with t.Cleanup.
type SharedOpener func(t testing.TB) (memory.Store, memory.Store)

// Run runs the conformance suite, each test on a store from open.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s memory.Store)
	}{
		{"CreateConversation", testCreateConversation},
		{"CreateConversationConflict", testCreateConversationConflict},
		{"ConversationNotFound", testConversationNotFound},
		{"ConversationsOrder", testConversationsOrder},
		{"ConversationsPerUser", testConversationsPerUser},
		{"RenameConversation", testRenameConversation},
		{"DeleteConversation", testDeleteConversation},
		{"AppendTurnCreatesConversation", testAppendTurnCreatesConversation},
		{"AppendTurnDefaults", testAppendTurnDefaults},
		{"AppendTurnKeepsGivenFields", testAppendTurnKeepsGivenFields},
		{"AppendTurnUpdatesConversation", testAppendTurnUpdatesConversation},
		{"AppendTurnInvalid", testAppendTurnInvalid},
		{"AppendTurnDuplicateMessageID", testAppendTurnDuplicateMessageID},
		{"Turns", testTurns},
		{"TurnsNotFound", testTurnsNotFound},
		{"LastTurnID", testLastTurnID},
		{"Message", testMessage},
		{"MetadataRoundTrip", testMetadataRoundTrip},
		{"SetFeedback", testSetFeedback},
		{"Unicode", testUnicode},
		{"ConcurrentAppendTurn", testConcurrentAppendTurn},
		{"ConcurrentConversations", testConcurrentConversations},
		{"ConcurrentConflicts", testConcurrentConflicts},
		{"CancelledContext", testCancelledContext},
		{"CancelDuringAppends", testCancelDuringAppends},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, open(t))
		})
	}
}

// RunShared runs the tests of two stores sharing one database, as several
// processes share one PostgreSQL or SQLite database.
func RunShared(t *testing.T, open SharedOpener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, a, b memory.Store)
	}{
		{"SeeEachOther", testSharedSeeEachOther},
		{"ConcurrentAppendTurn", testSharedConcurrentAppendTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := open(t)
			tt.fn(t, a, b)
		})
	}
}

// msgs returns a question and an answer with the given contents.
func msgs(q, a string) (memory.Message, memory.Message) {
	return memory.Message{Content: q}, memory.Message{Content: a}
}

func mustAppend(t testing.TB, s memory.Store, convID, q, a string) memory.Turn {
	t.Helper()
	qm, am := msgs(q, a)
	turn, err := s.AppendTurn(context.Background(), convID, qm, am)
	if err != nil {
		t.Fatalf("AppendTurn(%s): %v", convID, err)
	}
	return turn
}

func mustCreate(t testing.TB, s memory.Store, c memory.Conversation) memory.Conversation {
	t.Helper()
	got, err := s.CreateConversation(context.Background(), c)
	if err != nil {
		t.Fatalf("CreateConversation(%+v): %v", c, err)
	}
	return got
}

func mustTurns(t testing.TB, s memory.Store, convID string, limit int) []memory.Turn {
	t.Helper()
	turns, err := s.Turns(context.Background(), convID, limit)
	if err != nil {
		t.Fatalf("Turns(%s, %d): %v", convID, limit, err)
	}
	return turns
}

func ids(cs []memory.Conversation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func turnIDs(ts []memory.Turn) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// checkMillis fails t unless ts is a Unix millisecond time in [before, after].
func checkMillis(t testing.TB, what string, ts, before, after int64) {
	t.Helper()
	if ts < before || ts > after {
		t.Errorf("%s = %d, want Unix milliseconds in [%d, %d]", what, ts, before, after)
	}
}

func testCreateConversation(t *testing.T, s memory.Store) {
	ctx := context.Background()
	before := time.Now().UnixMilli()
	c, err := s.CreateConversation(ctx, memory.Conversation{Name: "乾卦", ChatType: "mix_chat", UserID: "u1"})
	after := time.Now().UnixMilli()
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == "" {
		t.Fatal("CreateConversation without id: got empty id")
	}
	if c.Name != "乾卦" || c.ChatType != "mix_chat" || c.UserID != "u1" {
		t.Errorf("CreateConversation = %+v, fields not kept", c)
	}
	checkMillis(t, "CreatedAt", c.CreatedAt, before, after)
	if c.UpdatedAt != c.CreatedAt {
		t.Errorf("UpdatedAt = %d, want CreatedAt %d", c.UpdatedAt, c.CreatedAt)
	}
	got, err := s.Conversation(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got != c {
		t.Errorf("Conversation = %+v, want %+v", got, c)
	}

	c2 := mustCreate(t, s, memory.Conversation{})
	if c2.ID == "" || c2.ID == c.ID {
		t.Errorf("second conversation id %q, want new and distinct from %q", c2.ID, c.ID)
	}

	given := memory.Conversation{ID: "conv-given", Name: "n", ChatType: "llm_chat", UserID: "u2", CreatedAt: 1_700_000_000_123, UpdatedAt: 1_700_000_000_456}
	c3 := mustCreate(t, s, given)
	if c3 != given {
		t.Errorf("CreateConversation(%+v) = %+v, want it unchanged", given, c3)
	}
	if got, err := s.Conversation(ctx, "conv-given"); err != nil || got != given {
		t.Errorf("Conversation = %+v, %v; want %+v", got, err, given)
	}
}

func testCreateConversationConflict(t *testing.T, s memory.Store) {
	ctx := context.Background()
	orig := mustCreate(t, s, memory.Conversation{ID: "dup", Name: "first", UserID: "u1"})
	_, err := s.CreateConversation(ctx, memory.Conversation{ID: "dup", Name: "second", UserID: "u2"})
	if !errors.Is(err, memory.ErrConflict) {
		t.Fatalf("CreateConversation with a taken id: err = %v, want ErrConflict", err)
	}
	got, err := s.Conversation(ctx, "dup")
	if err != nil {
		t.Fatal(err)
	}
	if got != orig {
		t.Errorf("after conflict Conversation = %+v, want %+v", got, orig)
	}
	// A conversation created by AppendTurn takes its id too.
	mustAppend(t, s, "by-turn", "q", "a")
	if _, err := s.CreateConversation(ctx, memory.Conversation{ID: "by-turn"}); !errors.Is(err, memory.ErrConflict) {
		t.Errorf("CreateConversation over a conversation made by AppendTurn: err = %v, want ErrConflict", err)
	}
}

func testConversationNotFound(t *testing.T, s memory.Store) {
	_, err := s.Conversation(context.Background(), "missing")
	if !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Conversation(missing): err = %v, want ErrNotFound", err)
	}
}

func testConversationsOrder(t *testing.T, s memory.Store) {
	ctx := context.Background()
	if cs, err := s.Conversations(ctx, ""); err != nil || len(cs) != 0 {
		t.Fatalf("Conversations of an empty store = %v, %v; want none", cs, err)
	}
	// Updated times differ from creation order on purpose.
	mustCreate(t, s, memory.Conversation{ID: "a", CreatedAt: 1000, UpdatedAt: 3000})
	mustCreate(t, s, memory.Conversation{ID: "b", CreatedAt: 2000, UpdatedAt: 2000})
	mustCreate(t, s, memory.Conversation{ID: "c", CreatedAt: 1500, UpdatedAt: 5000})
	cs, err := s.Conversations(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(cs), []string{"c", "a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Conversations order = %v, want %v (most recently updated first)", got, want)
	}
	// A new turn makes b the most recently updated.
	mustAppend(t, s, "b", "q", "a")
	cs, err = s.Conversations(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(cs), []string{"b", "c", "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after AppendTurn to b, Conversations order = %v, want %v", got, want)
	}
}

func testConversationsPerUser(t *testing.T, s memory.Store) {
	ctx := context.Background()
	mustCreate(t, s, memory.Conversation{ID: "u1-old", UserID: "u1", CreatedAt: 1000})
	mustCreate(t, s, memory.Conversation{ID: "u2-only", UserID: "u2", CreatedAt: 2000})
	mustCreate(t, s, memory.Conversation{ID: "u1-new", UserID: "u1", CreatedAt: 3000})
	for _, tt := range []struct {
		user string
		want []string
	}{
		{"u1", []string{"u1-new", "u1-old"}},
		{"u2", []string{"u2-only"}},
		{"nobody", []string{}},
		{"", []string{"u1-new", "u2-only", "u1-old"}},
	} {
		cs, err := s.Conversations(ctx, tt.user)
		if err != nil {
			t.Fatalf("Conversations(%q): %v", tt.user, err)
		}
		if got := ids(cs); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Conversations(%q) = %v, want %v", tt.user, got, tt.want)
		}
		for _, c := range cs {
			if tt.user != "" && c.UserID != tt.user {
				t.Errorf("Conversations(%q) returned %+v", tt.user, c)
			}
		}
	}
}

func testRenameConversation(t *testing.T, s memory.Store) {
	ctx := context.Background()
	c := mustCreate(t, s, memory.Conversation{ID: "r", Name: "old", UserID: "u1", ChatType: "kb_chat"})
	if err := s.RenameConversation(ctx, "r", "新名字 ✨"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Conversation(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	want := c
	want.Name = "新名字 ✨"
	if got != want {
		t.Errorf("after rename Conversation = %+v, want %+v", got, want)
	}
	if err := s.RenameConversation(ctx, "missing", "x"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("RenameConversation(missing): err = %v, want ErrNotFound", err)
	}
}

func testDeleteConversation(t *testing.T, s memory.Store) {
	ctx := context.Background()
	mustCreate(t, s, memory.Conversation{ID: "del", UserID: "u1"})
	t1 := mustAppend(t, s, "del", "q1", "a1")
	t2 := mustAppend(t, s, "del", "q2", "a2")
	keep := mustAppend(t, s, "keep", "q", "a")

	if err := s.DeleteConversation(ctx, "del"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conversation(ctx, "del"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Conversation after delete: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Turns(ctx, "del", 0); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Turns after delete: err = %v, want ErrNotFound", err)
	}
	for _, m := range []memory.Message{t1.Question, t1.Answer, t2.Question, t2.Answer} {
		if _, err := s.Message(ctx, m.ID); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("Message(%s) after its conversation was deleted: err = %v, want ErrNotFound", m.ID, err)
		}
	}
	if err := s.SetFeedback(ctx, t1.Answer.ID, memory.Feedback{Score: 1}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("SetFeedback on a deleted message: err = %v, want ErrNotFound", err)
	}
	cs, err := s.Conversations(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(cs); !reflect.DeepEqual(got, []string{"keep"}) {
		t.Errorf("Conversations after delete = %v, want [keep]", got)
	}
	if _, err := s.Message(ctx, keep.Answer.ID); err != nil {
		t.Errorf("other conversation's message: %v", err)
	}
	if err := s.DeleteConversation(ctx, "del"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("DeleteConversation twice: err = %v, want ErrNotFound", err)
	}

	// The id can be used again and numbering starts over.
	again := mustAppend(t, s, "del", "q", "a")
	if again.ID != 1 {
		t.Errorf("first turn of a re-created conversation has id %d, want 1", again.ID)
	}
	if turns := mustTurns(t, s, "del", 0); len(turns) != 1 {
		t.Errorf("re-created conversation has %d turns, want 1", len(turns))
	}
}

// OpenConcurrently opens n stores at once through open, as processes
// starting together would, fails t unless every one opens, registers
// their Close with t.Cleanup and appends a turn to conversation "c"
// through each. The engines' tests then check that the schema was
// migrated once.
func OpenConcurrently(t *testing.T, n int, open func(ctx context.Context) (memory.Store, error)) []memory.Store {
	t.Helper()
	ctx := context.Background()
	stores := make([]memory.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = open(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			continue
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if t.Failed() {
		t.FailNow()
	}
	for i, s := range stores {
		if _, err := s.AppendTurn(ctx, "c", memory.Message{Content: fmt.Sprint(i)}, memory.Message{Content: "a"}); err != nil {
			t.Errorf("AppendTurn through store %d: %v", i, err)
		}
	}
	return stores
}

// Opened is what an Opener does with a store just opened: it fails t when
// err is set, and otherwise closes s at the end of t (a failing Close fails
// t too).
func Opened[S memory.Store](t testing.TB, s S, err error) S {
	t.Helper()
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

// OpenAt opens a store at where (a file path or a DSN) through an engine's
// open function and hands it to Opened.
func OpenAt[S memory.Store](t testing.TB, open func(context.Context, string) (S, error), where string) S {
	t.Helper()
	s, err := open(context.Background(), where)
	return Opened(t, s, err)
}

// Pinger is a store with a health check.
type Pinger interface {
	memory.Store
	Ping(ctx context.Context) error
}

// Ping opens a store at where through open and checks its Ping: it
// answers while the store is open and fails once the store is closed.
func Ping[S Pinger](t *testing.T, open func(context.Context, string) (S, error), where string) {
	t.Helper()
	ctx := context.Background()
	s, err := open(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping on an open store: %v", err)
	}
	s.Close()
	if err := s.Ping(ctx); err == nil {
		t.Fatal("Ping on a closed store succeeded")
	}
}

// CheckMigrations fails t unless the schema_migrations table of an engine's
// database records every migration once, from version 1. scan runs query
// on that database and scans its one row into dest.
func CheckMigrations(t testing.TB, scan func(query string, dest ...any) error) {
	t.Helper()
	var rows, versions, first int
	if err := scan(`SELECT count(*), count(DISTINCT version), min(version) FROM schema_migrations`, &rows, &versions, &first); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || rows != versions || first != 1 {
		t.Errorf("schema_migrations has %d rows, %d versions, first %d; want each version once from 1", rows, versions, first)
	}
}
