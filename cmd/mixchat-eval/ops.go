package main

// The operations benchmarks: `mixchat-eval crash` (kill -9 during ingestion
// and streamed replies, then check the stores), `mixchat-eval faults`
// (upstream failures, see eval_ops_faults.go) and `mixchat-eval load` (many
// concurrent conversations, see eval_ops_load.go). Everything runs on
// loopback against test upstreams the command starts itself.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/childserver"
	"github.com/mixchat/mixchat/internal/sseclient"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// streamResult is what a streamed /chat/chat reply delivered.
type streamResult struct {
	done   bool // the final event arrived
	turnID int64
	text   string
}

// chatStream sends a streamed /chat/chat request and reads it to the end
// (or until the connection breaks). started is called once the first event
// arrives.
func chatStream(ctx context.Context, hc *http.Client, base, conv, query string, started func()) (streamResult, error) {
	var res streamResult
	b, _ := json.Marshal(map[string]any{"query": query, "conversation_id": conv, "stream": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/chat", bytes.NewReader(b))
	if err != nil {
		return res, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return res, fmt.Errorf("chat: status %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
	}
	type chatEvent struct {
		Text   string `json:"text"`
		Done   bool   `json:"done"`
		TurnID int64  `json:"turn_id"`
		Error  string `json:"error"`
	}
	var text strings.Builder
	first := true
	err = sseclient.Decode(resp.Body, func(ev chatEvent) (bool, error) {
		if first && started != nil {
			started()
		}
		first = false
		if ev.Error != "" {
			return true, fmt.Errorf("chat: %s", ev.Error)
		}
		text.WriteString(ev.Text)
		if ev.Done {
			res.done, res.turnID = true, ev.TurnID
		}
		return false, nil
	})
	res.text = text.String()
	if err != nil {
		return res, err
	}
	if !res.done {
		return res, errors.New("chat: stream ended without its final event")
	}
	return res, nil
}

const evalCrashUsage = `mixchat-eval crash [flags]

Kills a mixchat server (the mixchat binary, --bin, run as a child process
of this command, SQLite stores in a temporary data directory) with SIGKILL at a random moment during a
knowledge-base upload or a streamed /chat/chat reply, --n times, and after
every kill checks the stores before starting the server again on the same
data:
  - the conversation store opens cleanly and passes SQLite's integrity check;
  - no half-written turn (every turn has its question and its answer), turn
    ids are 1..n without gaps, and every turn whose final event reached the
    client is stored;
  - the knowledge base is as before or fully updated: every file's chunk
    count equals its chunk rows, no chunk without its file, the file's hash
    is the one it had before the upload or the uploaded one, a content hash
    always has the same chunk count, and the original on disk matches the
    indexed hash;
  - the next server start opens both stores and answers /healthz.
The chat model and the embeddings are test upstreams this command runs on
loopback, slowed down so that kills land inside the work.
`

// runEvalCrash is `mixchat-eval crash`.
func runEvalCrash(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval crash", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, evalCrashUsage, "\nFlags:\n"); fs.PrintDefaults() }
	n := fs.Int("n", 100, "number of kills")
	limit := fs.Duration("timeout", 15*time.Minute, "give up after this long")
	seed := fs.Uint64("seed", 1, "random seed (kill moments, contents)")
	bin := fs.String("bin", "", "mixchat server binary to run (default: mixchat next to this program, else on PATH)")
	keep := fs.Bool("keep", false, "keep the data directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 {
		return errors.New("eval crash: --n must be at least 1")
	}
	if *bin == "" {
		b, err := findMixchat()
		if err != nil {
			return fmt.Errorf("eval crash: %w", err)
		}
		*bin = b
	}
	ctx, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()
	dir, err := os.MkdirTemp("", "mixchat-eval-crash-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintln(stdout, "data directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	tb := &evalTB{}
	defer tb.close()
	answer := strings.Repeat("乾卦六爻皆阳，象征天，其德刚健，君子以自强不息。", 4)
	chatUp := llmtest.NewServer(tb, llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: answer, ChunkDelay: 4 * time.Millisecond}
	}))
	embedUp := llmtest.NewServer(tb, llmtest.WithLatency(15*time.Millisecond), llmtest.WithEmbedDim(64))
	env := []string{
		"MIXCHAT_LLM_BASE_URL=" + chatUp.URL(), "MIXCHAT_LLM_MODEL=test", "MIXCHAT_LLM_MAX_RETRIES=0",
		"MIXCHAT_EMBED_BASE_URL=" + embedUp.URL(), "MIXCHAT_EMBED_MODEL=test-embed", "MIXCHAT_EMBED_BATCH_SIZE=4",
	}
	c := &crashRun{
		dir: dir, bin: *bin, env: env, rng: rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15)),
		hc:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		prev:   map[string]string{},
		chunks: map[string]int{},
		hashes: map[string]bool{},
		acked:  map[string]int64{},
	}
	start := time.Now()
	if err := c.calibrate(ctx); err != nil {
		return fmt.Errorf("eval crash: %w", err)
	}
	fmt.Fprintf(stdout, "calibration: an upload takes %s, a streamed reply %s; kills land uniformly in [0, 1.2×] of that\n",
		c.ingestTime.Round(time.Millisecond), c.streamTime.Round(time.Millisecond))
	for i := 0; i < *n; i++ {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(stdout, "stopped after %d runs: %v\n", i, err)
			break
		}
		if err := c.once(ctx, i); err != nil {
			c.print(stdout, time.Since(start))
			return fmt.Errorf("eval crash: run %d: %w", i+1, err)
		}
	}
	c.print(stdout, time.Since(start))
	if c.halfTurns+c.kbBad+c.lostAcked+c.openFailures > 0 {
		for _, p := range c.problems[:min(len(c.problems), 20)] {
			fmt.Fprintln(stdout, "  problem:", p)
		}
		return errors.New("eval crash: inconsistencies found")
	}
	return nil
}

