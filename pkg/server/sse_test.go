package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/turn"
)

// gatedWriter is a ResponseWriter whose writes wait for the test: each
// Write is recorded, then waits on release (while the test sends more).
type gatedWriter struct {
	*httptest.ResponseRecorder
	entered chan struct{} // a write began
	release chan struct{} // let one write finish
	fail    error         // every write fails with it

	mu      sync.Mutex
	writes  []string
	onWrite func() // called by each write, in its goroutine
}

func (w *gatedWriter) Write(b []byte) (int, error) {
	if w.onWrite != nil {
		w.onWrite()
	}
	w.mu.Lock()
	w.writes = append(w.writes, string(b))
	w.mu.Unlock()
	w.entered <- struct{}{}
	<-w.release
	if w.fail != nil {
		return 0, w.fail
	}
	return w.ResponseRecorder.Write(b)
}

func newGatedSSE(t *testing.T, fail error) (*sse, *gatedWriter) {
	t.Helper()
	gw := &gatedWriter{ResponseRecorder: httptest.NewRecorder(), entered: make(chan struct{}, 1), release: make(chan struct{}), fail: fail}
	c, _ := gin.CreateTestContext(gw)
	c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
	return newSSE(c, DefaultStreamWriteTimeout), gw
}

// TestSSEBatchesEventsSentDuringAWrite: the first event is written at
// once, alone; the events sent while that write is in flight go out
// together in the next write, each a whole event of its own, in order.
func TestSSEBatchesEventsSentDuringAWrite(t *testing.T) {
	out, gw := newGatedSSE(t, nil)
	if err := out.Send(map[string]string{"type": "delta", "text": "乾"}); err != nil {
		t.Fatal(err)
	}
	<-gw.entered // the first write is in flight, before any other event
	for _, s := range []string{"元", "亨", "利<贞>"} {
		if err := out.Send(map[string]string{"type": "delta", "text": s}); err != nil {
			t.Fatal(err)
		}
	}
	gw.release <- struct{}{}
	<-gw.entered
	gw.release <- struct{}{}
	if err := out.close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`data: {"text":"乾","type":"delta"}` + "\n\n",
		`data: {"text":"元","type":"delta"}` + "\n\n" +
			`data: {"text":"亨","type":"delta"}` + "\n\n" +
			`data: {"text":"利\u003c贞\u003e","type":"delta"}` + "\n\n",
	}
	if len(gw.writes) != len(want) {
		t.Fatalf("%d writes %q, want %d", len(gw.writes), gw.writes, len(want))
	}
	for i := range want {
		if gw.writes[i] != want[i] {
			t.Errorf("write %d = %q, want %q", i, gw.writes[i], want[i])
		}
	}
	if got := gw.Body.String(); got != strings.Join(want, "") {
		t.Errorf("body %q", got)
	}
	if ct := gw.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q", ct)
	}
}

// TestSSEWriteErrorStopsSends: a failed write is returned by the next
// Send and by close; nothing is written after it.
func TestSSEWriteErrorStopsSends(t *testing.T) {
	broken := errors.New("connection reset")
	out, gw := newGatedSSE(t, broken)
	if err := out.Send("乾"); err != nil {
		t.Fatal(err)
	}
	<-gw.entered
	gw.release <- struct{}{}
	if err := out.close(); !errors.Is(err, broken) {
		t.Fatalf("close: %v, want the write's error", err)
	}
	if err := out.Send("坤"); !errors.Is(err, broken) {
		t.Fatalf("Send after a failed write: %v, want the write's error", err)
	}
	if len(gw.writes) != 1 {
		t.Errorf("%d writes after a failed one: %q", len(gw.writes), gw.writes)
	}
}

// TestSSEFinishingWritesInline: once the turn is over (finishing), an
// event is written by the goroutine sending it, after those queued before,
// and Send returns the write's error.
func TestSSEFinishingWritesInline(t *testing.T) {
	out, gw := newGatedSSE(t, nil)
	if err := out.Send("乾"); err != nil {
		t.Fatal(err)
	}
	<-gw.entered // the drain goroutine's write is in flight
	out.finishing()
	gw.release <- struct{}{}
	if err := out.close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var sender, writer int64
	gw.onWrite = func() { writer = goid() }
	go func() {
		sender = goid()
		done <- out.Send("坤")
	}()
	<-gw.entered
	gw.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if sender != writer {
		t.Errorf("the event after finishing was written by another goroutine (%d, sent by %d)", writer, sender)
	}
	if got, want := gw.Body.String(), "data: \"乾\"\n\ndata: \"坤\"\n\n"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}

	broken := errors.New("connection reset")
	out, gw = newGatedSSE(t, broken)
	out.finishing()
	go func() { <-gw.entered; gw.release <- struct{}{} }()
	if err := out.Send("乾"); !errors.Is(err, broken) {
		t.Fatalf("Send after finishing: %v, want its write's error", err)
	}
}

// goid is the calling goroutine's id, from its stack's header.
func goid() int64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := strings.Fields(string(b))
	id, _ := strconv.ParseInt(f[1], 10, 64)
	return id
}

// TestTextEventIsWireEvent: the text events' own encoding gives the bytes
// json.Marshal gives for the same event.
func TestTextEventIsWireEvent(t *testing.T) {
	for _, ev := range []turn.Event{
		{Type: turn.EventDelta, Text: "乾卦"},
		{Type: turn.EventDelta, Text: ""},
		{Type: turn.EventDelta, Text: `<a href="x">&'"\` + "\n\t\x01\u2028\u2029\xff"},
		{Type: turn.EventAnswerDelta, Answerer: "kb", Text: "元亨 [1]"},
		{Type: turn.EventAnswerDelta, Answerer: "kb"},
	} {
		got, ok := textEvent(ev)
		if !ok {
			t.Errorf("%+v: not encoded as text", ev)
			continue
		}
		want, err := json.Marshal(wireEvent(ev))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%+v: %s, want %s", ev, got, want)
		}
	}
	for _, ev := range []turn.Event{
		{Type: turn.EventStatus, Answerer: "kb", State: "done", Ms: 3},
		{Type: turn.EventDocs},
		{Type: turn.EventDelta, Text: "x", Empty: true},
	} {
		if _, ok := textEvent(ev); ok {
			t.Errorf("%+v encoded as a text event", ev)
		}
	}
}
