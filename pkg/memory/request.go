package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/mixchat/mixchat/pkg/llm"
)

// Choice is how one request's history is assembled: a strategy, and for
// the window strategy its size.
type Choice struct {
	Strategy string `json:"strategy"`
	// WindowK is the window strategy's number of exchanges; 0 means the
	// configured one (Config.WindowK, else Config.HistoryLen).
	WindowK int `json:"window_k,omitempty"`
	// Exchanges asks for the exchanges alone: the conversation's system
	// messages and the user and assistant messages the strategy gives,
	// without the memory it adds as system messages (summary, facts,
	// retrieved excerpts), for a caller that reads only the exchanges,
	// such as a follow-up rewrite. Retrieval then searches nothing, and
	// the conversation is read as far back as its recent turns only.
	Exchanges bool `json:"-"`
}

// ErrContradiction is returned by ResolveRequest when a request's memory
// settings contradict each other; servers answer it with 400.
var ErrContradiction = errors.New("contradictory memory settings")

// ErrBadMemorySetting is returned by ResolveRequest for a setting out of
// range; servers answer it with 400.
var ErrBadMemorySetting = errors.New("invalid memory setting")

// ResolveRequest settles a request's memory settings into one Choice. The
// inputs are as the request gave them: strategy "" (not given) or a
// strategy name; historyLen < 0 (not given, Chatchat's -1) or a number of
// turns; windowK 0 (not given) or a number of exchanges.
//
// Precedence:
//   - nothing given: the configured strategy ("" in the Choice).
//   - history_len alone: the window strategy over the last history_len
//     exchanges (0 = NoHistory), Chatchat's meaning.
//   - memory alone: that strategy; window_k sizes it when it is window.
//   - memory "window" with history_len and/or window_k: the window, sized
//     by whichever is given; both given must agree.
//   - history_len with any other memory strategy, or window_k with a
//     strategy other than window: ErrContradiction (one setting would
//     silently override the other).
func ResolveRequest(strategy string, historyLen, windowK int) (Choice, error) {
	if strategy != "" && !validStrategy(strategy) {
		return Choice{}, fmt.Errorf("%w: memory %q: %w", ErrBadMemorySetting, strategy, ErrUnknownStrategy)
	}
	if historyLen > 1000 {
		return Choice{}, fmt.Errorf("%w: history_len %d: want -1 (not given) to 1000", ErrBadMemorySetting, historyLen)
	}
	if windowK < 0 || windowK > 1000 {
		return Choice{}, fmt.Errorf("%w: window_k %d: want 0 (not given) to 1000", ErrBadMemorySetting, windowK)
	}
	hasLen := historyLen >= 0
	switch {
	case strategy == "" && !hasLen && windowK == 0:
		return Choice{}, nil
	case strategy == "" || strategy == Window:
		if !hasLen && windowK == 0 {
			return Choice{Strategy: strategy}, nil
		}
		if strategy == "" && !hasLen {
			// window_k alone names the window strategy.
			return Choice{Strategy: Window, WindowK: windowK}, nil
		}
		if hasLen && windowK > 0 && historyLen != windowK {
			return Choice{}, fmt.Errorf("%w: history_len %d and window_k %d both size the window", ErrContradiction, historyLen, windowK)
		}
		if hasLen {
			if historyLen == 0 {
				return Choice{Strategy: NoHistory}, nil
			}
			return Choice{Strategy: Window, WindowK: historyLen}, nil
		}
		return Choice{Strategy: Window, WindowK: windowK}, nil
	case hasLen:
		return Choice{}, fmt.Errorf("%w: history_len %d asks for the last turns, memory %q for another strategy; give one of them",
			ErrContradiction, historyLen, strategy)
	case windowK > 0:
		return Choice{}, fmt.Errorf("%w: window_k %d sizes the window strategy, not memory %q", ErrContradiction, windowK, strategy)
	}
	return Choice{Strategy: strategy}, nil
}

// NoHistory is the Choice.Strategy of history_len 0: no turns at all
// (RecallChoice returns only the conversation's system messages). It is
// not a strategy Recall accepts.
const NoHistory = "none"

// RecallChoice is Recall with a Choice from ResolveRequest: the
// conversation's system messages, then the history the chosen strategy
// assembles (the window sized by Choice.WindowK).
func (m *Manager) RecallChoice(ctx context.Context, conversationID, question string, c Choice) ([]llm.Message, error) {
	switch {
	case c.Strategy == NoHistory:
		return m.recall(ctx, conversationID, question, Window, 0, 0, c.Exchanges)
	case c.Strategy == Window && c.WindowK > 0:
		return m.recall(ctx, conversationID, question, Window, -1, c.WindowK, c.Exchanges)
	}
	return m.recall(ctx, conversationID, question, c.Strategy, -1, 0, c.Exchanges)
}
