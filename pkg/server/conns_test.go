package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/lockedbuf"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// connServer serves a chat server with the connection limits l, through
// the server's own http.Server and listener, as mixchat serve does.
func connServer(t *testing.T, l ConnLimits, up *llmtest.Server, log *slog.Logger) (*Server, string) {
	t.Helper()
	models, _ := offlineModels()
	if up != nil {
		models.Add("test", llm.NewClient(llm.ClientConfig{Name: "test", BaseURL: up.URL(), Model: "test", Timeout: 10 * time.Second, MaxRetries: 1, RetryBackoff: time.Millisecond}))
	}
	s := New(Options{Store: openSQLite(t), Models: models, Chat: chat.New(models, chat.Options{}), Conns: l, Log: log})
	return s, serveWith(t, s)
}

// serveWith serves s on a local port with NewHTTPServer and Listener.
func serveWith(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.NewHTTPServer()
	go hs.Serve(s.Listener(ln))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// trickle sends head at once, then body one byte every gap on a raw
// connection, and returns the status line of the reply, or "" when the
// server closed the connection without one, and how long it took; it
// gives up after limit.
func trickle(t *testing.T, addr, head string, body []byte, gap, limit time.Duration) (string, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for _, b := range body {
			select {
			case <-stop:
				return
			case <-time.After(gap):
			}
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	conn.SetReadDeadline(start.Add(limit))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the slow client was still connected after %s", limit)
	}
	return strings.TrimSpace(line), time.Since(start)
}

// A client sending an upload's body at one byte every 200 ms is cut off
// once it falls below server.min_transfer_rate, with 408.
func TestSlowUploadBodyCutOff(t *testing.T) {
	ts := newKBTestServerWith(t, nil, func(o *Options) {
		o.Conns = ConnLimits{ReadTimeout: time.Second, MinTransferRate: 1000}
	})
	addr := strings.TrimPrefix(ts.url, "http://")
	body := []byte(strings.Repeat("x", 5000))
	head := "POST /knowledge_base/upload_docs HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: multipart/form-data; boundary=b\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)+100) + "--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.txt\"\r\n\r\n"
	status, d := trickle(t, addr, head, body, 200*time.Millisecond, 10*time.Second)
	if !strings.Contains(status, "408") {
		t.Errorf("slow upload: %q after %s, want 408", status, d)
	}
	if d > 4*time.Second {
		t.Errorf("slow upload cut off after %s, want about read_timeout (1s)", d)
	}
}

// A JSON body must arrive within server.read_timeout.
func TestSlowJSONBodyCutOff(t *testing.T) {
	_, addr := connServer(t, ConnLimits{ReadTimeout: time.Second}, nil, nil)
	body := []byte(`{"query":"乾卦是什么？","stream":false}`)
	head := "POST /chat/chat HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))
	status, d := trickle(t, addr, head, body, 300*time.Millisecond, 10*time.Second)
	if strings.Contains(status, " 200 ") || d > 4*time.Second {
		t.Errorf("slow JSON body: %q after %s, want refused after about 1s", status, d)
	}
}

// A streamed reply may last longer than server.write_timeout, and an
// unstreamed one whose model takes longer than it is still written.
func TestWriteTimeoutSparesStreamsAndSlowModels(t *testing.T) {
	up := llmtest.NewServer(t)
	_, addr := connServer(t, ConnLimits{WriteTimeout: time.Second}, up, nil)
	long := strings.Repeat("周易讲变化。", 25)
	up.Script(llmtest.Reply{Text: long, ChunkDelay: 12 * time.Millisecond}, llmtest.Reply{Text: "乾为天。", Delay: 1500 * time.Millisecond})
	start := time.Now()
	resp, err := http.Post("http://"+addr+"/chat/chat", "application/json",
		strings.NewReader(`{"query":"讲讲周易","conversation_id":"w1","stream":true,"model_name":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	events := readEvents[map[string]any](t, resp.Body)
	resp.Body.Close()
	var text strings.Builder
	for _, e := range events {
		if s, ok := e["text"].(string); ok {
			text.WriteString(s)
		}
	}
	if d := time.Since(start); d < 1200*time.Millisecond || text.String() != long {
		t.Errorf("stream of %s: got %d runes of %d", d, len([]rune(text.String())), len([]rune(long)))
	}
	resp, err = http.Post("http://"+addr+"/chat/chat", "application/json",
		strings.NewReader(`{"query":"乾卦","conversation_id":"w2","stream":false,"model_name":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "乾为天") {
		t.Errorf("slow unstreamed reply: %d %s", resp.StatusCode, b)
	}
}

// One address holds at most server.max_conns_per_client connections; one
// past the cap is closed at once, and a slot freed is usable again.
func TestConnectionsPerClientCapped(t *testing.T) {
	_, addr := connServer(t, ConnLimits{MaxConnsPerClient: 2}, nil, nil)
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	healthz := func(c net.Conn) (string, error) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return "", err
		}
		return bufio.NewReader(c).ReadString('\n')
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if line, err := healthz(extra); err == nil {
		t.Errorf("a third connection was served: %q", line)
	}
	if line, err := healthz(conns[0]); err != nil || !strings.Contains(line, "200") {
		t.Errorf("a connection within the cap: %q %v", line, err)
	}
	conns[1].Close()
	time.Sleep(100 * time.Millisecond)
	again, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if line, err := healthz(again); err != nil || !strings.Contains(line, "200") {
		t.Errorf("after a connection closed: %q %v", line, err)
	}
}

// A request answered 401 has its connection closed: a client without a
// valid key cannot keep it open.
func TestUnauthorizedClosesConnection(t *testing.T) {
	as := newAccessServer(t, nil)
	addr := strings.TrimPrefix(as.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET /conversations HTTP/1.1\r\nHost: localhost\r\n\r\n")
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Errorf("HTTP %d, Connection: close %v", resp.StatusCode, resp.Close)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("the connection stayed open after the 401: %v", err)
	}
}

// X-Forwarded-For names the client only from a trusted proxy.
func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	for _, tt := range []struct {
		proxies []string
		want    string
	}{
		{nil, "client=127.0.0.1"},
		{[]string{"10.0.0.0/8"}, "client=127.0.0.1"},
		{[]string{"127.0.0.1"}, "client=203.0.113.7"},
	} {
		var buf lockedbuf.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		_, addr := connServer(t, ConnLimits{TrustedProxies: tt.proxies}, nil, log)
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/no-such-route", nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		deadline := time.Now().Add(2 * time.Second)
		for !strings.Contains(buf.String(), "client=") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(buf.String(), tt.want) {
			t.Errorf("trusted %v: log %q, want %s", tt.proxies, buf.String(), tt.want)
		}
	}
}

// The http.Server gets the header and idle timeouts; read and write
// timeouts are per request (conns.go), never the server's.
func TestHTTPServerTimeouts(t *testing.T) {
	s := New(Options{Store: openSQLite(t), Conns: ConnLimits{IdleTimeout: 7 * time.Second}})
	hs := s.NewHTTPServer()
	if hs.IdleTimeout != 7*time.Second || hs.ReadHeaderTimeout != DefaultConnLimits().ReadHeaderTimeout || hs.ReadTimeout != 0 || hs.WriteTimeout != 0 {
		t.Errorf("http.Server timeouts: idle %s header %s read %s write %s", hs.IdleTimeout, hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout)
	}
}

// A download longer than server.write_timeout goes on while the client
// reads at server.min_transfer_rate or faster.
func TestSlowDownloadWithinRate(t *testing.T) {
	ts := newKBTestServerWith(t, nil, func(o *Options) {
		o.Conns = ConnLimits{WriteTimeout: time.Second, MinTransferRate: 512 << 10}
	})
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "dl"}, &env)
	big := bytes.Repeat([]byte("乾，元亨，利贞。\n"), (6<<20)/25)
	env = ts.upload(t, map[string]string{"knowledge_base_name": "dl", "to_vector_store": "false"}, map[string][]byte{"big.txt": big})
	if env.Code != 200 {
		t.Fatalf("upload: %+v", env)
	}
	resp, err := http.Get(ts.url + "/knowledge_base/download_doc?knowledge_base_name=dl&file_name=big.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	buf := make([]byte, 64<<10)
	n := 0
	for {
		m, err := resp.Body.Read(buf)
		n += m
		if err != nil {
			break
		}
		time.Sleep(40 * time.Millisecond) // about 1.5 MB a second
	}
	if n != len(big) {
		t.Errorf("downloaded %d of %d bytes in %s", n, len(big), time.Since(start))
	}
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Logf("the download took %s, not longer than write_timeout: the test proves little", d)
	}
}
