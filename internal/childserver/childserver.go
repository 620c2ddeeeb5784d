// Package childserver runs a mixchat server as a child process and makes
// the few API calls the harnesses that test it need: the crash benchmark
// (`mixchat-eval crash`) kills it, and the replica tests of cmd/mixchat run
// two of them on one database. It imports no test code.
package childserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a mixchat server running as a child process.
type Proc struct {
	cmd  *exec.Cmd
	URL  string // http://127.0.0.1:PORT
	logs *logWriter
	done chan struct{} // closed when the process has exited
	err  error         // Wait's error, set before done is closed
}

// logWriter collects a child's log and picks the listening address out of
// the "mixchat listening addr=http://..." line.
type logWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	sent bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() < 1<<20 {
		w.buf.Write(p)
	}
	if !w.sent {
		s := w.buf.String()
		if i := strings.Index(s, "addr=http://"); i >= 0 {
			rest := s[i+len("addr="):]
			if j := strings.IndexAny(rest, " \n\""); j > 0 {
				w.addr <- rest[:j]
				w.sent = true
			}
		}
	}
	return len(p), nil
}

// String returns the log so far.
func (w *logWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// childEnv is the environment of a child server: ours without any MIXCHAT_
// setting (so the caller's configuration does not leak in), plus env.
func childEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MIXCHAT_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// Start runs `bin serve --addr 127.0.0.1:0 --data dir` with env
// added to a clean environment and waits until it listens and answers
// /healthz.
func Start(ctx context.Context, bin, dir string, env []string, timeout time.Duration) (*Proc, error) {
	w := &logWriter{addr: make(chan string, 1)}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", dir)
	cmd.Env = childEnv(append([]string{"MIXCHAT_DEMO=false"}, env...)) // the harnesses make their own data
	cmd.Stdout = w
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Proc{cmd: cmd, logs: w, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case p.URL = <-w.addr:
	case <-p.done:
		return nil, fmt.Errorf("server exited before listening (%v): %s", p.err, LastLines(w.String(), 20))
	case <-t.C:
		p.Kill()
		return nil, fmt.Errorf("server not listening after %s: %s", timeout, LastLines(w.String(), 20))
	case <-ctx.Done():
		p.Kill()
		return nil, ctx.Err()
	}
	for {
		resp, err := http.Get(p.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("server exited (%v): %s", p.err, LastLines(w.String(), 20))
		case <-t.C:
			p.Kill()
			return nil, fmt.Errorf("server not healthy after %s", timeout)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the server to shut down (SIGTERM) and waits up to d before
// killing it.
func (p *Proc) Stop(d time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		p.Kill()
		return fmt.Errorf("server did not stop within %s", d)
	}
}

// Logs returns what the server has written to stdout and stderr so far
// (its first MiB).
func (p *Proc) Logs() string { return p.logs.String() }

// LastLines returns the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// post sends body of type contentType to u and returns the reply's status
// and body.
func post(ctx context.Context, hc *http.Client, u, contentType string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// PostJSON posts body as JSON and decodes a 200 reply into out (nil: drop
// it).
func PostJSON(ctx context.Context, hc *http.Client, u string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	status, data, err := post(ctx, hc, u, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("POST %s: status %d: %s", u, status, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("POST %s: decode %q: %w", u, data, err)
		}
	}
	return nil
}

// KBEnvelope is the {code, msg, data} reply of the knowledge-base API.
type KBEnvelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// CreateKB creates a knowledge base through the API.
func CreateKB(ctx context.Context, hc *http.Client, base, name string) error {
	var env KBEnvelope
	if err := PostJSON(ctx, hc, base+"/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": name}, &env); err != nil {
		return err
	}
	if env.Code != 200 {
		return fmt.Errorf("create knowledge base %s: %d %s", name, env.Code, env.Msg)
	}
	return nil
}

// UploadKB uploads one file (override) through the API and fails unless it
// was indexed.
func UploadKB(ctx context.Context, hc *http.Client, base, kbName, file string, data []byte) error {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("knowledge_base_name", kbName)
	_ = mw.WriteField("override", "true")
	fw, err := mw.CreateFormFile("files", file)
	if err != nil {
		return err
	}
	fw.Write(data)
	mw.Close()
	status, raw, err := post(ctx, hc, base+"/knowledge_base/upload_docs", mw.FormDataContentType(), &body)
	if err != nil {
		return err
	}
	var env KBEnvelope
	if status != http.StatusOK || json.Unmarshal(raw, &env) != nil || env.Code != 200 {
		return fmt.Errorf("upload %s: status %d: %s", file, status, bytes.TrimSpace(raw))
	}
	var d struct {
		Failed map[string]string `json:"failed_files"`
	}
	_ = json.Unmarshal(env.Data, &d)
	if len(d.Failed) > 0 {
		return fmt.Errorf("upload %s: failed: %v", file, d.Failed)
	}
	return nil
}

// PID returns the server's process id (for the harnesses that read its
// /proc entries: resident memory, bytes written).
func (p *Proc) PID() int { return p.cmd.Process.Pid }
