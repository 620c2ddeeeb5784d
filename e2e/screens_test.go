package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// screensDir is where TestScreens writes its screenshots: the folder
// MIXCHAT_SCREENSHOTS names, else the test's temporary directory.
func screensDir(t *testing.T) string {
	if d := os.Getenv("MIXCHAT_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// shoot saves the viewport as dir/name.png.
func (p *page) shoot(dir, name string) {
	p.t.Helper()
	p.do(chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`), chromedp.Sleep(250*time.Millisecond))
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.fatal("screenshot: %v", err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s (%d KB)", path, len(png)>>10)
}

// TestScreens takes the screenshots of the main screens at a laptop's and
// a phone's size, with the demo as a new user has it: the chat, the
// three-panel answer of mix mode and the knowledge-base page. On the
// phone the composer's controls take two rows at most and the model's
// name shows whole.
func TestScreens(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	dir := screensDir(t)
	srv := startServerWith(t, t.TempDir(), "demo: true\n")
	for _, size := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"desktop", 1366, 900, false}, {"phone", 390, 844, true}} {
		t.Run(size.name, func(t *testing.T) {
			p := openPage(t, srv, size.width, size.height, size.mobile)
			p.choose("#lang-select", "en")
			p.dismissNotice()
			p.waitJS(`document.querySelector('#messages .welcome')`, "the empty state")
			if size.mobile {
				rows := eval[int](p, `new Set([...document.querySelectorAll('#options > .opt')].filter(e => !e.hidden && e.offsetParent).map(e => Math.round(e.getBoundingClientRect().top))).size`)
				if rows > 2 {
					t.Errorf("the composer's controls take %d rows on a phone, want 2 at most", rows)
				}
				clipped := eval[bool](p, `(() => { const s = document.querySelector('#opt-model'); const r = s.getBoundingClientRect();
					const c = document.createElement('canvas').getContext('2d'); c.font = getComputedStyle(s).font;
					return r.right > innerWidth || c.measureText(s.options[s.selectedIndex].text).width + 24 > r.width; })()`)
				if clipped {
					t.Error("the model's name is cut off on a phone")
				}
			}
			p.shoot(dir, fmt.Sprintf("chat-%s", size.name))

			p.ask("乾卦的卦辞是什么？")
			p.waitAnswers(1)
			p.do(chromedp.Evaluate[chromedp.Void](`(() => { const t = document.querySelector('#messages .turn:last-child .trace'); if (t) t.open = true;
				document.querySelectorAll('#messages .turn:last-child .answerer').forEach(d => d.open = true);
				document.querySelector('#messages .turn:last-child').scrollIntoView({block: 'start'}); })()`))
			p.shoot(dir, fmt.Sprintf("answer-%s", size.name))

			// A knowledge-base source opens the passage it cites,
			// highlighted in its file; a local search result has a link.
			if n := eval[int](p, `document.querySelectorAll('#messages .turn:last-child [data-answerer="search"] .sources-list button.source-open').length`); n == 0 {
				t.Error("the local search results have no link")
			}
			p.clickWhenThere(`#messages .turn:last-child .answer ~ * .sources-list button.source-open, #messages .turn:last-child .sources-list button.source-open`)
			p.waitJS(`document.querySelector('#passage-dialog').open && document.querySelector('#passage-where').textContent.includes('六十四卦卦辞.md')`, "the passage in its file")
			if mark := eval[string](p, `document.querySelector('#passage-text mark').textContent`); !strings.Contains(mark, "元") {
				t.Errorf("the highlighted passage is %q", mark)
			}
			if whole := eval[int](p, `document.querySelector('#passage-text').textContent.length`); whole <= len("乾卦的卦辞是：乾，元亨，利貞。")+10 {
				t.Errorf("the dialog shows %d characters: not the file around the passage", whole)
			}
			p.shoot(dir, fmt.Sprintf("passage-%s", size.name))
			p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#passage-dialog').close()`))

			p.do(chromedp.Navigate(srv.URL + "/#/kb"))
			p.clickWhenThere(`#kb-list a, #kb-list button`)
			p.waitJS(`!document.querySelector('#kb-panel').hidden && document.querySelectorAll('#kb-files tr.file').length > 0`, "the knowledge base's files")
			// The file table: name, size, chunk count, date and status.
			row := eval[[]string](p, `[...document.querySelector('#kb-files tr.file').cells].map(c => c.textContent.trim())`)
			if len(row) < 5 || !strings.Contains(row[1], "B") || row[2] == "" || row[2] == "0" || row[3] == "" || row[4] != "indexed" {
				t.Errorf("file row %q, want name, size, chunks, date, status", row)
			}
			p.shoot(dir, fmt.Sprintf("kb-%s", size.name))
		})
	}
}

