package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header http.Header
		want   time.Duration
		ok     bool
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
		{nil, 0, false},
	}
	for _, tt := range tests {
		got, ok := retryAfter(tt.header, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := NewClient(ClientConfig{RetryBackoff: 100 * time.Millisecond})
	for try, want := range []time.Duration{100, 200, 400, 800} {
		want *= time.Millisecond
		for range 20 {
			d, ok := c.backoff(try, nil)
			if !ok || d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", try, d, want/2, want)
			}
		}
	}
	if d, _ := c.backoff(40, nil); d > maxBackoff {
		t.Errorf("backoff(40) = %v, want at most %v", d, maxBackoff)
	}
	if _, ok := c.backoff(0, http.Header{"Retry-After": {"3600"}}); ok {
		t.Error("an hour's Retry-After was accepted")
	}
}
