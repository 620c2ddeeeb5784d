package obs

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// LogHandler is a slog.Handler that adds to every record logged with a
// context (log.InfoContext(ctx, ...)) the request id ("request_id") and,
// when the context carries a sampled span, its trace and span ids
// ("trace_id", "span_id"), so a log line can be found from a reply's
// X-Request-ID header or from a trace.
type LogHandler struct {
	h slog.Handler
}

// NewLogHandler wraps h. Wrapping a *LogHandler returns it unchanged.
func NewLogHandler(h slog.Handler) slog.Handler {
	if lh, ok := h.(*LogHandler); ok {
		return lh
	}
	return &LogHandler{h: h}
}

// Logger returns a logger whose handler is l's wrapped by NewLogHandler; nil
// gives a logger that discards everything.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	if _, ok := l.Handler().(*LogHandler); ok {
		return l
	}
	return slog.New(NewLogHandler(l.Handler()))
}

// Enabled reports whether the wrapped handler handles level.
func (h *LogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.h.Enabled(ctx, level)
}

// Handle adds the context's ids to r and passes it on.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := RequestID(ctx); id != "" {
			r.AddAttrs(slog.String("request_id", id))
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && sc.IsSampled() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return h.h.Handle(ctx, r)
}

// WithAttrs returns a LogHandler over h's handler with attrs.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{h: h.h.WithAttrs(attrs)}
}

// WithGroup returns a LogHandler over h's handler with the group.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{h: h.h.WithGroup(name)}
}
