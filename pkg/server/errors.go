package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/redact"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/store"
)

// Error is an error with the HTTP status it should be reported with. Handlers
// return it for client mistakes; writeError maps every other error.
type Error struct {
	Status int
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Msg == "" {
		return e.Err.Error()
	}
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

func errBadRequest(format string, a ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, a...)}
}

func errNotFound(format string, a ...any) *Error {
	return &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf(format, a...)}
}

func errUnavailable(format string, a ...any) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Msg: fmt.Sprintf(format, a...)}
}

// statusClientClosed is nginx's 499: the client went away before the reply.
const statusClientClosed = 499

// errKind is what went wrong, in the terms every endpoint family renders:
// native JSON errors, Chatchat's {code, msg} bodies, mix_chat's error
// events and OpenAI's error objects.
type errKind int

const (
	kindInternal errKind = iota
	kindBadRequest
	kindUnauthorized
	kindForbidden
	kindNotFound
	kindConflict
	kindTooLarge
	kindRateLimited
	kindUpstream
	kindTimeout
	kindCancelled
	kindUnavailable
	kindOther // an *Error with a status of its own (405, 415...)
)

// errClass is an error's classification.
type errClass struct {
	kind   errKind
	status int // the HTTP status it is reported with
	// upstream is the upstream's status for an upstream failure that
	// reported one.
	upstream int
	// public, when set, is all a client is told: the error's own text is
	// for the log (a database's address and user, say).
	public string
	// retryAfter, when set, is sent as Retry-After: the same request
	// should succeed by then.
	retryAfter time.Duration
}

// storeRetryAfter is the Retry-After of a reply refused because a store's
// database cannot be reached: requests succeed again within a fraction of
// a second of its return, and a restart or failover takes seconds.
const storeRetryAfter = 5 * time.Second

// storeUnavailableMsg is what a client is told when a store's database
// cannot be reached; the log has which database and why.
const storeUnavailableMsg = "the database is unavailable: retry later"

// classify is the one place where errors meet status codes: handlers
// return *Error for client mistakes, the packages below return their own
// sentinels and error types, and every endpoint family renders the
// classification in its own shape.
func classify(err error) errClass {
	var e *Error
	var se *llm.StatusError
	var um *llm.UnknownModelError
	var limit *kb.LimitError
	var tooBig *http.MaxBytesError
	var unknownEngine *search.UnknownEngineError
	var unavailableEngine *search.UnavailableEngineError
	var provider *search.ProviderError
	var re *mix.RequestError
	var fe *mix.FailedError
	switch {
	case err == nil:
		return errClass{kind: kindInternal, status: http.StatusInternalServerError}
	case errors.As(err, &fe):
		return failedClass(fe)
	case errors.Is(err, store.ErrUnavailable):
		c := ofStatus(http.StatusServiceUnavailable)
		c.public, c.retryAfter = storeUnavailableMsg, storeRetryAfter
		return c
	case errors.As(err, &e):
		return ofStatus(e.Status)
	case errors.As(err, &re), errors.As(err, &unknownEngine), errors.As(err, &unavailableEngine), errors.As(err, &um):
		return ofStatus(http.StatusBadRequest)
	case errors.As(err, &provider) && errors.Is(err, search.ErrTimeout):
		return ofStatus(http.StatusGatewayTimeout)
	case errors.As(err, &provider):
		return ofStatus(http.StatusBadGateway)
	case errors.As(err, &tooBig), errors.As(err, &limit):
		return ofStatus(http.StatusRequestEntityTooLarge)
	case errors.Is(err, memory.ErrNotFound), errors.Is(err, kb.ErrNotFound):
		return ofStatus(http.StatusNotFound)
	case errors.Is(err, memory.ErrConflict), errors.Is(err, kb.ErrExists):
		return ofStatus(http.StatusConflict)
	case errors.Is(err, kb.ErrInvalidName) && !errors.Is(err, kb.ErrBadRequest):
		return ofStatus(http.StatusForbidden) // a name that could leave the KB folder
	case errors.Is(err, kb.ErrEmptyName), errors.Is(err, kb.ErrBadRequest), errors.Is(err, kb.ErrEmbedModel),
		errors.Is(err, kb.ErrUnsupported), errors.Is(err, kb.ErrCorrupt), errors.Is(err, kb.ErrNoText),
		errors.Is(err, kb.ErrTooLarge):
		return ofStatus(http.StatusBadRequest)
	case errors.Is(err, context.Canceled):
		return ofStatus(statusClientClosed)
	case errors.Is(err, context.DeadlineExceeded):
		return ofStatus(http.StatusGatewayTimeout)
	case errors.As(err, &se):
		c := ofStatus(http.StatusBadGateway)
		c.upstream = se.StatusCode
		return c
	}
	return ofStatus(http.StatusInternalServerError)
}

// statusKinds are the kinds of the statuses that have one.
var statusKinds = map[int]errKind{
	http.StatusBadRequest:            kindBadRequest,
	http.StatusUnauthorized:          kindUnauthorized,
	http.StatusForbidden:             kindForbidden,
	http.StatusNotFound:              kindNotFound,
	http.StatusConflict:              kindConflict,
	http.StatusRequestEntityTooLarge: kindTooLarge,
	http.StatusTooManyRequests:       kindRateLimited,
	http.StatusBadGateway:            kindUpstream,
	http.StatusGatewayTimeout:        kindTimeout,
	statusClientClosed:               kindCancelled,
	http.StatusServiceUnavailable:    kindUnavailable,
	http.StatusInternalServerError:   kindInternal,
}

// ofStatus classifies an HTTP status.
func ofStatus(status int) errClass {
	k, ok := statusKinds[status]
	if !ok {
		k = kindOther
	}
	return errClass{kind: k, status: status}
}

