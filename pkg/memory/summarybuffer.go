package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
)

// summary_buffer with LangChain's semantics (ConversationSummaryBufferMemory):
// the newest turns that fit Config.MaxTokenLimit are kept verbatim, and
// exactly the turns that fall out of it are summarised. The summary (at
// most Compression.SummaryMaxTokens) comes on top of the verbatim turns,
// as in LangChain, where max_token_limit bounds the buffer. A turn is
// never sent both summarised and verbatim, and never left out of both.

// bufferCut returns the index of the first turn of the newest turns that
// fit limit tokens (whole turns; len(turns) when not even the last fits).
func bufferCut(tokens []int, limit int) int {
	cut, used := len(tokens), 0
	for cut > 0 && used+tokens[cut-1] <= limit {
		cut--
		used += tokens[cut]
	}
	return cut
}

// summaryBuffer assembles the summary_buffer history of v. When turns
// fall out of the buffer that the summary does not cover yet (the
// background compression has not caught up), it folds them into the
// summary now and saves the digest.
func (m *Manager) summaryBuffer(ctx context.Context, v *view, lb labels, budget int) ([]llm.Message, error) {
	cut := bufferCut(v.tokens, budget)
	if cut > 0 && v.turns[cut-1].ID > v.digest.Through && m.summarizer != nil {
		d, err := m.foldThrough(ctx, v.conv.ID, v.digest, v.turns, cut)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// The summary could not be written: the turns it should cover
			// are sent verbatim rather than dropped.
			m.log.Warn("summary_buffer: summarising the turns out of the buffer failed; sending them verbatim", "err", err)
		} else {
			v.digest, v.derived = d, m.derive(d, v.derived)
		}
	}
	out, _ := m.summaryMessage(v, lb, m.cfg.Compression.SummaryMaxTokens+m.messageTokens(lb.summary))
	// The turns after the summary; those it covers are not repeated.
	return append(out, m.turnsAsMessages(v.turns[m.uncovered(v):])...), nil
}

// uncovered returns the index of the first turn the summary of v does not
// cover.
func (m *Manager) uncovered(v *view) int {
	from := len(v.turns)
	for from > 0 && v.turns[from-1].ID > v.digest.Through {
		from--
	}
	return from
}

// foldThrough folds the turns before index cut that d does not cover into
// its summary, Compression.GroupSize turns per step, and saves the digest
// of conversation id.
func (m *Manager) foldThrough(ctx context.Context, id string, d Digest, turns []Turn, cut int) (Digest, error) {
	d = cloneDigest(d)
	start := 0
	for start < cut && turns[start].ID <= d.Through {
		start++
	}
	for start < cut {
		end := min(start+m.cfg.Compression.GroupSize, cut)
		s, err := m.summarize(ctx, d.Summary, turnLines(turns[start:end]), m.cfg.Compression.SummaryMaxTokens)
		if err != nil {
			return Digest{}, fmt.Errorf("summarize turns %d-%d: %w", turns[start].ID, turns[end-1].ID, err)
		}
		d.Summary, d.Through = s, turns[end-1].ID
		start = end
	}
	d.UpdatedAt = nowMillis()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := m.state.SaveDigest(sctx, id, d); err != nil && !errors.Is(err, ErrNotFound) {
		return Digest{}, err
	}
	m.setDigest(id, d)
	return d, nil
}
