package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// consoleErrors collects the errors a tab reports in its console: console
// calls of level error, failed resource loads (a 4xx or 5xx reply is one)
// and uncaught exceptions.
type consoleErrors struct {
	mu   sync.Mutex
	msgs []string
}

func (c *consoleErrors) add(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, fmt.Sprintf(format, a...))
}

func (c *consoleErrors) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// watchConsole listens to p's console from before its first load.
func watchConsole(p *page) *consoleErrors {
	c := &consoleErrors{}
	if err := chromedp.Listen(p.ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdplog.EventEntryAdded:
			if e := ev.Entry; e != nil && (e.Level == cdplog.EntryLevelError || e.Level == cdplog.EntryLevelWarning) {
				c.add("log %s: %s %s", e.Level, e.Text, e.URL)
			}
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError || ev.Type == cdpruntime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range ev.Args {
					if a.Description != "" {
						parts = append(parts, a.Description)
					} else {
						parts = append(parts, string(a.Value))
					}
				}
				c.add("console.%s: %s", ev.Type, strings.Join(parts, " "))
			}
		case *cdpruntime.EventExceptionThrown:
			if d := ev.ExceptionDetails; d != nil {
				c.add("exception: %s", d.Text)
			}
		}
	}); err != nil {
		p.t.Fatal(err)
	}
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{})
		return err
	}))
	return c
}

var statusRE = regexp.MustCompile(`msg=request .*status=(\d{3})`)

// errorStatuses returns the server's access-log lines with a 4xx or 5xx
// status.
func (s *server) errorStatuses() []string {
	var bad []string
	for _, line := range strings.Split(s.log.String(), "\n") {
		if m := statusRE.FindStringSubmatch(line); m != nil && m[1][0] >= '4' {
			bad = append(bad, line)
		}
	}
	return bad
}

