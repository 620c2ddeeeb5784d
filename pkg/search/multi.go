package search

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
)

// Multi is an engine that asks several engines at once and merges their
// results: interleaved by rank (the first result of each engine, then the
// second...), de-duplicated by URL. An engine that fails does not fail the
// others; only when all fail does Search fail, with all their errors.
type Multi struct {
	name    string
	members []NamedSearcher
}

// NamedSearcher is a Searcher with the name results and errors carry.
type NamedSearcher struct {
	Name     string
	Searcher Searcher
}

// NewMulti combines members into one engine called name.
func NewMulti(name string, members ...NamedSearcher) *Multi {
	return &Multi{name: name, members: members}
}

// Search returns up to n merged results; see Multi.
func (m *Multi) Search(ctx context.Context, query string, n int) ([]Result, error) {
	rs, errs := m.SearchAll(ctx, query, n)
	if len(errs) == len(m.members) && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rs, nil
}

// SearchAll asks every member and returns the merged results together with
// the members' errors (one per failed member, nil when all succeeded).
func (m *Multi) SearchAll(ctx context.Context, query string, n int) ([]Result, []error) {
	lists := make([][]Result, len(m.members))
	errs := make([]error, len(m.members))
	var wg sync.WaitGroup
	for i, mem := range m.members {
		wg.Go(func() {
			rs, err := mem.Searcher.Search(ctx, query, n)
			if err != nil {
				errs[i] = err
				return
			}
			for j := range rs {
				if rs[j].Engine == "" {
					rs[j].Engine = mem.Name
				}
			}
			lists[i] = rs
		})
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	return Merge(n, lists...), failed
}

// Merge interleaves result lists by rank and drops later duplicates (same
// URL up to scheme, "www.", trailing slash and fragment). A duplicate's
// engine is added to the kept result's Engine, and its snippet fills an
// empty one. n <= 0 keeps all.
func Merge(n int, lists ...[]Result) []Result {
	out := []Result{}
	at := map[string]int{}
	for rank := 0; ; rank++ {
		more := false
		for _, l := range lists {
			if rank >= len(l) {
				continue
			}
			more = true
			r := l[rank]
			key := urlKey(r.URL)
			if i, ok := at[key]; ok {
				k := &out[i]
				if r.Engine != "" && !containsField(k.Engine, r.Engine) {
					k.Engine += "," + r.Engine
				}
				if k.Snippet == "" {
					k.Snippet = r.Snippet
				}
				if k.Content == "" {
					k.Content = r.Content
				}
				continue
			}
			at[key] = len(out)
			out = append(out, r)
		}
		if !more {
			break
		}
	}
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

func containsField(list, f string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == f {
			return true
		}
	}
	return false
}

// urlKey normalises an address for de-duplication.
func urlKey(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return strings.TrimRight(strings.TrimSpace(raw), "/")
	}
	host := strings.TrimPrefix(strings.ToLower(u.Host), "www.")
	host = strings.TrimSuffix(strings.TrimSuffix(host, ":80"), ":443")
	p := strings.TrimRight(u.EscapedPath(), "/")
	key := host + p
	if u.RawQuery != "" {
		key += "?" + u.RawQuery
	}
	return key
}
