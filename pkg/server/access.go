package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/memory"
)

// Access control: authenticate resolves the bearer key to a user and puts
// the auth.Principal in the request's context; guard then applies what can
// be decided from the route alone (admin-only routes, /conversations/:id
// and /users/:id owned by someone else answer 404), and the handlers check
// what is named in bodies (conversation_id, message_id, knowledge bases)
// with checkConversation, claimConversation and readableKBs. Without a
// KeyStore authentication is off: there is no principal and every check
// passes, the single local user may do everything.

// KeyStore is what the server needs of the API key store (auth.Store).
//
// Why six methods: they are the key and knowledge-base access endpoints'
// operations, one each (authenticate, create, list, revoke, read and set
// access), served by one store; a fake implements them in a few lines.
type KeyStore interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
	CreateKey(ctx context.Context, spec auth.KeySpec) (string, auth.Key, error)
	Keys(ctx context.Context, userID string) ([]auth.Key, error)
	RevokeKey(ctx context.Context, idOrPrefix string) (auth.Key, error)
	KBAccess(ctx context.Context, kb string) (auth.KBAccess, error)
	SetKBAccess(ctx context.Context, a auth.KBAccess) error
}

// Access configures authentication, tenancy, rate limits and CORS. The zero
// value is authentication off, no limits and no CORS headers.
type Access struct {
	Keys KeyStore // nil: authentication off
	// RequestsPerMinute and TokensPerMinute are each key's limits unless
	// the key has its own; 0: unlimited.
	RequestsPerMinute int
	TokensPerMinute   int
	CORS              auth.CORSConfig
}

// publicRoutes answer without a key: liveness, readiness, metrics (protect
// them at the network level) and the web app's static files.
var publicRoutes = map[string]bool{
	"/healthz": true, "/readyz": true, "/metrics": true,
	"/": true, "/index.html": true, "/assets/*path": true,
}

// adminRoutes are the routes only admins may call: knowledge-base
// management and key administration. Routes under /admin/ are admin-only
// too.
var adminRoutes = map[string]bool{
	"/knowledge_base/create_knowledge_base": true,
	"/knowledge_base/delete_knowledge_base": true,
	"/knowledge_base/update_info":           true,
	"/knowledge_base/upload_docs":           true,
	"/knowledge_base/delete_docs":           true,
	"/knowledge_base/update_docs":           true,
	"/knowledge_base/recreate_vector_store": true,
	"/access/keys":                          true,
	"/access/keys/:id":                      true,
	"/access/kbs/:name":                     true,
}

func errUnauthorized(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Msg: msg}
}

func errForbidden(format string, a ...any) *Error {
	return &Error{Status: http.StatusForbidden, Msg: fmt.Sprintf(format, a...)}
}

// cors answers cross-origin requests from the configured origins: CORS
// headers on their requests, 204 to their preflights (before
// authentication: browsers send preflights without credentials).
// Preflights from other origins get 403; their other requests go on
// without CORS headers, so browsers keep the reply from the page.
func (s *Server) cors() gin.HandlerFunc {
	cfg := s.opts.Access.CORS
	if len(cfg.AllowedOrigins) == 0 {
		return func(c *gin.Context) { c.Next() }
	}
	anyOrigin := false
	allowed := map[string]bool{}
	for _, o := range cfg.AllowedOrigins {
		if o == "*" {
			anyOrigin = true
		}
		allowed[strings.TrimSuffix(o, "/")] = true
	}
	maxAge := strconv.Itoa(int(cfg.MaxAge.Seconds()))
	return func(c *gin.Context) {
		origin := c.GetHeader("Origin")
		if origin == "" {
			c.Next()
			return
		}
		h := c.Writer.Header()
		h.Add("Vary", "Origin")
		preflight := c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != ""
		if !anyOrigin && !allowed[origin] {
			if preflight {
				writeError(c, errForbidden("origin %s is not allowed (auth.cors.allowed_origins)", origin))
				return
			}
			c.Next()
			return
		}
		if anyOrigin {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		if preflight {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, X-Request-Id")
			h.Set("Access-Control-Max-Age", maxAge)
			c.AbortWithStatus(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "Retry-After, X-Request-Id")
		c.Next()
	}
}

// authenticate resolves the request's API key (Authorization: Bearer
// mx-...) to a user, puts it in the request's context and applies guard.
// Without a KeyStore it lets every request through unauthenticated.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		keys := s.opts.Access.Keys
		if keys == nil || publicRoutes[c.FullPath()] {
			c.Next()
			return
		}
		tok := auth.BearerToken(c.GetHeader("Authorization"))
		if tok == "" {
			c.Header("WWW-Authenticate", `Bearer realm="mixchat"`)
			writeError(c, errUnauthorized("missing API key: send Authorization: Bearer mx-..."))
			return
		}
		ctx := c.Request.Context()
		p, err := keys.Authenticate(ctx, tok)
		if errors.Is(err, auth.ErrUnauthorized) {
			c.Header("WWW-Authenticate", `Bearer realm="mixchat", error="invalid_token"`)
			writeError(c, errUnauthorized("invalid or revoked API key"))
			return
		}
		if err != nil {
			writeError(c, err)
			return
		}
		c.Request = c.Request.WithContext(auth.NewContext(ctx, p))
		if err := s.guard(c, p); err != nil {
			writeError(c, err)
			return
		}
		if !c.IsAborted() {
			c.Next()
		}
	}
}

