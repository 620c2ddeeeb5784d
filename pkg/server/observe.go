package server

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mixchat/mixchat/pkg/obs"
)

// quietRoutes are probed often; their access lines are logged at debug
// level.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// observe gives each request an id (the client's X-Request-ID when it is
// sane, else a fresh one), returns it in the X-Request-ID header and puts
// it in the request's context, where log lines (log.InfoContext) and the
// usage record find it; runs the request in a server span (continuing a
// W3C traceparent the client sent); and, when the request ends, records
// its latency by route template, method and status, and logs one access
// line. SSE replies count in the active streams gauge while they stream.
func (s *Server) observe() gin.HandlerFunc {
	met := s.obs.Metrics()
	tracer := s.obs.Tracer()
	prop := propagation.TraceContext{}
	return func(c *gin.Context) {
		start := time.Now()
		id := c.GetHeader(obs.HeaderRequestID)
		if !obs.SaneRequestID(id) {
			id = obs.NewRequestID()
		}
		c.Header(obs.HeaderRequestID, id)
		route, method := c.FullPath(), c.Request.Method
		name := method + " " + route
		if route == "" {
			name = method + " unmatched"
		}
		ctx := prop.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
		ctx = obs.WithRequest(ctx, id, start)
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("http.request.method", method),
			attribute.String("http.route", route),
			attribute.String("url.path", c.Request.URL.Path),
			attribute.String("mixchat.request_id", id),
		))
		c.Request = c.Request.WithContext(ctx)
		w := &observedWriter{ResponseWriter: c.Writer, met: met}
		c.Writer = w
		inFlight := met.RequestStarted()

		panicked := true
		defer func() {
			w.end()
			inFlight()
			status := w.Status()
			if panicked {
				// The recoverer, outside this middleware, answers 500.
				status = http.StatusInternalServerError
			}
			d := time.Since(start)
			met.ObserveRequest(route, method, status, d)
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
			level := slog.LevelInfo
			if quietRoutes[route] {
				level = slog.LevelDebug
			}
			s.log.LogAttrs(ctx, level, "request",
				slog.String("method", method), slog.String("route", route), slog.String("path", c.Request.URL.Path),
				slog.Int("status", status), slog.Float64("duration_ms", float64(d.Microseconds())/1000),
				slog.Int("bytes", max(w.Size(), 0)), slog.String("client", c.ClientIP()))
		}()
		c.Next()
		panicked = false
	}
}

// observedWriter notices when a reply turns out to be an SSE stream, to
// count it among the active streams until the request ends. It looks when
// the headers go out (gin's WriteHeader only records the status, before
// renderers set the content type).
type observedWriter struct {
	gin.ResponseWriter
	met       *obs.Metrics
	checked   bool
	endStream func()
}

func (w *observedWriter) check() {
	if w.checked {
		return
	}
	w.checked = true
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.endStream = w.met.StreamStarted()
	}
}

func (w *observedWriter) end() {
	if w.endStream != nil {
		w.endStream()
		w.endStream = nil
	}
}

func (w *observedWriter) WriteHeaderNow() {
	w.check()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *observedWriter) Write(b []byte) (int, error) {
	w.check()
	return w.ResponseWriter.Write(b)
}

func (w *observedWriter) WriteString(s string) (int, error) {
	w.check()
	return w.ResponseWriter.WriteString(s)
}

// Unwrap returns the writer observed (http.ResponseController reaches the
// connection through it).
func (w *observedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *observedWriter) Flush() {
	w.check()
	w.ResponseWriter.Flush()
}
