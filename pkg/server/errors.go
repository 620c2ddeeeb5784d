package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/search"
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

// errorStatus maps err to an HTTP status code. It is the one place where
// errors meet status codes.
func errorStatus(err error) int {
	var e *Error
	var se *llm.StatusError
	var um *llm.UnknownModelError
	var tooBig *http.MaxBytesError
	var unknownEngine *search.UnknownEngineError
	var unavailableEngine *search.UnavailableEngineError
	var provider *search.ProviderError
	switch {
	case errors.As(err, &e):
		return e.Status
	case errors.As(err, &unknownEngine), errors.As(err, &unavailableEngine):
		return http.StatusBadRequest
	case errors.As(err, &provider) && errors.Is(err, search.ErrTimeout):
		return http.StatusGatewayTimeout
	case errors.As(err, &provider):
		return http.StatusBadGateway
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &um):
		return http.StatusBadRequest
	case errors.Is(err, memory.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, memory.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, context.Canceled):
		return statusClientClosed
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.As(err, &se):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// errorBody is the JSON body of every error reply.
type errorBody struct {
	Code   int    `json:"code"`
	Msg    string `json:"msg"`
	Error  string `json:"error"`
	Status int    `json:"upstream_status,omitempty"` // the upstream's status for upstream failures
}

// writeError writes err as a JSON error reply with the status errorStatus
// gives. Server faults are logged (upstream failures as warnings); client
// mistakes are not.
func writeError(c *gin.Context, err error) {
	status := errorStatus(err)
	msg := obs.PublicMessage(err) // no data paths or resolver addresses; the log has them
	body := errorBody{Code: status, Msg: msg, Error: msg}
	var se *llm.StatusError
	if errors.As(err, &se) {
		body.Status = se.StatusCode
	}
	if v, ok := c.Get(serverKey); ok && status >= 500 {
		log := v.(*Server).log
		args := []any{"method", c.Request.Method, "path", c.Request.URL.Path, "status", status, "err", err}
		switch status {
		case http.StatusInternalServerError:
			log.ErrorContext(c.Request.Context(), "request failed", args...)
		case http.StatusServiceUnavailable:
			log.DebugContext(c.Request.Context(), "request refused", args...)
		default:
			log.WarnContext(c.Request.Context(), "upstream failed", args...)
		}
	}
	c.AbortWithStatusJSON(status, body)
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
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return errBadRequest("field %q must be %s, got %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	return errBadRequest("malformed JSON: %v", err)
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
