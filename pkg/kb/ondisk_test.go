package kb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// manyChunks is a document of about n chunks at testConfig's chunk size.
func manyChunks(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Paragraph %d tells of topic%d and of topic%d in words of its own.\n\n", i, i, i%97)
	}
	return []byte(b.String())
}

// writeBytes is what this process has written to storage so far
// (/proc/self/io write_bytes); ok is false where that is not known.
func writeBytes() (int64, bool) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// indexSizes returns how many chunks the KB's rows, BM25 index and vector
// index hold.
func indexSizes(t *testing.T, s *Service, name string) (rows, lex, vecs int) {
	t.Helper()
	b, release, err := s.get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := b.db.QueryRow(`SELECT count(*) FROM chunks`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	return rows, b.lex.Len(), b.mem.Len()
}

// copyDir copies a data directory as a crash would leave it (the SQLite
// files with their write-ahead log, the snapshots, the vector log).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			// A snapshot's temporary file, renamed or removed by the
			// background link while the copy ran: what a crash at that
			// moment leaves is the directory without it.
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSmallUploadWritesItsSize: a small upload into a large knowledge base
// writes about its own size (rows and vector log), not the index snapshots;
// a copy of the data taken without a clean stop (as a crash leaves it)
// reopens with the upload's chunks in every index, and so after a delete.
func TestSmallUploadWritesItsSize(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "big", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "big", FileData{Name: "big.txt", Data: manyChunks(3000)})
	waitIndexed(t, s, "big")
	dir := filepath.Join(cfg.Dir, "big")
	snaps := map[string]os.FileInfo{}
	var snapBytes int64
	for _, f := range []string{lexSnapshot, vecSnapshot} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("the first large upload wrote no snapshot %s: %v", f, err)
		}
		snaps[f] = st
		snapBytes += st.Size()
	}
	rows, _, _ := indexSizes(t, s, "big")

	before, known := writeBytes()
	small := []byte("A small upload about zebras and their stripes.\n\nZebras graze on the open savanna.\n")
	mustAdd(t, s, "big", FileData{Name: "small.txt", Data: small})
	if after, _ := writeBytes(); known {
		// The rows (SQLite pages and their write-ahead log) and a few
		// vector-log records; the snapshots are ~snapBytes.
		if w := after - before; w > 256<<10 || w > snapBytes/8 {
			t.Errorf("a %d-byte upload into %d chunks wrote %d bytes (snapshots are %d bytes)", len(small), rows, w, snapBytes)
		}
	}
	for f, st := range snaps {
		now, err := os.Stat(filepath.Join(dir, f))
		if err != nil || !os.SameFile(st, now) || now.Size() != st.Size() || !now.ModTime().Equal(st.ModTime()) {
			t.Errorf("snapshot %s was rewritten by a small upload", f)
		}
	}
	rows, lex, vecs := indexSizes(t, s, "big")
	if lex != rows || vecs != rows {
		t.Fatalf("rows %d, BM25 %d, vectors %d", rows, lex, vecs)
	}

	// As a crash leaves it: the snapshots lack the small file's chunks,
	// the rows and the vector log have them.
	crashed := copyDir(t, cfg.Dir)
	cfg2 := cfg
	cfg2.Dir = crashed
	s2 := newService(t, cfg2, newFakeEmbedder(), nil)
	if r, l, v := indexSizes(t, s2, "big"); r != rows || l != rows || v != rows {
		t.Errorf("reopened: rows %d, BM25 %d, vectors %d; want %d", r, l, v, rows)
	}
	if rs := search(t, s2, "zebras stripes savanna", "big"); len(rs) == 0 || rs[0].File != "small.txt" {
		t.Errorf("reopened: search for the small upload found %v", rs)
	}

	// A delete is in the rows only; the reopened indexes drop the chunks.
	if failed, err := s2.DeleteFiles(ctx, "big", []string{"small.txt"}, true); err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
	}
	r2, _, _ := indexSizes(t, s2, "big")
	cfg3 := cfg
	cfg3.Dir = copyDir(t, crashed)
	s3 := newService(t, cfg3, newFakeEmbedder(), nil)
	if r, l, v := indexSizes(t, s3, "big"); r != r2 || l != r2 || v != r2 || r2 >= rows {
		t.Errorf("reopened after a delete: rows %d, BM25 %d, vectors %d; want %d (< %d)", r, l, v, r2, rows)
	}
}

