package memory

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
)

// Group commit: the turns that wait to be appended are written together,
// in one transaction, by whichever of their callers leads.
//
// A server stores a turn at the end of every request, while the client
// waits for the stream to end. One transaction a turn makes the write
// connection a queue under load: SQLite has one writer, and each
// transaction's BEGIN, WAL write and COMMIT are system calls after which
// the writing goroutine waits for a CPU again, holding the connection
// while every other turn waits behind it (under `mixchat-eval load` the
// median store took 27 ms and the 99th percentile 450 ms for about 0.3 ms
// of CPU). In one transaction the turns waiting share those costs.
//
// There is no goroutine of its own: the first caller to find a free slot
// leads, writing every turn waiting (its own included) in one transaction,
// and hands the lead to a caller still waiting when it is done. Each turn
// is written inside a savepoint, so one that fails (a message id already
// stored) fails alone; a failed COMMIT fails every turn of its batch, none
// of which is then stored. The turns of a batch are written in the order
// of their conversations' ids (appends to one conversation in the order
// they came), so that batches running at once on an engine with row locks
// (PostgreSQL) take the locks in one order and never deadlock.

// maxBatch bounds the turns of one transaction.
const maxBatch = 64

// maxLeaders bounds the batches written at once, below the write pool's
// size (SQLite's is one connection: one batch at a time).
const maxLeaders = 4

// turnWrite is one turn waiting to be appended, and then its outcome.
type turnWrite struct {
	ctx          context.Context
	q, a         Message
	qmeta, ameta string

	// wake gets true when this caller is to lead, false once its turn was
	// written or failed (id, err).
	wake chan bool
	id   int64
	err  error
}

// groupCommit is the queue of turns waiting and the batches being written.
// A leader is never in waiting: it writes its own turn first.
type groupCommit struct {
	mu      sync.Mutex
	waiting []*turnWrite
	leaders int // batches being written, or callers told to lead
}

// leaderSlots is how many batches may be written at once on db.
func leaderSlots(db *sql.DB) int {
	n := db.Stats().MaxOpenConnections
	if n <= 0 || n > maxLeaders {
		return maxLeaders
	}
	return n
}

// appendTurn stores the turn (q, a) with the turns other callers append
// meanwhile, returning its id. Like one transaction of its own: the turn is
// stored whole or not at all, and its error says why not. A caller whose
// context ends before its turn is taken into a batch gets the context's
// error; once taken, the turn is written and the caller waits for the
// outcome (bounded by txTimeout), so that what it reports is what was
// stored.
func (s *SQLStore) appendTurn(ctx context.Context, q, a Message, qmeta, ameta string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	w := &turnWrite{ctx: ctx, q: q, a: a, qmeta: qmeta, ameta: ameta, wake: make(chan bool, 1)}
	g := &s.group
	g.mu.Lock()
	lead := g.leaders < leaderSlots(s.write)
	if lead {
		g.leaders++
	} else {
		g.waiting = append(g.waiting, w)
	}
	g.mu.Unlock()
	if !lead && !<-w.wake {
		return w.id, w.err
	}

	g.mu.Lock()
	n := min(len(g.waiting), maxBatch-1)
	batch := append([]*turnWrite{w}, g.waiting[:n]...)
	g.waiting = slices.Delete(g.waiting, 0, n)
	g.mu.Unlock()

	s.writeBatch(batch)
	for _, o := range batch[1:] {
		o.wake <- false
	}

	g.mu.Lock()
	if len(g.waiting) == 0 {
		g.leaders--
		g.mu.Unlock()
		return w.id, w.err
	}
	// The lead passes to the turn waiting longest.
	next := g.waiting[0]
	g.waiting = slices.Delete(g.waiting, 0, 1)
	g.mu.Unlock()
	next.wake <- true
	return w.id, w.err
}

