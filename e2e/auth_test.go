package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// createKey makes an API key with `mixchat keys create` on the server's
// store and returns its token.
func (s *server) createKey(t *testing.T, user, role string) string {
	t.Helper()
	cmd := exec.Command(binPath, "keys", "--config", s.Config, "create", "--user", user, "--role", role)
	cmd.Env = cleanEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mixchat keys create: %v\n%s", err, stderr.String())
	}
	tok := strings.TrimSpace(string(out))
	if tok == "" {
		t.Fatalf("mixchat keys create printed no token:\n%s", stderr.String())
	}
	return tok
}

// TestAPIKey uses a server with authentication on: the app asks for a key,
// says when the server refuses one, works with a good one (kept across a
// reload), shows what a user key may not do, and forgets the key on
// request.
func TestAPIKey(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), "auth:\n  enabled: true\n")
	if srv.routeStatus(t, "/conversations") != 401 {
		t.Skip("the server does not ask for a key with auth.enabled: true")
	}
	key := srv.createKey(t, "alice", "user")

	p := openTab(t, srv, 1280, 800, false)
	p.waitJS(`document.querySelector('#key-dialog').open && !document.querySelector('#banner-auth').hidden`, "the API key dialog")

	// A wrong key: the dialog comes back with the server's reason.
	p.do(chromedp.SendKeys(chromedp.CSS("#key-input"), "mx-not-a-key\r"))
	p.waitJS(`document.querySelector('#key-dialog').open && !document.querySelector('#key-error').hidden`, "the refusal")
	if msg := eval[string](p, `document.querySelector('#key-error').textContent`); !strings.Contains(msg, "invalid") {
		t.Errorf("refusal %q does not give the server's reason", msg)
	}
	p.screenshot("api-key")

	// The right key: the app starts and answers.
	p.do(chromedp.SendKeys(chromedp.CSS("#key-input"), key+"\r"))
	p.waitJS(`!document.querySelector('#key-dialog').open && document.querySelector('#opt-model').options.length > 0 && document.querySelector('#banner-auth').hidden`, "the app to start with the key")
	p.dismissNotice()
	p.choose("#opt-mode", "llm")
	p.ask("乾卦的卦辞是什么？")
	p.waitAnswers(1)
	if eval[bool](p, `!!document.querySelector('#messages .notice.error')`) {
		p.fatal("the question failed with the key")
	}
	p.waitJS(`document.querySelectorAll('#conv-list .conv').length === 1`, "the conversation in the sidebar")

	// The key is remembered: a reload needs no dialog.
	p.do(chromedp.Reload())
	p.waitJS(`document.querySelector('#opt-model').options.length > 0 && document.querySelectorAll('#messages .msg.assistant').length === 1`, "the conversation after a reload")
	if eval[bool](p, `document.querySelector('#key-dialog').open`) {
		t.Error("the key dialog opened again after a reload")
	}

	// A user key may not manage knowledge bases: the server's reason shows.
	if srv.routeStatus(t, "/knowledge_base/list_knowledge_bases") != 404 {
		p.do(chromedp.Click(chromedp.CSS("#kb-link")))
		p.waitJS(`!document.querySelector('#view-kb').hidden`, "the knowledge-base view")
		p.do(chromedp.SendKeys(chromedp.CSS("#kb-new-name"), "not_mine\r"))
		p.waitJS(`!document.querySelector('#kb-create-error').hidden`, "the refusal to create")
		if msg := eval[string](p, `document.querySelector('#kb-create-error').textContent`); !strings.Contains(msg, "admin") {
			t.Errorf("refusal %q does not say an admin key is needed", msg)
		}
	}

	// Forget the key: the app asks again.
	p.do(chromedp.Click(chromedp.CSS("#key-button")))
	p.waitJS(`document.querySelector('#key-dialog').open && !document.querySelector('#key-forget').hidden`, "the key dialog with Forget")
	p.do(chromedp.Evaluate[chromedp.Void](`window.__before = true`))
	p.do(chromedp.Click(chromedp.CSS("#key-forget")))
	p.waitAfterReload(`document.querySelector('#key-dialog')?.open && document.querySelector('#key-button').hidden`, "the dialog after forgetting the key")
	if v := eval[string](p, `localStorage.getItem('mixchat.apiKey') || sessionStorage.getItem('mixchat.apiKey') || ''`); v != "" {
		t.Errorf("the key is still stored: %q", v)
	}
}

// waitAfterReload waits for the page to reload and expr to hold on the new
// page: evaluations that fail while the page navigates are retried.
func (p *page) waitAfterReload(expr, what string) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ok, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`!window.__before && !!(`+expr+`)`))
		if err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.fatal("waiting for %s after a reload (%s)", what, expr)
}
