package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/childserver"
)

// TestTwoReplicasShareOriginals runs two `mixchat serve` processes on one
// PostgreSQL (kb.store: postgres): a document uploaded to replica 1 is
// downloaded byte for byte from replica 2, re-indexed there from the
// stored original (update_docs), rebuilt there (recreate_vector_store) and
// then searched on replica 1; deleted with its content on replica 2, its
// original is gone on replica 1 too.
func TestTwoReplicasShareOriginals(t *testing.T) {
	dsn := replicaSchema(t)
	bin := mixchatBinary(t)
	env := []string{"MIXCHAT_STORE_DRIVER=postgres", "MIXCHAT_STORE_DSN=" + dsn, "MIXCHAT_KB_STORE=postgres"}
	r1 := startReplica(t, bin, env)
	r2 := startReplica(t, bin, env)
	hc := &http.Client{Timeout: time.Minute}
	ctx := context.Background()

	// Bytes a text round trip would change: a BOM, CRLF, no final newline.
	doc := []byte("\ufeff# 乾卦\r\n\r\n乾：元，亨，利，贞。\r\n\r\n## 象传\r\n\r\n天行健，君子以自强不息。潜龙勿用，阳在下也。见龙在田，德施普也。")
	if err := childserver.CreateKB(ctx, hc, r1.URL, "zhouyi"); err != nil {
		t.Fatal(err)
	}
	if err := childserver.UploadKB(ctx, hc, r1.URL, "zhouyi", "qian.md", doc); err != nil {
		t.Fatal(err)
	}

	download := func(base string) (int, []byte) {
		t.Helper()
		resp, err := hc.Get(base + "/knowledge_base/download_doc?" + url.Values{"knowledge_base_name": {"zhouyi"}, "file_name": {"qian.md"}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	if code, body := download(r2.URL); code != 200 || !bytes.Equal(body, doc) {
		t.Errorf("download from replica 2: %d\n got %q\nwant %q", code, body, doc)
	}

	// update_docs on replica 2 re-reads the original from PostgreSQL.
	var env1 childserver.KBEnvelope
	if err := childserver.PostJSON(ctx, hc, r2.URL+"/knowledge_base/update_docs", map[string]any{
		"knowledge_base_name": "zhouyi", "file_names": []string{"qian.md"}, "chunk_size": 30, "chunk_overlap": 5,
	}, &env1); err != nil || env1.Code != 200 || strings.Contains(string(env1.Data), "qian.md") {
		t.Errorf("update_docs on replica 2: %v %+v %s", err, env1, env1.Data)
	}

	// recreate_vector_store on replica 2: one progress event per original.
	resp, err := hc.Post(r2.URL+"/knowledge_base/recreate_vector_store", "application/json", strings.NewReader(`{"knowledge_base_name": "zhouyi", "chunk_size": 40}`))
	if err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e map[string]any
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			events = append(events, e)
		}
	}
	resp.Body.Close()
	if len(events) != 1 || events[0]["code"] != float64(200) || events[0]["doc"] != "qian.md" || events[0]["total"] != float64(1) {
		t.Errorf("recreate_vector_store on replica 2 (kb.store postgres): %v", events)
	}
	if docs := searchDocs(t, hc, r1.URL, "zhouyi", "潜龙勿用"); len(docs) == 0 || docs[0] != "qian.md" {
		t.Errorf("replica 1 finds %v after the rebuild on replica 2", docs)
	}

	// Deleted with its content on replica 2: gone on replica 1.
	var env2 childserver.KBEnvelope
	if err := childserver.PostJSON(ctx, hc, r2.URL+"/knowledge_base/delete_docs", map[string]any{
		"knowledge_base_name": "zhouyi", "file_names": []string{"qian.md"}, "delete_content": true,
	}, &env2); err != nil || env2.Code != 200 {
		t.Fatalf("delete_docs on replica 2: %v %+v", err, env2)
	}
	if code, body := download(r1.URL); code == 200 && bytes.Equal(body, doc) {
		t.Error("replica 1 still serves the original deleted on replica 2")
	}
}
