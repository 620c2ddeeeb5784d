package main

// `mixchat-eval ingest`: what one upload of large files costs a fresh
// knowledge base — time, memory and disk of the server process — and what
// one small upload into the large base writes.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mixchat/mixchat/internal/childserver"
)

const evalIngestUsage = `mixchat-eval ingest --data FILE [--data FILE ...] [flags]

Starts a mixchat server (the mixchat binary, --bin, as a child process on
loopback with a temporary data directory and the offline embedder), creates
a knowledge base and uploads the files through the API in one request. It
reports, for the server process:
  - seconds, MB/s and chunks/s of the upload (the request's wall time),
    and the server's CPU seconds during it (steadier on a busy machine);
  - the seconds and CPU seconds until the embedded index's graph has taken
    in the upload's vectors in the background (list_knowledge_bases shows
    "indexing"; searches scan the vectors not yet linked meanwhile), and
    MB/s to that point; the figures below are taken after it;
  - peak resident memory (VmHWM, start-up included) and resident memory
    after the upload;
  - the knowledge base's disk while serving (its database, WAL included,
    index files and originals) and after a clean stop;
  - the bytes the server writes to disk (/proc/PID/io write_bytes) for one
    extra small upload (--small bytes of new text) into the large base;
  - retrieval recall: --sample chunks, each searched by its own text
    (search_docs, top 10): recall@1 and recall@10 of the chunk itself.
`