// guard applies the checks the route alone decides: admin-only routes,
// conversations and users of someone else (404, as if they did not exist),
// and knowledge bases named in the query string (answered, and the request
// aborted, in Chatchat's envelope as for a missing knowledge base).
func (s *Server) guard(c *gin.Context, p auth.Principal) error {
	route := c.FullPath()
	if (adminRoutes[route] || strings.HasPrefix(route, "/admin/")) && !p.Admin() {
		return errForbidden("%s needs an admin key", route)
	}
	switch {
	case strings.HasPrefix(route, "/conversations/:id"):
		return s.checkConversation(c.Request.Context(), c.Param("id"))
	case strings.HasPrefix(route, "/users/:id"):
		if c.Param("id") != p.UserID {
			return errNotFound("user %s: not found", c.Param("id"))
		}
	case route == "/knowledge_base/list_files", route == "/knowledge_base/download_doc":
		if err := s.readableKBs(c.Request.Context(), c.Query("knowledge_base_name")); err != nil {
			var data any // as the handlers answer for a missing knowledge base
			if route == "/knowledge_base/list_files" {
				data = []string{}
			}
			kbFail(c, c.Query("knowledge_base_name"), err, data)
			c.Abort()
			return nil
		}
	}
	return nil
}

// rateLimit applies the key's request and token limits, answering 429 with
// Retry-After when the key is over one. Tokens are counted on an auth.Meter:
// by the metered models (auth.Spend, from the wrapper internal/app puts on
// every model) as calls start and end, and by turn.Runner when a reply is
// stored.
func (s *Server) rateLimit() gin.HandlerFunc {
	lim := auth.NewLimiter()
	return func(c *gin.Context) {
		p, ok := auth.FromContext(c.Request.Context())
		if !ok {
			c.Next()
			return
		}
		rpm, tpm := s.opts.Access.RequestsPerMinute, s.opts.Access.TokensPerMinute
		if p.RequestsPerMinute > 0 {
			rpm = p.RequestsPerMinute
		}
		if p.TokensPerMinute > 0 {
			tpm = p.TokensPerMinute
		}
		if rpm <= 0 && tpm <= 0 {
			c.Next()
			return
		}
		if allowed, wait := lim.Allow(p.KeyID, rpm, tpm); !allowed {
			secs := int(math.Ceil(wait.Seconds()))
			c.Header("Retry-After", strconv.Itoa(max(secs, 1)))
			writeError(c, &Error{Status: http.StatusTooManyRequests,
				Msg: fmt.Sprintf("rate limit exceeded for key %s (%d requests and %d tokens per minute; 0 is unlimited): retry in %d s", p.KeyID, rpm, tpm, max(secs, 1))})
			return
		}
		// Model calls charge their prompt as they start and what they
		// produced as they end (auth.Spend); the rest, replies
		// reported only by the handlers, when the request ends.
		ctx, m := auth.WithChargingMeter(c.Request.Context(), func(n int64) { lim.Charge(p.KeyID, rpm, tpm, n) })
		c.Request = c.Request.WithContext(ctx)
		c.Next()
		lim.Charge(p.KeyID, rpm, tpm, m.Settle())
	}
}

// Conversation ids are 1 to 128 bytes of ASCII letters, digits and
// "-_.:@" (UUIDs, Chatchat's hex ids, "user-42:draft"); conversation names
// (titles) at most 512 bytes of UTF-8 without control characters (NUL,
// tab, newline) or invisible format characters (zero-width, bidirectional
// controls such as U+202E). Anything else is a 400.
const (
	maxConversationID   = 128
	maxConversationName = 512
)

