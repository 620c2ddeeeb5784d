package kb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/shareddata"
	"github.com/mixchat/mixchat/pkg/retrieve"
)

// sciFactChunks splits SciFact's corpus as one text file, the way an
// upload at the default settings does, and embeds it with the offline
// embedder.
func sciFactChunks(tb testing.TB) ([]string, [][]float32) {
	ctx := context.Background()
	docs, err := LoadContext(ctx, "scifact.txt", sciFactText(tb))
	if err != nil {
		tb.Fatal(err)
	}
	cfg := DefaultConfig()
	sp, _, err := cfg.splitter(SplitOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	pieces := sp.Split(docs)
	texts := make([]string, len(pieces))
	ids := make([]string, len(pieces))
	for i, p := range pieces {
		texts[i] = embedText(p.Text)
		ids[i] = fmt.Sprintf("c%06d", i)
	}
	vecs, err := retrieve.NewHashEmbedder(0).Embed(ctx, texts)
	if err != nil {
		tb.Fatal(err)
	}
	return ids, vecs
}

// BenchmarkSciFactBuild builds the embedded index's graph of SciFact's
// 43k chunks (the ingest eval's upload, without the server) and reports
// the build's inserts/s and CPU seconds, then the search list size and
// recall tuning reaches and the time of a search.
func BenchmarkSciFactBuild(b *testing.B) {
	ids, vecs := sciFactChunks(b)
	for b.Loop() {
		start, cpu0 := time.Now(), cpuSeconds()
		h := retrieve.NewHNSW(len(vecs[0]), memHNSW)
		for s := 0; s < len(ids); s += ingestGroup {
			e := min(s+ingestGroup, len(ids))
			if err := h.AddBatch(ids[s:e], vecs[s:e]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(ids))/time.Since(start).Seconds(), "inserts/s")
		b.ReportMetric(cpuSeconds()-cpu0, "cpu-s")
		ef, recall := h.Tune()
		b.ReportMetric(float64(ef), "ef")
		b.ReportMetric(recall, "recall")
		qs, n := time.Now(), 0
		for i := 0; i < len(vecs); i += 43 {
			h.Search(vecs[i], 10, nil)
			n++
		}
		b.ReportMetric(float64(time.Since(qs).Microseconds())/float64(n), "µs/search")
		// The snapshot with int8 vectors (kb.vector_encoding), read back:
		// recall@10 of SciFact's queries against exact float32 search.
		var f32, i8 bytes.Buffer
		h.WriteTo(&f32)
		h.Encoded(retrieve.Int8).WriteTo(&i8)
		b.ReportMetric(float64(f32.Len())/1e6, "MB-float32")
		b.ReportMetric(float64(i8.Len())/1e6, "MB-int8")
		g, err := retrieve.ReadHNSW(&i8)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(recallVsExact(b, ids, vecs, h), "recall10-float32")
		b.ReportMetric(recallVsExact(b, ids, vecs, g), "recall10-int8")
	}
}

// recallVsExact is h's recall@10 on SciFact's queries against exact
// search of the float32 vectors.
func recallVsExact(tb testing.TB, ids []string, vecs [][]float32, h *retrieve.HNSW) float64 {
	dir := shareddata.Path(tb, "scifact")
	raw, err := os.ReadFile(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	var texts []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var q struct{ Text string }
		json.Unmarshal([]byte(line), &q)
		texts = append(texts, embedText(q.Text))
	}
	qv, _ := retrieve.NewHashEmbedder(0).Embed(context.Background(), texts)
	flat := retrieve.NewFlat(len(vecs[0]))
	for i := range ids {
		flat.Add(ids[i], vecs[i])
	}
	found, total := 0, 0
	for _, q := range qv {
		want := map[string]bool{}
		for _, x := range flat.Search(q, 10, nil) {
			want[x.ID] = true
		}
		for _, x := range h.Search(q, 10, nil) {
			if want[x.ID] {
				found++
			}
		}
		total += len(want)
	}
	return float64(found) / float64(total)
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
