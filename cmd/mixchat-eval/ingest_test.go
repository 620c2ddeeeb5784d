package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalIngestShort: one upload of a generated file into a fresh
// knowledge base reports its figures, and the small upload into it writes
// far less than the base's indexes.
func TestEvalIngestShort(t *testing.T) {
	bin := mixchatBinary(t)
	var doc strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&doc, "Abstract %d studies protein%d in cohort%d with a method of its own.\n\n", i, i, i%53)
	}
	file := filepath.Join(t.TempDir(), "corpus.txt")
	if err := os.WriteFile(file, []byte(doc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := runEvalIngest(context.Background(), []string{"--bin", bin, "--data", file, "--sample", "20", "--json"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	var res ingestResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.Chunks < 1000 || res.Seconds <= 0 || res.PeakRSSMB <= 0 || res.DiskServingMB <= 0 || res.DiskStoppedMB <= 0 {
		t.Errorf("figures missing: %+v", res)
	}
	if res.Sampled != 20 || res.RecallAt10 < 0.9 {
		t.Errorf("recall of chunks by their own text: %d sampled, @10 %.2f", res.Sampled, res.RecallAt10)
	}
	index := res.DiskFiles["vectors.hnsw"] + res.DiskFiles["lexical.bin"]
	if index == 0 || res.SmallWritten > index/4 {
		t.Errorf("the small upload wrote %d bytes; the indexes are %d", res.SmallWritten, index)
	}
}