// ingestResult is what "mixchat-eval ingest --json" prints.
type ingestResult struct {
	Files      []string `json:"files"`
	Bytes      int64    `json:"bytes"`
	Seconds    float64  `json:"seconds"`
	CPUSeconds float64  `json:"cpu_seconds"` // the server's user+system time during the upload
	MBPerSec   float64  `json:"mb_per_s"`
	// IndexedSeconds is the time from the upload's start until the graph
	// holds every vector (the background link is done); IndexedCPU the
	// server's CPU seconds in that time.
	IndexedSeconds  float64          `json:"indexed_seconds"`
	IndexedCPU      float64          `json:"indexed_cpu_seconds"`
	IndexedMBPerSec float64          `json:"indexed_mb_per_s"`
	Chunks          int              `json:"chunks"`
	ChunksPerSec    float64          `json:"chunks_per_s"`
	PeakRSSMB       float64          `json:"peak_rss_mb"`
	RSSAfterMB      float64          `json:"rss_after_mb"`
	DiskServingMB   float64          `json:"disk_serving_mb"`
	DiskStoppedMB   float64          `json:"disk_stopped_mb"`
	DiskFiles       map[string]int64 `json:"disk_files_serving"`
	SmallBytes      int              `json:"small_upload_bytes"`
	SmallWritten    int64            `json:"small_upload_written_bytes"`
	SmallSeconds    float64          `json:"small_upload_seconds"`
	Sampled         int              `json:"sampled"`
	RecallAt1       float64          `json:"recall_at_1"`
	RecallAt10      float64          `json:"recall_at_10"`
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runEvalIngest is `mixchat-eval ingest`.
func runEvalIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval ingest", evalIngestUsage, stderr)
	var files multiFlag
	fs.Var(&files, "data", "a file to upload (repeat for several; more may follow the flags)")
	bin := fs.String("bin", "", "mixchat server binary to run (default: mixchat next to this program, else on PATH)")
	sample := fs.Int("sample", 200, "chunks searched by their own text for the recall figures (0: none)")
	small := fs.Int("small", 2048, "size of the extra small upload, bytes (0: none)")
	limit := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	seed := fs.Uint64("seed", 1, "random seed (sample, small upload)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	keep := fs.Bool("keep", false, "keep the data directory")
	env := fs.String("env", "", "extra server environment, comma-separated KEY=VALUE pairs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 {
		return errors.New("eval ingest: name at least one file with --data")
	}
	if *bin == "" {
		b, err := findMixchat()
		if err != nil {
			return fmt.Errorf("eval ingest: %w", err)
		}
		*bin = b
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("eval ingest: %w", err)
		}
		total += st.Size()
	}
	ctx, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()
	dir, err := os.MkdirTemp("", "mixchat-eval-ingest-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintln(stderr, "data directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	var extra []string
	if *env != "" {
		extra = strings.Split(*env, ",")
	}
	p, err := childserver.Start(ctx, *bin, dir, extra, time.Minute)
	if err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	defer p.Kill()
	hc := &http.Client{}
	const kbName = "ingest"
	if err := childserver.CreateKB(ctx, hc, p.URL, kbName); err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	res := ingestResult{Files: files, Bytes: total, SmallBytes: *small}

	cpu0, err := procCPU(p.PID())
	if err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	start := time.Now()
	if err := uploadFiles(ctx, hc, p.URL, kbName, files); err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	res.Seconds = time.Since(start).Seconds()
	cpu1, err := procCPU(p.PID())
	if err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	res.CPUSeconds = cpu1 - cpu0
	res.MBPerSec = float64(total) / 1e6 / res.Seconds
	if err := waitIndexed(ctx, hc, p.URL, kbName); err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	res.IndexedSeconds = time.Since(start).Seconds()
	cpu2, err := procCPU(p.PID())
	if err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	res.IndexedCPU = cpu2 - cpu0
	res.IndexedMBPerSec = float64(total) / 1e6 / res.IndexedSeconds
	st, err := procStatus(p.PID())
	if err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	res.PeakRSSMB, res.RSSAfterMB = st["VmHWM"]/1024, st["VmRSS"]/1024
	kbDir := filepath.Join(dir, "kb", kbName)
	size, parts, err := dirSize(kbDir)
	if err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	res.DiskServingMB, res.DiskFiles = float64(size)/1e6, parts

	rng := rand.New(rand.NewPCG(*seed, *seed^0x5bd1e995))
	var chunks []ingestChunk
	for _, f := range files {
		cs, err := listChunks(ctx, hc, p.URL, kbName, filepath.Base(f))
		if err != nil {
			return fmt.Errorf("eval ingest: %w", err)
		}
		chunks = append(chunks, cs...)
	}
	res.Chunks = len(chunks)
	res.ChunksPerSec = float64(res.Chunks) / res.Seconds

	if *small > 0 {
		data := smallText(rng, *small)
		before, err := procIO(p.PID())
		if err != nil {
			return fmt.Errorf("eval ingest: %w", err)
		}
		t := time.Now()
		if err := childserver.UploadKB(ctx, hc, p.URL, kbName, "small-upload.txt", data); err != nil {
			return fmt.Errorf("eval ingest: small upload: %w", err)
		}
		res.SmallSeconds = time.Since(t).Seconds()
		after, err := procIO(p.PID())
		if err != nil {
			return fmt.Errorf("eval ingest: %w", err)
		}
		res.SmallWritten = after["write_bytes"] - before["write_bytes"]
	}

	if *sample > 0 && len(chunks) > 0 {
		n := min(*sample, len(chunks))
		var at1, at10 int
		for _, i := range rng.Perm(len(chunks))[:n] {
			ids, err := searchIDs(ctx, hc, p.URL, kbName, chunks[i].Text, 10)
			if err != nil {
				return fmt.Errorf("eval ingest: %w", err)
			}
			for j, id := range ids {
				if id == chunks[i].ID {
					if j == 0 {
						at1++
					}
					at10++
					break
				}
			}
		}
		res.Sampled = n
		res.RecallAt1, res.RecallAt10 = float64(at1)/float64(n), float64(at10)/float64(n)
	}

	if err := p.Stop(2 * time.Minute); err != nil {
		return fmt.Errorf("eval ingest: stop: %w", err)
	}
	if size, _, err = dirSize(kbDir); err != nil {
		return fmt.Errorf("eval ingest: %w", err)
	}
	res.DiskStoppedMB = float64(size) / 1e6

	if *asJSON {
		return printJSON(stdout, res)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "files\t%s (%.2f MB)\n", strings.Join(files, ", "), float64(total)/1e6)
	fmt.Fprintf(tw, "upload\t%.2f s, %.2f MB/s, %d chunks, %.0f chunks/s\n", res.Seconds, res.MBPerSec, res.Chunks, res.ChunksPerSec)
	fmt.Fprintf(tw, "server CPU during the upload\t%.2f s\n", res.CPUSeconds)
	fmt.Fprintf(tw, "graph holds every vector\tafter %.2f s (%.2f MB/s), server CPU %.2f s\n", res.IndexedSeconds, res.IndexedMBPerSec, res.IndexedCPU)
	fmt.Fprintf(tw, "peak RSS\t%.0f MB\n", res.PeakRSSMB)
	fmt.Fprintf(tw, "RSS after the upload\t%.0f MB\n", res.RSSAfterMB)
	fmt.Fprintf(tw, "disk while serving\t%.1f MB (%s)\n", res.DiskServingMB, diskParts(res.DiskFiles))
	fmt.Fprintf(tw, "disk after stop\t%.1f MB\n", res.DiskStoppedMB)
	if *small > 0 {
		fmt.Fprintf(tw, "small upload (%d B)\t%.3f MB written, %.2f s\n", res.SmallBytes, float64(res.SmallWritten)/1e6, res.SmallSeconds)
	}
	if res.Sampled > 0 {
		fmt.Fprintf(tw, "recall of chunks by their own text (%d)\t@1 %.3f, @10 %.3f\n", res.Sampled, res.RecallAt1, res.RecallAt10)
	}
	return tw.Flush()
}

// waitIndexed waits until list_knowledge_bases no longer shows the
// knowledge base indexing (its graph holds every vector and its snapshots
// are written).
func waitIndexed(ctx context.Context, hc *http.Client, base, kbName string) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/knowledge_base/list_knowledge_bases?detail=true", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("list knowledge bases: %w", err)
		}
		var out struct {
			Data []struct {
				Name     string `json:"kb_name"`
				Indexing bool   `json:"indexing"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("list knowledge bases: %w", err)
		}
		found, busy := false, false
		for _, k := range out.Data {
			if k.Name == kbName {
				found, busy = true, k.Indexing
			}
		}
		if !found {
			return fmt.Errorf("list knowledge bases: no %s", kbName)
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// uploadFiles uploads the files in one upload_docs request, streaming them
// from disk, and fails unless every one was indexed.
func uploadFiles(ctx context.Context, hc *http.Client, base, kbName string, files []string) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			if err := mw.WriteField("knowledge_base_name", kbName); err != nil {
				return err
			}
			if err := mw.WriteField("override", "true"); err != nil {
				return err
			}
			for _, f := range files {
				fw, err := mw.CreateFormFile("files", filepath.Base(f))
				if err != nil {
					return err
				}
				in, err := os.Open(f)
				if err != nil {
					return err
				}
				_, err = io.Copy(fw, in)
				in.Close()
				if err != nil {
					return err
				}
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/knowledge_base/upload_docs", pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	var env childserver.KBEnvelope
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &env) != nil || env.Code != 200 {
		return fmt.Errorf("upload: status %d: %.500s", resp.StatusCode, bytes.TrimSpace(raw))
	}
	var d struct {
		Failed map[string]string `json:"failed_files"`
	}
	_ = json.Unmarshal(env.Data, &d)
	if len(d.Failed) > 0 {
		return fmt.Errorf("upload: failed: %v", d.Failed)
	}
	return nil
}

// ingestChunk is a chunk as search_docs lists it.
type ingestChunk struct {
	ID   string `json:"id"`
	Text string `json:"page_content"`
}

// listChunks lists a file's chunks (search_docs without a query).
func listChunks(ctx context.Context, hc *http.Client, base, kbName, file string) ([]ingestChunk, error) {
	var out []ingestChunk
	err := childserver.PostJSON(ctx, hc, base+"/knowledge_base/search_docs",
		map[string]any{"knowledge_base_name": kbName, "query": "", "file_name": file}, &out)
	if err != nil {
		return nil, fmt.Errorf("list chunks of %s: %w", file, err)
	}
	return out, nil
}

// searchIDs returns the ids of the top k chunks search_docs finds for q
// (no relevance threshold).
func searchIDs(ctx context.Context, hc *http.Client, base, kbName, q string, k int) ([]string, error) {
	var out []ingestChunk
	err := childserver.PostJSON(ctx, hc, base+"/knowledge_base/search_docs",
		map[string]any{"knowledge_base_name": kbName, "query": q, "top_k": k, "min_relevance": 0}, &out)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	ids := make([]string, len(out))
	for i, c := range out {
		ids[i] = c.ID
	}
	return ids, nil
}

// smallText is n bytes of new English text (words of a small vocabulary
// in random order, sentences of twelve words).
func smallText(rng *rand.Rand, n int) []byte {
	words := strings.Fields("cell protein gene expression tumor patient study model signal pathway receptor dose " +
		"response cohort trial mouse tissue binding factor level increase decrease rate analysis effect")
	var b strings.Builder
	b.WriteString("Small upload\n\n")
	for i := 0; b.Len() < n; i++ {
		w := words[rng.IntN(len(words))]
		if i%12 == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		if i%12 == 11 {
			b.WriteString(". ")
		} else {
			b.WriteString(" ")
		}
	}
	return []byte(b.String()[:n])
}

// procStatus reads the kB figures of /proc/PID/status (VmRSS, VmHWM, ...).
func procStatus(pid int) (map[string]float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			out[k], _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return out, nil
}

// procCPU returns the user and system CPU seconds of a process so far
// (/proc/PID/stat), a figure that a busy machine disturbs less than wall
// time.
func procCPU(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (which may hold spaces) in
	// parentheses: utime and stime are the 14th and 15th of the line.
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// procIO reads /proc/PID/io (rchar, wchar, read_bytes, write_bytes, ...).
func procIO(pid int) (map[string]int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k], _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return out, nil
}

// dirSize is the size of the regular files under dir (apparent sizes), in
// total and by name relative to dir (the content folder counted as one).
func dirSize(dir string) (int64, map[string]int64, error) {
	var total int64
	parts := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a temporary file went away
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if first, _, ok := strings.Cut(rel, string(filepath.Separator)); ok {
			rel = first + "/"
		}
		total += info.Size()
		parts[rel] += info.Size()
		return nil
	})
	return total, parts, err
}

func diskParts(parts map[string]int64) string {
	var s []string
	for k, v := range parts {
		s = append(s, fmt.Sprintf("%s %.1f", k, float64(v)/1e6))
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}
