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
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
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
		{"Message", testMessage},
		{"MetadataRoundTrip", testMetadataRoundTrip},
		{"SetFeedback", testSetFeedback},
		{"Unicode", testUnicode},
		{"ConcurrentAppendTurn", testConcurrentAppendTurn},
		{"ConcurrentConversations", testConcurrentConversations},
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

func testAppendTurnCreatesConversation(t *testing.T, s memory.Store) {
	ctx := context.Background()
	before := time.Now().UnixMilli()
	turn := mustAppend(t, s, "new-conv", "你好", "你好！")
	after := time.Now().UnixMilli()
	if turn.ID != 1 {
		t.Errorf("first turn id = %d, want 1", turn.ID)
	}
	c, err := s.Conversation(ctx, "new-conv")
	if err != nil {
		t.Fatalf("conversation made by AppendTurn: %v", err)
	}
	if c.ID != "new-conv" || c.Name != "" || c.UserID != "" || c.ChatType != "" {
		t.Errorf("conversation made by AppendTurn = %+v", c)
	}
	checkMillis(t, "CreatedAt", c.CreatedAt, before, after)
	checkMillis(t, "UpdatedAt", c.UpdatedAt, c.CreatedAt, after)
}

func testAppendTurnDefaults(t *testing.T, s memory.Store) {
	ctx := context.Background()
	mustCreate(t, s, memory.Conversation{ID: "c", UserID: "u1"})
	var prev int64
	seen := map[string]bool{}
	for i := 1; i <= 3; i++ {
		before := time.Now().UnixMilli()
		turn := mustAppend(t, s, "c", fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i))
		after := time.Now().UnixMilli()
		if turn.ID != int64(i) || turn.ID <= prev {
			t.Errorf("turn %d got id %d, want %d", i, turn.ID, i)
		}
		prev = turn.ID
		for _, m := range []struct {
			msg  memory.Message
			role string
			text string
		}{
			{turn.Question, llm.RoleUser, fmt.Sprintf("q%d", i)},
			{turn.Answer, llm.RoleAssistant, fmt.Sprintf("a%d", i)},
		} {
			if m.msg.ID == "" || seen[m.msg.ID] {
				t.Errorf("message id %q: want a new non-empty id", m.msg.ID)
			}
			seen[m.msg.ID] = true
			if m.msg.ConversationID != "c" || m.msg.TurnID != turn.ID || m.msg.Role != m.role || m.msg.Content != m.text {
				t.Errorf("stored message = %+v, want conversation c, turn %d, role %s, content %s", m.msg, turn.ID, m.role, m.text)
			}
			checkMillis(t, "Timestamp", m.msg.Timestamp, before, after)
			got, err := s.Message(ctx, m.msg.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m.msg) {
				t.Errorf("Message(%s) = %+v, want what AppendTurn returned %+v", m.msg.ID, got, m.msg)
			}
		}
		if turn.Answer.Timestamp < turn.Question.Timestamp {
			t.Errorf("answer timestamp %d before question's %d", turn.Answer.Timestamp, turn.Question.Timestamp)
		}
	}
}

func testAppendTurnKeepsGivenFields(t *testing.T, s memory.Store) {
	q := memory.Message{ID: "q-given", ConversationID: "ignored", TurnID: 99, Role: llm.RoleSystem, Content: "greet", Timestamp: 1_600_000_000_001,
		Metadata: memory.Metadata{Source: "greeting"}}
	a := memory.Message{ID: "a-given", Role: llm.RoleAssistant, Content: "欢迎", Timestamp: 1_600_000_000_002,
		Metadata: memory.Metadata{Source: "llm", Model: "m"}}
	turn, err := s.AppendTurn(context.Background(), "c", q, a)
	if err != nil {
		t.Fatal(err)
	}
	wantQ, wantA := q, a
	wantQ.ConversationID, wantA.ConversationID = "c", "c"
	wantQ.TurnID, wantA.TurnID = 1, 1
	want := memory.Turn{ID: 1, Question: wantQ, Answer: wantA}
	if !reflect.DeepEqual(turn, want) {
		t.Errorf("AppendTurn = %+v, want %+v", turn, want)
	}
	if got := mustTurns(t, s, "c", 0); !reflect.DeepEqual(got, []memory.Turn{want}) {
		t.Errorf("Turns = %+v, want [%+v]", got, want)
	}
}

