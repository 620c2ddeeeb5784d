package kb

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
	"github.com/mixchat/mixchat/pkg/retrieve"
)

// sciFactText is SciFact's corpus as one text file, title and text per
// abstract, as the ingest eval uploads it.
func sciFactText(tb testing.TB) []byte {
	dir := shareddata.Path(tb, "scifact")
	f, err := os.Open(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var d struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			tb.Fatal(err)
		}
		sb.WriteString(d.Title + "\n" + d.Text + "\n\n")
	}
	return []byte(sb.String())
}

// BenchmarkIngestSciFactFile adds SciFact's corpus as one 7.8 MB text file
// to a new knowledge base (load, split, embed with the offline embedder,
// store, BM25, graph, snapshots: the upload's whole path without HTTP) and
// reports MB/s.
func BenchmarkIngestSciFactFile(b *testing.B) {
	data := sciFactText(b)
	ctx := context.Background()
	emb := retrieve.NewHashEmbedder(0)
	for b.Loop() {
		b.StopTimer()
		cfg := DefaultConfig()
		cfg.Dir = b.TempDir()
		s, err := newWithStore(cfg, emb, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Create(ctx, "scifact", CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.AddFiles(ctx, "scifact", []FileData{{Name: "scifact.txt", Data: data}}, AddOptions{}, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(data))/1e6/(b.Elapsed().Seconds()/float64(b.N)), "MB/s")
}
