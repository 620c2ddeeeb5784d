package obs

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// latencyBuckets suit everything from a cached lookup to a long streamed
// reply (seconds).
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}

// Metrics are mixchat's Prometheus collectors. Every label takes values
// from a small fixed set (route templates, configured model and answerer
// names, status codes), never from request data.
type Metrics struct {
	// HTTP
	requests       *prometheus.HistogramVec // route, method, status
	inFlight       prometheus.Gauge
	activeStreams  prometheus.Gauge
	answerers      *prometheus.HistogramVec // answerer, outcome
	answerFailures *prometheus.CounterVec   // answerer, reason
	retrieval      *prometheus.HistogramVec // answerer, outcome
	llmCalls       *prometheus.HistogramVec // model, op, outcome
	llmFirstToken  *prometheus.HistogramVec // model
	tokens         *prometheus.CounterVec   // model, direction
	searchRequests *prometheus.HistogramVec // host, outcome
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: latency("mixchat_http_request_duration_seconds",
			"Time from a request's arrival to the end of its reply (the whole stream for SSE replies), by route template, method and status.",
			"route", "method", "status"),
		inFlight:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "mixchat_http_requests_in_flight", Help: "Requests being served."}),
		activeStreams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mixchat_active_streams", Help: "Server-Sent Events replies being streamed."}),
		answerers: latency("mixchat_answerer_duration_seconds",
			"Time an answerer (llm, kb, search) took for one question, by outcome (ok, error, timeout, canceled).",
			"answerer", "outcome"),
		answerFailures: counter("mixchat_answerer_failures_total",
			"Answerer calls that failed, by reason (error, timeout); a request cancelled by its client is not counted.",
			"answerer", "reason"),
		retrieval: latency("mixchat_retrieval_duration_seconds",
			"Time the kb and search answerers spent retrieving evidence before their model call (knowledge-base search, web search and page reading).",
			"answerer", "outcome"),
		llmCalls: latency("mixchat_llm_request_duration_seconds",
			"Time of one chat model call, by configured model name, op (complete, stream) and outcome.",
			"model", "op", "outcome"),
		llmFirstToken: latency("mixchat_llm_first_token_seconds",
			"Time from a streamed model call's start to its first piece of text.", "model"),
		tokens: counter("mixchat_llm_tokens_total",
			"Tokens sent to (direction=input) and produced by (direction=output) each model; estimated locally when the upstream reports none.",
			"model", "direction"),
		searchRequests: latency("mixchat_search_request_duration_seconds",
			"Time of one search engine API request (to the response headers), by host and outcome (HTTP status class or error).",
			"host", "outcome"),
	}
	reg.MustRegister(m.requests, m.inFlight, m.activeStreams, m.answerers, m.answerFailures, m.retrieval,
		m.llmCalls, m.llmFirstToken, m.tokens, m.searchRequests)
	return m
}

// latency is a histogram of durations in seconds over latencyBuckets.
func latency(name, help string, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets}, labels)
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// NewRegistry returns a Prometheus registry with the Go runtime and process
// collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ObserveRequest records one served HTTP request. route is the route
// template ("/conversations/:id"), "" for a request no route matched.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, knownMethod(method), strconv.Itoa(status)).Observe(d.Seconds())
}

// RequestStarted counts a request in flight; call the returned function
// when it ends.
func (m *Metrics) RequestStarted() func() {
	m.inFlight.Inc()
	return m.inFlight.Dec
}

// StreamStarted counts an SSE reply; call the returned function when it
// ends.
func (m *Metrics) StreamStarted() func() {
	m.activeStreams.Inc()
	return m.activeStreams.Dec
}

// knownMethod keeps the method label to the standard methods.
func knownMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "OTHER"
}
