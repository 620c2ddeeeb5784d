package search

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

func TestSplitPassages(t *testing.T) {
	para := strings.Repeat("天行健，君子以自强不息。", 10) // 120 characters, 10 sentences
	in := para + "\n" + para + "\n" + strings.Repeat("长", 130)
	ps := splitPassages(in, 50)
	if len(ps) < 6 {
		t.Fatalf("%d passages: %q", len(ps), ps)
	}
	var joined strings.Builder
	for i, p := range ps {
		if n := utf8.RuneCountInString(p); n > 50 {
			t.Errorf("passage %d has %d characters, limit 50: %q", i, n, p)
		}
		if !strings.HasSuffix(p, "。") && !strings.HasPrefix(p, "长") {
			t.Errorf("passage %d does not end on a sentence: %q", i, p)
		}
		joined.WriteString(strings.ReplaceAll(p, "\n", ""))
	}
	if want := strings.ReplaceAll(in, "\n", ""); joined.String() != want {
		t.Errorf("passages lose or repeat text:\n%q\nwant\n%q", joined.String(), want)
	}
}

// longPage is an HTML page of many paragraphs mixing Chinese and English
// sentences, one of them about the question "坤卦 square earth".
func longPage() string {
	var b strings.Builder
	b.WriteString("<html><head><title>周易</title></head><body><h1>周易</h1>")
	for i := range 30 {
		fmt.Fprintf(&b, "<p>第%d段：天行健，君子以自强不息。The dragon number %d is hidden! Do not act yet? 潜龙勿用；见龙在田。</p>", i, i)
		if i == 17 {
			b.WriteString("<p>坤卦讲大地。The square earth bears all things. 地势坤，君子以厚德载物。</p>")
		}
	}
	b.WriteString("</body></html>")
	return b.String()
}

// endsSentence reports whether s ends at a sentence boundary.
func endsSentence(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return strings.ContainsRune("。！？；.!?", r)
}

// TestLongPageSplitBySharedSplitter: a long fetched page is cut into
// passages by text.Splitter, the knowledge bases' splitter, at sentence
// boundaries, and the passages most relevant to the question are kept.
func TestLongPageSplitBySharedSplitter(t *testing.T) {
	const size = 120
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/search" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"query":%q,"results":[{"url":"http://%s/page","title":"周易","content":"snippet"}]}`, r.URL.Query().Get("q"), r.Host)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, longPage())
	}))
	defer srv.Close()

	// The page's text splits exactly as the shared splitter splits it, every
	// passage within the size and ending at a sentence boundary.
	_, pageText := extractHTML([]byte(longPage()), &url.URL{Scheme: "http", Host: "example.com", Path: "/page"})
	ps := splitPassages(pageText, size)
	var want []string
	for _, c := range (text.Splitter{Size: size, LineParagraphs: true}).Split(pageText) {
		want = append(want, c.Text)
	}
	if !slices.Equal(ps, want) {
		t.Fatalf("passages differ from text.Splitter's:\n%q\nwant\n%q", ps, want)
	}
	if len(ps) < 10 {
		t.Fatalf("a %d-character page gave %d passages", utf8.RuneCountInString(pageText), len(ps))
	}
	inPage := 0
	for _, r := range pageText {
		if !unicode.IsSpace(r) {
			inPage++
		}
	}
	inPassages := 0
	for i, p := range ps {
		if n := utf8.RuneCountInString(p); n > size {
			t.Errorf("passage %d has %d characters > %d: %q", i, n, size, p)
		}
		if !endsSentence(p) {
			t.Errorf("passage %d does not end at a sentence boundary: %q", i, p)
		}
		for _, r := range p {
			if !unicode.IsSpace(r) {
				inPassages++
			}
		}
	}
	if inPassages != inPage {
		t.Errorf("passages hold %d non-space characters, the page %d", inPassages, inPage)
	}

	// Through the search service: the page is read, split, and the passage
	// about the question kept.
	cfg := readingConfig(srv.URL, size)
	s := newTestService(t, cfg, &fakeModel{reply: citeFirst})
	ret, err := s.Lookup(context.Background(), LookupRequest{Query: "坤卦 square earth", TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(ret.Results) != 1 {
		t.Fatalf("results %+v", ret.Results)
	}
	c := ret.Results[0].Content
	if !slices.Contains(ps, c) || !strings.Contains(c, "坤卦讲大地。The square earth bears all things.") || !endsSentence(c) {
		t.Errorf("kept %q, want the shared splitter's passage about 坤卦", c)
	}
}

func TestRankPassages(t *testing.T) {
	docs := [][]string{
		{"天尊地卑，乾坤定矣。", "是故易有太极，是生两仪。"},
		{"两仪生四象，四象生八卦。", "天行健，君子以自强不息。"},
	}
	got := rankPassages("易有太極 兩儀", docs, 2) // traditional question, simplified text
	if len(got) != 2 || got[0].Doc != 0 || got[0].Pos != 1 || got[1].Doc != 1 || got[1].Pos != 0 || got[0].Score <= got[1].Score {
		t.Errorf("ranked %+v", got)
	}
	if all := rankPassages("量子", docs, 0); len(all) != 4 || all[0].Score != 0 || all[0].Doc != 0 || all[0].Pos != 0 {
		t.Errorf("no match: %+v, want all four in document order with score 0", all)
	}
}
