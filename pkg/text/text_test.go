package text

import (
	"reflect"
	"testing"
	"unicode"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"我的名字是李雷。", []string{"我的", "的名", "名字", "字是", "是李", "李雷"}},
		{"The running dogs of Rome", []string{"run", "dog", "rome"}},
		{"乾 A", []string{"乾"}},
		{"GPT-4 模型", []string{"gpt", "4", "模型"}},
		{"罗店镇１９７９年", []string{"罗店", "店镇", "1979", "年"}},
		{"ＧＰＴ－４", []string{"gpt", "4"}},
		{"", []string{}},
		{"，。！", []string{}},
	}
	for _, tt := range tests {
		got := Terms(tt.in)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"我的名字是李雷。你好！你呢？", []string{"我的名字是李雷。", "你好！", "你呢？"}},
		{"He said “好。”然后走了", []string{"He said “好。”", "然后走了"}},
		{"Dr. Smith came. He left! Why? 3.14 is pi.", []string{"Dr. Smith came.", "He left!", "Why?", "3.14 is pi."}},
		{"line one\nline two", []string{"line one", "line two"}},
		{"  ", nil},
	}
	for _, tt := range tests {
		got := Sentences(tt.in)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Sentences(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzSentences: Sentences, which slices valid UTF-8, is the rune-by-rune
// reading of s, sentence for sentence, whether s is valid or not.
func FuzzSentences(f *testing.F) {
	for _, s := range []string{"我的名字是李雷。你好！你呢？", "He said “好。”然后走了", "Dr. Smith came. He left! Why? 3.14 is pi.",
		"line one\nline two", "  ", "e.g. this. A. Lincoln… ok?!) next", "“好。”」。。...end.", "Ünïcode É. x.\u2028y. İ. z", "", "好。\xff”x", "a.\xe3\x80", "。。\xc0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Sentences(s), sentenceRunes(s); !reflect.DeepEqual(got, want) {
			t.Errorf("Sentences(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestSimilarity(t *testing.T) {
	q := "我叫什么名字？"
	if a, b := Similarity(q, "我的名字是李雷。"), Similarity(q, "今天天气很好。"); a <= b {
		t.Errorf("similarity to the relevant sentence %v not above the unrelated one %v", a, b)
	}
	if s := Similarity("abc", ""); s != 0 {
		t.Errorf("Similarity with empty = %v, want 0", s)
	}
	if s := Similarity("乾卦的卦辞", "乾卦的卦辞"); s < 0.999 {
		t.Errorf("self similarity = %v, want 1", s)
	}
}

func TestCountLetters(t *testing.T) {
	for _, tt := range []struct {
		in          string
		cjk, others int
	}{
		{"", 0, 0},
		{"乾卦 is Qian, 1 卦!", 3, 6},
		{"ひらがな한글", 6, 0},
		{"123 ?!", 0, 0},
		{"Ελληνικά", 0, 8},
	} {
		if cjk, other := CountLetters(tt.in); cjk != tt.cjk || other != tt.others {
			t.Errorf("CountLetters(%q) = %d, %d; want %d, %d", tt.in, cjk, other, tt.cjk, tt.others)
		}
	}
}

// TestIsCJKEveryRune: IsCJK's shortcuts agree with the Unicode tables on
// every code point.
func TestIsCJKEveryRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
			unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
		if got := IsCJK(r); got != want {
			t.Fatalf("IsCJK(%U) = %v, want %v", r, got, want)
		}
	}
}