// crashRun is the state of one `eval crash`.
type crashRun struct {
	dir, bin string
	env      []string
	rng      *rand.Rand
	hc       *http.Client

	ingestTime, streamTime time.Duration

	prev   map[string]string // file → hash at the last check
	chunks map[string]int    // content hash → chunk count, as first seen
	hashes map[string]bool   // hashes of every content uploaded
	acked  map[string]int64  // conversation → last turn id whose final event arrived

	runs, ingestKills, streamKills, finishedFirst int
	cleanOpens, openFailures                      int
	halfTurns, kbBad, lostAcked, turnsChecked     int
	problems                                      []string
}

const crashKB = "crash"

var crashFiles = []string{"a.md", "b.md", "c.md"}

// content makes a fresh document of about 40 chunks.
func (c *crashRun) content(name string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s %d\n\n", name, c.rng.Uint64())
	for i := range 40 {
		fmt.Fprintf(&b, "## 第%d节\n\n", i+1)
		for range 6 {
			fmt.Fprintf(&b, "乾卦第%d句，编号%d：天行健，君子以自强不息。", i, c.rng.IntN(1_000_000))
		}
		b.WriteString("\n\n")
	}
	return []byte(b.String())
}

func hashOf(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// calibrate starts the server, creates the KB, times uploads and streamed
// replies (keeping the quickest), and stops it gracefully.
func (c *crashRun) calibrate(ctx context.Context) error {
	p, err := childserver.Start(ctx, c.bin, c.dir, c.env, 30*time.Second)
	if err != nil {
		return err
	}
	defer p.Stop(10 * time.Second)
	if err := childserver.CreateKB(ctx, c.hc, p.URL, crashKB); err != nil {
		return err
	}
	for _, f := range crashFiles {
		data := c.content(f)
		c.hashes[hashOf(data)] = true
		t := time.Now()
		if err := childserver.UploadKB(ctx, c.hc, p.URL, crashKB, f, data); err != nil {
			return err
		}
		if d := time.Since(t); c.ingestTime == 0 || d < c.ingestTime {
			c.ingestTime = d
		}
	}
	// The quickest of three: a busy machine slows some runs down, and
	// kills past the end of the work test nothing.
	for range 3 {
		t := time.Now()
		res, err := chatStream(ctx, c.hc, p.URL, "crash-0", "乾卦是什么意思？", nil)
		if err != nil {
			return err
		}
		if d := time.Since(t); c.streamTime == 0 || d < c.streamTime {
			c.streamTime = d
		}
		c.acked["crash-0"] = res.turnID
	}
	if err := p.Stop(10 * time.Second); err != nil {
		return err
	}
	return c.check()
}

// once starts the server, starts an upload or a streamed reply, kills the
// server at a random moment and checks the stores.
func (c *crashRun) once(ctx context.Context, i int) error {
	p, err := childserver.Start(ctx, c.bin, c.dir, c.env, 30*time.Second)
	if err != nil {
		c.openFailures++
		c.problems = append(c.problems, fmt.Sprintf("run %d: server start: %v", i+1, err))
		return err
	}
	c.cleanOpens++
	c.runs++
	ingest := i%2 == 0
	d := c.streamTime
	if ingest {
		d = c.ingestTime
	}
	delay := time.Duration(c.rng.Float64() * 1.2 * float64(d))
	var wg sync.WaitGroup
	var finished bool
	var res streamResult
	conv := fmt.Sprintf("crash-%d", i%5)
	var data []byte
	var file string
	if ingest {
		file = crashFiles[c.rng.IntN(len(crashFiles))]
		data = c.content(file)
		c.hashes[hashOf(data)] = true
	}
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		if ingest {
			err = childserver.UploadKB(ctx, c.hc, p.URL, crashKB, file, data)
		} else {
			var r streamResult
			r, err = chatStream(ctx, c.hc, p.URL, conv, fmt.Sprintf("第%d问：乾卦是什么意思？", i), nil)
			mu.Lock()
			res = r
			mu.Unlock()
		}
		mu.Lock()
		finished = err == nil
		mu.Unlock()
	}()
	time.Sleep(delay)
	mu.Lock()
	done := finished
	mu.Unlock()
	p.Kill()
	wg.Wait()
	switch {
	case done:
		c.finishedFirst++
	case ingest:
		c.ingestKills++
	default:
		c.streamKills++
	}
	if finished && !ingest && res.done {
		c.acked[conv] = max(c.acked[conv], res.turnID)
	}
	if ingest {
		return c.checkUpload(file, hashOf(data))
	}
	return c.check()
}

