package docstruct

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// statute writes a made-up law of n articles, five to a chapter; article
// 3 cites article k.
func statute(title string, n, k int) *Doc {
	var b strings.Builder
	b.WriteString(title + "\n\n")
	for i := 1; i <= n; i++ {
		if i%5 == 1 {
			fmt.Fprintf(&b, "第%s章 第%d部分\n\n", FormatNumber(i/5+1, Chinese), i/5+1)
		}
		fmt.Fprintf(&b, "第%s条 这是%s的第%d条。", FormatNumber(i, Chinese), title, i)
		if i == 3 {
			fmt.Fprintf(&b, "依照本法第%s条的规定。", FormatNumber(k, Chinese))
		}
		b.WriteString("\n\n")
	}
	return Parse(title+".txt", b.String(), Text, nil)
}

func TestParseAddressForms(t *testing.T) {
	labour := statute("中华人民共和国劳动法", 40, 36)
	contract := statute("中华人民共和国劳动合同法", 30, 20)
	docs := []*Doc{labour, contract}
	Distinguish(docs)
	known := Known{Titles: TitlesOf(docs...), Kinds: KindsOf(docs...)}
	tests := []struct {
		q     string
		doc   string
		steps []string // Label.String of each step
		rel   int
	}{
		{"劳动法第三十六条规定了什么？", "中华人民共和国劳动法", []string{"第三十六条"}, 0},
		{"劳动法 36条", "中华人民共和国劳动法", []string{"第三十六条"}, 0},
		{"劳动法第36条", "中华人民共和国劳动法", []string{"第三十六条"}, 0},
		{"《劳动合同法》第二十条", "中华人民共和国劳动合同法", []string{"第二十条"}, 0},
		{"中华人民共和国劳动合同法第二十条", "中华人民共和国劳动合同法", []string{"第二十条"}, 0},
		{"《中华人民共和国劳動法》第一条", "中华人民共和国劳动法", []string{"第一条"}, 0},
		{"第三十六条", "", []string{"第三十六条"}, 0},
		{"那第四条呢？", "", []string{"第四条"}, 0},
		{"第二章第三条", "", []string{"第二章", "第三条"}, 0},
		{"下一条呢？", "", nil, 1},
		{"上一章", "", nil, -1},
		{"《不存在的法》第一条", "不存在的法", []string{"第一条"}, 0},
		{"劳动合同法呢？", "中华人民共和国劳动合同法", nil, 0},
		{"What about Section 9?", "", []string{"Section 9"}, 0},
		{"and the next one?", "", nil, 1},
		{"Did I say that?", "", nil, 0},
		{"I think the mix is right.", "", nil, 0},
		{"In 1990 the law changed.", "", nil, 0},
		{"What does § 12 say?", "", []string{"Section 12"}, 0},
		{"第一次是什么时候？", "", nil, 0},
		{"第三方支付是什么？", "", nil, 0},
		{"Mutations in histone H3.3 drive tumours", "", nil, 0}, // a name's number, no label
		{"What does 3.2 say?", "", []string{"3.2"}, 0},
	}
	for _, tt := range tests {
		a := ParseAddress(tt.q, known)
		var steps []string
		for _, s := range a.Steps {
			steps = append(steps, s.String())
		}
		if a.Doc != tt.doc || !slices.Equal(steps, tt.steps) || a.Relative != tt.rel {
			t.Errorf("ParseAddress(%q) = doc %q steps %v relative %d; want %q %v %d", tt.q, a.Doc, steps, a.Relative, tt.doc, tt.steps, tt.rel)
		}
	}
}

// TestParseAddressSpans: the spans are where the question writes its
// document, its relative form and each step, in q's bytes (a traditional
// character folded, and a byte that is not UTF-8 after it, included); what
// lies outside them is what the question says besides the address.
func TestParseAddressSpans(t *testing.T) {
	known := Known{Titles: []Title{{Title: "中华人民共和国劳动法", Aliases: []string{"劳动法"}}, {Title: "Walden"}},
		Kinds: []string{"条", "章", "chapter"}, Profile: fuzzProfile}
	for _, tt := range []struct {
		q    string
		want []string // the text of each span
	}{
		{"劳动法第三十六条规定了什么？", []string{"劳动法", "第三十六条"}},
		{"《劳动法》第36条", []string{"《劳动法》", "第36条"}},
		{"那下一条呢？", []string{"下一条"}},
		{"What happens in Chapter 11 of Walden?", []string{"Chapter 11", "Walden"}},
		{"And the next chapter?", []string{"next chapter"}},
		{"What about the pond in Chapter 13?", []string{"Chapter 13"}},
		{"I am learning to cook, which spices should I buy first? (question 13)", []string{"question 13"}},
		{"乾卦的九二是什么？", []string{"乾卦", "九二"}},
		{"乾卦的九二是什麼？第三條", []string{"乾卦", "九二", "第三條"}},
		{"劳動法\xff第一條", []string{"劳動法", "第一條"}},
		{"Nothing addressed here.", nil},
	} {
		_, spans := ParseAddressSpans(tt.q, known)
		var got []string
		for _, sp := range spans {
			got = append(got, tt.q[sp.Start:sp.End])
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseAddressSpans(%q) spans %q, want %q", tt.q, got, tt.want)
		}
	}
}

