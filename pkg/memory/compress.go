package memory

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Background compression. Remember schedules the conversation; a bounded
// pool of workers folds its older turns into the summary and extracts
// entity facts and triples, then saves the digest in one statement. The
// turns themselves are never touched, so a failed or interrupted job loses
// nothing: the digest stays as it was and the next turn retries.

// job is the scheduling state of one conversation: queued or running, and
// whether another turn arrived meanwhile.
type job struct {
	running bool
	again   bool
	done    chan struct{} // closed when the job leaves the table
}

// schedule queues conversation id for compression unless it is already
// queued; a running job runs once more. It never blocks.
func (m *Manager) schedule(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || id == "" {
		return
	}
	if j, ok := m.jobs[id]; ok {
		if j.running {
			j.again = true
		}
		return
	}
	select {
	case m.queue <- id:
		m.jobs[id] = &job{done: make(chan struct{})}
	default:
		m.stats.dropped.Add(1)
	}
}

func (m *Manager) worker() {
	defer m.wg.Done()
	for id := range m.queue {
		m.mu.Lock()
		j := m.jobs[id]
		j.running = true
		m.mu.Unlock()
		for {
			m.runJob(id)
			m.mu.Lock()
			if j.again && !m.closed && m.ctx.Err() == nil {
				j.again = false
				m.mu.Unlock()
				continue
			}
			delete(m.jobs, id)
			close(j.done)
			m.mu.Unlock()
			break
		}
	}
}

func (m *Manager) runJob(id string) {
	m.stats.jobs.Add(1)
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.Compression.Timeout)
	defer cancel()
	if err := m.compress(ctx, id); err != nil {
		m.stats.failures.Add(1)
		m.log.Warn("memory compression failed; the turns stay uncompressed", "conversation", id, "err", err)
	}
}

