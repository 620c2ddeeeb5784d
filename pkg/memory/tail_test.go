package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// countingStore is the SQLite store counting the turns Turns returns.
type countingStore struct {
	*memory.SQLStore
	read atomic.Int64
}

func counting(s *sqlite.Conversations) *countingStore { return &countingStore{SQLStore: s.SQLStore} }

func (s *countingStore) Turns(ctx context.Context, id string, limit int) ([]memory.Turn, error) {
	ts, err := s.SQLStore.Turns(ctx, id, limit)
	s.read.Add(int64(len(ts)))
	return ts, err
}

// longChat stores n turns of englishChat, numbered and of varied lengths,
// compressing them as a server does.
func longChat(t testing.TB, s memory.Store, m *memory.Manager, conv string, n int) {
	t.Helper()
	for i := range n {
		j := 2 * (i % (len(englishChat) / 2))
		q := fmt.Sprintf("%s (%d)", englishChat[j], i)
		a := englishChat[j+1] + strings.Repeat(" More on that.", i%7)
		add(t, s, m, conv, q, a)
	}
	flush(t, m)
}

// TestRecallReadsWhatItNeeds: a recall reads as much of a long
// conversation as its strategy shows (retrieval reads it all once, for its
// index, then only the new turns), and what it returns is what it returned
// when every turn was read.
func TestRecallReadsWhatItNeeds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	base := openSQLite(t, path)
	small := func(c *memory.Config) {
		c.Compression.TriggerTokens = 200
		c.Compression.GroupSize = 3
	}
	writer := newManager(t, base, small, memory.Options{})
	const n = 150
	longChat(t, base, writer, "c", n)

	for _, limit := range []int{2000, 300} {
		adjust := func(c *memory.Config) { small(c); c.MaxTokenLimit = limit }
		for _, strategy := range writer.Strategies() {
			t.Run(fmt.Sprintf("%s/%d", strategy, limit), func(t *testing.T) {
				question := "What did I say about the hexagram Kun?"
				// The whole conversation read first (Search reads it all).
				whole := newManager(t, base, adjust, memory.Options{})
				if _, err := whole.Search(ctx, "c", "anything", 1); err != nil {
					t.Fatal(err)
				}
				want, err := whole.Recall(ctx, "c", question, strategy, -1)
				if err != nil {
					t.Fatal(err)
				}
				cs := counting(base)
				m := newManager(t, cs, adjust, memory.Options{})
				got, err := m.Recall(ctx, "c", question, strategy, -1)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("recall of the latest turns =\n%s\nwant (every turn read)\n%s", joined(got), joined(want))
				}
				read := cs.read.Load()
				switch strategy {
				case memory.Buffer, memory.Retrieval, memory.Combined:
					if read < n {
						t.Errorf("read %d turns, want all %d", read, n)
					}
				default:
					if read > n/2 {
						t.Errorf("read %d turns of %d for %s", read, n, strategy)
					}
				}
				// The exchanges alone: the same user and assistant
				// messages, and for retrieval no more than its recent turns.
				cs2 := counting(base)
				m2 := newManager(t, cs2, adjust, memory.Options{})
				ex, err := m2.RecallChoice(ctx, "c", question, memory.Choice{Strategy: strategy, Exchanges: true})
				if err != nil {
					t.Fatal(err)
				}
				if w := dialog(want); !slices.Equal(ex, w) {
					t.Errorf("exchanges =\n%s\nwant\n%s", joined(ex), joined(w))
				}
				if strategy != memory.Buffer && cs2.read.Load() > n/2 {
					t.Errorf("exchanges read %d turns of %d for %s", cs2.read.Load(), n, strategy)
				}
			})
		}
	}
}

// dialog returns the user and assistant messages of msgs.
func dialog(msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for _, m := range msgs {
		if m.Role != llm.RoleSystem {
			out = append(out, m)
		}
	}
	return out
}

// TestRecallLateTurn: once a conversation's memory is cached, a turn reads
// the new turn only, whatever the conversation's length.
func TestRecallLateTurn(t *testing.T) {
	ctx := context.Background()
	cs := counting(openSQLite(t, filepath.Join(t.TempDir(), "memory.db")))
	m := newManager(t, cs, nil, memory.Options{})
	longChat(t, cs, m, "c", 200)
	if _, err := m.Recall(ctx, "c", "warm", "", -1); err != nil {
		t.Fatal(err)
	}
	// A turn stored elsewhere (another server on the same database): the
	// recall reads it.
	add(t, cs, nil, "c", "One more question?", "One more answer.")
	cs.read.Store(0)
	msgs, err := m.Recall(ctx, "c", "What was the last question?", "", -1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(joined(msgs), "One more answer.") {
		t.Errorf("recall misses the new turn:\n%s", joined(msgs))
	}
	if got := cs.read.Load(); got > 2 {
		t.Errorf("a late turn read %d turns, want the new one (and the check for it)", got)
	}
	// A turn this manager was told of (Remember): neither the recall nor
	// the background work it schedules reads it back.
	cs.read.Store(0)
	add(t, cs, m, "c", "And another question?", "And another answer.")
	flush(t, m)
	msgs, err = m.Recall(ctx, "c", "What was the last question?", "", -1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(joined(msgs), "And another answer.") {
		t.Errorf("recall misses the turn remembered:\n%s", joined(msgs))
	}
	if got := cs.read.Load(); got != 0 {
		t.Errorf("a turn after one remembered read %d turns from the store, want 0", got)
	}
}

// TestExchangesCached: the conversations a knowledge-base chat reads for
// its rewrite (the last exchanges) are cached too, apart from those whose
// retrieval index is kept, which they never evict.
func TestExchangesCached(t *testing.T) {
	ctx := context.Background()
	cs := counting(openSQLite(t, filepath.Join(t.TempDir(), "memory.db")))
	m := newManager(t, cs, func(c *memory.Config) { c.CacheConversations = 1 }, memory.Options{})
	longChat(t, cs, m, "kept", 40)
	longChat(t, cs, m, "light", 40)
	exchanges := memory.Choice{Strategy: memory.Combined, Exchanges: true}
	if _, err := m.Recall(ctx, "kept", "warm", memory.Combined, -1); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		cs.read.Store(0)
		msgs, err := m.RecallChoice(ctx, "light", "What next?", exchanges)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			t.Fatal("no exchanges recalled")
		}
		if got := cs.read.Load(); i > 0 && got != 0 {
			t.Errorf("exchanges recall %d read %d turns, want 0 (cached)", i+1, got)
		}
		add(t, cs, m, "light", fmt.Sprintf("Question %d?", i), fmt.Sprintf("Answer %d.", i))
	}
	msgs, err := m.RecallChoice(ctx, "light", "What next?", exchanges)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(joined(msgs), "Answer 2.") {
		t.Errorf("exchanges miss the turn remembered:\n%s", joined(msgs))
	}
	cs.read.Store(0)
	if _, err := m.Recall(ctx, "kept", "What did I say?", memory.Combined, -1); err != nil {
		t.Fatal(err)
	}
	if got := cs.read.Load(); got != 0 {
		t.Errorf("the conversation with an index read %d turns after exchanges of another, want 0 (still cached)", got)
	}
	if st := m.Stats(); st.Cached != 2 {
		t.Errorf("Stats().Cached = %d, want 2 (one of each part)", st.Cached)
	}
}
