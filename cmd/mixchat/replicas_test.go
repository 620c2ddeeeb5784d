package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/childserver"
	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/store/postgres"
)

// The scale-out tests run two `mixchat serve` processes, each with its own
// data directory, on one PostgreSQL server (MIXCHAT_TEST_POSTGRES_DSN, as
// scripts/postgres.sh starts it), each test in a schema of its own.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// mixchatBinary builds this command once per test run.
func mixchatBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mixchat-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "mixchat")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// TestMain removes the built binary.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// replicaSchema is a schema of t's own (see pgtest.Schema).
func replicaSchema(t *testing.T) string {
	t.Helper()
	return pgtest.Schema(t, "replicas")
}

// startReplica starts one server with env and stops it at the end of t.
func startReplica(t *testing.T, bin string, env []string) *childserver.Proc {
	t.Helper()
	p, err := childserver.Start(context.Background(), bin, t.TempDir(), env, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Errorf("stop replica: %v\n%s", err, childserver.LastLines(p.Logs(), 30))
		}
	})
	return p
}

// chatReplyWire is a non-streamed /chat/chat reply.
type chatReplyWire struct {
	Text   string `json:"text"`
	TurnID int64  `json:"turn_id"`
}

func ask(t *testing.T, hc *http.Client, base, conv, q string) chatReplyWire {
	t.Helper()
	var r chatReplyWire
	if err := childserver.PostJSON(context.Background(), hc, base+"/chat/chat", map[string]any{"query": q, "conversation_id": conv}, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTwoReplicasOnePostgres(t *testing.T) {
	dsn := replicaSchema(t)
	bin := mixchatBinary(t)
	env := []string{"MIXCHAT_STORE_DRIVER=postgres", "MIXCHAT_STORE_DSN=" + dsn, "MIXCHAT_KB_STORE=postgres"}
	r1 := startReplica(t, bin, env)
	r2 := startReplica(t, bin, env)
	hc := &http.Client{Timeout: time.Minute}

	t.Run("memory follows the conversation to the other replica", func(t *testing.T) {
		ask(t, hc, r1.URL, "lilei", "我的名字是李雷。")
		if got := ask(t, hc, r2.URL, "lilei", "我叫什么名字？").Text; !strings.Contains(got, "李雷") {
			t.Errorf("replica 2 answered %q, which does not name 李雷 (said on replica 1)", got)
		}
		// The control: a conversation replica 2 never saw knows no name.
		if got := ask(t, hc, r2.URL, "stranger", "我叫什么名字？").Text; strings.Contains(got, "李雷") {
			t.Errorf("a fresh conversation answered %q, naming 李雷", got)
		}
	})

	t.Run("concurrent turns on both replicas", func(t *testing.T) {
		const perReplica = 20
		type sent struct {
			q     string
			reply chatReplyWire
			err   error
		}
		results := make([]sent, 2*perReplica)
		var wg sync.WaitGroup
		for i := range results {
			base := r1.URL
			if i%2 == 1 {
				base = r2.URL
			}
			results[i].q = fmt.Sprintf("问题%02d：乾卦第%d爻是什么？", i, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &results[i]
				r.err = childserver.PostJSON(context.Background(), hc, base+"/chat/chat", map[string]any{"query": r.q, "conversation_id": "busy"}, &r.reply)
			}()
		}
		wg.Wait()
		byTurn := map[int64]sent{}
		for _, r := range results {
			if r.err != nil {
				t.Fatalf("%s: %v", r.q, r.err)
			}
			if prev, dup := byTurn[r.reply.TurnID]; dup {
				t.Errorf("turn_id %d given to %q and %q", r.reply.TurnID, prev.q, r.q)
			}
			byTurn[r.reply.TurnID] = r
		}
		var list struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
				TurnID  int64  `json:"turn_id"`
			} `json:"messages"`
		}
		resp, err := hc.Get(r1.URL + "/conversations/busy/messages")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := decodeJSON(resp, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Messages) != 4*perReplica {
			t.Fatalf("%d messages stored, want %d", len(list.Messages), 4*perReplica)
		}
		var ids []int64
		for i := 0; i < len(list.Messages); i += 2 {
			q, a := list.Messages[i], list.Messages[i+1]
			id := int64(i/2 + 1)
			if q.TurnID != id || a.TurnID != id || q.Role != "user" || a.Role != "assistant" {
				t.Fatalf("messages %d,%d: turn %d/%d roles %s/%s, want turn %d user/assistant", i, i+1, q.TurnID, a.TurnID, q.Role, a.Role, id)
			}
			r, ok := byTurn[id]
			if !ok {
				t.Fatalf("turn %d was stored but no reply announced it", id)
			}
			if q.Content != r.q || a.Content != r.reply.Text {
				t.Errorf("turn %d holds %q → %.40q, but its reply was to %q → %.40q", id, q.Content, a.Content, r.q, r.reply.Text)
			}
			ids = append(ids, id)
		}
		if !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) {
			t.Errorf("turn ids out of order: %v", ids)
		}
	})

	t.Run("knowledge base created on one is searchable on the other", func(t *testing.T) {
		ctx := context.Background()
		if err := childserver.CreateKB(ctx, hc, r1.URL, "zhouyi"); err != nil {
			t.Fatal(err)
		}
		// Replica 2 opens the knowledge base while it is empty.
		if docs := searchDocs(t, hc, r2.URL, "zhouyi", "坤卦 厚德载物"); len(docs) != 0 {
			t.Fatalf("empty knowledge base found %v", docs)
		}
		if err := childserver.UploadKB(ctx, hc, r1.URL, "zhouyi", "kun.md", []byte("# 坤卦\n\n坤：元，亨，利牝马之贞。地势坤，君子以厚德载物。\n")); err != nil {
			t.Fatal(err)
		}
		if docs := searchDocs(t, hc, r2.URL, "zhouyi", "坤卦 厚德载物"); len(docs) == 0 || docs[0] != "kun.md" {
			t.Errorf("replica 2 finds %v after replica 1 uploaded kun.md", docs)
		}
		// And back: uploaded on 2, found on 1.
		if err := childserver.UploadKB(ctx, hc, r2.URL, "zhouyi", "qian.md", []byte("# 乾卦\n\n乾：元，亨，利，贞。天行健，君子以自强不息。\n")); err != nil {
			t.Fatal(err)
		}
		if docs := searchDocs(t, hc, r1.URL, "zhouyi", "乾卦 自强不息"); len(docs) == 0 || docs[0] != "qian.md" {
			t.Errorf("replica 1 finds %v after replica 2 uploaded qian.md", docs)
		}
	})

	t.Run("long-term memory consolidated once", func(t *testing.T) {
		// Two replicas' managers closing one conversation at once: the
		// PostgreSQL store's per-user advisory lock (memory.UserLocker)
		// lets one consolidate and the other find the turns consolidated.
		// The managers run in this process (serve does not wire one yet).
		consolidationOnce(t, dsn)
	})
}