func testAppendTurnUpdatesConversation(t *testing.T, s memory.Store) {
	ctx := context.Background()
	c := mustCreate(t, s, memory.Conversation{ID: "c", Name: "name", ChatType: "mix_chat", UserID: "u1", CreatedAt: 1000})
	before := time.Now().UnixMilli()
	mustAppend(t, s, "c", "q", "a")
	after := time.Now().UnixMilli()
	got, err := s.Conversation(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != c.Name || got.ChatType != c.ChatType || got.UserID != c.UserID || got.CreatedAt != c.CreatedAt {
		t.Errorf("after AppendTurn Conversation = %+v, want the fields of %+v kept", got, c)
	}
	checkMillis(t, "UpdatedAt", got.UpdatedAt, before, after)

	// A turn recorded with older timestamps does not move UpdatedAt back.
	q, a := msgs("old q", "old a")
	q.Timestamp, a.Timestamp = 500, 600
	if _, err := s.AppendTurn(ctx, "c", q, a); err != nil {
		t.Fatal(err)
	}
	again, err := s.Conversation(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if again.UpdatedAt != got.UpdatedAt {
		t.Errorf("UpdatedAt after a turn with old timestamps = %d, want %d", again.UpdatedAt, got.UpdatedAt)
	}
}

func testAppendTurnInvalid(t *testing.T, s memory.Store) {
	ctx := context.Background()
	mustAppend(t, s, "c", "q1", "a1")
	for _, tt := range []struct {
		name   string
		convID string
		q, a   memory.Message
	}{
		{"empty conversation id", "", memory.Message{Content: "q"}, memory.Message{Content: "a"}},
		{"same role", "c", memory.Message{Role: llm.RoleUser, Content: "q"}, memory.Message{Role: llm.RoleUser, Content: "a"}},
		{"same message id", "c", memory.Message{ID: "x", Content: "q"}, memory.Message{ID: "x", Content: "a"}},
	} {
		if _, err := s.AppendTurn(ctx, tt.convID, tt.q, tt.a); err == nil {
			t.Errorf("AppendTurn with %s: no error", tt.name)
		}
	}
	if got := turnIDs(mustTurns(t, s, "c", 0)); !reflect.DeepEqual(got, []int64{1}) {
		t.Errorf("turns after rejected appends = %v, want [1]", got)
	}
	if next := mustAppend(t, s, "c", "q2", "a2"); next.ID != 2 {
		t.Errorf("turn after rejected appends has id %d, want 2 (no gap)", next.ID)
	}
}

func testAppendTurnDuplicateMessageID(t *testing.T, s memory.Store) {
	ctx := context.Background()
	first, err := s.AppendTurn(ctx, "c", memory.Message{ID: "m1", Content: "q"}, memory.Message{ID: "m2", Content: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		convID string
		q, a   memory.Message
	}{
		{"question id taken", "c", memory.Message{ID: "m1", Content: "q'"}, memory.Message{Content: "a'"}},
		{"answer id taken", "c", memory.Message{Content: "q'"}, memory.Message{ID: "m2", Content: "a'"}},
		{"id taken in another conversation", "other", memory.Message{ID: "qx", Content: "q'"}, memory.Message{ID: "m1", Content: "a'"}},
	} {
		_, err := s.AppendTurn(ctx, tt.convID, tt.q, tt.a)
		if !errors.Is(err, memory.ErrConflict) {
			t.Errorf("AppendTurn with %s: err = %v, want ErrConflict", tt.name, err)
		}
	}
	if got := mustTurns(t, s, "c", 0); !reflect.DeepEqual(got, []memory.Turn{first}) {
		t.Errorf("Turns after conflicts = %+v, want only %+v", got, first)
	}
	if _, err := s.Message(ctx, "qx"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("question of a conflicting turn was stored: err = %v", err)
	}
	if _, err := s.Conversation(ctx, "other"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("conversation of a conflicting turn was created: err = %v", err)
	}
}

func testTurns(t *testing.T, s memory.Store) {
	mustCreate(t, s, memory.Conversation{ID: "empty"})
	if got := mustTurns(t, s, "empty", 0); len(got) != 0 {
		t.Errorf("Turns of a conversation without turns = %v, want none", got)
	}
	if got := mustTurns(t, s, "empty", 3); len(got) != 0 {
		t.Errorf("Turns(limit 3) of a conversation without turns = %v, want none", got)
	}

	var all []memory.Turn
	for i := 1; i <= 5; i++ {
		all = append(all, mustAppend(t, s, "c", fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i)))
	}
	mustAppend(t, s, "other", "x", "y") // must not leak into c's turns
	for _, tt := range []struct {
		limit int
		want  []memory.Turn
	}{
		{0, all},
		{-1, all},
		{1, all[4:]},
		{2, all[3:]},
		{5, all},
		{10, all},
	} {
		got := mustTurns(t, s, "c", tt.limit)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Turns(limit %d) = %v, want %v", tt.limit, turnIDs(got), turnIDs(tt.want))
			continue
		}
		for _, turn := range got {
			if turn.Question.Content != fmt.Sprintf("q%d", turn.ID) || turn.Answer.Content != fmt.Sprintf("a%d", turn.ID) {
				t.Errorf("turn %d = %q / %q, question and answer mismatched", turn.ID, turn.Question.Content, turn.Answer.Content)
			}
		}
	}
}

func testTurnsNotFound(t *testing.T, s memory.Store) {
	for _, limit := range []int{0, 10} {
		if _, err := s.Turns(context.Background(), "missing", limit); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("Turns(missing, %d): err = %v, want ErrNotFound", limit, err)
		}
	}
}