// TestVectorLogTornTail: a vector log whose last record was cut short (a
// crash mid-append, before the commit) reopens with every committed chunk
// indexed, and the next upload appends after the last whole record.
func TestVectorLogTornTail(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "zy", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "zy", FileData{Name: "big.txt", Data: manyChunks(400)})
	mustAdd(t, s, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)})
	rows, _, _ := indexSizes(t, s, "zy")
	dir := copyDir(t, cfg.Dir)
	f, err := os.OpenFile(filepath.Join(dir, "zy", vecLogFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{36, 'x', 'y', 'z'}) // a record's start, cut off
	f.Close()
	cfg2 := cfg
	cfg2.Dir = dir
	s2 := newService(t, cfg2, newFakeEmbedder(), nil)
	if r, l, v := indexSizes(t, s2, "zy"); r != rows || l != rows || v != rows {
		t.Fatalf("reopened: rows %d, BM25 %d, vectors %d; want %d", r, l, v, rows)
	}
	mustAdd(t, s2, "zy", FileData{Name: "kun.txt", Data: []byte(kunText)})
	rows, _, _ = indexSizes(t, s2, "zy")
	cfg3 := cfg
	cfg3.Dir = copyDir(t, dir)
	s3 := newService(t, cfg3, newFakeEmbedder(), nil)
	if r, l, v := indexSizes(t, s3, "zy"); r != rows || l != rows || v != rows {
		t.Errorf("reopened after another upload: rows %d, BM25 %d, vectors %d; want %d", r, l, v, rows)
	}
	if rs := search(t, s3, "利牝马之贞", "zy"); len(rs) == 0 || rs[0].File != "kun.txt" {
		t.Errorf("search after reopen found %v", rs)
	}
}

// TestLostVectorsEmbeddedAgain: a knowledge base whose index files are lost
// (the rows hold no vectors) embeds its chunks' text again when opened.
func TestLostVectorsEmbeddedAgain(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "zy", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)}, FileData{Name: "kun.txt", Data: []byte(kunText)})
	want := search(t, s, "利牝马之贞", "zy")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{lexSnapshot, vecSnapshot, vecLogFile} {
		os.Remove(filepath.Join(cfg.Dir, "zy", f))
	}
	emb := newFakeEmbedder()
	s2 := newService(t, cfg, emb, nil)
	rows, lex, vecs := indexSizes(t, s2, "zy")
	if rows == 0 || lex != rows || vecs != rows || emb.calls.Load() == 0 {
		t.Fatalf("rows %d, BM25 %d, vectors %d, embedder calls %d", rows, lex, vecs, emb.calls.Load())
	}
	b, release, err := s2.get(ctx, "zy")
	if err != nil {
		t.Fatal(err)
	}
	n := b.mem.graph().Len()
	release()
	if n != rows {
		t.Errorf("the vector index holds %d vectors, want %d", n, rows)
	}
	if got := search(t, s2, "利牝马之贞", "zy"); len(got) != len(want) || got[0].ID != want[0].ID || got[0].Relevance != want[0].Relevance {
		t.Errorf("after re-embedding: %v, want %v", got, want)
	}
}

// waitIndexed waits until the knowledge base's background link is done
// (its snapshots written).
func waitIndexed(t *testing.T, s *Service, name string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := s.Info(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Indexing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still indexing after a minute (%d pending)", name, info.Pending)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStagedVectors: an upload's vectors are searchable as soon as it
// returns, before the background link has put them in the graph; a base
// closed with many of them unlinked keeps them in its vector log, and the
// next open indexes every one.
func TestStagedVectors(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	emb := newFakeEmbedder()
	s := newService(t, cfg, emb, nil)
	if _, err := s.Create(ctx, "st", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, release, err := s.get(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	b.mem.stopLinking() // no background link: the vectors stay staged
	release()
	mustAdd(t, s, "st", FileData{Name: "big.txt", Data: manyChunks(3000)})
	rows, lex, vecs := indexSizes(t, s, "st")
	if rows <= closeLinkMax || lex != rows || vecs != rows {
		t.Fatalf("rows %d (want > %d), BM25 %d, vectors %d", rows, closeLinkMax, lex, vecs)
	}
	info, err := s.Info(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Indexing || info.Pending != rows {
		t.Errorf("Info: indexing %v, %d pending; want true, %d", info.Indexing, info.Pending, rows)
	}
	// Each chunk's own vector finds it (or one of equal vector) first.
	var ids, texts []string
	r, err := b.db.Query(`SELECT id, text FROM chunks ORDER BY seq LIMIT 40`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id, text string
		r.Scan(&id, &text)
		ids, texts = append(ids, id), append(texts, embedText(text))
	}
	r.Close()
	qs, _ := emb.Embed(ctx, texts)
	for i, q := range qs {
		if hits, err := b.mem.Search(ctx, q, 1, Filter{}); err != nil || len(hits) != 1 || hits[0].Score < 0.999 {
			t.Fatalf("chunk %s (staged) finds %v, %v", ids[i], hits, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "st", vecSnapshot)); err == nil {
		t.Error("a graph snapshot was written with its vectors unlinked")
	}
	s2 := newService(t, cfg, emb, nil)
	if r, l, v := indexSizes(t, s2, "st"); r != rows || l != rows || v != rows {
		t.Errorf("reopened: rows %d, BM25 %d, vectors %d; want %d", r, l, v, rows)
	}
	if info, _ := s2.Info(ctx, "st"); info.Indexing || info.Pending != 0 {
		t.Errorf("reopened: indexing %v, %d pending", info.Indexing, info.Pending)
	}
}
