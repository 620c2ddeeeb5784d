package kb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// rawPDF writes a PDF of the given object bodies (object i+1 is objs[i])
// with a valid cross-reference table and object 1 as the catalog.
func rawPDF(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// pageContent is a content stream object showing text in font F1.
func pageContent(text string) string {
	cs := "BT /F1 12 Tf 72 720 Td (" + text + ") Tj ET"
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(cs), cs)
}

// rawStream is a stream object holding data as it is.
func rawStream(data string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(data), data)
}

const helvetica = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"

// loadWithin runs LoadContext and fails the test when it has not
// returned after d (the loader is left running: the test binary ends).
func loadWithin(t *testing.T, ctx context.Context, d time.Duration, name string, data []byte) ([]Document, error) {
	t.Helper()
	type result struct {
		docs []Document
		err  error
	}
	done := make(chan result, 1)
	go func() {
		docs, err := LoadContext(ctx, name, data)
		done <- result{docs, err}
	}()
	select {
	case r := <-done:
		return r.docs, r.err
	case <-time.After(d):
		t.Fatalf("%s: the loader did not return within %s", name, d)
		return nil, nil
	}
}

// Page trees that loop, by /Kids or by /Parent, are refused at once
// instead of walked forever.
func TestLoadPDFHostilePageTrees(t *testing.T) {
	tests := []struct {
		name string
		pdf  []byte
		want error  // nil: loads
		text string // with want nil: a page holds it
	}{
		{"kids names itself", rawPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [2 0 R] /Count 5 >>"), ErrCorrupt, ""},
		{"kids loop through a child", rawPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 5 >>",
			"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 5 >>"), ErrCorrupt, ""},
		{"a subtree named twice", rawPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R 3 0 R] /Count 2 >>",
			"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
			pageContent("Hello twice"), helvetica), ErrCorrupt, ""},
		{"parent loop without resources", rawPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Parent 3 0 R /Kids [4 0 R] /Count 1 >>",
			"<< /Type /Pages /Parent 2 0 R /Kids [] /Count 0 >>",
			"<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>",
			pageContent("Parents loop")), nil, "Parents loop"},
		{"resources inherited from the parent", rawPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 /Resources << /Font << /F1 5 0 R >> >> >>",
			"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>",
			pageContent("Inherited font"), helvetica), nil, "Inherited font"},
		{"a tree deeper than the limit", deepPDF(maxPDFDepth + 5), ErrCorrupt, ""},
		// The library's lexer reads the end of a stream inside a hex
		// string as white space forever.
		{"content ends inside a hex string", rawPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>",
			rawStream("BT (Hello) Tj <4142")), ErrCorrupt, ""},
		{"font map ends inside a hex string", rawPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
			pageContent("Undecoded map"),
			"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
			rawStream("begincmap 1 beginbfchar <01> <0041")), nil, "Undecoded map"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := loadWithin(t, context.Background(), 10*time.Second, "a.pdf", tt.pdf)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || !strings.Contains(docs[0].Text, tt.text) {
				t.Fatalf("docs = %+v, want one page with %q", docs, tt.text)
			}
		})
	}
}

// deepPDF is a page tree of depth levels of Pages nodes, each with one
// kid, above one page.
func deepPDF(levels int) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>"}
	for i := 0; i < levels; i++ {
		objs = append(objs, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", i+3))
	}
	objs = append(objs, fmt.Sprintf("<< /Type /Page /Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> >> >>", levels+3, levels+4),
		pageContent("deep"), helvetica)
	return rawPDF(objs...)
}

// The PDF library's own reads stop once the context is done: a parse
// that is already past its deadline ends with the deadline's error, not
// with a corrupt file.
func TestLoadPDFStopsAtDeadline(t *testing.T) {
	ctx, cancel := parseContext(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := loadPDF(ctx, samplePDF())
	var le *LimitError
	if !errors.As(err, &le) || le.Setting != "kb.parse_timeout" || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want the parse deadline naming kb.parse_timeout", err)
	}
	// The reader itself refuses to read once ctx is done.
	func() {
		defer func() {
			if r := recover(); r != errPDFStopped {
				t.Errorf("ReadAt after the deadline: recovered %v, want errPDFStopped", r)
			}
		}()
		ctxReaderAt{ctx, bytes.NewReader([]byte("x"))}.ReadAt(make([]byte, 1), 0)
	}()
}

