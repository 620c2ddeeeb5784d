package e2e

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/lockedbuf"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

const chromiumPath = "/usr/bin/chromium"

var updateScreenshots = flag.Bool("screenshots", false, "write the screenshots of the main screens into docs/screenshots")

var (
	repoRoot   string // the directory holding go.mod
	binPath    string // the mixchat binary built for the run
	skipReason string // why the tests cannot run here, "" when they can
	browserCtx context.Context
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := findRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = root
	if _, err := os.Stat(chromiumPath); err != nil {
		skipReason = chromiumPath + " not found: install it with scripts/chromium.sh to run the browser tests"
		return m.Run()
	}
	tmp, err := os.MkdirTemp("", "mixchat-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	binPath = filepath.Join(tmp, "mixchat")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	}
	build := exec.Command(gobin, "build", "-o", binPath, "./cmd/mixchat")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: build mixchat: %v\n%s", err, out)
		return 1
	}

	// One browser for the whole run, each test in its own tab. The flags
	// keep it off the network: no background requests, component updates,
	// sync or QUIC, and a fresh profile.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(tmp, "profile")),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.Flag("accept-lang", "en-US"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 800),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		fmt.Fprintln(os.Stderr, "e2e: start chromium:", err)
		return 1
	}
	browserCtx = ctx
	return m.Run()
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test directory")
		}
		dir = parent
	}
}

// ---------------------------------------------------------------- the server

// server is one `mixchat serve` process with its own data directory and a
// test LLM, registered as the model "scripted" (the offline model stays
// the default).
type server struct {
	URL    string
	LLM    *llmtest.Server
	Config string // the configuration file it runs with
	cmd    *exec.Cmd
	log    *lockedbuf.Buffer

	stopOnce sync.Once
	exited   chan struct{}
}

// Scripted questions: the test LLM answers by the marker in the question.
const (
	markSlow = "[[slow]]"
	markFail = "[[fail]]"
	markXSS  = "[[xss]]"
)

// xssReply is a model answer that would run script if the page rendered it
// as HTML: each payload sets a window flag.
const xssReply = "Here is <script>window.__pwned = 'script'</script> and " +
	"<img src=x onerror=\"window.__pwned = 'onerror'\"> and <a href=\"javascript:window.__pwned='href'\">a link</a> " +
	"and [click me](javascript:window.__pwned='md') done **bold**."

const upstreamMessage = "upstream exploded: quota exceeded for this key"

// slowReply is long and streamed in small pieces with a delay, so a test
// can stop it midway.
var slowReply = strings.Repeat("乾，元亨利贞。初九，潜龙勿用。九二，见龙在田，利见大人。", 20)

func scripted(req openai.ChatCompletionRequest) llmtest.Reply {
	last := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			last = m.Content
		}
	}
	// With server memory the prompt carries the history too: look at the
	// question, the text after the last "Human:".
	if i := strings.LastIndex(last, "Human:"); i >= 0 {
		last = last[i:]
	}
	switch {
	case strings.Contains(last, markSlow):
		return llmtest.Reply{Text: slowReply, ChunkDelay: 60 * time.Millisecond}
	case strings.Contains(last, markFail):
		return llmtest.Reply{Status: 500, Body: `{"error":{"message":"` + upstreamMessage + `","type":"server_error","param":null,"code":null}}`}
	case strings.Contains(last, markXSS):
		return llmtest.Reply{Text: xssReply}
	}
	return llmtest.Reply{Text: "scripted answer"}
}

var listenRE = regexp.MustCompile(`addr=(http://[0-9.:]+)`)

// startServer runs mixchat for t and stops it in t.Cleanup.
func startServer(t *testing.T) *server {
	t.Helper()
	return startServerIn(t, t.TempDir())
}

// startServerIn runs mixchat with its data directory in dir/data, so a test
// can put files there first (dir/data/search is the offline search
// engine's folder).
func startServerIn(t *testing.T, dir string) *server {
	t.Helper()
	return startServerWith(t, dir, "")
}