func testMessage(t *testing.T, s memory.Store) {
	ctx := context.Background()
	turn := mustAppend(t, s, "c", "q", "a")
	for _, want := range []memory.Message{turn.Question, turn.Answer} {
		got, err := s.Message(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Message(%s) = %+v, want %+v", want.ID, got, want)
		}
	}
	if _, err := s.Message(ctx, "missing"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Message(missing): err = %v, want ErrNotFound", err)
	}
}

// fullMetadata uses every field of Metadata; Extra holds only JSON's own
// types (string, float64, bool, nil, []any, map[string]any), which is what a
// JSON round trip gives back.
func fullMetadata() memory.Metadata {
	return memory.Metadata{
		Source:      "llm",
		Interrupted: true,
		Original:    "完整的回答：乾，元亨利贞。",
		Model:       "qwen2.5-7b-instruct",
		Extractive:  true,
		Usage:       &llm.Usage{PromptTokens: 120, CompletionTokens: 45, TotalTokens: 165},
		Feedback:    &memory.Feedback{Score: 80, Reason: "有帮助"},
		Extra: map[string]any{
			"standalone": "乾卦是什么意思？",
			"timings_ms": map[string]any{"kb": 12.5, "search": 340.0, "chat": 1200.0},
			"sources":    []any{"周易·乾", map[string]any{"url": "https://example.com/a?b=1&c=<2>", "score": 0.93}},
			"cached":     false,
			"none":       nil,
			"big":        9007199254740991.0, // 2^53-1, exact in float64
		},
	}
}

func testMetadataRoundTrip(t *testing.T, s memory.Store) {
	ctx := context.Background()
	qMeta := memory.Metadata{Source: "asr"}
	aMeta := fullMetadata()
	turn, err := s.AppendTurn(ctx, "c", memory.Message{Content: "乾卦是什么意思？", Metadata: qMeta},
		memory.Message{Content: "乾，元亨利贞。", Metadata: aMeta})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(turn.Answer.Metadata, aMeta) {
		t.Errorf("AppendTurn returned metadata %+v, want %+v", turn.Answer.Metadata, aMeta)
	}
	got, err := s.Message(ctx, turn.Answer.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Metadata, aMeta) {
		t.Errorf("Message metadata = %#v\nwant %#v", got.Metadata, aMeta)
	}
	turns := mustTurns(t, s, "c", 1)
	if len(turns) != 1 || !reflect.DeepEqual(turns[0].Answer.Metadata, aMeta) || !reflect.DeepEqual(turns[0].Question.Metadata, qMeta) {
		t.Errorf("Turns metadata = %+v, want question %+v answer %+v", turns, qMeta, aMeta)
	}
	// Empty metadata stays empty.
	plain := mustAppend(t, s, "c", "q", "a")
	if got, err := s.Message(ctx, plain.Answer.ID); err != nil || !reflect.DeepEqual(got.Metadata, memory.Metadata{}) {
		t.Errorf("empty metadata came back as %+v (err %v)", got.Metadata, err)
	}
}

