package kb

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// docxWith builds a .docx whose word/document.xml is body.
func docxWith(t testing.TB, body io.Reader) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, body); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// oneRunDOCX is a document with one paragraph holding one <w:t> of n
// bytes with no break: a few kilobytes compressed.
func oneRunDOCX(t testing.TB, n int) []byte {
	run := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", n/35+1)[:n]
	return docxWith(t, strings.NewReader(`<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>`+run+`</w:t></w:r></w:p></w:body></w:document>`))
}

// TestLoadDOCXBomb: a document.xml that inflates past MaxDecompressedBytes
// is refused with ErrTooLarge and a message naming the limit.
func TestLoadDOCXBomb(t *testing.T) {
	data := docxWith(t, io.LimitReader(zeros{}, MaxDecompressedBytes+1))
	if len(data) > 1<<20 {
		t.Fatalf("the bomb is %d bytes compressed", len(data))
	}
	_, err := Load("bomb.docx", data)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "64 MB") {
		t.Fatalf("err = %v, want ErrTooLarge naming the 64 MB limit", err)
	}
	if !errIsFileProblem(err) {
		t.Error("a bomb is the file's problem, reported per file")
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestCapReaderCountsWhatComesOut: the size in a zip's directory may lie,
// so the reader counts the bytes itself.
func TestCapReaderCountsWhatComesOut(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		over bool
	}{{MaxDecompressedBytes, false}, {MaxDecompressedBytes + 1, true}} {
		r := &capReader{ctx: context.Background(), r: io.LimitReader(zeros{}, tc.n), left: MaxDecompressedBytes}
		got, _ := io.Copy(io.Discard, r)
		if r.over != tc.over || got > MaxDecompressedBytes {
			t.Errorf("%d bytes: read %d, over %v; want over %v", tc.n, got, r.over, tc.over)
		}
	}
}

// TestLoadDOCXOneLongRun: a 20 MB <w:t> loads whole and splits into
// chunks within the size, with work linear in its length.
func TestLoadDOCXOneLongRun(t *testing.T) {
	const n = 20 << 20
	docs, err := Load("long.docx", oneRunDOCX(t, n))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || len(docs[0].Text) != n {
		t.Fatalf("got %d documents, first %d bytes; want one of %d", len(docs), len(docs[0].Text), n)
	}
	measured := 0
	sp := Splitter{Size: 250, Overlap: 50, Len: func(s string) int {
		measured += len(s)
		return utf8.RuneCountInString(s)
	}}
	ps := sp.Split(docs)
	if len(ps) < n/250 {
		t.Fatalf("%d pieces for %d bytes", len(ps), n)
	}
	if measured > 40*n {
		t.Errorf("the splitter measured %d bytes of a %d-byte document", measured, n)
	}
}

// TestLoadContextCancelled: loading stops with the context's cause.
func TestLoadContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"a.docx", "a.pdf", "a.txt"} {
		data := oneRunDOCX(t, 1000)
		if name == "a.pdf" {
			data = readFixture(t, "sample.pdf")
		}
		if _, err := LoadContext(ctx, name, data); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
	}
	if _, err := (Splitter{Size: 10}).SplitContext(ctx, []Document{{Text: "一二三四五六七八九十一二三"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("split: err = %v, want context.Canceled", err)
	}
}

// BenchmarkLoadSplitDOCXOneRun loads and splits a .docx whose text is one
// 20 MB <w:t> (it once kept a core busy for minutes).
func BenchmarkLoadSplitDOCXOneRun(b *testing.B) {
	data := oneRunDOCX(b, 20<<20)
	b.SetBytes(20 << 20)
	for b.Loop() {
		docs, err := Load("long.docx", data)
		if err != nil {
			b.Fatal(err)
		}
		Splitter{Size: 250, Overlap: 50}.Split(docs)
	}
}
