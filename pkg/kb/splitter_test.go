package kb

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// The splitting itself is tested in pkg/text; these tests cover what kb
// adds: documents in, pieces carrying their document's metadata out.

func TestSplitHeadingsStartChunks(t *testing.T) {
	text := "# 乾卦\n\n乾，元亨，利贞。\n\n# 坤卦\n\n坤，元亨，利牝马之贞。"
	ps := Splitter{Size: 200, Overlap: 20}.Split([]Document{{Text: text, Metadata: map[string]any{"source": "t.md"}}})
	if len(ps) != 2 {
		t.Fatalf("want one chunk per section, got %d: %+v", len(ps), ps)
	}
	if ps[0].Text != "# 乾卦\n乾，元亨，利贞。" || ps[1].Text != "# 坤卦\n坤，元亨，利牝马之贞。" {
		t.Errorf("chunks = %q, %q", ps[0].Text, ps[1].Text)
	}
	if ps[1].Metadata["section"] != "坤卦" || ps[1].Metadata["source"] != "t.md" {
		t.Errorf("metadata = %v", ps[1].Metadata)
	}
	// Each piece has its own metadata map.
	ps[0].Metadata["x"] = 1
	if _, ok := ps[1].Metadata["x"]; ok {
		t.Error("pieces share a metadata map")
	}
}

func TestSplitMatchesTextSplitter(t *testing.T) {
	src := "1. 概述\n\n" + strings.Repeat("这是一句很长的说明文字。", 6) + "\n\nThe dragon is hidden. Do not act."
	sp := Splitter{Size: 40, Overlap: 10, TitleEnhance: true}
	ps := sp.Split([]Document{{Text: "no headings here."}, {Text: src}})
	want := text.Splitter(sp).Split(src)
	if len(ps) != 1+len(want) || ps[0].Text != "no headings here." {
		t.Fatalf("pieces %q, want the first document's then %q", ps, want)
	}
	if _, ok := ps[0].Metadata["section"]; ok || ps[0].Metadata == nil {
		t.Errorf("a piece under no heading has metadata %v, want an empty map", ps[0].Metadata)
	}
	for i, c := range want {
		if ps[1+i].Text != c.Text {
			t.Errorf("piece %d = %q, want %q", 1+i, ps[1+i].Text, c.Text)
		}
	}
}

// nonSpace counts the non-space runes of s.
func nonSpace(s string) int {
	n := 0
	for _, r := range s {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}

// FuzzSplit checks the splitter's invariants on any text: chunks are not
// empty, never longer than the size, and together hold every non-space
// character of the input (overlap may repeat some). Text with
// question–answer pairs is held otherwise (the pairs' markers are written
// anew, a heading over pairs alone goes to their metadata): every pair's
// answer is there, under its question.
func FuzzSplit(f *testing.F) {
	f.Add("# FAQ\n\nQ: Is it open?\nA: Yes, every day.\n\n问题：几点关门？\n答：晚上九点。\n\nprose after.", 12, 3)
	f.Add("## How do I apply?\n\nFill in the form.\n\n**Why?**", 30, 5)
	f.Add("乾，元亨，利贞。初九：潜龙勿用。", 10, 3)
	f.Add("# A\n\ntext. more text!\n\n## B\n\n第一章 总则\n\n正文。", 8, 2)
	f.Add(strings.Repeat("word ", 40), 12, 5)
	f.Add("a\n\n\n\nb", 1, 0)
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		if size < 1 || size > 400 || overlap < 0 || !utf8.ValidString(text) {
			t.Skip()
		}
		text = cleanText(text)
		s := Splitter{Size: size, Overlap: overlap % size}
		ps := s.Split([]Document{{Text: text}})
		total := 0
		for i, p := range ps {
			if strings.TrimSpace(p.Text) == "" {
				t.Fatalf("chunk %d is empty", i)
			}
			if n := utf8.RuneCountInString(p.Text); n > size {
				t.Fatalf("chunk %d has %d runes > size %d: %q", i, n, size, p.Text)
			}
			total += nonSpace(p.Text)
		}
		if parts := faqParts(text); parts != nil {
			for _, p := range parts {
				found := false
				for _, c := range ps {
					found = found || (c.Metadata["question"] == strings.TrimSpace(p.q))
				}
				if p.prose == "" && !found {
					t.Fatalf("pair %q lost: %q", p.q, ps)
				}
			}
			return
		}
		if total < nonSpace(text) {
			t.Fatalf("chunks hold %d non-space runes, the text %d", total, nonSpace(text))
		}
	})
}