// TestKBDescriptionAndRebuild: the knowledge-base page edits the
// description and rebuilds the index with its progress, and a search
// still finds the text afterwards.
func TestKBDescriptionAndRebuild(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), "demo: true\n")
	p := openPage(t, srv, 1366, 900, false)
	p.choose("#lang-select", "en")
	p.do(chromedp.Navigate(srv.URL + "/#/kb"))
	p.clickWhenThere(`#kb-list a, #kb-list button`)
	p.waitJS(`document.querySelector('#kb-index-facts').textContent.includes('chunks')`, "the index facts")
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#kb-info').value = 'The classic of changes, for tests'; document.querySelector('#kb-info-form').requestSubmit()`))
	p.waitJS(`document.querySelector('.toast') && document.querySelector('.toast').textContent.includes('Saved')`, "the description saved")
	p.clickWhenThere(`#kb-rebuild`)
	p.waitJS(`document.querySelector('#confirm-dialog').open`, "the rebuild confirmation")
	p.clickWhenThere(`#confirm-ok`)
	p.waitJS(`document.querySelector('#rebuild-label').textContent.startsWith('Index rebuilt')`, "the rebuild to finish")
	if v := eval[float64](p, `document.querySelector('#rebuild-progress').value`); v != 100 {
		t.Errorf("progress %v after the rebuild, want 100", v)
	}
	p.do(chromedp.Reload())
	p.waitJS(`document.querySelector('#kb-info').value === 'The classic of changes, for tests'`, "the description kept")
	// The structure profile: the demo's base names the demo's; none can
	// be chosen and saved, and the choice is kept.
	p.waitJS(`document.querySelector('#kb-profile').value === 'zhouyi'`, "the demo's profile shown")
	p.choose("#kb-profile", "")
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#kb-info-form').requestSubmit()`))
	p.waitJS(`document.querySelectorAll('.toast').length > 0`, "the profile saved")
	p.do(chromedp.Reload())
	p.waitJS(`document.querySelector('#kb-info').value !== '' && document.querySelector('#kb-profile').value === ''`, "no profile kept")
	p.choose("#kb-profile", "zhouyi")
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#kb-info-form').requestSubmit()`))
	p.waitJS(`document.querySelectorAll('.toast').length > 0`, "the profile saved")
	p.do(chromedp.Reload())
	p.waitJS(`document.querySelector('#kb-profile').value === 'zhouyi'`, "the demo's profile named again")
	resp, err := http.Post(srv.URL+"/knowledge_base/search_docs", "application/json", strings.NewReader(`{"knowledge_base_name":"zhouyi","query":"乾卦的卦辞","top_k":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var hits []struct {
		PageContent string `json:"page_content"`
	}
	json.NewDecoder(resp.Body).Decode(&hits)
	resp.Body.Close()
	if len(hits) == 0 {
		t.Error("the rebuilt index finds nothing")
	}
}

// searchDocs returns the texts search_docs finds for query in kb.
func (s *server) searchDocs(t *testing.T, kb, query string) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"knowledge_base_name": kb, "query": query, "top_k": 5})
	resp, err := http.Post(s.URL+"/knowledge_base/search_docs", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var hits []struct {
		PageContent string `json:"page_content"`
	}
	json.NewDecoder(resp.Body).Decode(&hits)
	var out []string
	for _, h := range hits {
		out = append(out, h.PageContent)
	}
	return out
}

// TestKBChunks: a file's chunks open from the file table; one edited and
// saved is what the next search finds, one deleted is gone.
func TestKBChunks(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), "demo: true\n")
	p := openPage(t, srv, 1366, 900, false)
	p.choose("#lang-select", "en")
	p.do(chromedp.Navigate(srv.URL + "/#/kb"))
	p.clickWhenThere(`#kb-list a, #kb-list button`)
	p.clickWhenThere(`#kb-files button[data-chunks="yizhuan-simplified/序卦传-上篇.txt"]`)
	p.waitJS(`document.querySelector('#chunks-dialog').open && document.querySelectorAll('#chunk-list li').length === 3`, "the file's three chunks")
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#chunk-list li:first-child textarea').value = 'Zebracorns are the first chunk now.'`))
	p.clickWhenThere(`#chunk-list li:first-child [data-action="save-chunk"]`)
	p.waitJS(`document.querySelector('#kb-files button[data-chunks="yizhuan-simplified/序卦传-上篇.txt"]') && document.querySelector('#chunk-list li:first-child textarea').value.startsWith('Zebracorns')`, "the edit saved")
	found := false
	for deadline := time.Now().Add(15 * time.Second); !found && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, text := range srv.searchDocs(t, "zhouyi", "Zebracorns") {
			found = found || strings.Contains(text, "Zebracorns are the first chunk now.")
		}
	}
	if !found {
		t.Error("the search does not find the edited chunk")
	}
	p.clickWhenThere(`#chunk-list li:last-child [data-action="delete-chunk"]`)
	p.waitJS(`document.querySelectorAll('#chunk-list li').length === 2`, "the chunk deleted")
	p.waitJS(`document.querySelector('#kb-files button[data-chunks="yizhuan-simplified/序卦传-上篇.txt"]').textContent === '2'`, "the file table to count 2 chunks")
}