// validConversationID checks a conversation id ("" means none and passes).
func validConversationID(id string) error {
	if len(id) > maxConversationID {
		return errBadRequest("conversation id is %d bytes: at most %d of A-Z a-z 0-9 - _ . : @", len(id), maxConversationID)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:@", c) >= 0) {
			return errBadRequest("conversation id %s has a character out of A-Z a-z 0-9 - _ . : @ at byte %d", quoteHost(id), i)
		}
	}
	return nil
}

// validConversationName checks a conversation's name.
func validConversationName(name string) error {
	if len(name) > maxConversationName {
		return errBadRequest("name is %d bytes: at most %d", len(name), maxConversationName)
	}
	if !utf8.ValidString(name) {
		return errBadRequest("name is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return errBadRequest("name must not contain control or invisible format characters (%U)", r)
		}
	}
	return nil
}

// conversationNotFound is the error for a conversation the caller may not
// see: the same as for one that does not exist.
func conversationNotFound(id string) error {
	return fmt.Errorf("conversation %s: %w", id, memory.ErrNotFound)
}

// checkConversation fails with a not-found error when conversation id
// exists and belongs to another user. A conversation that does not exist
// passes (the handler decides what that means).
func (s *Server) checkConversation(ctx context.Context, id string) error {
	if err := validConversationID(id); err != nil {
		return err
	}
	p, ok := auth.FromContext(ctx)
	if !ok || id == "" {
		return nil
	}
	conv, err := s.store.Conversation(ctx, id)
	if errors.Is(err, memory.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if conv.UserID != p.UserID {
		return conversationNotFound(id)
	}
	return nil
}

// claimConversation makes sure the caller may write to conversation id:
// it is theirs, or it does not exist yet and is created now as theirs (so
// that the turn stored later cannot land in someone else's conversation).
func (s *Server) claimConversation(ctx context.Context, id, chatType string) error {
	if err := validConversationID(id); err != nil {
		return err
	}
	p, ok := auth.FromContext(ctx)
	if !ok || id == "" {
		return nil
	}
	for range 2 {
		conv, err := s.store.Conversation(ctx, id)
		if err == nil {
			if conv.UserID != p.UserID {
				return conversationNotFound(id)
			}
			return nil
		}
		if !errors.Is(err, memory.ErrNotFound) {
			return err
		}
		_, err = s.store.CreateConversation(ctx, memory.Conversation{ID: id, ChatType: chatType, UserID: p.UserID})
		if err == nil {
			return nil
		}
		if !errors.Is(err, memory.ErrConflict) {
			return err
		}
		// Created meanwhile by another request: look again.
	}
	return conversationNotFound(id)
}

// checkMessage fails with a not-found error when message id belongs to a
// conversation of another user.
func (s *Server) checkMessage(ctx context.Context, id string) error {
	if _, ok := auth.FromContext(ctx); !ok {
		return nil
	}
	m, err := s.store.Message(ctx, id)
	if err != nil {
		return err
	}
	if err := s.checkConversation(ctx, m.ConversationID); err != nil {
		return fmt.Errorf("message %s: %w", id, memory.ErrNotFound)
	}
	return nil
}

// errKBNotReadable is what a knowledge base the caller may not read looks
// like: one that does not exist.
var errKBNotReadable = fmt.Errorf("knowledge base: %w", kb.ErrNotFound)

// readableKBs fails with an error wrapping kb.ErrNotFound when the caller
// may not read one of the named knowledge bases.
func (s *Server) readableKBs(ctx context.Context, names ...string) error {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		a, err := s.opts.Access.Keys.KBAccess(ctx, n)
		if err != nil {
			return err
		}
		if !a.CanRead(p) {
			return fmt.Errorf("%s: %w", n, errKBNotReadable)
		}
	}
	return nil
}

// namedKBs fails with an error wrapping errKBNotReadable when one of names
// does not exist or the caller may not read it: the same error for both,
// so that the answer does not tell them apart.
func (s *Server) namedKBs(ctx context.Context, names ...string) error {
	if err := s.readableKBs(ctx, names...); err != nil {
		return err
	}
	if s.kb == nil {
		return nil
	}
	for _, n := range names {
		ok, err := s.kb.Exists(ctx, n)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s: %w", n, errKBNotReadable)
		}
	}
	return nil
}

// kbReadable answers as for a missing knowledge base, in Chatchat's
// envelope, and returns false when the caller may not read one of names.
func (s *Server) kbReadable(c *gin.Context, names []string) bool {
	for _, n := range names {
		if err := s.readableKBs(c.Request.Context(), n); err != nil {
			kbFail(c, n, err, nil)
			return false
		}
	}
	return true
}