// Every loader stops at the parse deadline with the error naming the
// setting.
func TestLoadersStopAtDeadline(t *testing.T) {
	ctx, cancel := parseContext(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	for _, ext := range SupportedExtensions() {
		_, err := LoadContext(ctx, "a"+ext, []byte("a,b\n1,2\n"))
		if !strings.Contains(fmt.Sprint(err), "kb.parse_timeout") {
			t.Errorf("%s: err = %v, want the parse deadline", ext, err)
		}
	}
}

// The looping PDF fails as a file within the parse deadline, the knowledge
// base's write lock is released, and the next upload to it succeeds.
func TestLoopingPDFUploadFailsAndNextSucceeds(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	cfg.ParseTimeout = 2 * time.Second
	s := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "loop", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	loop := rawPDF("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [2 0 R] /Count 5 >>")
	upload := func(f FileData) AddResult {
		t.Helper()
		done := make(chan AddResult, 1)
		go func() {
			res, err := s.AddFiles(ctx, "loop", []FileData{f}, AddOptions{}, nil)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		select {
		case res := <-done:
			return res
		case <-time.After(cfg.ParseTimeout + 5*time.Second):
			t.Fatalf("upload of %s still running after the parse deadline", f.Name)
			return AddResult{}
		}
	}
	start := time.Now()
	res := upload(FileData{Name: "loop.pdf", Data: loop})
	if err := res.Failed["loop.pdf"]; err == nil || len(res.Added) != 0 {
		t.Fatalf("looping pdf: %+v, want it failed", res)
	}
	if d := time.Since(start); d > cfg.ParseTimeout {
		t.Errorf("the looping pdf took %s, more than the parse deadline", d)
	}
	res = upload(FileData{Name: "qian.txt", Data: []byte(qianText)})
	if len(res.Added) != 1 || len(res.Failed) != 0 {
		t.Fatalf("the upload after: %+v", res)
	}
	files, err := s.Files(ctx, "loop")
	if err != nil || len(files) != 1 || files[0].Name != "qian.txt" {
		t.Fatalf("files = %+v, %v: want only qian.txt", files, err)
	}
}

// blockingEmbedder blocks every call until its context is done.
type blockingEmbedder struct{ started chan struct{} }

func (e blockingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	select {
	case e.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// Close stops the writes under way instead of waiting for them: a
// shutdown is not held up by an upload that would never end.
func TestCloseStopsIngestion(t *testing.T) {
	ctx := context.Background()
	s, err := newWithStore(testConfig(t), blockingEmbedder{started: make(chan struct{}, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	emb := s.emb.(blockingEmbedder)
	if _, err := s.Create(ctx, "busy", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.AddFiles(ctx, "busy", []FileData{{Name: "a.txt", Data: []byte(qianText)}}, AddOptions{}, nil)
		done <- err
	}()
	<-emb.started
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the upload")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the upload ended with %v, want cancelled", err)
	}
}

// A loop inside the PDF library itself (cross-reference sections whose
// /Prev names themselves, walked while the file is opened) is stopped by
// the parse deadline: the library's reads fail once it has passed.
func TestLoadPDFLibraryLoopStopsAtDeadline(t *testing.T) {
	good := rawPDF("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>")
	i := bytes.LastIndex(good, []byte("startxref\n"))
	var off int
	fmt.Sscanf(string(good[i+len("startxref\n"):]), "%d", &off)
	loop := bytes.Replace(good, []byte("/Root 1 0 R >>"), []byte(fmt.Sprintf("/Root 1 0 R /Prev %d >>", off)), 1)
	ctx, cancel := parseContext(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := loadWithin(t, ctx, 10*time.Second, "prev.pdf", loop)
	var le *LimitError
	if !errors.As(err, &le) || le.Setting != "kb.parse_timeout" {
		t.Fatalf("err = %v, want the parse deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stopped after %s", d)
	}
}

// A loader that never looks at its context (a loop in a library nobody
// has found yet) is left behind once the deadline has passed: the load
// fails in time with the deadline's error, and a loader's panic is a
// corrupt file.
func TestRunLoaderLastResort(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stuck := func(context.Context, []byte) ([]Document, error) { <-release; return nil, nil }
	ctx, cancel := parseContext(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := runLoader(ctx, stuck, nil)
	var le *LimitError
	if !errors.As(err, &le) || le.Setting != "kb.parse_timeout" {
		t.Errorf("err = %v, want the parse deadline", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond+abandonAfter+time.Second {
		t.Errorf("returned after %s", d)
	}
	boom := func(context.Context, []byte) ([]Document, error) { panic("boom") }
	if _, err := runLoader(context.Background(), boom, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("panic: %v, want ErrCorrupt", err)
	}
}
