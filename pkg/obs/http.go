package obs

import (
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// HTTPDoer sends HTTP requests; *http.Client and search.HTTPDoer have this
// shape.
type HTTPDoer interface {
	Do(req *http.Request) (*http.Response, error)
}

// SearchClient wraps c, the client the search engines' API requests go
// through (search.Options.Client), so each request is measured
// (mixchat_search_request_duration_seconds by host) and traced. A nil c
// means a client with the default transport (which honours the HTTP(S)_PROXY
// variables) and a 30 s limit on waiting for response headers.
func (o *Observer) SearchClient(c HTTPDoer) HTTPDoer {
	if c == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 30 * time.Second
		c = &http.Client{Transport: tr}
	}
	return &searchClient{o: o, c: c}
}

type searchClient struct {
	o *Observer
	c HTTPDoer
}

func (s *searchClient) Do(req *http.Request) (*http.Response, error) {
	ctx, span := s.o.tracer.Start(req.Context(), "search "+req.URL.Host, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", req.Method), attribute.String("server.address", req.URL.Host)))
	defer span.End()
	start := time.Now()
	resp, err := s.c.Do(req.WithContext(ctx))
	out := ""
	if err != nil {
		out = outcome(req.Context(), err)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		out = strconv.Itoa(resp.StatusCode/100) + "xx"
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode >= 400 {
			span.SetStatus(codes.Error, resp.Status)
		}
	}
	s.o.metrics.searchRequests.WithLabelValues(req.URL.Host, out).Observe(time.Since(start).Seconds())
	return resp, err
}