// startServerWith runs mixchat as startServerIn does, with extra appended
// to its configuration (top-level YAML sections).
func startServerWith(t *testing.T, dir, extra string) *server {
	t.Helper()
	srv := &server{LLM: llmtest.NewServer(t, llmtest.WithHandler(scripted)), log: &lockedbuf.Buffer{}, exited: make(chan struct{})}
	if !strings.Contains(extra, "demo:") {
		extra = "demo: false\n" + extra // the tests bring their own knowledge bases and pages
	}
	cfg := fmt.Sprintf(`server:
  addr: 127.0.0.1:0
  data_dir: %q
  shutdown_timeout: 2s
log:
  level: info
llm:
  default: offline
  max_retries: 0
  models:
    - name: scripted
      base_url: %q
      model: test
`, filepath.Join(dir, "data"), srv.LLM.URL()) + extra
	cfgPath := filepath.Join(dir, "mixchat.yaml")
	srv.Config = cfgPath
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "serve", "--config", cfgPath)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = srv.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv.cmd = cmd
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			srv.log.Write([]byte(line + "\n"))
			if m := listenRE.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(srv.exited)
	}()
	t.Cleanup(func() {
		srv.Stop()
		if t.Failed() {
			t.Logf("mixchat log:\n%s", srv.log.String())
		}
	})
	select {
	case srv.URL = <-found:
	case <-srv.exited:
		t.Fatalf("mixchat exited before listening:\n%s", srv.log.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("mixchat did not say where it listens:\n%s", srv.log.String())
	}
	return srv
}

// Stop shuts the server down (SIGINT, as Ctrl-C) and waits for it.
func (s *server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// cleanEnv is the test's environment without MIXCHAT_* settings, which
// would override the test's configuration (and unknown ones are errors).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MIXCHAT_") {
			env = append(env, kv)
		}
	}
	return env
}

// routeStatus reports the status of GET path: 404 when the route does not
// exist, 405 for a POST-only route.
func (s *server) routeStatus(t *testing.T, path string) int {
	t.Helper()
	resp, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// postStatus reports the status of POST path with a JSON body: 404 when the
// route does not exist, 503 when its backend is not configured.
func (s *server) postStatus(t *testing.T, path, body string) int {
	t.Helper()
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// ---------------------------------------------------------------- the browser

// page is one browser tab on the app.
type page struct {
	t   *testing.T
	ctx context.Context
	srv *server
}

// openPage opens the app in a new tab of the shared browser, with a
// viewport of width × height, and waits for it to start.
func openPage(t *testing.T, srv *server, width, height int64, mobile bool) *page {
	t.Helper()
	p := openTab(t, srv, width, height, mobile)
	p.waitJS(`document.querySelector('#opt-model') && document.querySelector('#opt-model').options.length > 0`, "the app to start")
	return p
}

// openTab opens the app as openPage does, without waiting for it to start.
func openTab(t *testing.T, srv *server, width, height int64, mobile bool) *page {
	t.Helper()
	return openTabWith(t, srv, width, height, mobile, nil)
}

// openTabWith opens the app as openTab does, calling before (when not nil)
// with the new tab before it loads anything, to listen to its events.
func openTabWith(t *testing.T, srv *server, width, height int64, mobile bool, before func(p *page)) *page {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelT)
	p := &page{t: t, ctx: ctx, srv: srv}
	if before != nil {
		before(p)
	}
	// Collect the page's uncaught errors from its first script on; a test
	// fails if any happened.
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: errorCollector})
		return err
	}))
	t.Cleanup(func() {
		if errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__errors || []`)); err == nil && len(errs) > 0 {
			t.Errorf("the page had uncaught errors:\n%s", strings.Join(errs, "\n"))
		}
	})
	var vopts []chromedp.EmulateViewportOption
	if mobile {
		vopts = append(vopts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	p.do(chromedp.EmulateViewport(width, height, vopts...))
	p.do(chromedp.Navigate(srv.URL + "/"))
	return p
}

const errorCollector = `window.__errors = [];
addEventListener('error', (e) => { window.__errors.push(e.message + ' (' + e.filename + ':' + e.lineno + ')'); });
addEventListener('unhandledrejection', (e) => { window.__errors.push('unhandled rejection: ' + ((e.reason && (e.reason.stack || e.reason.message)) || e.reason)); });`

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.fatal("%v", err)
	}
}

func (p *page) fatal(format string, a ...any) {
	p.t.Helper()
	text, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	p.t.Fatalf(format+"\n--- page text ---\n%s", append(a, text)...)
}

// eval evaluates a JavaScript expression and decodes its value; a promise
// is awaited.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.fatal("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the expression is truthy.
func (p *page) waitJS(expr, what string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		p.fatal("waiting for %s (%s): %v", what, expr, err)
	}
}

// clickWhenThere clicks the element sel as soon as it exists, finding and
// clicking it in one evaluation. Use it for items of lists the app
// re-renders (after a fetch, say): chromedp.Click resolves the node first
// and fails when it is replaced before the click lands.
func (p *page) clickWhenThere(sel string) {
	p.t.Helper()
	p.waitJS(`(() => { const e = document.querySelector(`+js(sel)+`); if (!e) return false; e.click(); return true; })()`, "to click "+sel)
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// choose picks an option of a <select> as a user would, firing change.
func (p *page) choose(sel, value string) {
	p.t.Helper()
	ok := eval[bool](p, `(() => { const s = document.querySelector(`+js(sel)+`);
		if (!s || ![...s.options].some(o => o.value === `+js(value)+` && !o.disabled)) return false;
		s.value = `+js(value)+`; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)
	if !ok {
		p.fatal("no enabled option %q in %s", value, sel)
	}
}

// enter presses Enter in the focused element as a keyboard does: SendKeys
// adds a char event that would type a line break even when the page
// handled the key.
var enter = chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
		}); err != nil {
			return err
		}
	}
	return nil
})

