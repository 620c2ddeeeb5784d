package extractive

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// The tests of this file check that the reading's shortcuts answer as
// what they stand for: replies must not change with them.

// TestMayHoldNumber: spans reads nothing from a text that mayHoldNumber
// turns away: rune by rune, it holds a digit or a numeral once folded,
// lower-cased and narrowed exactly when mayHoldNumber says so.
func TestMayHoldNumber(t *testing.T) {
	narrow := func(r rune) rune {
		if r >= '０' && r <= '９' {
			return '0' + (r - '０')
		}
		return r
	}
	for r := rune(0); r <= 0x10FFFF; r++ {
		s := string(r)
		f := strings.Map(narrow, strings.ToLower(text.Fold(s)))
		if has := strings.ContainsAny(f, "0123456789零〇一二两三四五六七八九十百"); has != mayHoldNumber(s) {
			t.Errorf("%U: holds a number %v, mayHoldNumber %v", r, has, mayHoldNumber(s))
		}
	}
}

// TestMayOpenList: listMarker matches no text whose first rune
// mayOpenList turns away.
func TestMayOpenList(t *testing.T) {
	for r := rune(0); r <= 0xFFFF; r++ {
		for _, rest := range []string{" x", ". x", ") x", "、x", "1) x", "1）x", "二、x"} {
			if s := string(r) + rest; listMarker.MatchString(s) && !mayOpenList(s) {
				t.Errorf("%q opens a list, mayOpenList says no", s)
			}
		}
	}
}

// TestMayOpenQuestion: qMark matches no text whose first rune
// mayOpenQuestion turns away.
func TestMayOpenQuestion(t *testing.T) {
	for r := rune(0); r <= 0xFFFF; r++ {
		for _, rest := range []string{": x", "：x", "uestion: x", "题：x", "題: x"} {
			if s := string(r) + rest; qMark.MatchString(s) && !mayOpenQuestion(s) {
				t.Errorf("%q opens a question, mayOpenQuestion says no", s)
			}
		}
	}
}

// TestCharVecCosine: the numbered vectors' cosine is text.Cosine's, to
// the last bit.
func TestCharVecCosine(t *testing.T) {
	var sents []string
	for _, f := range []string{"testdata/holiday-policy.md", "testdata/group-dining.md", "../../demo/zhouyi/zhouyi-traditional.txt"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			sents = append(sents, text.Sentences(l)...)
		}
	}
	sents = append(sents[:min(len(sents), 400)], "", "The the THE running, runs ran.", "乾乾乾 元亨 ABC abc 123", "Dr. Smith's dog's bone")
	cv := newCharVecs(len(sents))
	for i, a := range sents {
		for j := i; j < len(sents); j += 7 {
			b := sents[j]
			want := text.Cosine(text.Count(text.Chars(a)), text.Count(text.Chars(b)))
			if got := cv.of(i, a).cosine(cv.of(j, b)); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("cosine(%q, %q) = %v, text.Cosine %v", a, b, got, want)
			}
		}
	}
}

// TestNormalizedIs: normalizedIs(s, n) tells what normalize(s) would.
func TestNormalizedIs(t *testing.T) {
	texts := []string{"", "。！", "Hello, World!", "hello world", "HELLO WORLD.", "helloworld", "hello", "hello world 2",
		"\u212Aelvin", "kelvin", "我叫什么名字？", "我叫什么名字", "我叫什么", "Ⅻ 12", "İstanbul", "istanbul", "i̇stanbul", "\xff\xfeab", "ab"}
	for _, s := range texts {
		for _, q := range texts {
			n := normalize(q)
			empty, same := normalizedIs(s, n)
			if ns := normalize(s); empty != (ns == "") || same != (ns == n) {
				t.Errorf("normalizedIs(%q, %q) = %v, %v; normalize gives %q", s, n, empty, same, ns)
			}
		}
	}
}

// matchByTerms is query.match as text.Terms reads s, term by term: what
// the one-pass reading must give.
func matchByTerms(qr query, s string) match {
	s = text.DropPossessives(text.Fold(s))
	m := match{chars: make([]bool, qr.nChar), grams: make([]bool, qr.nGram), near: make([]bool, qr.nChar)}
	for _, t := range text.Terms(s) {
		if k, ok := qr.grams[t]; ok {
			m.grams[k] = true
		}
		if r, _ := utf8.DecodeRuneInString(t); !text.IsCJK(r) {
			m.size++
			if k, ok := qr.words[t]; ok {
				m.chars[k] = true
			} else if w, ok := qr.related[t]; ok {
				m.near[qr.words[w]] = true
			}
		}
	}
	for _, r := range s {
		if text.IsCJK(r) {
			m.size++
			if k, ok := qr.chars[r]; ok {
				m.chars[k] = true
			}
		}
	}
	return m
}