// Flush waits until no compression is queued or running, or ctx is done.
func (m *Manager) Flush(ctx context.Context) error {
	for {
		m.mu.Lock()
		var wait chan struct{}
		for _, j := range m.jobs {
			wait = j.done
			break
		}
		m.mu.Unlock()
		if wait == nil {
			return nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// compress brings the digest of conversation id up to date: summary folding
// while the uncovered turns exceed the trigger, then extraction of the turns
// not yet extracted. Progress made before a failure is saved.
func (m *Manager) compress(ctx context.Context, id string) (err error) {
	// The turns the digest does not cover yet (and, for summary_buffer,
	// those the buffer holds) are all compression reads.
	cs, err := m.open(ctx, id, false, 1)
	if err != nil || cs == nil {
		return err
	}
	n := need{after: min(cs.state.Digest.Through, cs.state.Digest.ExtractedThrough), tokens: -1}
	if m.cfg.Strategy == SummaryBuffer {
		n.tokens = m.cfg.MaxTokenLimit
	}
	if err := m.ensure(ctx, cs, n); err != nil {
		cs.mu.Unlock()
		return err
	}
	v := m.snapshot(cs, false, false)
	cs.mu.Unlock()

	d := v.digest
	changed := false
	defer func() {
		if !changed {
			return
		}
		d.UpdatedAt = nowMillis()
		// Save even when the context ran out midway: what was computed is
		// consistent (Through and ExtractedThrough match the content).
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if serr := m.state.SaveDigest(sctx, id, d); serr != nil {
			if errors.Is(serr, ErrNotFound) { // deleted meanwhile
				m.forget(id)
				return
			}
			err = errors.Join(err, serr)
			return
		}
		m.setDigest(id, d)
	}()

	cfg := m.cfg.Compression
	// Summary: with summary_buffer, exactly the turns that fall out of the
	// token limit (LangChain's semantics); otherwise the oldest uncovered
	// turns, group by group, while they exceed the trigger.
	if m.cfg.Strategy == SummaryBuffer && m.summarizer != nil {
		if cut := bufferCut(v.tokens, m.cfg.MaxTokenLimit); cut > 0 && v.turns[cut-1].ID > d.Through {
			nd, err := m.foldThrough(ctx, id, d, v.turns, cut)
			if err != nil {
				return err
			}
			d = nd
		}
	}
	for m.cfg.Strategy != SummaryBuffer && m.summarizer != nil {
		start := len(v.turns)
		for start > 0 && v.turns[start-1].ID > d.Through {
			start--
		}
		tokens, wordsN := 0, 0
		for i := start; i < len(v.turns); i++ {
			tokens += v.tokens[i]
			if cfg.TriggerWords > 0 {
				wordsN += wordCount(v.turns[i].Question.Content) + wordCount(v.turns[i].Answer.Content)
			}
		}
		if tokens <= cfg.TriggerTokens && (cfg.TriggerWords == 0 || wordsN <= cfg.TriggerWords) {
			break
		}
		end := min(start+cfg.GroupSize, len(v.turns))
		s, err := m.summarize(ctx, d.Summary, turnLines(v.turns[start:end]), cfg.SummaryMaxTokens)
		if err != nil {
			return fmt.Errorf("summarize turns %d-%d: %w", v.turns[start].ID, v.turns[end-1].ID, err)
		}
		d.Summary, d.Through = s, v.turns[end-1].ID
		changed = true
	}

	// Entities and triples: turn by turn with an Incremental extractor;
	// otherwise in batches of one more than the recent turns (the turns
	// not yet extracted are then never more than the recent turns, which
	// the strategies show verbatim): with the default 3 recent turns, a
	// batch's two calls come every 4 turns. The batches are fixed,
	// whatever number of turns a job finds waiting, so the digest does not
	// depend on how jobs were scheduled.
	batch := max(1, min(cfg.GroupSize, m.cfg.RecentTurns+1))
	if inc, ok := m.extractor.(Incremental); ok && inc.Incremental() {
		batch = 1
	}
	for m.extractor != nil {
		start := len(v.turns)
		for start > 0 && v.turns[start-1].ID > d.ExtractedThrough {
			start--
		}
		if len(v.turns)-start < batch || start == len(v.turns) {
			break
		}
		end := start + batch
		lines := turnLines(v.turns[start:end])
		known := make([]string, 0, len(d.Entities))
		for _, e := range d.Entities {
			known = append(known, e.Name)
		}
		facts, err := m.extractEntities(ctx, lines, known)
		if err != nil {
			return fmt.Errorf("extract entities of turns %d-%d: %w", v.turns[start].ID, v.turns[end-1].ID, err)
		}
		triples, err := m.extractTriples(ctx, lines)
		if err != nil {
			return fmt.Errorf("extract triples of turns %d-%d: %w", v.turns[start].ID, v.turns[end-1].ID, err)
		}
		last := v.turns[end-1].ID
		for i := range triples {
			if triples[i].Turn == 0 {
				triples[i].Turn = last
			}
		}
		d.Entities = mergeEntities(d.Entities, facts, last, cfg.MaxEntities, cfg.MaxFactsPerEntity)
		d.Triples = mergeTriples(d.Triples, triples, cfg.MaxTriples)
		d.ExtractedThrough = last
		changed = true
	}
	return nil
}

// setDigest updates the cached digest of id if it is cached.
func (m *Manager) setDigest(id string, d Digest) {
	cs, ok := m.cached(id)
	if !ok {
		return
	}
	cs.mu.Lock()
	if cs.loaded && d.UpdatedAt >= cs.state.Digest.UpdatedAt {
		cs.state.Digest = cloneDigest(d)
		if cs.derived != nil {
			cs.stale = cs.derived
		}
		cs.derived = nil
	}
	cs.mu.Unlock()
}

// Close stops background work: it waits up to
// Config.Compression.CloseTimeout for queued and running jobs, then cancels
// what is left. Later Remember calls do nothing.
func (m *Manager) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Compression.CloseTimeout)
	defer cancel()
	return m.Shutdown(ctx)
}

// Shutdown is Close with the wait bounded by ctx instead.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.queue)
	m.mu.Unlock()

	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("memory: background work cancelled at close: %w", ctx.Err())
	}
	m.cancel()
	<-done
	m.idle.Wait()
	return err
}
