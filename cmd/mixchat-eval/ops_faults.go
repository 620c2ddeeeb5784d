package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/childserver"
	"github.com/mixchat/mixchat/internal/sseclient"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/search"
)

const evalFaultsUsage = `mixchat-eval faults [flags]

Runs the mixchat app in this process on loopback against upstreams that
fail on purpose, one fault at a time, and checks the answer to each: the
chat model (a local OpenAI-compatible test server) returning 500, 429 with
Retry-After, malformed JSON, a stream that breaks, or answering slower than
llm.timeout; the search engine (a SearxNG stand-in) not answering within
its timeout; and, with --postgres, the PostgreSQL conversation store (a
private server this command starts with pg_ctl) stopped and started again.
Expected: retries where they are safe (500, 429 before anything was
delivered), clear errors with a fitting status where they are not,
mix_chat degrading to the answerers that work, and recovery without
restarting mixchat. Prints one row per fault.
`

// faultyLLM is the test model's behaviour, switched by the fault in play:
// the next n calls get fault, the rest a normal reply.
type faultyLLM struct {
	mu    sync.Mutex
	fault llmtest.Reply
	n     int // calls left that get fault; <0: all
}

const faultAnswer = "乾卦六爻皆阳，象征天，其德刚健。"

func (f *faultyLLM) set(r llmtest.Reply, n int) {
	f.mu.Lock()
	f.fault, f.n = r, n
	f.mu.Unlock()
}

func (f *faultyLLM) reply(openai.ChatCompletionRequest) llmtest.Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n != 0 {
		if f.n > 0 {
			f.n--
		}
		return f.fault
	}
	return llmtest.Reply{Text: faultAnswer}
}

// faultRow is one line of the report.
type faultRow struct {
	fault, request, want, got string
	calls                     int
	took                      time.Duration
	ok                        bool
}

// outcome is what a request came back with.
type outcome struct {
	status int    // HTTP status
	code   int    // the knowledge-base API's envelope code, when not 200
	msg    string // error message, or the text
	events []map[string]any
	// retryAfter is the Retry-After header.
	retryAfter string
}