// TestLabelAnchors: every step ParseAddress reads is written in a stretch
// holding one of the step's anchors.
func TestLabelAnchors(t *testing.T) {
	known := Known{Kinds: []string{"条", "章", "篇", "article", "section", "amendment"}, Profile: fuzzProfile}
	for _, q := range []string{"劳动法第三十六条", "36条", "Article I, Section 8", "the Fourteenth Amendment", "AMENDMENT IV", "§ 12",
		"《论语》1.3", "学而篇第三章", "乾卦的九二", "第4.2节", "为政第二章", "美国宪法第一条", "第一部分", "第三修正案", "the Commerce Clause",
		"第三條", "乾卦的九二是什麼"} {
		a := ParseAddress(q, known)
		if len(a.Steps) == 0 {
			t.Errorf("ParseAddress(%q) read no step", q)
		}
		for _, l := range a.Steps {
			if len(l.Anchors(q)) == 0 {
				t.Errorf("%q: step %+v has no anchor in it", q, l)
			}
		}
	}
	// A kind's other spelling counts (条 is an article); a text without any
	// has none.
	art := ParseAddress("Article 1", known).Steps[0]
	if got := art.Anchors("美国宪法第一条"); len(got) != 1 || got[0] != (Span{len("美国宪法第一"), len("美国宪法第一条")}) {
		t.Errorf("Anchors of %+v in 美国宪法第一条 = %v", art, got)
	}
	if got := art.Anchors("What does Section 8 say?"); len(got) != 0 {
		t.Errorf("Anchors of %+v in a text without it = %v", art, got)
	}
}

func TestResolveStatutes(t *testing.T) {
	labour := statute("中华人民共和国劳动法", 40, 36)
	contract := statute("中华人民共和国劳动合同法", 30, 20)
	docs := []*Doc{labour, contract}
	Distinguish(docs)
	known := Known{Titles: TitlesOf(docs...), Kinds: KindsOf(docs...)}
	byTitle := map[string]*Doc{labour.Title: labour, contract.Title: contract}

	// The part itself, never the part that cites its number.
	a := ParseAddress("劳动法第三十六条规定了什么？", known)
	r := Resolve(byTitle[a.Doc], a)
	if r.Part == nil || !strings.HasPrefix(r.Part.Text(labour), "第三十六条 这是") {
		t.Fatalf("第三十六条: %v", partPath(r))
	}
	// A number past the last article is absent, with the range.
	a = ParseAddress("劳动合同法第三十六条", known)
	r = Resolve(byTitle[a.Doc], a)
	if r.Absent == nil {
		t.Fatalf("劳动合同法第三十六条: %v, want absent", partPath(r))
	}
	if got, want := r.Absent.Sentence("zh"), "《中华人民共和国劳动合同法》没有第三十六条；其条从第一条到第三十条。"; got != want {
		t.Errorf("absent: %q, want %q", got, want)
	}
	// Follow-ups.
	prev := ParseAddress("劳动法第三十六条", known)
	from := Resolve(labour, prev).Part
	for _, tt := range []struct{ q, want string }{
		{"下一条呢？", "第三十七条"},
		{"上一条", "第三十五条"},
		{"下一章", ""}, // 第三十六条 is in the last chapter, 第八章
		{"上一章", "第七章"},
	} {
		a := ParseAddress(tt.q, known).Follow(prev)
		r := ResolveRelative(byTitle[a.Doc], from, a)
		if tt.want == "" {
			if r.Absent == nil || r.Absent.Sentence("zh") != "《中华人民共和国劳动法》没有第九章；其章从第一章到第八章。" {
				t.Errorf("%q after 第三十六条: %v, want absent", tt.q, partPath(r))
			}
			continue
		}
		if r.Part == nil || r.Part.Label.String() != tt.want {
			t.Errorf("%q after 第三十六条: %v, want %s", tt.q, partPath(r), tt.want)
		}
	}
	a = ParseAddress("那第四条呢？", known).Follow(prev)
	if r := Resolve(byTitle[a.Doc], a); r.Part == nil || r.Part.Label.String() != "第四条" || a.Doc != labour.Title {
		t.Errorf("那第四条呢: %v in %q", partPath(r), a.Doc)
	}
	a = ParseAddress("劳动合同法呢？", known).Follow(ParseAddress("劳动法第二十条", known))
	if r := Resolve(byTitle[a.Doc], a); r.Part == nil || a.Doc != contract.Title || r.Part.Label.String() != "第二十条" {
		t.Errorf("劳动合同法呢: %v in %q", partPath(r), a.Doc)
	}
	last := ParseAddress("劳动合同法第三十条", known)
	a = ParseAddress("下一条", known).Follow(last)
	if r := ResolveRelative(contract, Resolve(contract, last).Part, a); r.Absent == nil {
		t.Errorf("下一条 after the last: %v, want absent", partPath(r))
	}
}

