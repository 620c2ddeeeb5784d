package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// smallSendBuffers accepts connections whose kernel send buffer is small,
// so that a client that stops reading blocks the server's writes after a
// few kilobytes instead of the megabytes loopback buffers grow to.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// stallingClient sends a streamed request over a connection with a tiny
// receive buffer and never reads the reply; the connection is closed with
// the test.
func stallingClient(t *testing.T, addr, path, body string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(1024)
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, addr, len(body), body)
}

// TestStalledStreamDropsOnlyItself: a client that stops reading an SSE
// stream loses it when an event's write misses the stream write timeout
// (the turn is stored as interrupted and the upstream call cancelled),
// and another client's stream of the same kind meanwhile is not delayed
// by more than that timeout. Both are real HTTP clients on loopback.
func TestStalledStreamDropsOnlyItself(t *testing.T) {
	const deadline = 300 * time.Millisecond
	up := llmtest.NewServer(t)
	// About 240 kB of events, far more than the two sockets' buffers hold.
	word := strings.Repeat("x", 400) + " "
	long := strings.Repeat(word, 600)
	models, _ := offlineModels()
	models.Add("test", llm.NewClient(llm.ClientConfig{Name: "test", BaseURL: up.URL(), Model: "test", Timeout: 30 * time.Second, MaxRetries: 1, RetryBackoff: time.Millisecond}))
	store := openSQLite(t)
	s := New(Options{Store: store, Models: models, Chat: chat.New(models, chat.Options{}), StreamWriteTimeout: deadline})
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.Listener = smallSendBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(hs.Close)
	addr := hs.Listener.Addr().String()
	body := func(conv string) string {
		return `{"query":"讲讲周易","conversation_id":"` + conv + `","stream":true,"model_name":"test"}`
	}
	// read streams one whole reply as a reading client and returns how
	// long it took.
	read := func(conv string) time.Duration {
		t.Helper()
		up.Script(llmtest.Reply{Text: long})
		start := time.Now()
		resp, err := http.Post(hs.URL+"/chat/chat", "application/json", strings.NewReader(body(conv)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || n < int64(len(long)) {
			t.Fatalf("reading client: %d, %d bytes, %v", resp.StatusCode, n, err)
		}
		return time.Since(start)
	}
	alone := read("alone")

	up.Script(llmtest.Reply{Text: long})
	stallingClient(t, addr, "/chat/chat", body("stalled"))
	start := time.Now()
	// The stalled stream's server side blocks once the buffers are full;
	// the other client's stream runs meanwhile.
	reading := make(chan time.Duration, 1)
	go func() { reading <- read("reading") }()

	// The stalled stream ends with the write timeout: its turn is stored as
	// interrupted and its upstream call cancelled.
	a := interruptedAnswer(t, store, "stalled", long)
	ended := time.Since(start)
	if ended > deadline+5*time.Second {
		t.Errorf("the stalled stream ended after %s, want about the write timeout %s", ended, deadline)
	}
	if len(a.Content) >= len(long)/2 {
		t.Errorf("the stalled client was sent %d of %d bytes", len(a.Content), len(long))
	}
	d := <-reading
	t.Logf("a reply alone %s, next to a stalled one %s; the stalled stream ended after %s, with %d of %d bytes sent", alone, d, ended, len(a.Content), len(long))
	if d > 2*alone+deadline+2*time.Second { // the machine may be busy: alone is the measure
		t.Errorf("a reading client's stream took %s next to a stalled one (%s alone): delayed by more than the write timeout %s", d, alone, deadline)
	}
	if !up.WaitIdle(5 * time.Second) {
		t.Errorf("upstream call still running after the stalled stream was dropped (in flight: %d)", up.InFlight())
	}
}
