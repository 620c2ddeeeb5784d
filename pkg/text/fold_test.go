package text

import (
	"testing"
	"unicode"
)

func TestFold(t *testing.T) {
	tests := []struct{ in, want string }{
		{"乾，元亨，利貞。", "乾，元亨，利贞。"},
		{"繫辭上傳", "系辞上传"},
		{"見龍在田，利見大人", "见龙在田，利见大人"},
		{"乾卦的卦辞是什么？", "乾卦的卦辞是什么？"}, // already simplified: unchanged
		{"Hello, 世界", "Hello, 世界"},
		{"著作 乾坤", "著作 乾坤"},   // 著 and 乾 are their own simplified forms
		{"復 遯 復興", "复 遁 复兴"}, // foldExtra: written 复, 遁 in simplified text
		{"", ""},
	}
	for _, tt := range tests {
		if got := Fold(tt.in); got != tt.want {
			t.Errorf("Fold(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFoldTermsMatchAcrossScripts(t *testing.T) {
	trad := Count(Terms(Fold("《象》曰：天行健，君子以自強不息。")))
	simp := Count(Terms(Fold("《象》曰：天行健，君子以自强不息。")))
	if Cosine(trad, simp) < 0.999999 {
		t.Errorf("folded traditional and simplified texts should share their terms: cosine %.3f", Cosine(trad, simp))
	}
}

// TestFoldRuneEveryRune checks FoldRune's quick path against the map for
// every rune.
func TestFoldRuneEveryRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := r
		if s, ok := foldMap[r]; ok {
			want = s
		}
		if got := FoldRune(r); got != want {
			t.Fatalf("FoldRune(%U) = %U, want %U", r, got, want)
		}
	}
}
