package storetest

// The tests of concurrent and cancelled writes, and of stores sharing a
// database.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/memory"
)

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

func testConcurrentConflicts(t *testing.T, s memory.Store) {
	// Appends to several conversations at once, every fourth reusing a
	// message id already stored: each of those fails alone with
	// ErrConflict, whatever was written with it, and leaves no gap.
	ctx := context.Background()
	mustAppend(t, s, "conv-0", "99/0", "answer 99/0")
	first := mustTurns(t, s, "conv-0", 1)[0].Question.ID
	const workers, perWorker = 8, 12
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stored  = map[string]int{} // conversation → turns stored
		wrongly []string
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				conv := fmt.Sprintf("conv-%d", (w+i)%4)
				q, a := msgs(fmt.Sprintf("%d/%d", w, i), fmt.Sprintf("answer %d/%d", w, i))
				dup := i%4 == 3
				if dup {
					q.ID = first
				}
				_, err := s.AppendTurn(ctx, conv, q, a)
				mu.Lock()
				switch {
				case dup && !errors.Is(err, memory.ErrConflict):
					wrongly = append(wrongly, fmt.Sprintf("%d/%d reusing an id: err %v, want ErrConflict", w, i, err))
				case !dup && err != nil:
					wrongly = append(wrongly, fmt.Sprintf("%d/%d: %v", w, i, err))
				case !dup:
					stored[conv]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, e := range wrongly {
		t.Error(e)
	}
	stored["conv-0"]++ // the first turn
	for conv, n := range stored {
		turns := mustTurns(t, s, conv, 0)
		checkConsecutive(t, turns, turns, n)
		for _, tr := range turns[1:] {
			if tr.Question.ID == first {
				t.Errorf("%s: turn %d reuses the id of a stored message", conv, tr.ID)
			}
		}
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
