package kb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoad(t *testing.T) {
	tests := []struct {
		file    string
		docs    int
		want    []string // substrings of the joined text
		notWant []string
		meta    map[string]any // metadata of the first document
	}{
		{file: "sample.txt", docs: 1, want: []string{"乾，元亨，利贞。", "The first hexagram"}},
		{file: "sample-gbk.txt", docs: 1, want: []string{"坤，元亨，利牝马之贞。"}},
		{file: "sample.md", docs: 1, want: []string{"# 易经入门", "## 八卦", "六十四卦", "See the wiki for more.", "乾 | 天", "code stays as it is"},
			notWant: []string{"**", "](https://"}},
		{file: "sample.html", docs: 1, want: []string{"# 乾卦", "乾，元亨，利贞。", "天行健", "初九 | 潜龙勿用"},
			notWant: []string{"不应出现", "color:red", "首页"}, meta: map[string]any{"title": "周易 · 乾卦"}},
		{file: "sample.pdf", docs: 2, want: []string{"The Book of Changes", "Perseverance furthers.", "the Receptive"},
			meta: map[string]any{"page": 1}},
		{file: "sample.docx", docs: 1, want: []string{"# 周易概述", "## 乾卦", "乾，元亨，利贞。", "卦名 | 卦辞", "坤 | 元亨，利牝马之贞"}},
		{file: "sample.csv", docs: 2, want: []string{"卦名: 乾\n卦辞: 元亨，利贞\n象: 天行健", "卦名: 坤"}, meta: map[string]any{"row": 0}},
		{file: "sample.json", docs: 2, want: []string{"name: 乾", "lines[0]: 潜龙勿用", "meta.element: 地"}},
		{file: "sample.jsonl", docs: 2, want: []string{"问：乾卦的卦辞\n答：元亨利贞", "问：坤卦的卦辞\n答：元亨，利牝马之贞"}, meta: map[string]any{"question": "乾卦的卦辞"}}, // q and a keys: pairs (faq.go)
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			docs, err := Load(tt.file, readFixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != tt.docs {
				t.Fatalf("got %d documents, want %d", len(docs), tt.docs)
			}
			var all []string
			for _, d := range docs {
				all = append(all, d.Text)
				if d.Metadata["source"] != tt.file {
					t.Errorf("metadata source = %v, want %s", d.Metadata["source"], tt.file)
				}
			}
			text := strings.Join(all, "\n")
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(text, w) {
					t.Errorf("text has %q:\n%s", w, text)
				}
			}
			for k, v := range tt.meta {
				if docs[0].Metadata[k] != v {
					t.Errorf("metadata %s = %v, want %v", k, docs[0].Metadata[k], v)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		file string
		want error
	}{
		{"sample.xyz", ErrUnsupported},
		{"noextension", ErrUnsupported},
		{"corrupt.pdf", ErrCorrupt},
		{"corrupt.docx", ErrCorrupt},
		{"corrupt.json", ErrCorrupt},
		{"empty.txt", ErrNoText},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, _ := os.ReadFile(filepath.Join("testdata", tt.file))
			_, err := Load(tt.file, data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Load(%s) error = %v, want %v", tt.file, err, tt.want)
			}
			if tt.want == ErrUnsupported && !strings.Contains(err.Error(), ".pdf") {
				t.Errorf("error should list the supported types: %v", err)
			}
		})
	}
}

func TestSupported(t *testing.T) {
	for name, want := range map[string]bool{"a.PDF": true, "wiki/Home.MD": true, "x.docx": true, "x.doc": false, "x": false} {
		if got := Supported(name); got != want {
			t.Errorf("Supported(%q) = %v, want %v", name, got, want)
		}
	}
}