func TestFollowEnglish(t *testing.T) {
	known := Known{Kinds: []string{"article", "section"}}
	prev := ParseAddress("What does Article I, Section 8 say?", known)
	a := ParseAddress("What about Section 9?", known).Follow(prev)
	var steps []string
	for _, s := range a.Steps {
		steps = append(steps, s.String())
	}
	if !slices.Equal(steps, []string{"Article I", "Section 9"}) {
		t.Errorf("What about Section 9? after Article I, Section 8: %v", steps)
	}
}

func TestAbsentSentence(t *testing.T) {
	a := &Absent{Doc: "Model Code", Want: Label{Kind: "rule", Num: 12, Notation: Arabic},
		First: Label{Kind: "rule", Num: 1, Notation: Arabic}, Last: Label{Kind: "rule", Num: 9, Notation: Arabic}, Count: 9}
	if got, want := a.Sentence("en"), "Model Code has no Rule 12; its rules run from 1 to 9."; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := a.Sentence("zh"), "《Model Code》没有Rule 12；其rule从Rule 1到Rule 9。"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	none := &Absent{Doc: "论语", Want: Label{Kind: "卷", Num: 3}}
	if got, want := none.Sentence("zh"), "《论语》没有第三卷。"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if Lang("What is Article IX?") != "en" || Lang("第九条是什么？") != "zh" {
		t.Error("Lang")
	}
}

func TestKindsAcrossLanguages(t *testing.T) {
	md := "# Model Code\n\n## Article I\n\n### Section 1\n\nOne.\n\n### Section 2\n\nTwo.\n\n## Article II\n\nThree.\n"
	d := Parse("code.md", md, Markdown, nil)
	known := Known{Titles: TitlesOf(d), Kinds: KindsOf(d)}
	r := Resolve(d, ParseAddress("Model Code 第一条第二节是什么？", known))
	if r.Part == nil || strings.Join(r.Part.Path(), " > ") != "Model Code > Article I > Section 2" {
		t.Errorf("第一条第二节: %v", partPath(r))
	}
	if !SameKind("Article", "条") || SameKind("条", "章") {
		t.Error("SameKind")
	}
	if a := ParseAddress("下一步怎么办？", known); a.Relative != 0 {
		t.Errorf("下一步: relative %d", a.Relative)
	}
}

// TestTitleNamesFolded checks that the folded names TitlesOf keeps are
// those of the title as it is when a question is read: a Title made by
// hand, or changed after TitlesOf, finds what it names now.
func TestTitleNamesFolded(t *testing.T) {
	doc := &Doc{Title: "United States Constitution", Aliases: []string{"US Charter"}}
	titles := TitlesOf(doc)
	changed := slices.Clone(titles)
	changed[0].Aliases = []string{"Model Charter"}
	tests := []struct {
		name   string
		titles []Title
		q      string
		doc    string
	}{
		{"computed", titles, "What does Article I of the us charter say?", "United States Constitution"},
		{"by hand, traditional script", []Title{{Title: "論語"}}, "论语第三章", "論語"},
		{"by hand", []Title{{Title: "United States Constitution", Aliases: []string{"US Charter"}}}, "the US CHARTER, Article I", "United States Constitution"},
		{"alias changed", changed, "Article I of the model charter", "United States Constitution"},
		{"alias gone", changed, "Article I of the US charter", ""},
		{"in 《》", titles, "《us charter》第一条", "United States Constitution"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ParseAddress(tt.q, Known{Titles: tt.titles})
			if a.Doc != tt.doc || (tt.doc != "" && !a.DocKnown) {
				t.Errorf("%q: doc %q (known %v), want %q", tt.q, a.Doc, a.DocKnown, tt.doc)
			}
		})
	}
}

// TestTitlesOfApart checks that the titles TitlesOf lays out in one block
// are apart: an alias appended to one is not another's.
func TestTitlesOfApart(t *testing.T) {
	docs := []*Doc{{Title: "A", Aliases: []string{"a1", "a2"}}, {Title: "B"}, {Title: "C", Aliases: []string{"c1"}}}
	titles := TitlesOf(docs...)
	titles[0].Aliases = append(titles[0].Aliases, "a3")
	titles[1].Aliases = append(titles[1].Aliases, "b1")
	if got := titles[2]; got.Title != "C" || !slices.Equal(got.Aliases, []string{"c1"}) {
		t.Errorf("third title %q %q, want C [c1]", got.Title, got.Aliases)
	}
	if !slices.Equal(docs[0].Aliases, []string{"a1", "a2"}) || docs[1].Aliases != nil {
		t.Errorf("documents' aliases changed: %q %q", docs[0].Aliases, docs[1].Aliases)
	}
	if a := ParseAddress("what is in c1?", Known{Titles: titles}); a.Doc != "C" {
		t.Errorf("c1 names %q, want C", a.Doc)
	}
}
