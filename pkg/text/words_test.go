package text

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	if got := Words("Caroline's café, 乾卦!"); !slices.Equal(got, []string{"Caroline's", "café", "乾", "卦"}) {
		t.Errorf("Words = %q", got)
	}
	for _, tt := range []struct {
		s, w string
		want bool
	}{
		{"When does Golden Wok open?", "golden wok", true},
		{"goldenwok", "golden", false},
		{"乾卦的卦辞", "卦辞", true},
		{"anything", "", false},
	} {
		if got := ContainsWord(tt.s, tt.w); got != tt.want {
			t.Errorf("ContainsWord(%q, %q) = %v", tt.s, tt.w, got)
		}
	}
	if !MostlyCJK("乾卦 is 天") || MostlyCJK("The hexagram 乾") {
		t.Error("MostlyCJK")
	}
	if !AllCJK("乾坤") || AllCJK("乾a") || AllCJK("") {
		t.Error("AllCJK")
	}
	if got := Truncate("一二三四五", 3); got != "一二三…" {
		t.Errorf("Truncate = %q", got)
	}
	if !FirstPerson("Yesterday I went out") || FirstPerson("It is") || !FirstPerson("我在学") {
		t.Error("FirstPerson")
	}
	if got := ChatTerms("my fav pic"); !slices.Contains(got, Terms("favorite")[0]) {
		t.Errorf("ChatTerms = %q, want shorthand spelled out", got)
	}
}

// TestIsQuestionWord: the words of asking are told from those of what is
// asked about, as Terms writes them.
func TestIsQuestionWord(t *testing.T) {
	for _, tt := range []struct {
		word string
		want bool
	}{
		{"do", true}, {"you", true}, {"know", true}, {"Please", true}, {"whether", true}, {"I'd", true}, {"什么", true},
		{"quiet", false}, {"view", false}, {"rooms", false}, {"早餐", false},
	} {
		ts := Terms(tt.word)
		if len(ts) != 1 {
			t.Fatalf("Terms(%q) = %q, want one term", tt.word, ts)
		}
		if got := IsQuestionWord(ts[0]); got != tt.want {
			t.Errorf("IsQuestionWord(%q) = %v, want %v", ts[0], got, tt.want)
		}
	}
}
