package app

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/kb"
)

// TestKBVocabulary: the knowledge bases' names, document titles and
// section headings are known names, found as the text writes them; a
// document added later is known at the next check.
func TestKBVocabulary(t *testing.T) {
	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = t.TempDir(), false
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	svc, err := NewKB(cfg, NewModels(cfg.LLM))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	v := newKBVocabulary(0) // check on every use
	if got := v.NamesIn("La Margherita"); got != nil {
		t.Errorf("before the knowledge bases are set: %v", got)
	}
	v.set(svc)
	if _, err := svc.Create(ctx, "dining", kb.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	add := func(name, body string) {
		t.Helper()
		if res, err := svc.AddFiles(ctx, "dining", []kb.FileData{{Name: name, Data: []byte(body)}}, kb.AddOptions{}, nil); err != nil || len(res.Failed) > 0 {
			t.Fatalf("add %s: %+v, %v", name, res, err)
		}
	}
	add("guides/la-margherita.md", "# La Margherita\n\n## Garden Terrace\n\nForty seats under the vines.\n\n## 1.2 营业时间\n\n每天中午开门。\n\n## A\n\nx"+
		"\n\n## 《易經》第一卦乾 乾為天 乾上乾下\n\n乾，元亨利貞。")
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"that's the LA MARGHERITA, with its garden terrace", []string{"LA MARGHERITA", "garden terrace"}},
		{"它的营业时间呢？", []string{"营业时间"}}, // the heading without its numbering
		{"A margheritas party", nil}, // whole words only; one-letter headings are no names
		{"出自乾卦（《易經》第一卦乾 乾為天 乾上乾下）", nil},         // a Chinese heading of several parts is a label
		{"the dining guide", []string{"dining"}}, // the knowledge base's name
		{"Golden Wok has a terrace", nil},        // not yet known
	} {
		got := v.NamesIn(tt.text)
		slices.Sort(got)
		slices.Sort(tt.want)
		if !slices.Equal(got, tt.want) {
			t.Errorf("NamesIn(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	add("Golden Wok.txt", "Golden Wok serves Cantonese food.")
	// The next use starts the refresh; uses see the new names once it is
	// done.
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = v.NamesIn("Golden Wok has a terrace"); len(got) > 0 {
			break
		}
	}
	if !slices.Equal(got, []string{"Golden Wok"}) {
		t.Errorf("after the upload: %q, want Golden Wok", got)
	}
	if err := v.close(); err != nil {
		t.Error(err)
	}
}
