package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
)

// TestLoadConcurrentAppends: turns appended while the manager loads them
// incrementally (compression jobs and recalls racing the writer) all end up
// in its cache, in order.
func TestLoadConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	store, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := DefaultConfig()
	cfg.Compression.TriggerTokens = 60
	m, err := NewManager(store, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 60
	var wg sync.WaitGroup
	wg.Add(1)
	appended := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(appended)
		for i := range n {
			turn, err := store.AppendTurn(ctx, "c", Message{Content: fmt.Sprint("question ", i)}, Message{Content: "answer"})
			if err != nil {
				t.Error(err)
				return
			}
			m.Remember(ctx, "c", turn)
		}
	}()
	// Recall (which builds and extends the retrieval index) while the
	// turns are appended, until the last one is.
	for done := false; !done; {
		select {
		case <-appended:
			done = true
		default:
		}
		if _, err := m.Recall(ctx, "c", "question", Retrieval, -1); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := m.load(ctx, "c")
	if err != nil || cs == nil {
		t.Fatalf("load: %v", err)
	}
	// The index as retrieval sees it (built now if the cache entry was
	// filled again since).
	turns, index := cs.turns, m.snapshot(cs, true, false).index
	cs.mu.Unlock()
	if len(turns) != n {
		t.Fatalf("cached %d turns, want %d", len(turns), n)
	}
	for i, turn := range turns {
		if turn.ID != int64(i+1) {
			t.Fatalf("cached turn %d has id %d", i, turn.ID)
		}
	}
	if got := index.len(); got != 2*n {
		t.Errorf("index holds %d messages, want %d", got, 2*n)
	}

	// Deleted and made again (as another process would): reloaded.
	if err := store.DeleteConversation(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AppendTurn(ctx, "c", Message{Content: "new start"}, Message{Content: "ok"}); err != nil {
		t.Fatal(err)
	}
	msgs, err := m.Recall(ctx, "c", "q", Buffer, -1)
	if err != nil || len(msgs) != 2 || msgs[0].Content != "new start" {
		t.Errorf("after re-creation Recall = %v, %v", msgs, err)
	}
}

// TestCloseIdle: conversations of known users whose last turn is older
// than LongTerm.IdleClose are closed and consolidated once.
func TestCloseIdle(t *testing.T) {
	ctx := context.Background()
	store, err := OpenSQLite(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := DefaultConfig()
	cfg.LongTerm.IdleClose = time.Hour
	m, err := NewManager(store, cfg, Options{Extractor: userEcho{}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	for _, c := range []Conversation{{ID: "old", UserID: "u", CreatedAt: old - 1}, {ID: "fresh", UserID: "u"}, {ID: "anon", CreatedAt: old - 1}} {
		if _, err := store.CreateConversation(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	turn := func(conv, q string, at int64) {
		if _, err := store.AppendTurn(ctx, conv, Message{Content: q, Timestamp: at}, Message{Content: "ok", Timestamp: at}); err != nil {
			t.Fatal(err)
		}
	}
	turn("old", "I am learning to paint.", old)
	turn("anon", "I am anonymous.", old)
	turn("fresh", "I just arrived.", time.Now().UnixMilli())
	if n := m.closeIdle(ctx); n != 1 {
		t.Fatalf("closeIdle closed %d conversations, want 1", n)
	}
	mem, err := m.UserMemory(ctx, "u")
	if err != nil || len(mem.Facts) != 1 || mem.Facts[0] != "I am learning to paint." {
		t.Errorf("memory after idle close = %+v, %v", mem, err)
	}
	if n := m.closeIdle(ctx); n != 0 {
		t.Errorf("second closeIdle closed %d, want 0", n)
	}
	turn("old", "I also like tea.", old+1)
	if n := m.closeIdle(ctx); n != 1 {
		t.Errorf("closeIdle after a new (old) turn closed %d, want 1", n)
	}
}

// userEcho is an Extractor whose user facts are the user's lines as said.
type userEcho struct{}

func (userEcho) Entities(context.Context, []Line, []string) ([]EntityFact, error) { return nil, nil }
func (userEcho) Triples(context.Context, []Line) ([]Triple, error)                { return nil, nil }
func (userEcho) UserFacts(_ context.Context, lines []Line, _ []string) ([]string, error) {
	var out []string
	for _, l := range lines {
		if l.Role != llm.RoleAssistant {
			out = append(out, l.Text)
		}
	}
	return out, nil
}
