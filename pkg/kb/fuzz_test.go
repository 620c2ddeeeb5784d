package kb

import (
	"context"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzLoad checks a loader on arbitrary bytes: it never panics, never
// takes long (it would be stopped by kb.parse_timeout in service), fails
// only with the loader errors, and returns valid UTF-8.
func fuzzLoad(f *testing.F, name string, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := parseContext(context.Background(), 5*time.Second)
		defer cancel()
		docs, err := LoadContext(ctx, name, data)
		if le := (*LimitError)(nil); errors.As(err, &le) && le.Setting == "kb.parse_timeout" {
			t.Fatalf("loading took longer than 5s")
		}
		if err != nil {
			if !errIsFileProblem(err) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(docs) == 0 {
			t.Fatal("no documents and no error")
		}
		for _, d := range docs {
			if !utf8.ValidString(d.Text) {
				t.Fatalf("invalid UTF-8: %q", d.Text)
			}
		}
	})
}

func FuzzLoadPDF(f *testing.F) {
	fuzzLoad(f, "f.pdf", readFixture(f, "sample.pdf"), readFixture(f, "corrupt.pdf"), []byte("%PDF-1.7\n"))
}

func FuzzLoadDOCX(f *testing.F) {
	fuzzLoad(f, "f.docx", readFixture(f, "sample.docx"), readFixture(f, "corrupt.docx"))
}

func FuzzLoadHTML(f *testing.F) {
	fuzzLoad(f, "f.html", readFixture(f, "sample.html"), []byte("<p>a<b>b</p><h2>x"), []byte("<table><td>1<td>2"))
}

func FuzzLoadMarkdown(f *testing.F) {
	fuzzLoad(f, "f.md", readFixture(f, "sample.md"), []byte("# a\n> b\n- c\n\n```\nd"), []byte("<div>x</div>\n\n| a |\n|---|\n| b |"))
}

func FuzzLoadCSV(f *testing.F) {
	fuzzLoad(f, "f.csv", readFixture(f, "sample.csv"), []byte("a,\"b\nc"), []byte("x"))
}

func FuzzLoadJSON(f *testing.F) {
	fuzzLoad(f, "f.json", readFixture(f, "sample.json"), readFixture(f, "corrupt.json"), []byte(`{"a":{"b":[1,{"c":null}]}}`))
}

func FuzzLoadJSONL(f *testing.F) {
	fuzzLoad(f, "f.jsonl", readFixture(f, "sample.jsonl"), []byte("1\n\"x\"\n"))
}

func FuzzLoadText(f *testing.F) {
	fuzzLoad(f, "f.txt", readFixture(f, "sample.txt"), readFixture(f, "sample-gbk.txt"), []byte{0xff, 0xfe, 'a', 0})
}
