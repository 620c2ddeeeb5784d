package app

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/mixchat/mixchat/internal/childserver"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/text"
)

// TestFusedRepliesCite: mix_chat served with the offline model, its
// answerers' replies fused, carries [n] markers, and each points into the
// reply's sources list ("docs", numbered from 1) at a source that holds
// words of the sentence it marks; no sentence is said twice, whatever its
// script.
func TestFusedRepliesCite(t *testing.T) {
	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = t.TempDir(), true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := New(ctx, cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	hs := httptest.NewServer(a.Server.Handler())
	defer hs.Close()

	marker := regexp.MustCompile(`\[(\d+)\]`)
	fused := 0
	for _, q := range []string{"乾卦的卦辞是什么？", "什么是太极？", "坤卦的彖传怎么说？"} {
		var reply struct {
			Text  string `json:"text"`
			Fused bool   `json:"fused"`
			Docs  []struct {
				From    string `json:"from"`
				Snippet string `json:"snippet"`
			} `json:"docs"`
		}
		if err := childserver.PostJSON(ctx, hs.Client(), hs.URL+"/chat/mix_chat", map[string]any{"query": q, "stream": false}, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Fused {
			fused++
		}
		if !marker.MatchString(reply.Text) {
			t.Errorf("%s: reply %q carries no [n] marker", q, reply.Text)
		}
		seen := map[string]bool{}
		for _, s := range text.Sentences(reply.Text) {
			words := letters(marker.ReplaceAllString(s, ""))
			if seen[words] {
				t.Errorf("%s: reply %q says %q twice", q, reply.Text, s)
			}
			seen[words] = true
			for _, m := range marker.FindAllStringSubmatch(s, -1) {
				n, _ := strconv.Atoi(m[1])
				if n < 1 || n > len(reply.Docs) {
					t.Errorf("%s: reply %q cites [%d]; the sources list has %d", q, reply.Text, n, len(reply.Docs))
					continue
				}
				if !sharesRun(letters(reply.Docs[n-1].Snippet), words, 4) {
					t.Errorf("%s: sentence %q cites [%d], a source without its words: %.80q", q, s, n, reply.Docs[n-1].Snippet)
				}
			}
		}
	}
	if fused == 0 {
		t.Error("no reply was fused; the test needs fused replies")
	}
}

// letters is s's letters and digits, folded to simplified script.
func letters(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, text.Fold(s))
}

// sharesRun reports whether hay holds some n consecutive runes of needle.
func sharesRun(hay, needle string, n int) bool {
	r := []rune(needle)
	for i := 0; i+n <= len(r); i++ {
		if strings.Contains(hay, string(r[i:i+n])) {
			return true
		}
	}
	return false
}
