package kb

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func split(t *testing.T, s Splitter, text string) []string {
	t.Helper()
	ps := s.Split([]Document{{Text: text, Metadata: map[string]any{"source": "t.txt"}}})
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Text
	}
	return out
}

func TestSplitSentences(t *testing.T) {
	text := "乾，元亨，利贞。初九：潜龙勿用。九二：见龙在田，利见大人。九三：君子终日乾乾，夕惕若，厉，无咎。"
	got := split(t, Splitter{Size: 20, Overlap: 0}, text)
	want := []string{"乾，元亨，利贞。初九：潜龙勿用。", "九二：见龙在田，利见大人。", "九三：君子终日乾乾，夕惕若，厉，无咎。"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestSplitEnglishAndOverlap(t *testing.T) {
	text := "The Creative works sublime success. Perseverance furthers. The dragon is hidden. Do not act. The dragon appears in the field."
	got := split(t, Splitter{Size: 60, Overlap: 25}, text)
	if len(got) < 2 {
		t.Fatalf("want several chunks, got %q", got)
	}
	for i, c := range got {
		if n := utf8.RuneCountInString(c); n > 60 {
			t.Errorf("chunk %d has %d characters > 60: %q", i, n, c)
		}
		if !strings.HasSuffix(c, ".") {
			t.Errorf("chunk %d does not end at a sentence boundary: %q", i, c)
		}
	}
	// Overlap: each chunk after the first starts with the last sentence of
	// the previous one when it fits in 25 characters.
	if !strings.HasPrefix(got[1], "Perseverance furthers.") && !strings.HasPrefix(got[1], "Do not act.") {
		t.Errorf("chunk 2 should repeat the previous chunk's last sentence: %q", got)
	}
}

func TestSplitHeadingsStartChunks(t *testing.T) {
	text := "# 乾卦\n\n乾，元亨，利贞。\n\n# 坤卦\n\n坤，元亨，利牝马之贞。"
	ps := Splitter{Size: 200, Overlap: 20}.Split([]Document{{Text: text}})
	if len(ps) != 2 {
		t.Fatalf("want one chunk per section, got %d: %+v", len(ps), ps)
	}
	if ps[0].Text != "# 乾卦\n乾，元亨，利贞。" || ps[1].Text != "# 坤卦\n坤，元亨，利牝马之贞。" {
		t.Errorf("chunks = %q, %q", ps[0].Text, ps[1].Text)
	}
	if ps[1].Metadata["section"] != "坤卦" {
		t.Errorf("section = %v", ps[1].Metadata["section"])
	}
}

func TestSplitPlainTextHeadings(t *testing.T) {
	text := "第一章 总则\n\n本章说明目的。适用于所有人。\n\n第二章 细则\n\n细则在此。"
	ps := Splitter{Size: 100}.Split([]Document{{Text: text}})
	if len(ps) != 2 || !strings.HasPrefix(ps[1].Text, "第二章 细则") {
		t.Fatalf("plain headings should start chunks: %q", ps)
	}
}

func TestSplitTitleEnhance(t *testing.T) {
	text := "1. 概述\n\n" + strings.Repeat("这是一句很长的说明文字。", 6)
	got := split(t, Splitter{Size: 40, TitleEnhance: true}, text)
	if len(got) < 2 {
		t.Fatalf("want several chunks: %q", got)
	}
	if strings.HasPrefix(got[0], "下文与") {
		t.Errorf("the chunk holding the title needs no prefix: %q", got[0])
	}
	for _, c := range got[1:] {
		if !strings.HasPrefix(c, "下文与(1. 概述)有关。") {
			t.Errorf("chunk lacks the title prefix: %q", c)
		}
	}
}

func TestIsPossibleTitle(t *testing.T) {
	for s, want := range map[string]bool{
		"第一章 总则": true, "1. 概述": true, "二、适用范围": true,
		"这是一个普通的句子。": false, "概述": false, "12345": false, "": false,
		"这是一段超过二十个字的很长很长很长很长的文本行": false,
	} {
		if got := isPossibleTitle(s); got != want {
			t.Errorf("isPossibleTitle(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestSplitLongSentence(t *testing.T) {
	long := strings.Repeat("甲乙丙丁戊己庚辛壬癸", 10) // 100 characters, no punctuation
	got := split(t, Splitter{Size: 30}, long)
	if strings.Join(got, "") != long {
		t.Errorf("hard cuts must keep every character")
	}
	for _, c := range got {
		if utf8.RuneCountInString(c) > 30 {
			t.Errorf("chunk longer than 30: %q", c)
		}
	}
}

func TestSplitTokens(t *testing.T) {
	words := strings.Repeat("alpha beta gamma delta. ", 50)
	count := func(s string) int { return len(strings.Fields(s)) } // one token per word
	got := split(t, Splitter{Size: 12, Overlap: 4, Len: count}, words)
	for _, c := range got {
		if count(c) > 12 {
			t.Errorf("chunk has %d tokens > 12: %q", count(c), c)
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
// character of the input (overlap may repeat some).
func FuzzSplit(f *testing.F) {
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
		if total < nonSpace(text) {
			t.Fatalf("chunks hold %d non-space runes, the text %d", total, nonSpace(text))
		}
	})
}
