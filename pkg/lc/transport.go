package lc

import (
	"fmt"
	"io"
	"net/http"
	"sync"
)

// HandlerTransport returns an http.RoundTripper that serves each request
// with h in this process. The response is returned as soon as the handler
// writes its header, and its body streams what the handler writes next
// (Server-Sent Events included); closing the body or cancelling the
// request's context makes the handler's further writes fail.
func HandlerTransport(h http.Handler) http.RoundTripper { return handlerTransport{h} }

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	r := req.Clone(ctx)
	r.RequestURI = req.URL.RequestURI()
	if r.RemoteAddr == "" {
		r.RemoteAddr = "127.0.0.1:0" // the caller is this process
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				w.WriteHeader(http.StatusInternalServerError)
				pw.CloseWithError(fmt.Errorf("mixchat handler panicked: %v", p))
				return
			}
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			pw.Close()
		}()
		t.h.ServeHTTP(w, r)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		// The handler sees the same context; its writes now fail.
		pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	body := &pipeBody{pr}
	go func() {
		// A cancelled request stops a handler still writing.
		select {
		case <-ctx.Done():
			pr.CloseWithError(ctx.Err())
		case <-done:
		}
	}()
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: body, ContentLength: -1, Request: req,
	}, nil
}

// pipeBody is the response body; Close stops the handler's writes.
type pipeBody struct{ *io.PipeReader }

func (b *pipeBody) Close() error {
	b.PipeReader.CloseWithError(io.ErrClosedPipe)
	return nil
}

// pipeWriter is the handler's http.ResponseWriter: the header is handed to
// RoundTrip when written, the body goes into the pipe.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	status int
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 {
		return
	}
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush is a no-op: every Write reaches the reader as it happens.
func (w *pipeWriter) Flush() {}
