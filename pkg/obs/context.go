package obs

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// HeaderRequestID is the header a request id travels in, both ways.
const HeaderRequestID = "X-Request-ID"

type requestKey struct{}

// request is what the context carries about the HTTP request it serves.
type request struct {
	id    string
	start time.Time
}

// WithRequest returns ctx carrying the request id and the time the request
// started (for the reply's latency).
func WithRequest(ctx context.Context, id string, start time.Time) context.Context {
	return context.WithValue(ctx, requestKey{}, request{id: id, start: start})
}

// RequestID returns the request id ctx carries, "" when none.
func RequestID(ctx context.Context) string {
	r, _ := ctx.Value(requestKey{}).(request)
	return r.id
}

// RequestStart returns when the request ctx serves started.
func RequestStart(ctx context.Context) (time.Time, bool) {
	r, ok := ctx.Value(requestKey{}).(request)
	return r.start, ok && !r.start.IsZero()
}

// NewRequestID returns a fresh request id (a random UUID).
func NewRequestID() string { return uuid.NewString() }

// SaneRequestID reports whether a client-sent request id may be used as is:
// 1 to 128 characters of letters, digits and "-_.:/+=@". Anything else
// (spaces, control characters that could forge log lines, very long values)
// is replaced by a fresh id.
func SaneRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '/', c == '+', c == '=', c == '@':
		default:
			return false
		}
	}
	return true
}
