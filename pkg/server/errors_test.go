package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/store"
)

// errStoreDown is a store's error while its database is out of reach, with
// the detail a client must not see.
var errStoreDown = fmt.Errorf("authenticate: %w: %w", store.ErrUnavailable,
	errors.New("failed to connect to `user=mixchat database=prod`: 10.1.2.3:5432 (db): dial error: connection refused"))

func failed(errs ...error) error {
	fe := &mix.FailedError{}
	for i, err := range errs {
		fe.Outcomes = append(fe.Outcomes, mix.Outcome{From: fmt.Sprint(i), Err: err, Error: err.Error()})
	}
	return fe
}

func TestClassify(t *testing.T) {
	timeout := &mix.TimeoutError{Step: "kb", After: time.Second}
	for _, tc := range []struct {
		name     string
		err      error
		kind     errKind
		status   int
		upstream int
	}{
		{"client mistake", errBadRequest("query must not be empty"), kindBadRequest, 400, 0},
		{"rate limited", &Error{Status: http.StatusTooManyRequests, Msg: "slow down"}, kindRateLimited, 429, 0},
		{"method", &Error{Status: http.StatusMethodNotAllowed, Msg: "no"}, kindOther, 405, 0},
		{"kb not found", fmt.Errorf("kb chat: %w", kb.ErrNotFound), kindNotFound, 404, 0},
		{"kb exists", fmt.Errorf("create: %w", kb.ErrExists), kindConflict, 409, 0},
		{"kb name escaping its folder", fmt.Errorf("%w: ../x", kb.ErrInvalidName), kindForbidden, 403, 0},
		{"kb empty name", kb.ErrEmptyName, kindBadRequest, 400, 0},
		{"kb bad request", fmt.Errorf("%w: no knowledge base named", kb.ErrBadRequest), kindBadRequest, 400, 0},
		{"kb unsupported file", kb.ErrUnsupported, kindBadRequest, 400, 0},
		{"conversation not found", fmt.Errorf("c1: %w", memory.ErrNotFound), kindNotFound, 404, 0},
		{"conversation exists", memory.ErrConflict, kindConflict, 409, 0},
		{"mix request", &mix.RequestError{Field: "fusion", Msg: "unknown"}, kindBadRequest, 400, 0},
		{"unknown model", &llm.UnknownModelError{Name: "x"}, kindBadRequest, 400, 0},
		{"unknown engine", &search.UnknownEngineError{Name: "x"}, kindBadRequest, 400, 0},
		{"engine timeout", &search.ProviderError{Provider: "bing", Kind: search.ErrTimeout}, kindTimeout, 504, 0},
		{"engine down", &search.ProviderError{Provider: "bing", Kind: search.ErrUnreachable}, kindUpstream, 502, 0},
		{"upstream status", fmt.Errorf("chat: %w", &llm.StatusError{StatusCode: 500}), kindUpstream, 502, 500},
		{"body too large", &http.MaxBytesError{Limit: 10}, kindTooLarge, 413, 0},
		{"cancelled", fmt.Errorf("mix: %w", context.Canceled), kindCancelled, statusClientClosed, 0},
		{"deadline", context.DeadlineExceeded, kindTimeout, 504, 0},
		{"shutting down", errShuttingDown, kindUnavailable, 503, 0},
		{"store out of reach", errStoreDown, kindUnavailable, 503, 0},
		{"store out of reach under a handler's error", &Error{Status: 500, Msg: "list", Err: errStoreDown}, kindUnavailable, 503, 0},
		{"every answerer lost its store", failed(errStoreDown, errStoreDown), kindUnavailable, 503, 0},
		{"every answerer timed out", failed(timeout, timeout), kindTimeout, 504, 0},
		{"every answerer refused the request", failed(kb.ErrBadRequest), kindBadRequest, 400, 0},
		{"answerers disagree", failed(timeout, &llm.StatusError{StatusCode: 500}), kindUpstream, 502, 0},
		{"answerers failed internally", failed(errors.New("panic: boom")), kindUpstream, 502, 0},
		{"anything else", errors.New("disk full"), kindInternal, 500, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify(tc.err)
			if got.kind != tc.kind || got.status != tc.status || got.upstream != tc.upstream {
				t.Errorf("classify(%v) = %+v, want kind %d status %d upstream %d", tc.err, got, tc.kind, tc.status, tc.upstream)
			}
		})
	}
}

// Each endpoint family renders the one classification in its own shape.
func TestErrorShapes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{fmt.Errorf("%w: ../x", kb.ErrInvalidName), 403, "Don't attack me"},
		{kb.ErrNotFound, 404, "未找到知识库 notes"},
		{kb.ErrExists, 404, "已存在同名知识库 notes"},
		{fmt.Errorf("%w: top_k", kb.ErrBadRequest), 400, "bad request: top_k"},
		{&llm.StatusError{StatusCode: 503}, 502, ""},
		{errors.New("disk full"), 500, "disk full"},
		{errStoreDown, 503, storeUnavailableMsg},
	} {
		code, msg := kbErrorCode("notes", tc.err)
		if code != tc.code || (tc.msg != "" && msg != tc.msg) {
			t.Errorf("kbErrorCode(%v) = %d %q, want %d %q", tc.err, code, msg, tc.code, tc.msg)
		}
	}
	for _, tc := range []struct {
		status int
		typ    string
	}{{400, "invalid_request_error"}, {404, "invalid_request_error"}, {429, "rate_limit_exceeded"}, {502, "server_error"}, {503, "server_error"}} {
		if got := oaiErrorBody(errors.New("x"), tc.status, "", "").Error.Type; got != tc.typ {
			t.Errorf("OpenAI error type for %d = %q, want %q", tc.status, got, tc.typ)
		}
	}
	if got := oaiErrorBody(errStoreDown, 503, "", "").Error.Message; got != storeUnavailableMsg {
		t.Errorf("OpenAI error message of a store out of reach = %q, want %q", got, storeUnavailableMsg)
	}
	if got := publicMessage(errStoreDown); got != storeUnavailableMsg {
		t.Errorf("publicMessage of a store out of reach = %q, want %q", got, storeUnavailableMsg)
	}
}