// writeBatch appends the turns of batch in one transaction, setting each
// one's id or error.
func (s *SQLStore) writeBatch(batch []*turnWrite) {
	live := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	slices.SortStableFunc(live, func(x, y *turnWrite) int {
		return cmp.Compare(x.q.ConversationID, y.q.ConversationID)
	})
	err := s.writeTurns(live)
	if err != nil {
		for _, w := range live {
			w.id, w.err = 0, err
		}
	}
}

// writeTurns runs the transaction of writeBatch. It returns an error that
// fails every turn (nothing was stored); a turn that fails alone gets its
// own error and the others are stored.
func (s *SQLStore) writeTurns(ws []*turnWrite) error {
	next := s.q(`INSERT INTO conversations AS c (id, created_at, updated_at, last_turn_id) VALUES (?, ?, ?, 1)
		ON CONFLICT (id) DO UPDATE SET last_turn_id = c.last_turn_id + 1, updated_at = ` + s.d.Greatest + `(c.updated_at, excluded.updated_at)
		RETURNING last_turn_id`)
	j := s.d.JSONArg
	insert := s.q(`INSERT INTO messages (id, conversation_id, turn_id, seq, role, content, timestamp, metadata)
		VALUES (?, ?, ?, ?, ?, ?, ?, ` + j + `), (?, ?, ?, ?, ?, ?, ?, ` + j + `) ON CONFLICT (id) DO NOTHING`)
	// The transaction (and so its COMMIT) runs under a context of its own:
	// the callers' contexts were checked when the batch was taken, and a
	// COMMIT interrupted by a context could still take effect on the
	// server after being reported as failed.
	ctx, cancel := context.WithTimeout(context.Background(), txTimeout)
	defer cancel()
	// Prepared before the connection is taken: the write connections may
	// be one.
	nextSt, insertSt := s.prepared(ctx, s.write, next), s.prepared(ctx, s.write, insert)
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var nextTx, insertTx *sql.Stmt
	if nextSt != nil && insertSt != nil {
		nextTx, insertTx = tx.StmtContext(ctx, nextSt), tx.StmtContext(ctx, insertSt)
		defer nextTx.Close()
		defer insertTx.Close()
	}
	one := func(w *turnWrite) (int64, error) {
		q, a := w.q, w.a
		var turnID int64
		nextArgs := []any{q.ConversationID, q.Timestamp, a.Timestamp}
		var err error
		if nextTx != nil {
			err = nextTx.QueryRowContext(ctx, nextArgs...).Scan(&turnID)
		} else {
			err = tx.QueryRowContext(ctx, next, nextArgs...).Scan(&turnID)
		}
		if err != nil {
			return 0, err
		}
		insertArgs := []any{q.ID, q.ConversationID, turnID, seqQuestion, q.Role, q.Content, q.Timestamp, w.qmeta,
			a.ID, a.ConversationID, turnID, seqAnswer, a.Role, a.Content, a.Timestamp, w.ameta}
		var res sql.Result
		if insertTx != nil {
			res, err = insertTx.ExecContext(ctx, insertArgs...)
		} else {
			res, err = tx.ExecContext(ctx, insert, insertArgs...)
		}
		if err != nil {
			return 0, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n != 2 {
			return 0, fmt.Errorf("message id %s or %s: %w", q.ID, a.ID, ErrConflict)
		}
		return turnID, nil
	}
	if len(ws) == 1 {
		// Alone in its transaction: no savepoint needed.
		w := ws[0]
		if w.id, w.err = one(w); w.err != nil {
			return w.err
		}
		return tx.Commit()
	}
	stored := 0
	for _, w := range ws {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT turn"); err != nil {
			return err
		}
		if w.id, w.err = one(w); w.err != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT turn"); err != nil {
				return fmt.Errorf("%w (undoing a failed turn: %v)", w.err, err)
			}
		} else {
			stored++
		}
		if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT turn"); err != nil {
			return err
		}
	}
	if stored == 0 {
		return nil // each turn has its error; nothing to commit
	}
	return tx.Commit()
}
