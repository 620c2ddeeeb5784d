package app

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
)

// TestKBVocabulary: the knowledge bases' names, document titles and
// section headings are known names, found as the text writes them; a
// document added later is known once the build its upload started is
// done.
func TestKBVocabulary(t *testing.T) {
	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = t.TempDir(), false
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	v := newKBVocabulary(time.Hour, 0) // only changes start a build, at once
	svc, err := NewKB(cfg, NewModels(cfg.LLM), kb.WithOnChange(v.changed))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
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
		if err := v.wait(ctx); err != nil {
			t.Fatal(err)
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
	if got := v.NamesIn("Golden Wok has a terrace"); !slices.Equal(got, []string{"Golden Wok"}) {
		t.Errorf("after the upload: %q, want Golden Wok", got)
	}
	if err := svc.Delete(ctx, "dining"); err != nil {
		t.Fatal(err)
	}
	if err := v.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.NamesIn("Golden Wok has a terrace"); got != nil {
		t.Errorf("after the knowledge base was deleted: %q", got)
	}
	if err := v.close(); err != nil {
		t.Error(err)
	}
}

// slowKBs is a catalog of one knowledge base whose chunk listing blocks
// until release is closed.
type slowKBs struct {
	release chan struct{}
	listed  chan struct{} // closed when the listing starts
	once    sync.Once
}

func (s *slowKBs) Names(ctx context.Context) ([]string, error) { return []string{"guides"}, nil }

func (s *slowKBs) Files(ctx context.Context, name string) ([]kb.FileInfo, error) {
	return []kb.FileInfo{{Name: "golden-wok.md", Hash: "h", Chunks: 1}}, nil
}

func (s *slowKBs) ListChunks(ctx context.Context, name, file string, metadata map[string]any) ([]kb.Chunk, error) {
	s.once.Do(func() { close(s.listed) })
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []kb.Chunk{{File: "golden-wok.md", Metadata: map[string]any{"section": "Golden Wok > Garden Terrace"}}}, nil
}

// TestKBVocabularyNeverWaited: while the vocabulary is being built (its
// catalog's chunk listing blocks), the follow-up rewrite goes on without
// it, as often as it likes, and a later one sees the names once the build
// is done; closing cancels a build in flight.
func TestKBVocabularyNeverWaited(t *testing.T) {
	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = t.TempDir(), false
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	v := newKBVocabulary(0, 0) // every use asks for a check, too
	store, err := openStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, err := newMemory(cfg, store, NewModels(cfg.LLM), v, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	slow := &slowKBs{release: make(chan struct{}), listed: make(chan struct{})}
	v.set(slow) // at start
	<-slow.listed
	history := []llm.Message{
		{Role: llm.RoleUser, Content: "Which place has a garden terrace?"},
		{Role: llm.RoleAssistant, Content: "The Golden Wok has a garden terrace with forty seats."},
	}
	for i := range 3 {
		errc := make(chan error, 1)
		go func() {
			_, _, err := m.Condense(ctx, history, "Is it open on Sundays?")
			errc <- err
		}()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			close(slow.release) // let the waiting follow-up end
			t.Fatalf("follow-up %d waits for the vocabulary being built", i)
		}
		if got := v.NamesIn("the Golden Wok"); got != nil {
			t.Errorf("names %q before the build is done", got)
		}
	}
	close(slow.release)
	if err := v.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.NamesIn("the golden wok, its garden terrace"); !slices.Equal(got, []string{"golden wok", "garden terrace"}) {
		t.Errorf("after the build: %q", got)
	}

	// A build in flight is cancelled by close.
	v2 := newKBVocabulary(time.Hour, time.Hour)
	slow2 := &slowKBs{release: make(chan struct{}), listed: make(chan struct{})}
	v2.set(slow2)
	<-slow2.listed
	done := make(chan struct{})
	go func() { v2.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close waits for a build blocked in the catalog")
	}
}

// countingKBs is a catalog of one knowledge base whose documents change
// with every listing; it counts the builds (chunk listings).
type countingKBs struct{ listed, builds atomic.Int32 }

func (c *countingKBs) Names(ctx context.Context) ([]string, error) { return []string{"guides"}, nil }

func (c *countingKBs) Files(ctx context.Context, name string) ([]kb.FileInfo, error) {
	n := c.listed.Add(1)
	return []kb.FileInfo{{Name: "golden-wok.md", Hash: strconv.Itoa(int(n)), Chunks: 1}}, nil
}

func (c *countingKBs) ListChunks(ctx context.Context, name, file string, metadata map[string]any) ([]kb.Chunk, error) {
	c.builds.Add(1)
	return nil, nil
}

// TestKBVocabularySettles: changes reported close together (an upload of
// many files in many requests) make one build after the first.
func TestKBVocabularySettles(t *testing.T) {
	ctx := context.Background()
	v := newKBVocabulary(time.Hour, time.Second)
	defer v.close()
	c := &countingKBs{}
	v.set(c)
	if err := v.wait(ctx); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		v.changed("guides")
		time.Sleep(20 * time.Millisecond) // each would start a build of its own
	}
	if err := v.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.builds.Load(); got != 2 {
		t.Errorf("%d builds, want 2: the first, and one for the five changes", got)
	}
}