// failedClass classifies a mix request whose every answerer failed: their
// class when they agree (all timed out: 504; all refused the request:
// 400), 502 otherwise.
func failedClass(fe *mix.FailedError) errClass {
	var c errClass
	for i, o := range fe.Outcomes {
		oc := classify(o.Err)
		if i > 0 && oc.status != c.status {
			return ofStatus(http.StatusBadGateway)
		}
		c = oc
	}
	if c.status == 0 || c.kind == kindInternal {
		return ofStatus(http.StatusBadGateway)
	}
	return c
}

// errorStatus is the HTTP status err is reported with.
func errorStatus(err error) int { return classify(err).status }

// publicMessage is err's message as a client may read it: the
// classification's own words when it has them, else err's text without
// data paths or resolver addresses (redact.Message). The log has err.
func publicMessage(err error) string {
	if cl := classify(err); cl.public != "" {
		return cl.public
	}
	return redact.Message(err)
}

// setRetryAfter sends Retry-After when cl says when to retry.
func setRetryAfter(c *gin.Context, cl errClass) {
	if cl.retryAfter > 0 && !c.Writer.Written() {
		c.Header("Retry-After", strconv.Itoa(int(math.Ceil(cl.retryAfter.Seconds()))))
	}
}

// logError logs a server fault of a request: failures of the server as
// errors, a store out of reach and upstream failures as warnings, other
// refusals (503 while draining) at debug level. Client mistakes are not
// logged.
func logError(c *gin.Context, err error, cl errClass) {
	v, ok := c.Get(serverKey)
	if !ok || cl.status < 500 {
		return
	}
	log := v.(*Server).log
	ctx := c.Request.Context()
	args := []any{"method", c.Request.Method, "path", c.Request.URL.Path, "status", cl.status, "err", err}
	switch {
	case cl.status == http.StatusInternalServerError:
		log.ErrorContext(ctx, "request failed", args...)
	case errors.Is(err, store.ErrUnavailable):
		log.WarnContext(ctx, "store unavailable", args...)
	case cl.status == http.StatusServiceUnavailable:
		log.DebugContext(ctx, "request refused", args...)
	default:
		log.WarnContext(ctx, "upstream failed", args...)
	}
}

// errorBody is the JSON body of every error reply.
type errorBody struct {
	Code   int    `json:"code"`
	Msg    string `json:"msg"`
	Error  string `json:"error"`
	Status int    `json:"upstream_status,omitempty"` // the upstream's status for upstream failures
}

// writeError writes err as a native JSON error reply with the status
// classify gives. Server faults are logged (upstream failures as warnings); client
// mistakes are not.
func writeError(c *gin.Context, err error) {
	cl := classify(err)
	msg := publicMessage(err) // no addresses, data paths or credentials; the log has them
	msg = withUnknownField(c, cl.status, msg)
	body := errorBody{Code: cl.status, Msg: msg, Error: msg, Status: cl.upstream}
	logError(c, err, cl)
	setRetryAfter(c, cl)
	c.AbortWithStatusJSON(cl.status, body)
}

// writeResult writes v as the 200 reply, or err when it is not nil.
func writeResult(c *gin.Context, v any, err error) {
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// validator is a request body that checks its own fields once decoded:
// required fields, ranges, defaults. Checks that need the server (models,
// knowledge bases, limits from the configuration) stay in the handlers.
type validator interface {
	validate() error
}

// withBody serves h with the request body decoded (decodeJSON) and, when
// *T is a validator, validated; when either fails, it writes the error and
// h does not run. Every native and Chatchat endpoint with a JSON body
// takes it this way (withTurn for a chat turn), declared in the route
// table; the OpenAI endpoint renders its errors in its own shape.
func withBody[T any](h func(c *gin.Context, req *T)) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req T
		var raw bytes.Buffer
		captureBody(c, &raw)
		err := decodeJSON(c, &req)
		if err == nil {
			noteUnknownField[T](c, raw.Bytes())
		}
		if v, ok := any(&req).(validator); ok && err == nil {
			err = v.validate()
		}
		if err != nil {
			writeError(c, err)
			return
		}
		h(c, &req)
	}
}

// decodeJSON decodes the request body into v, rejecting unknown content,
// trailing data and wrong types with a message naming the field.
func decodeJSON(c *gin.Context, v any) error {
	if c.Request.Body == nil {
		return errBadRequest("request body is empty: send a JSON object")
	}
	// The request guard (guard.go) lets only JSON bodies through; multipart
	// forms are refused here too for handlers served without it.
	if ct := c.ContentType(); ct == "multipart/form-data" {
		return &Error{Status: http.StatusUnsupportedMediaType, Msg: "content type " + ct + " not supported here: send application/json"}
	}
	dec := json.NewDecoder(c.Request.Body)
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return errBadRequest("request body has data after the JSON object")
	}
	return nil
}

// jsonError turns a decoding error into a client error that says what is
// wrong and where.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("request body larger than %d bytes", tooBig.Limit)}
	case errors.Is(err, io.EOF):
		return errBadRequest("request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errBadRequest("malformed JSON: unexpected end of input")
	case errors.As(err, &syn):
		return errBadRequest("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		field := jsonPath(typ.Field)
		if field == "" {
			field = "body"
		}
		return errBadRequest("field %q must be %s, got %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	return errBadRequest("malformed JSON: %v", err)
}

// jsonPath is a decoding error's field path as the client wrote it:
// without the Go names of embedded structs (chatchatFields, mixOptions),
// which are camel case where JSON names here are snake case.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != strings.ToLower(p) {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, ".")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return k
}
