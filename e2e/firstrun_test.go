package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestFirstRun is a new user's first visit: `mixchat serve` on an empty
// data directory with the demo on, a Chinese browser. The interface is in
// Chinese without being asked, the demo's zhouyi knowledge base is
// selected, and the first example question gets 乾's judgement from it.
func TestFirstRun(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	srv := startServerWith(t, t.TempDir(), "demo: true\n")
	p := openTab(t, srv, 1280, 860, false)
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
			Source: `Object.defineProperty(navigator, 'languages', { get: () => ['zh-CN', 'zh', 'en'] });`,
		})
		return err
	}))
	p.do(chromedp.Navigate(srv.URL + "/"))
	p.waitJS(`document.querySelector('#opt-model') && document.querySelector('#opt-model').options.length > 0`, "the app to start")

	if lang := eval[string](p, `document.documentElement.lang`); lang != "zh-CN" {
		t.Errorf("page language %q on a Chinese browser, want zh-CN", lang)
	}
	if v := eval[string](p, `document.querySelector('#lang-select').value`); v != "zh" {
		t.Errorf("language menu shows %q, want zh", v)
	}
	p.waitJS(`document.querySelector('#opt-kb-list input[value="zhouyi"]')?.checked === true`, "the zhouyi knowledge base selected")
	p.dismissNotice()

	p.ask("乾卦的卦辞是什么？")
	reply := p.waitAnswers(1)
	folded := strings.NewReplacer("貞", "贞", "，", "", ",", "", " ", "").Replace(reply)
	if !strings.Contains(folded, "元亨利贞") {
		t.Errorf("the reply %q lacks 元亨利貞", reply)
	}
	p.screenshot("first-run")

	// The user's own choice wins over the browser's and the server's.
	p.choose("#lang-select", "en")
	p.do(chromedp.Click(chromedp.CSS("#opt-kb > summary")))
	p.clickWhenThere(`#opt-kb-list input[value="zhouyi"]`) // unselect
	p.do(chromedp.Reload())
	p.waitJS(`document.querySelector('#opt-model') && document.querySelector('#opt-model').options.length > 0`, "the app to start again")
	if lang := eval[string](p, `document.documentElement.lang`); lang != "en" {
		t.Errorf("page language %q after choosing English, want en", lang)
	}
	p.waitJS(`document.querySelector('#opt-kb-list input[value="zhouyi"]')?.checked === false`, "zhouyi to stay unselected")
}

// TestPhoneNotice: on a phone the offline-model notice takes two lines, not
// a quarter of the screen, and a tap shows all of it.
func TestPhoneNotice(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	srv := startServer(t)
	p := openPage(t, srv, 390, 844, true)
	p.choose("#lang-select", "zh")
	p.waitJS(`!document.querySelector('#banner-extractive').hidden`, "the offline-model notice")
	h := eval[float64](p, `document.querySelector('#banner-extractive').getBoundingClientRect().height`)
	if h > 60 {
		t.Errorf("the notice is %.0f px high on an 844 px phone screen, want two lines (≤ 60 px)", h)
	}
	p.screenshot("phone-notice")
	p.do(chromedp.Click(chromedp.CSS("#banner-extractive p")))
	p.waitJS(fmt.Sprintf(`document.querySelector('#banner-extractive').getBoundingClientRect().height > %f`, h+5), "the notice to open")
}
