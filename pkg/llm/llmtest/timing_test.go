package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// fakeSleep is a Sleep the test drives: every delay the server asks for is
// sent on asked, and lasts until the test sends on release.
type fakeSleep struct {
	asked   chan time.Duration
	release chan struct{}
}

func newFakeSleep() *fakeSleep {
	return &fakeSleep{asked: make(chan time.Duration), release: make(chan struct{})}
}

func (f *fakeSleep) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case f.asked <- d:
	case <-ctx.Done():
		return false
	}
	select {
	case <-f.release:
		return true
	case <-ctx.Done():
		return false
	}
}

// next waits for the server's next delay and returns it.
func (f *fakeSleep) next(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-f.asked:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the server asked for no delay")
		return 0
	}
}

// streamEvent is one data line of a chat stream: the content of its delta
// ("" for the role, finish and usage chunks), or "[DONE]".
type streamEvent struct {
	content string
	at      time.Time
}

// openStream posts a streamed chat request and sends each event it reads
// on the returned channel, closed at the end of the stream.
func openStream(t *testing.T, srv *llmtest.Server) <-chan streamEvent {
	t.Helper()
	resp := post(t, srv.URL()+"/chat/completions", `{"model":"test","stream":true,"messages":[{"role":"user","content":"q"}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events := make(chan streamEvent, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			ev := streamEvent{content: data, at: time.Now()}
			if data != "[DONE]" {
				var c struct {
					Choices []struct {
						Delta struct{ Content string } `json:"delta"`
					} `json:"choices"`
				}
				json.Unmarshal([]byte(data), &c)
				ev.content = ""
				if len(c.Choices) > 0 {
					ev.content = c.Choices[0].Delta.Content
				}
			}
			events <- ev
		}
	}()
	return events
}

func nextEvent(t *testing.T, events <-chan streamEvent) streamEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended early")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return streamEvent{}
}

// noEventFor fails when an event arrives within d: the server is waiting.
func noEventFor(t *testing.T, events <-chan streamEvent, d time.Duration, why string) {
	t.Helper()
	select {
	case ev := <-events:
		t.Fatalf("%s: event %q arrived before the delay ended", why, ev.content)
	case <-time.After(d):
	}
}

// TestStreamTiming drives the server's delays with a fake sleep: the role
// chunk comes at once, each content chunk only after its delay (the first
// token's, then the token rate's, plus ChunkDelay), in order and complete.
func TestStreamTiming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []llmtest.Option
		reply  llmtest.Reply
		delays []time.Duration // asked for before each content chunk
	}{
		{"first token and rate", []llmtest.Option{llmtest.WithFirstToken(500 * time.Millisecond), llmtest.WithTokenRate(10)},
			llmtest.Reply{Text: "乾为天"}, []time.Duration{500 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}},
		{"the reply's own timing wins", []llmtest.Option{llmtest.WithFirstToken(time.Second), llmtest.WithTokenRate(1)},
			llmtest.Reply{Text: "元亨", FirstToken: 2 * time.Second, TokenDelay: 30 * time.Millisecond}, []time.Duration{2 * time.Second, 30 * time.Millisecond}},
		{"ChunkDelay adds to the token time", []llmtest.Option{llmtest.WithFirstToken(200 * time.Millisecond)},
			llmtest.Reply{Text: "利贞", ChunkDelay: 5 * time.Millisecond}, []time.Duration{205 * time.Millisecond, 5 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeSleep()
			srv := llmtest.NewServer(t, append(tc.opts, llmtest.WithSleep(fs.sleep))...)
			srv.Script(tc.reply)
			events := openStream(t, srv)
			if ev := nextEvent(t, events); ev.content != "" {
				t.Fatalf("first event %q, want the role chunk", ev.content)
			}
			chunks := llmtest.Chunks(tc.reply.Text)
			for i, want := range tc.delays {
				if d := fs.next(t); d != want {
					t.Errorf("delay %d = %v, want %v", i, d, want)
				}
				noEventFor(t, events, 30*time.Millisecond, "waiting for a token")
				fs.release <- struct{}{}
				if ev := nextEvent(t, events); ev.content != chunks[i] {
					t.Fatalf("content chunk %d = %q, want %q", i, ev.content, chunks[i])
				}
			}
			var rest []string
			for ev := range events {
				rest = append(rest, ev.content)
			}
			if !slices.Equal(rest, []string{"", "[DONE]"}) {
				t.Errorf("after the text: %q, want the finish chunk and [DONE]", rest)
			}
			select {
			case d := <-fs.asked:
				t.Errorf("an extra delay %v after the last token", d)
			default:
			}
		})
	}
}

// TestCompletionTiming: a reply that is not streamed takes the whole
// generation time (latency, first token, then the token rate for each
// further token) before it is sent.
func TestCompletionTiming(t *testing.T) {
	fs := newFakeSleep()
	srv := llmtest.NewServer(t, llmtest.WithLatency(time.Second), llmtest.WithFirstToken(500*time.Millisecond),
		llmtest.WithTokenRate(10), llmtest.WithSleep(fs.sleep))
	srv.Script(llmtest.Reply{Text: "乾为天"})
	done := make(chan string, 1)
	go func() {
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"test","messages":[{"role":"user","content":"q"}]}`))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	for i, want := range []time.Duration{time.Second, 500*time.Millisecond + 2*100*time.Millisecond} {
		if d := fs.next(t); d != want {
			t.Errorf("delay %d = %v, want %v", i, d, want)
		}
		select {
		case body := <-done:
			t.Fatalf("reply before delay %d ended: %s", i, body)
		case <-time.After(30 * time.Millisecond):
		}
		fs.release <- struct{}{}
	}
	select {
	case body := <-done:
		if !strings.Contains(body, `"content":"乾为天"`) {
			t.Errorf("reply %s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
	}
}

// TestRealTiming checks with the real clock that the delays are applied:
// lower bounds only (a loaded machine can only make things later), and a
// generous upper bound.
func TestRealTiming(t *testing.T) {
	const first, per = 150 * time.Millisecond, 50 * time.Millisecond
	srv := llmtest.NewServer(t, llmtest.WithFirstToken(first), llmtest.WithTokenRate(float64(time.Second/per)))
	srv.Script(llmtest.Reply{Text: "乾元亨利"})
	start := time.Now()
	events := openStream(t, srv)
	var content []streamEvent
	role := nextEvent(t, events)
	for ev := range events {
		if ev.content != "" && ev.content != "[DONE]" {
			content = append(content, ev)
		}
	}
	if len(content) != 4 {
		t.Fatalf("%d content chunks", len(content))
	}
	if ttft := content[0].at.Sub(start); ttft < first || ttft > 5*time.Second {
		t.Errorf("first token after %v, want at least %v", ttft, first)
	}
	if !role.at.Before(content[0].at) {
		t.Error("the role chunk did not come before the first token")
	}
	if last := content[3].at.Sub(start); last < first+3*per {
		t.Errorf("last token after %v, want at least %v", last, first+3*per)
	}

	srv.Script(llmtest.Reply{Text: "乾元亨利"})
	start = time.Now()
	resp := post(t, srv.URL()+"/chat/completions", `{"model":"test","messages":[{"role":"user","content":"q"}]}`)
	io.ReadAll(resp.Body)
	if total := time.Since(start); total < first+3*per {
		t.Errorf("a whole reply took %v, want at least %v", total, first+3*per)
	}
}
