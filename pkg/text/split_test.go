package text

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func split(t *testing.T, s Splitter, src string) []string {
	t.Helper()
	cs := s.Split(src)
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Text
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
	cs := Splitter{Size: 200, Overlap: 20}.Split(text)
	if len(cs) != 2 {
		t.Fatalf("want one chunk per section, got %d: %+v", len(cs), cs)
	}
	if cs[0].Text != "# 乾卦\n乾，元亨，利贞。" || cs[1].Text != "# 坤卦\n坤，元亨，利牝马之贞。" {
		t.Errorf("chunks = %q, %q", cs[0].Text, cs[1].Text)
	}
	if !slices.Equal(cs[1].Headings, []string{"坤卦"}) {
		t.Errorf("headings = %q", cs[1].Headings)
	}
}

func TestSplitNestedHeadings(t *testing.T) {
	cs := Splitter{Size: 100}.Split("intro text.\n\n# A\n\n## B\n\nbody of b.\n\n# C\n\nbody of c.")
	var got []string
	for _, c := range cs {
		got = append(got, strings.Join(c.Headings, " > "))
	}
	if want := []string{"", "A > B", "C"}; !slices.Equal(got, want) {
		t.Errorf("headings %q, want %q (chunks %q)", got, want, cs)
	}
}

func TestSplitPlainTextHeadings(t *testing.T) {
	text := "第一章 总则\n\n本章说明目的。适用于所有人。\n\n第二章 细则\n\n细则在此。"
	ps := Splitter{Size: 100}.Split(text)
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

// longLine is n bytes of base64-like text with no sentence, clause or
// space break: the worst case for the splitter's hard cuts.
func longLine(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[(i*7+i/64)%len(alphabet)]
	}
	return string(b)
}

// BenchmarkSplitLongLine splits one unbroken line of 256 KB, 1 MB and 2 MB
// into 250-character chunks (the knowledge bases' default size).
func BenchmarkSplitLongLine(b *testing.B) {
	for _, n := range []int{256 << 10, 1 << 20, 2 << 20} {
		line := longLine(n)
		b.Run(strconv.Itoa(n>>10)+"KB", func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Splitter{Size: 250, Overlap: 50}.Split(line)
			}
		})
	}
}

// TestSplitLongLineWorkIsLinear measures the splitter's work on unbroken
// lines as the text its Len is asked to measure: it must grow with the
// line, not with its square (a 64 KB line once made Len read gigabytes).
func TestSplitLongLineWorkIsLinear(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		size int
	}{
		{"base64", longLine(64 << 10), 100},
		{"cjk", strings.Repeat("甲乙丙丁戊己庚辛壬癸", 4000), 250},
		{"clauses", strings.Repeat("ab,", 20000), 100},
		{"words", strings.Repeat("word ", 20000), 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			measured := 0
			count := func(s string) int {
				measured += len(s)
				return utf8.RuneCountInString(s)
			}
			cs := Splitter{Size: tc.size, Overlap: tc.size / 5, Len: count}.Split(tc.line)
			if len(cs) < len(tc.line)/(4*tc.size) {
				t.Fatalf("only %d chunks", len(cs))
			}
			if limit := 40 * len(tc.line); measured > limit {
				t.Errorf("Len measured %d bytes for a %d-byte line (limit %d): splitting is not linear", measured, len(tc.line), limit)
			}
			for i, c := range cs {
				if n := utf8.RuneCountInString(c.Text); n > tc.size {
					t.Fatalf("chunk %d has %d runes > %d", i, n, tc.size)
				}
			}
		})
	}
}

// TestSplitContextCancelled: a cancelled context stops the split with its
// cause instead of finishing the work.
func TestSplitContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("client gone")
	calls := 0
	s := Splitter{Size: 50, Len: func(t string) int {
		if calls++; calls == 100 {
			cancel(stop)
		}
		return utf8.RuneCountInString(t)
	}}
	cs, err := s.SplitContext(ctx, longLine(1<<20))
	if !errors.Is(err, stop) || cs != nil {
		t.Fatalf("got %d chunks, err %v; want none and %v", len(cs), err, stop)
	}
	if calls > 10000 {
		t.Errorf("Len called %d times after the cancellation at 100", calls)
	}
	if _, err := (Splitter{Size: 50}).SplitContext(context.Background(), "a. b."); err != nil {
		t.Fatal(err)
	}
}

// FuzzSplitLongLine repeats the input into a line of at least 20,000 runes
// with no line break and checks the splitter's invariants on it: chunks
// within size, every non-space character kept, and work linear in the
// line's length.
func FuzzSplitLongLine(f *testing.F) {
	f.Add("QUJDREVGR0hJSktMTU5PUA", 50)
	f.Add("甲乙丙，丁戊", 30)
	f.Add("word ", 12)
	f.Add("a.)", 7)
	f.Add("# x", 1)
	f.Fuzz(func(t *testing.T, unit string, size int) {
		unit = strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == utf8.RuneError {
				return ' '
			}
			return r
		}, unit)
		if size < 1 || size > 2000 || strings.TrimSpace(unit) == "" {
			t.Skip()
		}
		line := strings.Repeat(unit, 20000/utf8.RuneCountInString(unit)+1)
		measured := 0
		count := func(s string) int {
			measured += len(s)
			return utf8.RuneCountInString(s)
		}
		cs := Splitter{Size: size, Overlap: size / 3, Len: count}.Split(line)
		total := 0
		for i, c := range cs {
			if n := utf8.RuneCountInString(c.Text); n > size || strings.TrimSpace(c.Text) == "" {
				t.Fatalf("chunk %d has %d runes (size %d): %q", i, n, size, c.Text)
			}
			total += nonSpace(c.Text)
		}
		if total < nonSpace(line) {
			t.Fatalf("chunks hold %d non-space runes, the line %d", total, nonSpace(line))
		}
		if limit := 200*len(line) + 64*size; measured > limit {
			t.Fatalf("Len measured %d bytes for a %d-byte line", measured, len(line))
		}
	})
}

// nonSpace counts the runes of s that are not white space.
func nonSpace(s string) int { return utf8.RuneCountInString(strings.Join(strings.Fields(s), "")) }