func decodeJSON(resp *http.Response, v any) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", resp.Request.URL, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// searchDocs asks base's search_docs and returns the files of the hits,
// best first.
func searchDocs(t *testing.T, hc *http.Client, base, kbName, q string) []string {
	t.Helper()
	var docs []struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := childserver.PostJSON(context.Background(), hc, base+"/knowledge_base/search_docs", map[string]any{"query": q, "knowledge_base_name": kbName, "top_k": 3}, &docs); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, d := range docs {
		f, _ := d.Metadata["source"].(string)
		files = append(files, f)
	}
	return files
}

// consolidationOnce closes one conversation on two memory managers (two
// replicas' long-term memory) on one PostgreSQL store, at once and then
// again, and counts the saves of the user's long-term memory: one
// consolidation is one save.
func consolidationOnce(t *testing.T, dsn string) {
	ctx := context.Background()
	cfg := memory.DefaultConfig()
	cfg.LongTerm.Enabled = true
	var mgrs []*memory.Manager
	for range 2 {
		st, err := postgres.OpenConversations(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		m, err := memory.NewManager(st, cfg, memory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		mgrs = append(mgrs, m)
	}
	st, err := postgres.OpenConversations(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateConversation(ctx, memory.Conversation{ID: "longterm", UserID: "lilei"}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"我的名字是李雷。", "我住在北京。", "我喜欢读周易。"} {
		if _, err := st.AppendTurn(ctx, "longterm", memory.Message{Content: q}, memory.Message{Content: "好的。"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, m := range mgrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.CloseConversation(ctx, "longterm"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, m := range mgrs { // closing again consolidates nothing new
		if _, err := m.CloseConversation(ctx, "longterm"); err != nil {
			t.Error(err)
		}
	}
	mem, err := mgrs[0].UserMemory(ctx, "lilei")
	if err != nil {
		t.Fatal(err)
	}
	if mem.Version != 1 {
		t.Errorf("the user's memory was saved %d times for one conversation closed on two replicas: consolidation ran more than once", mem.Version)
	}
}
