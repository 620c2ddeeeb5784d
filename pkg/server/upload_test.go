package server

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/kb"
)

// An upload is written to disk as it arrives, not held in memory: while
// the client is still sending a file, the part already sent is in the
// request's spool folder (mime/multipart's ReadForm would have kept up to
// 32 MiB in memory first), and the folder is gone when the request ends.
func TestUploadSpoolsToDisk(t *testing.T) {
	var dir string
	ts := newKBTestServer(t, func(c *kb.Config) { dir = c.Dir })
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "sp"}, &env)

	const sent, total = 3 << 20, 4 << 20
	line := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 2) + "\n")
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) })
	mw := multipart.NewWriter(pw)
	done := make(chan int, 1)
	go func() {
		var out envelope
		done <- ts.do(t, http.MethodPost, "/knowledge_base/upload_docs", mw.FormDataContentType(), pr, &out)
	}()
	write := func(from, to int) {
		t.Helper()
		part := bytes.Repeat(line, (to-from)/len(line)+1)[:to-from]
		if _, err := pw.Write(part); err != nil {
			t.Fatal(err)
		}
	}
	mw.WriteField("knowledge_base_name", "sp")
	mw.WriteField("to_vector_store", "false")
	mw.CreateFormFile("files", "big.txt")
	write(0, sent)

	spooled := func() int64 {
		var n int64
		filepath.WalkDir(filepath.Join(dir, ".spool"), func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if info, err := d.Info(); err == nil {
					n += info.Size()
				}
			}
			return nil
		})
		return n
	}
	deadline := time.Now().Add(20 * time.Second)
	for spooled() < sent-(1<<20) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d bytes sent are on disk while the client sends: the body is held in memory", spooled(), sent)
		}
		time.Sleep(20 * time.Millisecond)
	}
	write(sent, total)
	mw.Close()
	pw.Close()
	if status := <-done; status != http.StatusOK {
		t.Fatalf("upload: HTTP %d", status)
	}
	if n := spooled(); n != 0 {
		t.Errorf("%d bytes left in the spool folder after the request", n)
	}
	if info, err := os.Stat(filepath.Join(dir, "sp", "content", "big.txt")); err != nil || info.Size() != total {
		t.Errorf("the saved original: %v %v, want %d bytes", info, err, total)
	}
}