// runEvalFaults is `mixchat-eval faults`.
func runEvalFaults(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval faults", evalFaultsUsage, stderr)
	withPG := fs.Bool("postgres", true, "also stop and start a private PostgreSQL server under the conversation store (needs PostgreSQL installed)")
	pgPort := fs.Int("postgres-port", 0, "port of the private PostgreSQL server (0: a free one)")
	llmTimeout := fs.Duration("llm-timeout", time.Second, "llm.timeout of the app under test")
	searchTimeout := fs.Duration("search-timeout", 300*time.Millisecond, "timeout of the stalled search engine")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tb := &evalTB{}
	defer tb.close()
	model := &faultyLLM{}
	up := llmtest.NewServer(tb, llmtest.WithHandler(model.reply))
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	defer stalled.Close()
	defer stalled.CloseClientConnections()

	dir, err := os.MkdirTemp("", "mixchat-eval-faults-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	cfg := harnessConfig(dir, up.URL())
	cfg.LLM.Timeout, cfg.LLM.MaxRetries, cfg.LLM.RetryBackoff = *llmTimeout, 2, 20*time.Millisecond
	cfg.Search.Engines = []search.EngineConfig{{Name: "stalled", Provider: "searxng", BaseURL: stalled.URL, Timeout: *searchTimeout}}
	var pg *privatePostgres
	if *withPG {
		pg, err = startPrivatePostgres(ctx, filepath.Join(dir, "pg"), *pgPort)
		if err != nil {
			return fmt.Errorf("eval faults: %w (run with --postgres=false to skip the PostgreSQL faults)", err)
		}
		defer pg.destroy()
		cfg.Store.Driver, cfg.Store.DSN = "postgres", pg.dsn
		cfg.KB.Store = kb.KBStorePostgres // on the same server (kb.dsn defaults to store.dsn)
	}
	a, err := startLoopbackApp(ctx, cfg, app.Options{})
	if err != nil {
		return err
	}
	defer a.close()
	base := a.base
	hc := &http.Client{Timeout: time.Minute}

	var rows []faultRow
	conv := 0
	chat := func(stream bool) (outcome, int, time.Duration) {
		conv++
		before := up.Calls()
		t := time.Now()
		o := request(ctx, hc, base+"/chat/chat", map[string]any{"query": "乾卦是什么意思？", "conversation_id": fmt.Sprintf("faults-%d", conv), "stream": stream})
		return o, up.Calls() - before, time.Since(t)
	}
	add := func(fault, req, want string, o outcome, calls int, took time.Duration, ok bool) {
		rows = append(rows, faultRow{fault: fault, request: req, want: want, got: o.describe(), calls: calls, took: took, ok: ok})
	}
	retries := cfg.LLM.MaxRetries

	model.set(llmtest.Reply{Status: 500}, 1)
	o, n, d := chat(false)
	add("LLM 500 once", "/chat/chat", "200 after 1 retry", o, n, d, o.status == 200 && n == 2)

	model.set(llmtest.Reply{Status: 429, Header: http.Header{"Retry-After-Ms": {"150"}}}, 1)
	o, n, d = chat(false)
	add("LLM 429 + Retry-After 150ms", "/chat/chat", "200 after waiting 150ms", o, n, d, o.status == 200 && n == 2 && d >= 150*time.Millisecond)

	model.set(llmtest.Reply{Status: 500}, -1)
	o, n, d = chat(false)
	add("LLM 500 always", "/chat/chat", fmt.Sprintf("502 naming the upstream 500, %d calls", retries+1), o, n, d,
		o.status == 502 && n == retries+1 && strings.Contains(o.msg, "500"))

	model.set(llmtest.Reply{Garbage: true}, -1)
	o, n, d = chat(false)
	add("LLM malformed JSON", "/chat/chat", "502, not retried", o, n, d, o.status == 502 && n == 1)

	model.set(llmtest.Reply{Text: faultAnswer, Garbage: true, StreamErrorAfter: 2}, -1)
	o, n, d = chat(true)
	add("LLM stream breaks mid-reply", "/chat/chat stream", "error event, not retried after text was sent", o, n, d,
		o.status == 200 && o.streamError() != "" && n == 1)

	model.set(llmtest.Reply{Text: faultAnswer, Delay: 3 * *llmTimeout}, -1)
	o, n, d = chat(false)
	add(fmt.Sprintf("LLM slower than llm.timeout (%s)", *llmTimeout), "/chat/chat", "504 after the retries", o, n, d,
		o.status == 504 && d < time.Duration(retries+2)*(*llmTimeout)+5*time.Second)

	model.set(llmtest.Reply{}, 0)
	o, n, d = chat(false)
	add("none (LLM back)", "/chat/chat", "200, no restart", o, n, d, o.status == 200 && o.msg != "")

	// The search engine does not answer within its timeout; mix_chat asks
	// a knowledge base too.
	if err := childserver.CreateKB(ctx, hc, base, "faults"); err != nil {
		return err
	}
	if err := childserver.UploadKB(ctx, hc, base, "faults", "qian.md", []byte("# 乾卦\n\n乾：元，亨，利，贞。天行健，君子以自强不息。\n")); err != nil {
		return err
	}
	t := time.Now()
	before := up.Calls()
	o = request(ctx, hc, base+"/chat/search_engine_chat", map[string]any{"query": "乾卦是什么意思？", "search_engine_name": "stalled", "stream": false})
	add(fmt.Sprintf("search engine silent (timeout %s)", *searchTimeout), "/chat/search_engine_chat", "504", o, up.Calls()-before, time.Since(t), o.status == 504)

	t = time.Now()
	before = up.Calls()
	o = request(ctx, hc, base+"/chat/mix_chat", map[string]any{"query": "乾卦是什么意思？", "conversation_id": "faults-mix", "search_engine_name": "stalled", "knowledge_base_name": "faults", "stream": true})
	st := o.answererStates()
	add(fmt.Sprintf("search engine silent (timeout %s)", *searchTimeout), "/chat/mix_chat stream", "answer from the others; search failed", o, up.Calls()-before, time.Since(t),
		o.status == 200 && o.streamError() == "" && o.msg != "" && strings.HasPrefix(st["search"], "failed") && st["llm"] == "done")

	model.set(llmtest.Reply{Status: 500}, -1)
	t = time.Now()
	before = up.Calls()
	o = request(ctx, hc, base+"/chat/mix_chat", map[string]any{"query": "乾卦是什么意思？", "conversation_id": "faults-mix-down", "knowledge_base_name": "faults", "stream": true})
	st = o.answererStates()
	add("LLM 500 always", "/chat/mix_chat stream", "llm failed; reply from any answerer left, else a clear error event", o, up.Calls()-before, time.Since(t),
		o.status == 200 && strings.HasPrefix(st["llm"], "failed") && (o.streamError() != "" || o.msg != ""))
	model.set(llmtest.Reply{}, 0)

	if pg != nil {
		rows = append(rows, pgFaults(ctx, pg, hc, base)...)
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "fault\trequest\texpected\tgot\tLLM calls\ttime\tok")
	failed := 0
	for _, r := range rows {
		mark := "yes"
		if !r.ok {
			mark = "NO"
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.fault, r.request, r.want, r.got, r.calls, r.took.Round(time.Millisecond), mark)
	}
	tw.Flush()
	if failed > 0 {
		return fmt.Errorf("eval faults: %d of %d checks failed", failed, len(rows))
	}
	return nil
}

// pgFaults stops the conversation store's PostgreSQL, asks, starts it
// again and asks until it answers.
func pgFaults(ctx context.Context, pg *privatePostgres, hc *http.Client, base string) []faultRow {
	var rows []faultRow
	ask := func(conv string) (outcome, time.Duration) {
		t := time.Now()
		o := request(ctx, hc, base+"/chat/chat", map[string]any{"query": "我的名字是李雷。", "conversation_id": conv})
		return o, time.Since(t)
	}
	o, d := ask("pg-before")
	rows = append(rows, faultRow{fault: "none (PostgreSQL up)", request: "/chat/chat", want: "200", got: o.describe(), took: d, ok: o.status == 200})
	if err := pg.ctl("stop", "-m", "immediate"); err != nil {
		rows = append(rows, faultRow{fault: "PostgreSQL stopped", got: "pg_ctl stop: " + err.Error()})
		return rows
	}
	// The database's address must not reach clients: the log has it.
	port := strconv.Itoa(pg.port)
	private := func(o outcome) bool { return !strings.Contains(o.msg, port) && !strings.Contains(o.msg, "user=") }
	o, d = ask("pg-before")
	rows = append(rows, faultRow{fault: "PostgreSQL stopped", request: "/chat/chat", want: "503 + Retry-After, a clear message without the address, quickly", got: o.describe(), took: d,
		ok: o.status == 503 && o.retryAfter != "" && o.msg != "" && private(o) && d < 15*time.Second})
	o, d = ask("pg-other")
	rows = append(rows, faultRow{fault: "PostgreSQL stopped", request: "/chat/chat (again)", want: "503 + Retry-After, a clear message without the address, quickly", got: o.describe(), took: d,
		ok: o.status == 503 && o.retryAfter != "" && o.msg != "" && private(o) && d < 15*time.Second})
	resp, err := hc.Get(base + "/healthz")
	hz := outcome{msg: fmt.Sprint(err)}
	if err == nil {
		hz.status = resp.StatusCode
		resp.Body.Close()
	}
	rows = append(rows, faultRow{fault: "PostgreSQL stopped", request: "/healthz", want: "200 (liveness: do not restart)", got: hz.describe(), ok: hz.status == 200})
	searchKB := func() (outcome, time.Duration) {
		t := time.Now()
		o := request(ctx, hc, base+"/knowledge_base/search_docs", map[string]any{"query": "乾卦", "knowledge_base_name": "faults", "top_k": 3})
		return o, time.Since(t)
	}
	o, d = searchKB()
	rows = append(rows, faultRow{fault: "PostgreSQL stopped", request: "/knowledge_base/search_docs", want: "code 503 (Chatchat envelope), a clear message without the address", got: o.describe(), took: d,
		ok: (o.status == 503 || o.code == 503) && o.msg != "" && private(o) && d < 15*time.Second})
	resp, err = hc.Get(base + "/readyz")
	rz := outcome{msg: fmt.Sprint(err)}
	if err == nil {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		rz.status, rz.msg = resp.StatusCode, string(raw)
	}
	rows = append(rows, faultRow{fault: "PostgreSQL stopped", request: "/readyz", want: "503 naming the store, without the address", got: rz.describe(),
		ok: rz.status == 503 && strings.Contains(rz.msg, `"store":{"status":"failed"`) && private(rz)})
	if err := pg.start(); err != nil {
		rows = append(rows, faultRow{fault: "PostgreSQL restarted", got: "pg_ctl start: " + err.Error()})
		return rows
	}
	t := time.Now()
	tries := 0
	for {
		tries++
		o, _ = ask("pg-before")
		if o.status == 200 || time.Since(t) > 30*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rows = append(rows, faultRow{fault: "PostgreSQL restarted", request: "/chat/chat", want: "200 without restarting mixchat",
		got: fmt.Sprintf("%s after %d tries", o.describe(), tries), took: time.Since(t), ok: o.status == 200})
	o, d = searchKB()
	rows = append(rows, faultRow{fault: "PostgreSQL restarted", request: "/knowledge_base/search_docs", want: "200 with the document",
		got: o.describe(), took: d, ok: o.status == 200 && strings.Contains(o.msg, "qian.md")})
	// The turns written before the outage are there, and the new one too.
	resp, err = hc.Get(base + "/conversations/pg-before/messages")
	var list struct {
		Messages []json.RawMessage `json:"messages"`
	}
	got := outcome{msg: fmt.Sprint(err)}
	if err == nil {
		got.status = resp.StatusCode
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		got.msg = fmt.Sprintf("%d messages", len(list.Messages))
	}
	rows = append(rows, faultRow{fault: "PostgreSQL restarted", request: "/conversations/:id/messages", want: "4 messages (2 turns; none from the outage)",
		got: got.describe(), ok: got.status == 200 && len(list.Messages) == 4})
	return rows
}

// request posts body and reads the reply: JSON, or an SSE stream whose
// events are collected.
func request(ctx context.Context, hc *http.Client, u string, body any) outcome {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return outcome{msg: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return outcome{msg: err.Error()}
	}
	defer resp.Body.Close()
	o := outcome{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var text strings.Builder
		err := sseclient.Read(resp.Body, func(data []byte) error {
			var ev map[string]any
			if json.Unmarshal(data, &ev) != nil {
				ev = map[string]any{"error": "undecodable event: " + string(data)}
			}
			o.events = append(o.events, ev)
			if s, _ := ev["text"].(string); s != "" && (ev["type"] == nil || ev["type"] == "delta") {
				text.WriteString(s)
			}
			return nil
		})
		if err != nil {
			o.events = append(o.events, map[string]any{"error": "stream: " + err.Error()})
		}
		o.msg = text.String()
		return o
	}
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		if c, ok := m["code"].(float64); ok && c != 200 {
			o.code = int(c)
		}
		for _, k := range []string{"error", "msg", "text", "answer"} {
			if s, _ := m[k].(string); s != "" {
				o.msg = s
				break
			}
		}
	} else {
		o.msg = string(raw)
	}
	return o
}

// streamError is the first error an event carried; the status events of
// mix_chat's answerers do not count (a failed answerer is reported, not an
// error of the reply).
func (o outcome) streamError() string {
	for _, ev := range o.events {
		if ev["type"] == "status" {
			continue
		}
		if s, _ := ev["error"].(string); s != "" {
			return s
		}
	}
	return ""
}

// answererStates maps each answerer to its last status in a mix_chat stream
// ("failed (timed out)" when it timed out).
func (o outcome) answererStates() map[string]string {
	m := map[string]string{}
	for _, ev := range o.events {
		if ev["type"] != "status" {
			continue
		}
		name, _ := ev["answerer"].(string)
		state, _ := ev["state"].(string)
		if to, _ := ev["timed_out"].(bool); to {
			state += " (timed out)"
		}
		m[name] = state
	}
	return m
}

func (o outcome) describe() string {
	s := strconv.Itoa(o.status)
	if o.status == 0 {
		s = "no reply"
	}
	if e := o.streamError(); e != "" {
		s += " error event: " + e
	} else if len(o.events) > 0 {
		st := o.answererStates()
		var parts []string
		for k, v := range st {
			parts = append(parts, k+" "+v)
		}
		sort.Strings(parts)
		if len(parts) > 0 {
			s += " [" + strings.Join(parts, ", ") + "]"
		}
		s += fmt.Sprintf(" %d events", len(o.events))
	} else if o.code != 0 {
		s += fmt.Sprintf(" {code %d: %s}", o.code, o.msg)
	} else if o.msg != "" && o.status != 200 {
		s += " " + o.msg
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// privatePostgres is a PostgreSQL server this command runs in a folder of
// its own, so stopping it disturbs nobody.
type privatePostgres struct {
	bin, dir string
	port     int
	dsn      string
}

// pgBinDir finds the newest installed PostgreSQL's programs.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL is not installed (no pg_ctl); scripts/postgres.sh start installs it")
}

// asOwner runs a PostgreSQL program as the postgres user when we are root
// (the server refuses to run as root).
func asOwner(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func startPrivatePostgres(ctx context.Context, dir string, port int) (*privatePostgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	if port == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	p := &privatePostgres{bin: bin, dir: dir, port: port,
		dsn: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=3", port)}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// The server runs as postgres: it owns its folder and may pass
		// through the parent.
		if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
			return nil, err
		}
		if out, err := exec.Command("chown", "-R", "postgres:", dir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown %s: %v: %s", dir, err, out)
		}
	}
	if out, err := asOwner(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, childserver.LastLines(string(out), 10))
	}
	if err := p.start(); err != nil {
		p.destroy()
		return nil, err
	}
	return p, nil
}

func (p *privatePostgres) ctl(args ...string) error {
	args = append([]string{"-D", filepath.Join(p.dir, "data"), "-w", "-t", "60"}, args...)
	out, err := asOwner(filepath.Join(p.bin, "pg_ctl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v: %s", strings.Join(args, " "), err, childserver.LastLines(string(out), 10))
	}
	return nil
}

func (p *privatePostgres) start() error {
	return p.ctl("-l", filepath.Join(p.dir, "server.log"), "-o",
		fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off", p.port, p.dir), "start")
}

// destroy stops the server; its folder goes with the command's.
func (p *privatePostgres) destroy() {
	_ = p.ctl("stop", "-m", "immediate")
}