// ask types question into the composer and presses Enter.
func (p *page) ask(question string) {
	p.t.Helper()
	p.do(chromedp.Focus(chromedp.CSS("#composer-input")))
	p.do(chromedp.SendKeys(chromedp.CSS("#composer-input"), question))
	p.do(enter)
	if v := eval[string](p, `document.querySelector('#composer-input').value`); v != "" {
		p.fatal("the question box holds %q after sending", v)
	}
}

// answers returns how many replies have finished (their actions show).
func (p *page) finished() int {
	return eval[int](p, `document.querySelectorAll('#messages .msg.assistant .actions:not([hidden])').length`)
}

// waitAnswers waits until n replies have finished and returns the text of
// the last one.
func (p *page) waitAnswers(n int) string {
	p.t.Helper()
	p.waitJS(fmt.Sprintf(`document.querySelectorAll('#messages .msg.assistant .actions:not([hidden])').length >= %d && document.querySelector('#stop-btn').hidden`, n), fmt.Sprintf("%d finished replies", n))
	return eval[string](p, `[...document.querySelectorAll('#messages .msg.assistant .answer')].pop().innerText`)
}

// dismissNotice closes the offline-model notice, checking that it goes.
func (p *page) dismissNotice() {
	p.t.Helper()
	if eval[bool](p, `document.querySelector('#banner-extractive').hidden`) {
		return
	}
	p.do(chromedp.Click(chromedp.CSS("#banner-extractive-close")))
	p.waitJS(`document.querySelector('#banner-extractive').hidden`, "the notice to close")
}

// screenshot saves the viewport as a PNG: into docs/screenshots with
// -screenshots, into the test's temporary directory otherwise.
func (p *page) screenshot(name string) {
	p.t.Helper()
	// Let transitions and the caret settle.
	p.do(chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`), chromedp.Sleep(250*time.Millisecond))
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.fatal("screenshot: %v", err)
	}
	dir := p.t.TempDir()
	if *updateScreenshots {
		dir = filepath.Join(repoRoot, "docs", "screenshots")
		if len(png) > 300<<10 {
			p.t.Errorf("screenshot %s is %d KB, want < 300 KB", name, len(png)>>10)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s (%d KB)", path, len(png)>>10)
}
