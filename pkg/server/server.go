// Package server is mixchat's HTTP API: one gin router built in routes(),
// thin handler methods that decode wire types, run a turn (pkg/turn) and
// encode its events in their endpoint's wire format (Chatchat, mix_chat,
// OpenAI), one SSE writer for streamed replies, and classify, the one place
// where errors are classified for every endpoint family.
package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/turn"
)

// Recaller is the conversation memory: which part of a conversation's
// history the model sees for a question, and what is done with a turn once
// stored (compression, entity extraction), which must not delay the reply.
type Recaller interface {
	// RecallChoice returns the history for question as a request's memory
	// settings, settled by memory.ResolveRequest, choose it. A
	// conversation that does not exist has no history.
	RecallChoice(ctx context.Context, conversationID, question string, c memory.Choice) ([]llm.Message, error)
	// Remember is told of each stored turn. It returns at once; work it
	// starts must outlive ctx's cancellation but not the process.
	Remember(ctx context.Context, conversationID string, t memory.Turn)
	// Strategies lists the strategy names Recall accepts.
	Strategies() []string
}

// Options are the server's dependencies and limits. Store, Models and Chat
// are required; KB and Search may be nil, in which case their endpoints
// answer 503 with a message saying they are not configured.
type Options struct {
	Log          *slog.Logger
	Version      string
	Store        memory.Store
	Models       *llm.Registry // the configured LLMs, listed by /server/list_models
	Chat         *chat.Answerer
	Memory       Recaller // nil: the last HistoryLen turns
	KB           *kb.Service
	Search       *search.Service
	Mixer        *mix.Mixer // nil: /chat/mix_chat and /v1 answer 503
	Access       Access     // authentication, tenancy, rate limits, CORS; zero: auth off
	MaxBodyBytes int64      // request body limit; 0 means 8 MiB (uploads have their own limit)
	// Obs measures and traces requests and prices replies; nil means an
	// Observer of its own (metrics still served on /metrics, no traces).
	Obs *obs.Observer
	// PublicHosts are the host names, besides IP addresses and localhost,
	// that clients reach the server by (server.public_hosts): requests for
	// any other Host are refused (guard.go).
	PublicHosts []string
	// HistoryLen is how many past turns /chat/chat recalls when a request
	// says history_len -1; 0 means 10.
	HistoryLen int
	// MaxQueryChars bounds the question of every chat endpoint, in
	// characters; longer ones get 413. 0 means 32000.
	MaxQueryChars int
	// Conns are the connection timeouts and caps (conns.go); zero fields
	// take DefaultConnLimits'.
	Conns ConnLimits
	// StreamWriteTimeout bounds the write of each SSE event
	// (server.stream_write_timeout): a client that stops reading for
	// longer loses its stream, and its turn is cut and stored as
	// interrupted. 0 means DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
}

// Server serves the API. Create it with New; Handler returns the router.
type Server struct {
	opts    Options
	log     *slog.Logger
	store   memory.Store
	models  *llm.Registry
	chat    *chat.Answerer
	kb      *kb.Service
	search  *search.Service
	mixer   *mix.Mixer
	turns   *turn.Runner // runs every chat endpoint's turns
	obs     *obs.Observer
	handler http.Handler
	// proxies are Conns.TrustedProxies, parsed.
	proxies []*net.IPNet

	// streams tracks replies in flight so shutdown can wait for them.
	streams sync.WaitGroup
	// cut is closed by CutStreams: streaming handlers stop, store what was
	// sent as an interrupted reply and return.
	cut     chan struct{}
	cutOnce sync.Once
	// draining is set by Drain: /readyz answers 503 so load balancers stop
	// sending new requests while the process finishes the ones it has.
	draining atomic.Bool
	// modelPing caches /readyz's check of the default model.
	modelPing cachedPing
}

// New returns a server for opts.
func New(opts Options) *Server {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.HistoryLen <= 0 {
		opts.HistoryLen = 10
	}
	if opts.MaxQueryChars <= 0 {
		opts.MaxQueryChars = defaultMaxQueryChars
	}
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 8 << 20
	}
	if opts.Obs == nil {
		opts.Obs = obs.New(obs.Options{})
	}
	opts.Conns = opts.Conns.withDefaults()
	s := &Server{
		opts:   opts,
		log:    obs.Logger(opts.Log), // log lines carry the request id
		obs:    opts.Obs,
		store:  opts.Store,
		models: opts.Models,
		chat:   opts.Chat,
		kb:     opts.KB,
		search: opts.Search,
		mixer:  opts.Mixer,
		cut:    make(chan struct{}),
	}
	if p, err := parseProxies(opts.Conns.TrustedProxies); err != nil {
		s.log.Error("ignoring server.trusted_proxies", "err", err) // the configuration validates them first
	} else {
		s.proxies = p
	}
	// A nil Recaller converts to a nil turn.Memory: no memory.
	s.turns = turn.New(turn.Deps{Store: opts.Store, Memory: opts.Memory, HistoryLen: opts.HistoryLen, Mixer: opts.Mixer, Obs: opts.Obs, Log: s.log})
	s.handler = s.routes()
	return s
}

// Handler returns the HTTP handler serving the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// CutStreams tells replies still in flight to stop: each stores what it has
// sent as an interrupted reply and ends its response. Graceful shutdown first
// lets replies finish (http.Server.Shutdown) and cuts the rest when its
// grace period ends, then Waits.
func (s *Server) CutStreams() {
	s.cutOnce.Do(func() { close(s.cut) })
}

// replyContext returns the context a reply runs under: the request's,
// cancelled also by CutStreams. Call the returned function when the reply is
// done.
func (s *Server) replyContext(ctx context.Context) (context.Context, func()) {
	s.streams.Add(1)
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-s.cut:
			cancel(errShuttingDown)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil); s.streams.Done() }
}

var errShuttingDown = errUnavailable("server is shutting down")

// Wait blocks until every reply in flight has finished or ctx is done.
func (s *Server) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.streams.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) routes() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// The client's address is the connection's, unless it comes from a
	// trusted proxy (none by default), whose X-Forwarded-For names it.
	if err := r.SetTrustedProxies(s.opts.Conns.TrustedProxies); err != nil || len(s.proxies) == 0 {
		_ = r.SetTrustedProxies(nil)
	}
	// Order matters: the deadlines apply to everything written, the
	// request id and metrics see every request, CORS answers preflights
	// before authentication, rate limits apply to the authenticated key.
	r.Use(s.deadlines(), s.recoverer(), s.observe(), s.requestGuard(), s.cors(), s.authenticate(), s.rateLimit(), s.limitBody())
	r.HandleMethodNotAllowed = true
	r.NoRoute(func(c *gin.Context) {
		writeError(c, errNotFound("no route %s %s", c.Request.Method, c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		writeError(c, &Error{Status: http.StatusMethodNotAllowed, Msg: "method " + c.Request.Method + " not allowed on " + c.Request.URL.Path})
	})

	s.endpoints(r)
	return r
}

// healthReply is the body of GET /healthz (fields in the order clients
// have always seen them).
type healthReply struct {
	Status  string `json:"status"`
	Time    int64  `json:"time"`
	Version string `json:"version"`
}

func (s *Server) handleHealth(c *gin.Context) {
	c.JSON(http.StatusOK, healthReply{Status: "ok", Time: time.Now().UnixMilli(), Version: s.opts.Version})
}