// FuzzMatch: query.match reads a sentence as text.Terms does.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{"我的名字是李雷。", "The running dogs of Rome's quiet, silent garden", "乾 A", "GPT-4 模型ａｂ１２", "罗店镇１９７９年",
		"'tis the dog's' o'clock '' x'", "乾，元亨，利貞。", "\xff乾\xfe坤 a\xffb", "Is the room quiet? It was silent.", "ＧＰＴ－４", ""} {
		f.Add("Is the room quiet in 乾卦 of GPT-4's year 1979?", s)
		f.Add("我叫什么名字？", s)
	}
	f.Fuzz(func(t *testing.T, q, s string) {
		qr := newQuery(q)
		got, want := qr.match(s), matchByTerms(qr, s)
		if !slices.Equal(got.chars, want.chars) || !slices.Equal(got.grams, want.grams) || !slices.Equal(got.near, want.near) || got.size != want.size {
			t.Errorf("match(%q) of %q = %+v, want %+v", s, q, got, want)
		}
	})
}

// TestNumeric: text.Terms keeps a word numeric accepts as it is.
func TestNumeric(t *testing.T) {
	for _, w := range []string{"1997", "0", "4g", "a1b2", "mp3", "x86", "10th", "1st"} {
		if !numeric(w) {
			t.Errorf("numeric(%q) = false", w)
		}
		if ts := text.Terms(w); len(ts) != 1 || ts[0] != w {
			t.Errorf("Terms(%q) = %q, want the word itself", w, ts)
		}
	}
	for _, w := range []string{"abc", "", "A1", "1'", "１２", "no"} {
		if numeric(w) {
			t.Errorf("numeric(%q) = true", w)
		}
	}
}

// TestPlain: a material plain says shape leaves as it is, reshape leaves
// as it is, every sentence plain; and the materials it turns away are
// those reshape changes or may change.
func TestPlain(t *testing.T) {
	chat := []llm.Message{
		{Role: llm.RoleSystem, Content: "Earlier in this conversation:\n[27 Nov 2026]\nHuman: 我周末喜欢去青城山徒步。 (721)\nAI: Berlin in spring is lovely; she will find plenty of parks. [5]"},
		{Role: llm.RoleUser, Content: "1. first I boil the egg\n2. then I peel it"},
		{Role: llm.RoleAssistant, Content: "- About six minutes.\n(1) gives a soft yolk\n一、先烧水"},
		{Role: llm.RoleUser, Content: "Q: is it done? A: yes"},
	}
	for _, tt := range []struct {
		name  string
		g     llm.Grounding
		plain bool
	}{
		{"conversation", llm.Grounding{Question: "How long?", History: chat[:1]}, true},
		{"list items the user wrote", llm.Grounding{Question: "How long?", History: chat[:2]}, true},
		{"list items the model wrote", llm.Grounding{Question: "How long?", History: chat[:3]}, false},
		{"a table", llm.Grounding{Question: "deposit?", Evidence: []llm.Evidence{{ID: 1, Path: "dining", Text: "Party | Deposit\n9 or more | 20%"}}}, false},
		{"a question of the documents", llm.Grounding{Question: "done?", Evidence: []llm.Evidence{{ID: 1, Path: "faq", Text: "Q: Is it done?\nA: Yes."}}}, false},
		{"prose", llm.Grounding{Question: "done?", Evidence: []llm.Evidence{{ID: 1, Path: "doc > part", Text: "It is done. Nothing is left."}}, History: chat[:2]}, true},
		{"a question the user wrote", llm.Grounding{Question: "done?", History: []llm.Message{chat[0], chat[3]}}, true},
	} {
		_, sents, _ := material(tt.g)
		if got := plain(sents); got != tt.plain {
			t.Errorf("%s: plain = %v, want %v", tt.name, got, tt.plain)
		}
		if !plain(sents) {
			continue
		}
		out, kinds := reshape(sents, false)
		if !slices.Equal(out, sents) || slices.ContainsFunc(kinds, func(r role) bool { return r != role{} }) {
			t.Errorf("%s: plain, but reshape gives %+v, %+v", tt.name, out, kinds)
		}
	}
}