// TestCleanLoad: loading the app and asking one question, with the demo as
// a new user has it, makes no request the server refuses and no error in
// the browser's console.
func TestCleanLoad(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	srv := startServerWith(t, t.TempDir(), "demo: true\n")
	var console *consoleErrors
	p := openTabWith(t, srv, 1366, 900, false, func(p *page) { console = watchConsole(p) })
	p.waitJS(`document.querySelector('#opt-model') && document.querySelector('#opt-model').options.length > 0`, "the app to start")
	p.dismissNotice()
	// The demo knowledge base suggests its questions.
	p.waitJS(`document.querySelectorAll('#messages .welcome .examples button').length === 3`, "the demo's suggested questions")
	p.ask("What does the judgement of Qian say?")
	p.waitAnswers(1)
	if bad := srv.errorStatuses(); len(bad) > 0 {
		t.Errorf("the server refused requests of the page:\n%s", strings.Join(bad, "\n"))
	}
	if errs := console.list(); len(errs) > 0 {
		t.Errorf("the browser's console has errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestNoDemoPage: with demo: false and an empty data directory the page
// holds nothing of the Zhouyi: no suggested question, no example, in
// either language.
func TestNoDemoPage(t *testing.T) {
	srv := startServer(t) // demo: false
	p := openPage(t, srv, 1366, 900, false)
	p.waitJS(`document.querySelector('#messages .welcome')`, "the empty state")
	if n := eval[int](p, `document.querySelectorAll('#messages .welcome .examples').length`); n != 0 {
		t.Errorf("the empty state suggests questions with no knowledge base")
	}
	for _, lang := range []string{"en", "zh"} {
		p.choose("#lang-select", lang)
		// The text of the page, its placeholders and its hidden dialogs.
		text := eval[string](p, `document.body.innerText + ' ' + [...document.querySelectorAll('[placeholder]')].map(e => e.placeholder).join(' ') + ' ' + document.documentElement.innerHTML`)
		for _, w := range []string{"周易", "易学", "卦", "Zhouyi", "zhouyi", "I Ching", "Qian"} {
			if strings.Contains(text, w) {
				t.Errorf("%s page holds %q", lang, w)
			}
		}
	}
}

// TestExportConversation: a conversation exports as Markdown (its question
// and answer under headings) and as JSON (its stored messages).
func TestExportConversation(t *testing.T) {
	srv := startServer(t)
	downloads := t.TempDir()
	p := openPage(t, srv, 1366, 900, false)
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads,
		})
		return err
	}))
	p.choose("#lang-select", "en")
	p.dismissNotice()
	p.choose("#opt-mode", "llm")
	p.ask("Remember that my name is Ada.")
	p.waitAnswers(1)
	p.waitJS(`document.querySelectorAll('#conv-list .conv').length === 1`, "the conversation in the sidebar")
	read := func(ext string) string {
		t.Helper()
		p.clickWhenThere(`#conv-list .conv [data-export="` + ext + `"]`)
		var b []byte
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			matches, _ := filepath.Glob(filepath.Join(downloads, "*."+ext))
			if len(matches) == 1 {
				if b, _ = os.ReadFile(matches[0]); len(b) > 0 {
					return string(b)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("no .%s file was downloaded", ext)
		return ""
	}
	md := read("md")
	if !strings.Contains(md, "## You") || !strings.Contains(md, "Remember that my name is Ada.") || !strings.Contains(md, "## Expert") {
		t.Errorf("the Markdown export:\n%s", md)
	}
	var exported struct {
		Conversation struct {
			ID string `json:"id"`
		} `json:"conversation"`
		Messages []storedMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(read("json")), &exported); err != nil {
		t.Fatal(err)
	}
	if exported.Conversation.ID == "" || len(exported.Messages) != 2 || exported.Messages[0].Content != "Remember that my name is Ada." {
		t.Errorf("the JSON export: %+v", exported)
	}
}

// TestEditAndAskAgain: a sent question is edited in place and asked again:
// the edited question and its answer follow in the same conversation.
func TestEditAndAskAgain(t *testing.T) {
	srv := startServer(t)
	p := openPage(t, srv, 1366, 900, false)
	p.choose("#lang-select", "en")
	p.dismissNotice()
	p.choose("#opt-mode", "llm")
	p.ask("Remember that my name is Ada.")
	p.waitAnswers(1)
	id := p.conversationID()
	p.clickWhenThere(`#messages .turn:first-child [data-action="edit-question"]`)
	p.waitJS(`document.querySelector('#messages .turn:first-child .edit-input')`, "the edit form")
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#messages .turn:first-child .edit-input').value = 'Remember that my name is Bob.'`))
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#messages .turn:first-child .edit-form').requestSubmit()`))
	p.waitAnswers(2)
	users := eval[[]string](p, `[...document.querySelectorAll('#messages .msg.user .bubble')].map(e => e.textContent)`)
	if len(users) != 2 || users[0] != "Remember that my name is Ada." || users[1] != "Remember that my name is Bob." {
		t.Errorf("questions shown %q", users)
	}
	if msgs := srv.messages(t, id); len(msgs) != 4 || msgs[2].Content != "Remember that my name is Bob." {
		t.Errorf("stored messages %+v, want the edited question asked in the same conversation", msgs)
	}
}

// TestConversationSettings: a conversation's system prompt, temperature,
// top_k and score threshold reach the model's requests (recorded at the
// test model).
func TestConversationSettings(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), "demo: true\n")
	p := openPage(t, srv, 1366, 900, false)
	p.choose("#lang-select", "en")
	p.dismissNotice()
	p.choose("#opt-mode", "mix")
	p.choose("#opt-model", "scripted")
	p.do(chromedp.Click(chromedp.CSS("#settings-button")))
	p.waitJS(`document.querySelector('#settings-dialog').open`, "the settings dialog")
	p.do(chromedp.Evaluate[chromedp.Void](`(() => {
		document.querySelector('#set-system').value = 'Answer as a ship captain would.';
		document.querySelector('#set-temperature').value = '0.3';
		document.querySelector('#set-topk').value = '1';
		document.querySelector('#set-threshold').value = '1.5';
		document.querySelector('#settings-form').requestSubmit(); })()`))
	p.waitJS(`!document.querySelector('#settings-dialog').open`, "the settings saved")
	p.ask("乾卦的卦辞是什么？")
	p.waitAnswers(1)

	var system, temperature, kbPrompt bool
	for _, req := range srv.LLM.Requests() {
		if req.Temperature > 0.29 && req.Temperature < 0.31 {
			temperature = true
		}
		for _, m := range req.Messages {
			system = system || strings.Contains(m.Content, "Answer as a ship captain would.")
			if strings.Contains(m.Content, "[1]") && strings.Contains(m.Content, "乾") && !strings.Contains(m.Content, "Answer 1") && !strings.Contains(m.Content, "回答1") {
				kbPrompt = true
				if strings.Contains(m.Content, "[2]") {
					t.Errorf("top_k 1, but a prompt cites a second chunk:\n%s", m.Content)
				}
			}
		}
	}
	if !system {
		t.Error("no request carries the conversation's system prompt")
	}
	if !temperature {
		t.Error("no request carries the temperature 0.3")
	}
	if !kbPrompt {
		t.Error("no knowledge-base prompt found among the requests")
	}
	// The settings stay with the conversation after a reload.
	p.do(chromedp.Reload())
	p.waitAnswers(1)
	p.do(chromedp.Click(chromedp.CSS("#settings-button")))
	p.waitJS(`document.querySelector('#settings-dialog').open && document.querySelector('#set-topk').value === '1'`, "the settings kept")
}