// visibleKBs keeps the names the caller may read.
func (s *Server) visibleKBs(ctx context.Context, names []string) ([]string, error) {
	if _, ok := auth.FromContext(ctx); !ok {
		return names, nil
	}
	kept := make([]string, 0, len(names))
	for _, n := range names {
		switch err := s.readableKBs(ctx, n); {
		case err == nil:
			kept = append(kept, n)
		case !errors.Is(err, errKBNotReadable):
			return nil, err
		}
	}
	return kept, nil
}

// callerUserID is the user id conversations are listed and created under:
// the authenticated user's, or requested when authentication is off.
func callerUserID(ctx context.Context, requested string) (string, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return requested, nil
	}
	if requested != "" && requested != p.UserID {
		return "", errForbidden("user_id %s is not yours", requested)
	}
	return p.UserID, nil
}

type whoAmI struct {
	Auth   bool      `json:"auth"` // false: authentication is off, the caller may do everything
	UserID string    `json:"user_id"`
	Role   auth.Role `json:"role"`
	KeyID  string    `json:"key_id,omitempty"`
}

func (s *Server) handleWhoAmI(c *gin.Context) {
	p, ok := auth.FromContext(c.Request.Context())
	if !ok {
		c.JSON(http.StatusOK, whoAmI{Role: auth.RoleAdmin})
		return
	}
	c.JSON(http.StatusOK, whoAmI{Auth: true, UserID: p.UserID, Role: p.Role, KeyID: p.KeyID})
}

func (s *Server) handleListKeys(c *gin.Context) {
	keys, err := s.opts.Access.Keys.Keys(c.Request.Context(), c.Query("user_id"))
	if err != nil {
		writeError(c, err)
		return
	}
	if keys == nil {
		keys = []auth.Key{}
	}
	c.JSON(http.StatusOK, gin.H{"keys": keys})
}

type createKeyRequest struct {
	UserID            string `json:"user_id"`
	Role              string `json:"role"`
	Name              string `json:"name"`
	RequestsPerMinute int    `json:"requests_per_minute"`
	TokensPerMinute   int    `json:"tokens_per_minute"`

	role auth.Role // Role parsed, RoleUser when none was given
}

// validate applies the default role, parses it into role and checks the
// user and the limits.
func (r *createKeyRequest) validate() error {
	if r.Role == "" {
		r.Role = string(auth.RoleUser)
	}
	role, err := auth.ParseRole(r.Role)
	if err != nil {
		return errBadRequest("%v", err)
	}
	if strings.TrimSpace(r.UserID) == "" || len(r.UserID) > 128 || r.RequestsPerMinute < 0 || r.TokensPerMinute < 0 {
		return errBadRequest("user_id must be 1 to 128 bytes and limits must not be negative")
	}
	r.role = role
	return nil
}

// handleCreateKey makes a key; the token is in this reply only.
func (s *Server) handleCreateKey(c *gin.Context, req *createKeyRequest) {
	tok, k, err := s.opts.Access.Keys.CreateKey(c.Request.Context(), auth.KeySpec{UserID: req.UserID, Role: req.role, Name: req.Name,
		RequestsPerMinute: req.RequestsPerMinute, TokensPerMinute: req.TokensPerMinute})
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"token": tok, "key": k})
}

func (s *Server) handleRevokeKey(c *gin.Context) {
	k, err := s.opts.Access.Keys.RevokeKey(c.Request.Context(), c.Param("id"))
	if errors.Is(err, auth.ErrNotFound) {
		writeError(c, errNotFound("key %s not found", c.Param("id")))
		return
	}
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"key": k})
}

func (s *Server) handleGetKBAccess(c *gin.Context) {
	a, err := s.opts.Access.Keys.KBAccess(c.Request.Context(), c.Param("name"))
	writeResult(c, a, err)
}

type kbAccessRequest struct {
	Owner   string   `json:"owner"`
	Private bool     `json:"private"`
	Grants  []string `json:"grants"`
}

// handleSetKBAccess replaces who may read a knowledge base.
func (s *Server) handleSetKBAccess(c *gin.Context, req *kbAccessRequest) {
	a := auth.KBAccess{KB: c.Param("name"), Owner: req.Owner, Private: req.Private, Grants: req.Grants}
	if a.Grants == nil {
		a.Grants = []string{}
	}
	if err := s.opts.Access.Keys.SetKBAccess(c.Request.Context(), a); err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, a)
}
