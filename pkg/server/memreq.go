package server

import (
	"errors"
	"net/http"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/turn"
)

// memoryFields are the memory settings a chat request may carry: Chatchat's
// history_len and mixchat's memory and window_k. Their precedence is
// memory.ResolveRequest's: history_len alone is the window of the last
// history_len exchanges (0: no history); memory alone is that strategy;
// window_k sizes the window; history_len with another strategy than
// window, window_k with another strategy, or history_len and window_k that
// disagree are contradictions, answered with 400.
type memoryFields struct {
	HistoryLen *int `json:"history_len"`
	// Memory names the memory strategy for this request; "" means the
	// configured one.
	Memory string `json:"memory"`
	// WindowK is the window strategy's size for this request.
	WindowK *int `json:"window_k"`
}

// choice validates the fields and settles them into one memory.Choice.
func (f memoryFields) choice(s *Server) (memory.Choice, error) {
	historyLen, strategy, windowK, err := f.resolve(s)
	if err != nil {
		return memory.Choice{}, err
	}
	return memory.ResolveRequest(strategy, historyLen, windowK)
}

// resolve validates the fields and returns them as a turn takes them:
// history_len (-1 when not sent), the strategy and window_k (0 when not
// sent).
func (f memoryFields) resolve(s *Server) (historyLen int, strategy string, windowK int, err error) {
	historyLen = -1
	if f.HistoryLen != nil {
		historyLen = *f.HistoryLen
		if historyLen < -1 {
			// -1 is Chatchat's "not given"; anything lower is a mistake,
			// not another way of saying it.
			return 0, "", 0, errBadRequest("history_len must be between -1 (not given) and 1000, got %d", historyLen)
		}
	}
	if f.WindowK != nil {
		windowK = *f.WindowK
		if windowK == 0 {
			// 0 is "not given" to ResolveRequest; sent, it asks for
			// nothing the window can be.
			return 0, "", 0, errBadRequest("window_k must be between 1 and 1000, got 0 (history_len 0 asks for no history)")
		}
	}
	if _, err := s.memoryChoice(f.Memory, historyLen, windowK); err != nil {
		return 0, "", 0, err
	}
	return historyLen, f.Memory, windowK, nil
}

// memoryChoice settles a request's memory settings with
// memory.ResolveRequest: an unknown strategy, a setting out of range or
// settings that contradict each other are a 400 whose message names the
// fields.
func (s *Server) memoryChoice(strategy string, historyLen, windowK int) (memory.Choice, error) {
	if err := s.validMemory(strategy); err != nil {
		return memory.Choice{}, err
	}
	c, err := memory.ResolveRequest(strategy, historyLen, windowK)
	switch {
	case errors.Is(err, memory.ErrContradiction):
		return memory.Choice{}, &Error{Status: http.StatusBadRequest,
			Msg: "history_len, memory and window_k contradict each other (see the API docs for their precedence)", Err: err}
	case err != nil:
		return memory.Choice{}, &Error{Status: http.StatusBadRequest, Err: err}
	}
	return c, nil
}

// rewriteSettings are how a knowledge-base or search chat turn rewrites a
// follow-up before retrieval: whether it does (a Mixer with condensing on)
// and what it recalls of the conversation for it.
type rewriteSettings struct {
	condense   bool
	historyLen int
	strategy   string
	windowK    int
}

// checkRewrite validates the model fields of a retrieval chat (kb, search)
// and the memory fields of its follow-up rewrite, returning the client's
// history and the rewrite settings.
func (s *Server) checkRewrite(f chatchatFields, m memoryFields) ([]llm.Message, rewriteSettings, error) {
	history, err := f.check(s)
	if err != nil {
		return nil, rewriteSettings{}, err
	}
	mem, err := s.rewriteMemory(m)
	if err != nil {
		return nil, rewriteSettings{}, err
	}
	return history, mem, nil
}

// rewriteMemory validates the memory fields of a knowledge-base or search
// chat request: there they choose what is recalled for the follow-up
// rewrite, which is all a recalled history serves.
func (s *Server) rewriteMemory(f memoryFields) (rewriteSettings, error) {
	historyLen, strategy, windowK, err := f.resolve(s)
	if err != nil {
		return rewriteSettings{}, err
	}
	return rewriteSettings{condense: s.mixer != nil && s.mixer.Config().Condense,
		historyLen: historyLen, strategy: strategy, windowK: windowK}, nil
}

// apply sets the rewrite on tr. Without condensing nothing is recalled.
func (r rewriteSettings) apply(tr *turn.Request) {
	if !r.condense {
		return
	}
	tr.Condense, tr.HistoryLen, tr.Memory, tr.WindowK = true, r.historyLen, r.strategy, r.windowK
}

// withStandalone adds the turn's standalone question to a stored record
// when the follow-up was rewritten.
func withStandalone(rec map[string]any, res turn.Result) map[string]any {
	if res.Standalone != "" {
		rec["standalone"] = res.Standalone
	}
	return rec
}
