package storetest

// The tests of AppendTurn, Turns, Message and SetFeedback.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

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

// testLastTurnID checks a store's LastTurnID, when it has one, against
// Turns(ctx, id, 1).
func testLastTurnID(t *testing.T, s memory.Store) {
	lt, ok := s.(interface {
		LastTurnID(ctx context.Context, conversationID string) (int64, error)
	})
	if !ok {
		t.Skip("the store has no LastTurnID")
	}
	ctx := context.Background()
	if _, err := lt.LastTurnID(ctx, "missing"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("LastTurnID(missing): err = %v, want ErrNotFound", err)
	}
	mustCreate(t, s, memory.Conversation{ID: "empty"})
	if id, err := lt.LastTurnID(ctx, "empty"); id != 0 || err != nil {
		t.Errorf("LastTurnID(empty) = %d, %v; want 0", id, err)
	}
	for i := 1; i <= 3; i++ {
		mustAppend(t, s, "c", fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i))
		mustAppend(t, s, "other", "x", "y")
		last := mustTurns(t, s, "c", 1)
		if id, err := lt.LastTurnID(ctx, "c"); err != nil || len(last) != 1 || id != last[0].ID {
			t.Errorf("after %d turns: LastTurnID = %d, %v; Turns(1) = %v", i, id, err, turnIDs(last))
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
