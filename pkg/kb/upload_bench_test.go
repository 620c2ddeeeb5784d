package kb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// uploadDoc is a small Markdown document of eight sections, numbered w
// and i so that every upload of it differs; its title is of two words
// (en), whose distinctive alias is sought among the base's titles, or
// of one (zh, as the load's documents).
func uploadDoc(lang string, w, i int) []byte {
	var b strings.Builder
	if lang == "zh" {
		fmt.Fprintf(&b, "# 文档%d-%d\n\n", w, i)
	} else {
		fmt.Fprintf(&b, "# Document %d-%d\n\n", w, i)
	}
	for j := range 8 {
		fmt.Fprintf(&b, "## Section %d\n\nNote %d of writer %d, version %d: the quick brown fox jumps over the lazy dog.\n\n", j+1, j, w, i)
	}
	return []byte(b.String())
}

// BenchmarkUploadInto1000 replaces one small document of a knowledge base
// of 1,000 (an upload with override, as the load's clients make): the
// upload's whole path without HTTP, its structure index built.
func BenchmarkUploadInto1000(b *testing.B) {
	for _, lang := range []string{"en", "zh"} {
		b.Run(lang, func(b *testing.B) { benchUpload(b, lang) })
	}
}

func benchUpload(b *testing.B, lang string) {
	const files = 1000
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	s, err := newWithStore(cfg, retrieve.NewHashEmbedder(0), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, "bench", CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var fds []FileData
	for w := range files {
		fds = append(fds, FileData{Name: fmt.Sprintf("w%d.md", w), Data: uploadDoc(lang, w, 0)})
	}
	if _, err := s.AddFiles(ctx, "bench", fds, AddOptions{}, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Documents(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		w := i % files
		res, err := s.AddFiles(ctx, "bench", []FileData{{Name: fmt.Sprintf("w%d.md", w), Data: uploadDoc(lang, w, i)}}, AddOptions{Override: true}, nil)
		if err != nil || len(res.Added) != 1 {
			b.Fatal(err, res.Failed)
		}
	}
}
