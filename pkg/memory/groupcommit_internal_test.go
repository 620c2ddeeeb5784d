package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// batchWrite is a turn of conversation conv whose question has id qid, ready
// for writeBatch.
func batchWrite(t *testing.T, ctx context.Context, conv, qid string) *turnWrite {
	t.Helper()
	q, a, err := prepareTurn(conv, Message{ID: qid, Content: "q " + qid}, Message{ID: "a-" + qid, Content: "a " + qid})
	if err != nil {
		t.Fatal(err)
	}
	return &turnWrite{ctx: ctx, q: q, a: a, qmeta: "{}", ameta: "{}", wake: make(chan bool, 1)}
}

// TestWriteBatch writes batches of turns as group commit takes them: a turn
// that fails (a message id already stored, a context already ended) fails
// alone, the others of its batch are stored with their conversations'
// next ids, in the order they came.
func TestWriteBatch(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AppendTurn(ctx, "b", Message{ID: "taken", Content: "q"}, Message{Content: "a"}); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	batch := []*turnWrite{
		batchWrite(t, ctx, "c", "c1"),
		batchWrite(t, ctx, "b", "taken"), // conflicts
		batchWrite(t, ctx, "a", "a1"),
		batchWrite(t, ended, "a", "gone"), // its caller gave up
		batchWrite(t, ctx, "c", "c2"),
		batchWrite(t, ctx, "b", "b2"),
	}
	s.writeBatch(batch)
	want := []struct {
		id  int64
		err error
	}{{1, nil}, {0, ErrConflict}, {1, nil}, {0, context.Canceled}, {2, nil}, {2, nil}}
	for i, w := range batch {
		if w.id != want[i].id || !errors.Is(w.err, want[i].err) || (want[i].err == nil) != (w.err == nil) {
			t.Errorf("turn %s of %s: id %d, err %v; want %d, %v", w.q.ID, w.q.ConversationID, w.id, w.err, want[i].id, want[i].err)
		}
	}
	for _, conv := range []string{"a", "b", "c"} {
		turns, err := s.Turns(ctx, conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range turns {
			got = append(got, fmt.Sprintf("%d:%s", tr.ID, tr.Question.ID))
		}
		wantTurns := map[string]string{"a": "[1:a1]", "b": "[1:taken 2:b2]", "c": "[1:c1 2:c2]"}[conv]
		if fmt.Sprint(got) != wantTurns {
			t.Errorf("turns of %s = %v, want %s", conv, got, wantTurns)
		}
	}
	if _, err := s.Message(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("turn of an ended context: Message err = %v, want ErrNotFound", err)
	}

	// A batch of which every turn fails commits nothing and says why.
	batch = []*turnWrite{batchWrite(t, ctx, "b", "taken"), batchWrite(t, ctx, "b", "c1")}
	s.writeBatch(batch)
	for _, w := range batch {
		if !errors.Is(w.err, ErrConflict) {
			t.Errorf("turn %s: err %v, want ErrConflict", w.q.ID, w.err)
		}
	}
	if turns, err := s.Turns(ctx, "b", 0); err != nil || len(turns) != 2 {
		t.Errorf("conversation b after a failed batch: %d turns, err %v; want 2", len(turns), err)
	}
}
