package search

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func fixed(rs ...Result) Searcher {
	return SearcherFunc(func(ctx context.Context, q string, n int) ([]Result, error) {
		out := append([]Result(nil), rs...)
		if len(out) > n {
			out = out[:n]
		}
		return out, nil
	})
}

func failing(err error) Searcher {
	return SearcherFunc(func(ctx context.Context, q string, n int) ([]Result, error) { return nil, err })
}

func TestMultiMergesAndDeduplicates(t *testing.T) {
	a := fixed(
		Result{Title: "A1", URL: "https://www.example.com/page/", Snippet: ""},
		Result{Title: "A2", URL: "https://a.example/2"},
	)
	b := fixed(
		Result{Title: "B1", URL: "http://example.com/page#top", Snippet: "from b"},
		Result{Title: "B2", URL: "https://b.example/2", Engine: "b-sub"},
		Result{Title: "B3", URL: "https://b.example/3"},
	)
	m := NewMulti("web", NamedSearcher{"a", a}, NamedSearcher{"b", b})
	rs, err := m.Search(context.Background(), "q", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Title+"/"+r.Engine)
	}
	if want := "A1/a,b A2/a B2/b-sub B3/b"; strings.Join(got, " ") != want {
		t.Errorf("merged %q, want %q", strings.Join(got, " "), want)
	}
	if rs[0].Snippet != "from b" {
		t.Errorf("duplicate's snippet not used to fill an empty one: %q", rs[0].Snippet)
	}
	if rs, _ := m.Search(context.Background(), "q", 2); len(rs) != 2 {
		t.Errorf("n=2 gave %d", len(rs))
	}
}

func TestMultiOneFailingDoesNotFailOthers(t *testing.T) {
	bad := &ProviderError{Provider: "bing", Status: 401, Kind: ErrAuth}
	m := NewMulti("web",
		NamedSearcher{"bing", failing(bad)},
		NamedSearcher{"searx", fixed(Result{Title: "ok", URL: "https://ok.example/"})},
	)
	rs, errs := m.SearchAll(context.Background(), "q", 5)
	if len(rs) != 1 || rs[0].Title != "ok" {
		t.Errorf("results %v", rs)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrAuth) {
		t.Errorf("errors %v", errs)
	}
	if rs, err := m.Search(context.Background(), "q", 5); err != nil || len(rs) != 1 {
		t.Errorf("Search: %v, %v", rs, err)
	}

	all := NewMulti("web",
		NamedSearcher{"bing", failing(bad)},
		NamedSearcher{"brave", failing(&ProviderError{Provider: "brave", Kind: ErrTimeout})},
	)
	_, err := all.Search(context.Background(), "q", 5)
	if !errors.Is(err, ErrAuth) || !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "bing") || !strings.Contains(err.Error(), "brave") {
		t.Errorf("all failing: %v", err)
	}
}

func TestURLKey(t *testing.T) {
	same := [][2]string{
		{"https://www.Example.com/a/", "http://example.com/a"},
		{"https://example.com:443/a#x", "https://example.com/a"},
	}
	for _, p := range same {
		if urlKey(p[0]) != urlKey(p[1]) {
			t.Errorf("%s and %s differ: %s %s", p[0], p[1], urlKey(p[0]), urlKey(p[1]))
		}
	}
	differ := [][2]string{
		{"https://example.com/a?x=1", "https://example.com/a?x=2"},
		{"https://example.com/a", "https://example.com/b"},
	}
	for _, p := range differ {
		if urlKey(p[0]) == urlKey(p[1]) {
			t.Errorf("%s and %s merged", p[0], p[1])
		}
	}
}