// checkUpload checks the stores after a killed upload of file with hash
// want: the file must hold its previous hash or want.
func (c *crashRun) checkUpload(file, want string) error {
	before := c.prev[file]
	if err := c.check(); err != nil {
		return err
	}
	if got := c.prev[file]; got != before && got != want {
		c.kbBad++
		c.problems = append(c.problems, fmt.Sprintf("%s: hash %.12s is neither the previous %.12s nor the uploaded %.12s", file, got, before, want))
	}
	return nil
}

func (c *crashRun) problem(bad *int, format string, args ...any) {
	*bad++
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// check opens both stores in this process and checks them.
func (c *crashRun) check() error {
	ctx := context.Background()
	// The conversation store, through its own Open (migrations, pragmas).
	st, err := sqlite.OpenConversations(ctx, filepath.Join(c.dir, "mixchat.db"))
	if err != nil {
		c.problem(&c.openFailures, "open conversation store: %v", err)
		return nil
	}
	for conv, ack := range c.acked {
		turns, err := st.Turns(ctx, conv, 0)
		if err != nil {
			c.problem(&c.halfTurns, "turns of %s: %v", conv, err)
			continue
		}
		for j, t := range turns {
			c.turnsChecked++
			if t.ID != int64(j+1) {
				c.problem(&c.halfTurns, "%s: turn %d has id %d", conv, j+1, t.ID)
			}
			if t.Question.Role != "user" || t.Question.Content == "" || t.Answer.Role != "assistant" || t.Answer.Content == "" {
				c.problem(&c.halfTurns, "%s turn %d: question %q/%q answer %q/%.20q", conv, t.ID, t.Question.Role, t.Question.Content, t.Answer.Role, t.Answer.Content)
			}
		}
		if n := int64(len(turns)); n < ack {
			c.problem(&c.lostAcked, "%s: %d turns stored, turn %d was acknowledged", conv, n, ack)
		}
	}
	st.Close()
	// Raw rows too: a turn is two messages, seq 0 and 1.
	if err := c.sqliteCheck(filepath.Join(c.dir, "mixchat.db"), func(db *sql.DB) error {
		var n int
		err := db.QueryRow(`SELECT count(*) FROM (SELECT conversation_id, turn_id FROM messages GROUP BY 1, 2 HAVING count(*) != 2 OR min(seq) != 0 OR max(seq) != 1)`).Scan(&n)
		if err == nil && n > 0 {
			c.problem(&c.halfTurns, "%d turns without both messages", n)
		}
		return err
	}); err != nil {
		c.problem(&c.openFailures, "conversation store: %v", err)
	}

	kbDir := filepath.Join(c.dir, "kb", crashKB)
	return c.sqliteCheck(filepath.Join(kbDir, "kb.db"), func(db *sql.DB) error {
		rows, err := db.Query(`SELECT f.name, f.hash, f.chunks, (SELECT count(*) FROM chunks c WHERE c.file = f.name) FROM files f`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, hash string
			var declared, actual int
			if err := rows.Scan(&name, &hash, &declared, &actual); err != nil {
				return err
			}
			if declared != actual {
				c.problem(&c.kbBad, "%s: %d chunks recorded, %d chunk rows", name, declared, actual)
			}
			if !c.hashes[hash] {
				c.problem(&c.kbBad, "%s: hash %.12s was never uploaded", name, hash)
			}
			if n, ok := c.chunks[hash]; ok && n != actual {
				c.problem(&c.kbBad, "%s: content %.12s has %d chunks, had %d", name, hash, actual, n)
			}
			c.chunks[hash] = actual
			if data, err := os.ReadFile(filepath.Join(kbDir, "content", name)); err != nil {
				c.problem(&c.kbBad, "%s: original: %v", name, err)
			} else if hashOf(data) != hash {
				c.problem(&c.kbBad, "%s: the original on disk (%.12s) is not the indexed content (%.12s)", name, hashOf(data), hash)
			}
			c.prev[name] = hash
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var orphans int
		if err := db.QueryRow(`SELECT count(*) FROM chunks WHERE file NOT IN (SELECT name FROM files)`).Scan(&orphans); err != nil {
			return err
		}
		if orphans > 0 {
			c.problem(&c.kbBad, "%d chunks without their file", orphans)
		}
		return nil
	})
}

// sqliteCheck opens the SQLite file read-only, runs its integrity check and
// then fn.
func (c *crashRun) sqliteCheck(path string, fn func(*sql.DB) error) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil {
		return fmt.Errorf("integrity check of %s: %w", path, err)
	}
	if res != "ok" {
		c.problem(&c.openFailures, "integrity check of %s: %s", path, res)
	}
	return fn(db)
}

func (c *crashRun) print(w io.Writer, elapsed time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "runs (SIGKILL each)\t%d\n", c.runs)
	fmt.Fprintf(tw, "kills during ingestion\t%d\n", c.ingestKills)
	fmt.Fprintf(tw, "kills during streamed replies\t%d\n", c.streamKills)
	fmt.Fprintf(tw, "work finished before the kill\t%d\n", c.finishedFirst)
	fmt.Fprintf(tw, "clean opens (server restarted on the same data)\t%d\n", c.cleanOpens)
	fmt.Fprintf(tw, "failed opens or integrity checks\t%d\n", c.openFailures)
	fmt.Fprintf(tw, "turns checked (sum over checks)\t%d\n", c.turnsChecked)
	fmt.Fprintf(tw, "half-written turns found\t%d\n", c.halfTurns)
	fmt.Fprintf(tw, "acknowledged turns lost\t%d\n", c.lostAcked)
	fmt.Fprintf(tw, "KB inconsistencies\t%d\n", c.kbBad)
	fmt.Fprintf(tw, "elapsed\t%s\n", elapsed.Round(time.Millisecond))
	tw.Flush()
}

// findMixchat returns the mixchat server binary: next to this program, else
// on PATH.
func findMixchat() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "mixchat")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("mixchat"); err == nil {
		return p, nil
	}
	return "", errors.New("no mixchat binary next to this program or on PATH: build it (go build -o bin/ ./cmd/mixchat ./cmd/mixchat-eval) or name it with --bin")
}