// TestKBEmbedderChange: a knowledge base indexed with another embedder
// than the server's now says so on its page and offers the server's; the
// rebuild uses it, and afterwards the page and search agree.
func TestKBEmbedderChange(t *testing.T) {
	dir := t.TempDir()
	first := startServerWith(t, dir, "demo: true\n")
	first.Stop()
	up := llmtest.NewServer(t, llmtest.WithEmbedDim(64))
	srv := startServerWith(t, dir, fmt.Sprintf("demo: true\nembed:\n  base_url: %q\n  model: embed-64\n", up.URL()))
	p := openPage(t, srv, 1366, 900, false)
	p.choose("#lang-select", "en")
	p.do(chromedp.Navigate(srv.URL + "/#/kb"))
	p.clickWhenThere(`#kb-list a, #kb-list button`)
	p.waitJS(`!document.querySelector('#kb-embed-note').hidden`, "the note that the embedder changed")
	if note := eval[string](p, `document.querySelector('#kb-embed-note').textContent`); !strings.Contains(note, "embed-64") || !strings.Contains(note, "hash-") {
		t.Errorf("note %q, want both embedders named", note)
	}
	if v := eval[string](p, `document.querySelector('#kb-embed-model').value`); v != "embed-64" {
		t.Errorf("embedder offered %q, want the server's embed-64", v)
	}
	p.clickWhenThere(`#kb-rebuild`)
	p.waitJS(`document.querySelector('#confirm-dialog').open`, "the rebuild confirmation")
	p.clickWhenThere(`#confirm-ok`)
	p.waitJS(`document.querySelector('#rebuild-label').textContent.startsWith('Index rebuilt')`, "the rebuild to finish")
	p.waitJS(`document.querySelector('#kb-index-facts').textContent.includes('embed-64') && document.querySelector('#kb-embed-note').hidden`, "the facts to name the new embedder")
	if hits := srv.searchDocs(t, "zhouyi", "乾卦的卦辞"); len(hits) == 0 {
		t.Error("the base rebuilt with the new embedder finds nothing")
	}
}
