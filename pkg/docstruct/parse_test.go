package docstruct

import (
	"slices"
	"strings"
	"testing"
)

// law is a made-up statute, laid out as Chinese laws usually are.
const law = `某某共和国示例法

第一章 总则

第一条 为了示例，制定本法。

第二条 本法适用于下列事项：
（一）第一项事项；
（二）第二项事项，依照本法第一条的规定。

第二章 细则

第三条 本章的规定。
1. 一个列表项
2. 第二个列表项
(a) 嵌套的项

第四条 最后一条。
`

func TestParsePlainTextNests(t *testing.T) {
	d := Parse("某某共和国示例法.txt", law, Text, nil)
	if d.Title != "某某共和国示例法" {
		t.Errorf("title %q", d.Title)
	}
	var got []string
	for _, p := range d.Parts()[1:] {
		got = append(got, strings.Repeat("-", p.Depth)+p.Label.String())
	}
	want := []string{"-第一章", "--第一条", "--第二条", "---一", "---二", "-第二章", "--第三条", "---1", "---2", "----a", "--第四条"}
	if !slices.Equal(got, want) {
		t.Errorf("tree\n%v, want\n%v", got, want)
	}
	// 第一条 cited inside 第二条 is no part of its own.
	art2 := d.Root.Children[0].Children[1]
	if !strings.HasPrefix(art2.Text(d), "第二条") || !strings.Contains(art2.Text(d), "依照本法第一条") || strings.Contains(art2.Text(d), "第二章") {
		t.Errorf("第二条's text: %q", art2.Text(d))
	}
	if art2.Body != art2.Start+len("第二条") {
		t.Errorf("第二条's body starts at %d", art2.Body-art2.Start)
	}
	if got := d.Root.Children[0].Label.Name; got != "总则" {
		t.Errorf("第一章's name %q", got)
	}
	if p := d.At(strings.Index(law, "第二项事项")); p.Label.Num != 2 || p.Parent.Label.Kind != "条" {
		t.Errorf("At: %v", p.Path())
	}
}

func TestParseMarkdownHeadingsAndCode(t *testing.T) {
	md := "# Guide\n\nIntro.\n\n## Chapter 1: Start\n\nText.\n\n```\n## Chapter 9 in code\n1.2 not a label\n```\n\n### Section 1.1\n\nMore.\n\n## Chapter 2\n\n* Rule 3. a rule in a list\n\nEnd.\n"
	d := Parse("docs/guide.md", md, Markdown, nil)
	if d.Title != "Guide" || !slices.Contains(d.Aliases, "guide") {
		t.Errorf("title %q aliases %v", d.Title, d.Aliases)
	}
	var got []string
	for _, p := range d.Parts()[1:] {
		got = append(got, strings.Repeat("-", p.Depth)+p.Label.String())
	}
	want := []string{"-Chapter 1", "--Section 1.1", "-Chapter 2", "--Rule 3"}
	if !slices.Equal(got, want) {
		t.Errorf("tree %v, want %v", got, want)
	}
	if c1 := d.Root.Children[0]; c1.Label.Name != "Start" || !strings.Contains(c1.Text(d), "Chapter 9 in code") {
		t.Errorf("chapter 1: %+v %q", c1.Label, c1.Text(d))
	}
}

func TestDistinctive(t *testing.T) {
	tests := []struct {
		title  string
		titles []string
		want   string
	}{
		{"中华人民共和国劳动法", nil, "劳动法"},
		{"中华人民共和国劳动法", []string{"中华人民共和国劳动法", "中华人民共和国劳动合同法"}, "劳动法"},
		{"中华人民共和国劳动合同法", []string{"中华人民共和国劳动法", "中华人民共和国劳动合同法"}, "合同法"},
		{"中华人民共和国民法典", []string{"中华人民共和国民法典", "民法典解释"}, "国民法典"},
		{"论语", nil, ""},
		{"United States Constitution", nil, "Constitution"},
		{"Constitution of Japan", []string{"United States Constitution", "Constitution of Japan"}, "Japan"},
	}
	for _, tt := range tests {
		if got := Distinctive(tt.title, tt.titles); got != tt.want {
			t.Errorf("Distinctive(%q, %v) = %q, want %q", tt.title, tt.titles, got, tt.want)
		}
	}
}

func TestDottedSectionsResolve(t *testing.T) {
	md := "# 文后参考文献著录规则\n\n## 4 著录项目\n\n### 4.1 专著\n\n专著的项目。\n\n### 4.2 连续出版物\n\n连续出版物的项目。\n\n## 5 著录格式\n"
	d := Parse("gbt.md", md, Markdown, nil)
	known := Known{Titles: TitlesOf(d), Kinds: KindsOf(d)}
	for _, q := range []string{"第 4.2 节是什么？", "4.2 讲了什么", "第4.2节"} {
		r := Resolve(d, ParseAddress(q, known))
		if r.Part == nil || !strings.HasPrefix(r.Part.Heading, "4.2") {
			t.Errorf("%q: %v", q, partPath(r))
		}
	}
	r := Resolve(d, ParseAddress("第 4.7 节", known))
	if r.Absent == nil {
		t.Fatalf("4.7: %v, want absent", partPath(r))
	}
	if got, want := r.Absent.Sentence("zh"), "《文后参考文献著录规则》没有第4.7节；其节从第4.1节到第4.2节。"; got != want {
		t.Errorf("4.7: %q, want %q", got, want)
	}
}

// TestParseWorkIsBounded parses a large text whose every line is a label of
// a new kind: the tree's depth is bounded, and so is the work.
func TestParseWorkIsBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		b.WriteString("第一")
		b.WriteRune(rune(0x4e00 + 500 + i%5000))
		b.WriteString("：内容\n")
	}
	d := Parse("big.txt", b.String(), Text, nil)
	deepest := 0
	for _, p := range d.Parts() {
		deepest = max(deepest, p.Depth)
	}
	if deepest > maxDepth+1 {
		t.Errorf("depth %d", deepest)
	}
}

func TestLocate(t *testing.T) {
	d := Parse("某某共和国示例法.txt", law, Text, nil)
	for _, tt := range []struct{ passage, want string }{
		{"第二项事项", "二"},
		{"本章的規定", "第三条"},     // traditional characters
		{"为了示例 制定本法", "第一条"}, // punctuation and spaces ignored
		{"嵌套的项", "a"},
	} {
		p, ok := d.Locate(tt.passage)
		if !ok || p.Label.String() != tt.want {
			t.Errorf("Locate(%q) = %v, %v; want %s", tt.passage, p, ok, tt.want)
		}
	}
	if _, ok := d.Locate("没有这句话"); ok {
		t.Error("Locate found a passage the text does not hold")
	}
}
