package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/turn"
)

// turnWriter encodes one turn in an endpoint's wire format. runTurn calls
// event for each event of a streamed turn, then exactly one of done and
// fail.
type turnWriter interface {
	// event writes one event; its error (the client went away) stops the
	// turn, which is then stored as interrupted.
	event(ev turn.Event) error
	// done ends a turn that was answered and stored (unless no
	// conversation was named). err, when not nil, is why the reply broke
	// off after part of it was sent; res.StoreErr why storing failed.
	done(res turn.Result, err error)
	// fail reports a turn that said nothing, or a stream cut by shutdown:
	// as an HTTP error when nothing was written yet, else in the stream.
	fail(res turn.Result, err error)
	// streamed reports whether the reply is streamed.
	streamed() bool
	// close waits for the stream's writes to end (see sse.close).
	close()
	// finishing says the turn is over (see sse.finishing).
	finishing()
}

// reply is where a turn's reply goes: the request, and the SSE stream when
// the reply is streamed. Each endpoint's turnWriter embeds it.
type reply struct {
	c   *gin.Context
	out *sse // nil: not streamed
}

func (s *Server) newReply(c *gin.Context, stream bool) reply {
	r := reply{c: c}
	if stream {
		r.out = s.newSSE(c)
	}
	return r
}

func (r reply) streamed() bool { return r.out != nil }

func (r reply) close() {
	if r.out != nil {
		_ = r.out.close()
	}
}

func (r reply) finishing() {
	if r.out != nil {
		r.out.finishing()
	}
}

// delta sends a piece of the reply as the event wrap makes of its text;
// other events are not part of Chatchat's and OpenAI's streams.
func (r reply) delta(ev turn.Event, wrap func(text string) any) error {
	if ev.Type != turn.EventDelta {
		return nil
	}
	return r.out.Send(wrap(ev.Text))
}

// end reports err at the end of a stream that already started, or as an
// HTTP error when nothing was written yet; event is the stream's error
// event, built only when needed.
func (r reply) end(err error, event func() any) {
	if r.out == nil || !r.out.started {
		writeError(r.c, err)
		return
	}
	logError(r.c, err, classify(err))
	_ = r.out.Send(event())
}

// runTurn runs req under the reply context (cancelled by the client going
// away and by CutStreams), streaming its events through w when stream is
// set, and ends the reply: the one cut-off and shutdown path of every chat
// endpoint. A stream cut by the client ends silently (nobody listens); one
// cut by a shutdown ends with an error saying so.
func (s *Server) runTurn(c *gin.Context, req turn.Request, w turnWriter) {
	ctx, done := s.replyContext(c.Request.Context())
	defer done()
	defer w.close()
	var emit func(turn.Event) error
	if w.streamed() {
		emit = w.event
	}
	res, err := s.turns.Run(ctx, req, emit)
	w.finishing()
	switch {
	case !res.Answered:
		w.fail(res, err)
	case res.Cut:
		if cause := context.Cause(ctx); errors.Is(cause, errShuttingDown) && res.WriteErr == nil {
			w.fail(res, cause)
		}
	default:
		w.done(res, err)
	}
}

// newAnswerID is the id of the answer a turn stores, known before the turn
// runs so that streamed events can carry it.
func newAnswerID() string { return uuid.NewString() }

// withTurn serves h with a chat endpoint's request decoded and validated
// (withBody), refusing a question over the length limit before any work.
func withTurn[T any, P interface {
	*T
	question() string
}](s *Server, h func(c *gin.Context, req P)) gin.HandlerFunc {
	return withBody(func(c *gin.Context, req *T) {
		if err := s.checkQuery(P(req).question()); err != nil {
			writeError(c, err)
			return
		}
		h(c, req)
	})
}

// requireQuery refuses a blank question.
func requireQuery(query string) error {
	if strings.TrimSpace(query) == "" {
		return errBadRequest("query must not be empty")
	}
	return nil
}

// defaultMaxQueryChars bounds a question when Options.MaxQueryChars is 0.
const defaultMaxQueryChars = 32000

// checkQuery refuses a question longer than the configured limit, before
// any work is done for it.
func (s *Server) checkQuery(query string) error {
	if n := utf8.RuneCountInString(query); n > s.opts.MaxQueryChars {
		return &Error{Status: http.StatusRequestEntityTooLarge,
			Msg: fmt.Sprintf("query is %d characters, more than the limit of %d (server.max_query_chars)", n, s.opts.MaxQueryChars)}
	}
	return nil
}
