package server

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/kb"
)

// The upload limits are named with their settings: the default cap fits
// the documented memory, too many files is 413 naming kb.max_upload_files
// (not mime/multipart's "message too large"), and a document of more
// chunks than kb.max_chunks_per_file fails with 413 naming it.
func TestUploadLimitsNamed(t *testing.T) {
	if d := kb.DefaultConfig().MaxUploadBytes; d > 64<<20 {
		t.Errorf("default kb.max_upload_bytes is %d: ingestion takes some 80 times a text file's size in memory, a replica 2 GiB", d)
	}
	ts := newKBTestServer(t, func(c *kb.Config) {
		c.MaxUploadFiles = 990
		c.MaxChunksPerFile = 5
		c.ChunkSize = 50
		c.ChunkOverlap = 0
	})
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "lim"}, &env)

	for _, n := range []int{991, 1001} {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		w.WriteField("knowledge_base_name", "lim")
		for i := 0; i < n; i++ {
			part, _ := w.CreateFormFile("files", fmt.Sprintf("f%d.txt", i))
			part.Write([]byte("x"))
		}
		w.Close()
		var out map[string]any
		status := ts.do(t, http.MethodPost, "/knowledge_base/upload_docs", w.FormDataContentType(), &b, &out)
		if msg := fmt.Sprint(out); status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "kb.max_upload_files") || !strings.Contains(msg, "990") {
			t.Errorf("%d files: HTTP %d %v, want 413 naming kb.max_upload_files", n, status, out)
		}
	}

	long := strings.Repeat("乾，元亨，利贞。初九：潜龙勿用。九二：见龙在田，利见大人。\n\n", 20)
	env = ts.upload(t, map[string]string{"knowledge_base_name": "lim"}, map[string][]byte{"long.txt": []byte(long)})
	if msg := env.failed(t)["long.txt"]; env.Code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "kb.max_chunks_per_file") ||
		!strings.Contains(env.Msg, "kb.max_chunks_per_file") {
		t.Errorf("too many chunks: %+v, want code 413 naming kb.max_chunks_per_file", env)
	}
}

// An upload in which every file failed says so, with the reasons; one in
// which some succeeded keeps Chatchat's message.
func TestUploadAllFailedSaysSo(t *testing.T) {
	ts := newKBTestServer(t, nil)
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "f"}, &env)
	env = ts.upload(t, map[string]string{"knowledge_base_name": "f"}, map[string][]byte{
		"bad.xyz":    []byte("nope"),
		"broken.pdf": []byte("%PDF-1.4 broken"),
	})
	if env.Code != 200 || strings.Contains(env.Msg, "完成") || !strings.Contains(env.Msg, "失败") ||
		!strings.Contains(env.Msg, "bad.xyz") || !strings.Contains(env.Msg, "broken.pdf") {
		t.Errorf("every file failed: %+v", env)
	}
	env = ts.upload(t, map[string]string{"knowledge_base_name": "f"}, map[string][]byte{
		"bad.xyz": []byte("nope"),
		"ok.txt":  []byte("乾，元亨，利贞。"),
	})
	if env.Code != 200 || env.Msg != "文件上传与向量化完成" || len(env.failed(t)) != 1 {
		t.Errorf("one of two failed: %+v", env)
	}
}

// A PDF whose page tree names itself fails as a file within the parse
// deadline, and the next upload to the same knowledge base succeeds (the
// write lock was released).
func TestLoopingPDFUpload(t *testing.T) {
	ts := newKBTestServer(t, func(c *kb.Config) { c.ParseTimeout = 2 * time.Second })
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "pdf"}, &env)
	loop := loopingPDF()
	done := make(chan envelope, 1)
	start := time.Now()
	go func() {
		done <- ts.upload(t, map[string]string{"knowledge_base_name": "pdf"}, map[string][]byte{"loop.pdf": loop})
	}()
	select {
	case env = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the upload of a looping PDF did not return")
	}
	if msg := env.failed(t)["loop.pdf"]; msg == "" || time.Since(start) > 4*time.Second {
		t.Errorf("looping pdf after %s: %+v, want it failed within the parse deadline", time.Since(start), env)
	}
	env = ts.upload(t, map[string]string{"knowledge_base_name": "pdf"}, map[string][]byte{"ok.txt": []byte("乾，元亨，利贞。")})
	if env.Code != 200 || len(env.failed(t)) != 0 {
		t.Errorf("the next upload: %+v", env)
	}
}

// loopingPDF is the 300-byte PDF whose page tree's Kids name the tree
// itself, with a valid cross-reference table.
func loopingPDF() []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	objs := []string{"<</Type/Catalog/Pages 2 0 R>>", "<</Type/Pages/Kids [2 0 R]/Count 5>>"}
	var offs []int
	for i, o := range objs {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj %s endobj\n", i+1, o)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, x)
	return b.Bytes()
}