func testSetFeedback(t *testing.T, s memory.Store) {
	ctx := context.Background()
	aMeta := fullMetadata()
	aMeta.Feedback = nil
	turn, err := s.AppendTurn(ctx, "c", memory.Message{Content: "q"}, memory.Message{Content: "a", Metadata: aMeta})
	if err != nil {
		t.Fatal(err)
	}
	other := mustAppend(t, s, "c", "q2", "a2")

	for _, f := range []memory.Feedback{{Score: 90, Reason: "准确"}, {Score: 0}, {Score: 100}} {
		if err := s.SetFeedback(ctx, turn.Answer.ID, f); err != nil {
			t.Fatal(err)
		}
		got, err := s.Message(ctx, turn.Answer.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := aMeta
		want.Feedback = &f
		if !reflect.DeepEqual(got.Metadata, want) {
			t.Errorf("after SetFeedback(%+v) metadata = %+v, want %+v", f, got.Metadata, want)
		}
		if got.Content != "a" || got.TurnID != turn.ID {
			t.Errorf("SetFeedback changed the message: %+v", got)
		}
	}
	for _, id := range []string{turn.Question.ID, other.Answer.ID} {
		got, err := s.Message(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Metadata.Feedback != nil {
			t.Errorf("SetFeedback on one message set feedback on %s too", id)
		}
	}
	if err := s.SetFeedback(ctx, "missing", memory.Feedback{Score: 1}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("SetFeedback(missing): err = %v, want ErrNotFound", err)
	}
}

func testUnicode(t *testing.T, s memory.Store) {
	ctx := context.Background()
	texts := []string{
		"乾：元，亨，利，贞。初九：潜龙勿用。",
		"emoji 🐉☯️👨‍👩‍👧 and flags 🇨🇳",
		"e\u0301 combining, 'quotes' \"double\" `back` \\ backslash; -- comment",
		"lines\nand\ttabs\r\n",
		"",
		strings.Repeat("龍", 10000),
	}
	conv := mustCreate(t, s, memory.Conversation{ID: "对话-🐉", Name: "易经 ☯️", UserID: "用户一"})
	for i, text := range texts {
		q := memory.Message{Content: text, Metadata: memory.Metadata{Original: text, Extra: map[string]any{"键": text}}}
		a := memory.Message{Content: text + "。", Metadata: memory.Metadata{Original: text}}
		turn, err := s.AppendTurn(ctx, conv.ID, q, a)
		if err != nil {
			t.Fatalf("AppendTurn(text %d): %v", i, err)
		}
		got, err := s.Message(ctx, turn.Question.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != text || got.Metadata.Original != text || got.Metadata.Extra["键"] != text {
			t.Errorf("text %d came back as %q", i, got.Content)
		}
	}
	turns := mustTurns(t, s, conv.ID, 0)
	if len(turns) != len(texts) {
		t.Fatalf("got %d turns, want %d", len(turns), len(texts))
	}
	for i, turn := range turns {
		if turn.Question.Content != texts[i] || turn.Answer.Content != texts[i]+"。" {
			t.Errorf("turn %d content = %q / %q", i+1, turn.Question.Content, turn.Answer.Content)
		}
	}
	cs, err := s.Conversations(ctx, "用户一")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].ID != "对话-🐉" || cs[0].Name != "易经 ☯️" {
		t.Errorf("Conversations(用户一) = %+v", cs)
	}
}

// appendConcurrently appends perWorker turns from each of workers
// goroutines, worker w writing through stores[w%len(stores)]. Question
// "w/i" is answered by "answer w/i". It returns the turns as AppendTurn
// returned them.
func appendConcurrently(t *testing.T, stores []memory.Store, convID string, workers, perWorker int) []memory.Turn {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		turns []memory.Turn
		errs  []error
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			for i := range perWorker {
				q, a := msgs(fmt.Sprintf("%d/%d", w, i), fmt.Sprintf("answer %d/%d", w, i))
				turn, err := s.AppendTurn(context.Background(), convID, q, a)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					turns = append(turns, turn)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs[:min(len(errs), 5)] {
		t.Errorf("concurrent AppendTurn: %v", err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	return turns
}

// checkConsecutive fails t unless stored holds turns 1..n, each question
// paired with its own answer, each worker's turns in the order it wrote
// them, and returned (what AppendTurn gave back) matches stored.
func checkConsecutive(t *testing.T, stored, returned []memory.Turn, n int) {
	t.Helper()
	if len(stored) != n {
		t.Fatalf("stored %d turns, want %d", len(stored), n)
	}
	lastOfWorker := map[int]int{}
	for i, turn := range stored {
		if turn.ID != int64(i+1) {
			t.Fatalf("turn %d has id %d; want ids 1..%d with no gap or duplicate (got %v)", i+1, turn.ID, n, turnIDs(stored))
		}
		var w, k int
		if _, err := fmt.Sscanf(turn.Question.Content, "%d/%d", &w, &k); err != nil {
			t.Fatalf("turn %d question %q: %v", turn.ID, turn.Question.Content, err)
		}
		if turn.Answer.Content != "answer "+turn.Question.Content {
			t.Errorf("turn %d: question %q paired with answer %q", turn.ID, turn.Question.Content, turn.Answer.Content)
		}
		if last, ok := lastOfWorker[w]; ok && k <= last {
			t.Errorf("worker %d's turn %d stored after its turn %d", w, k, last)
		}
		lastOfWorker[w] = k
	}
	byID := map[int64]memory.Turn{}
	for _, turn := range returned {
		if _, dup := byID[turn.ID]; dup {
			t.Errorf("turn id %d returned twice", turn.ID)
		}
		byID[turn.ID] = turn
	}
	for _, turn := range stored {
		if r, ok := byID[turn.ID]; !ok || !reflect.DeepEqual(r, turn) {
			t.Errorf("stored turn %d = %+v, AppendTurn returned %+v", turn.ID, turn, r)
		}
	}
}

func testConcurrentAppendTurn(t *testing.T, s memory.Store) {
	const workers, perWorker = 8, 10
	returned := appendConcurrently(t, []memory.Store{s}, "busy", workers, perWorker)
	checkConsecutive(t, mustTurns(t, s, "busy", 0), returned, workers*perWorker)
}

func testConcurrentConversations(t *testing.T, s memory.Store) {
	// Appends to different conversations, some new, interleaved with reads.
	const workers, perWorker = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := fmt.Sprintf("conv-%d", w%3)
			for i := range perWorker {
				q, a := msgs(fmt.Sprintf("%d/%d", w, i), fmt.Sprintf("answer %d/%d", w, i))
				if _, err := s.AppendTurn(context.Background(), conv, q, a); err != nil {
					errs <- err
				}
				if _, err := s.Turns(context.Background(), conv, 3); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent use: %v", err)
	}
	for c := range 3 {
		turns := mustTurns(t, s, fmt.Sprintf("conv-%d", c), 0)
		checkConsecutive(t, turns, turns, workers/3*perWorker)
	}
}

func testCancelledContext(t *testing.T, s memory.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q := memory.Message{ID: "q-cancelled", Content: "q"}
	a := memory.Message{ID: "a-cancelled", Content: "a"}
	if _, err := s.AppendTurn(ctx, "c", q, a); err == nil {
		t.Fatal("AppendTurn with a cancelled context: no error")
	}
	bg := context.Background()
	if _, err := s.Conversation(bg, "c"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("conversation created by a cancelled AppendTurn: err = %v", err)
	}
	for _, id := range []string{"q-cancelled", "a-cancelled"} {
		if _, err := s.Message(bg, id); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("message %s of a cancelled AppendTurn: err = %v, want ErrNotFound", id, err)
		}
	}
	if _, err := s.CreateConversation(ctx, memory.Conversation{ID: "x"}); err == nil {
		t.Error("CreateConversation with a cancelled context: no error")
	}
	if turn := mustAppend(t, s, "c", "q", "a"); turn.ID != 1 {
		t.Errorf("first turn after a cancelled one has id %d, want 1", turn.ID)
	}
}

func testCancelDuringAppends(t *testing.T, s memory.Store) {
	// Appends whose contexts are cancelled at random points, from before the
	// call to after it returns: each must be stored whole or not at all, and
	// the turns that were stored are numbered without gaps.
	bg := context.Background()
	const workers, perWorker = 4, 40
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results = map[string]error{} // what each append returned
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range perWorker {
				key := fmt.Sprintf("%d-%d", w, i)
				q := memory.Message{ID: "q-" + key, Content: key}
				a := memory.Message{ID: "a-" + key, Content: "answer " + key}
				ctx, cancel := context.WithCancel(bg)
				// Log-uniform from 10µs to 50ms: whatever a store's speed,
				// some appends end before, during and after their work.
				delay := time.Duration(float64(10*time.Microsecond) * math.Pow(5000, rng.Float64()))
				timer := time.AfterFunc(delay, cancel)
				_, err := s.AppendTurn(ctx, "c", q, a)
				timer.Stop()
				cancel()
				mu.Lock()
				results[key] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	stored := 0
	for w := range workers {
		for i := range perWorker {
			key := fmt.Sprintf("%d-%d", w, i)
			_, qErr := s.Message(bg, "q-"+key)
			_, aErr := s.Message(bg, "a-"+key)
			if (qErr == nil) != (aErr == nil) {
				t.Errorf("turn %s half written: question err %v, answer err %v", key, qErr, aErr)
			}
			if err := results[key]; err == nil && (qErr != nil || aErr != nil) {
				t.Errorf("turn %s reported stored but missing: %v / %v", key, qErr, aErr)
			} else if err != nil && qErr == nil {
				t.Errorf("turn %s stored although AppendTurn returned %v", key, err)
			}
			if qErr != nil && !errors.Is(qErr, memory.ErrNotFound) {
				t.Errorf("Message(q-%s): %v", key, qErr)
			}
			if qErr == nil {
				stored++
			}
		}
	}
	t.Logf("%d of %d appends stored", stored, workers*perWorker)
	turns, err := s.Turns(bg, "c", 0)
	if err != nil && !(stored == 0 && errors.Is(err, memory.ErrNotFound)) {
		t.Fatal(err)
	}
	if len(turns) != stored {
		t.Errorf("Turns has %d turns, messages say %d were stored", len(turns), stored)
	}
	for i, turn := range turns {
		if turn.ID != int64(i+1) {
			t.Fatalf("turn ids after cancellations = %v, want 1..%d", turnIDs(turns), len(turns))
		}
		if turn.Question.ID == "" || turn.Answer.ID == "" || turn.Answer.Content != "answer "+turn.Question.Content {
			t.Errorf("turn %d incomplete or mismatched: %+v", turn.ID, turn)
		}
	}
	// The conversation takes new turns after all that.
	if next := mustAppend(t, s, "c", "q", "a"); next.ID != int64(len(turns)+1) {
		t.Errorf("next turn id = %d, want %d", next.ID, len(turns)+1)
	}
}

func testSharedSeeEachOther(t *testing.T, a, b memory.Store) {
	ctx := context.Background()
	c := mustCreate(t, a, memory.Conversation{ID: "shared", UserID: "u"})
	got, err := b.Conversation(ctx, "shared")
	if err != nil || got != c {
		t.Fatalf("second store sees %+v, %v; want %+v", got, err, c)
	}
	t1 := mustAppend(t, b, "shared", "q1", "a1")
	t2 := mustAppend(t, a, "shared", "q2", "a2")
	if t1.ID != 1 || t2.ID != 2 {
		t.Errorf("turn ids across stores = %d, %d; want 1, 2", t1.ID, t2.ID)
	}
	for _, s := range []memory.Store{a, b} {
		if got := mustTurns(t, s, "shared", 0); !reflect.DeepEqual(got, []memory.Turn{t1, t2}) {
			t.Errorf("Turns = %+v, want %+v", got, []memory.Turn{t1, t2})
		}
	}
	if err := a.SetFeedback(ctx, t1.Answer.ID, memory.Feedback{Score: 70}); err != nil {
		t.Fatal(err)
	}
	if m, err := b.Message(ctx, t1.Answer.ID); err != nil || m.Metadata.Feedback == nil || m.Metadata.Feedback.Score != 70 {
		t.Errorf("feedback set through one store, other sees %+v, %v", m.Metadata.Feedback, err)
	}
	if err := b.DeleteConversation(ctx, "shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Turns(ctx, "shared", 0); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Turns after delete through the other store: err = %v, want ErrNotFound", err)
	}
}

func testSharedConcurrentAppendTurn(t *testing.T, a, b memory.Store) {
	const workers, perWorker = 8, 10
	returned := appendConcurrently(t, []memory.Store{a, b}, "busy", workers, perWorker)
	checkConsecutive(t, mustTurns(t, b, "busy", 0), returned, workers*perWorker)
}
