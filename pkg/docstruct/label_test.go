package docstruct

import (
	"slices"
	"testing"
)

func TestParseLabel(t *testing.T) {
	tests := []struct {
		line    string
		heading bool
		ok      bool
		kind    string
		num     int
		path    []int
		name    string
	}{
		{"第三十六条 用人单位应当…", false, true, "条", 36, nil, ""},
		{"第36条　劳动者…", false, true, "条", 36, nil, ""},
		{"第 4 章", true, true, "章", 4, nil, ""},
		{"第一章 总则", true, true, "章", 1, nil, "总则"},
		{"第十二回 王熙凤毒设相思局", true, true, "回", 12, nil, "王熙凤毒设相思局"},
		{"《易經》第一卦乾 乾為天 乾上乾下", true, true, "卦", 1, nil, "乾"},
		{"第二部分 总则", true, true, "部分", 2, nil, "总则"},
		{"学而篇第一", true, true, "篇", 1, nil, "学而"},
		{"卫灵公篇第十五", true, true, "篇", 15, nil, "卫灵公"},
		{"学而第一", true, true, "", 1, nil, "学而"},
		{"第一次会议上的讲话", true, false, "", 0, nil, ""},
		{"Article I", true, true, "article", 1, nil, ""},
		{"Section 8", true, true, "section", 8, nil, ""},
		{"Amendment XIV", true, true, "amendment", 14, nil, ""},
		{"Chapter Three: The Road", true, true, "chapter", 3, nil, "The Road"},
		{"Canto 3", true, true, "canto", 3, nil, ""},
		{"Section 2. The House", false, true, "section", 2, nil, ""},
		{"Fourteenth Amendment", true, true, "amendment", 14, nil, ""},
		{"The Fourteenth Amendment", true, true, "amendment", 14, nil, ""},
		{"§ 12 Definitions", false, true, "section", 12, nil, ""},
		{"§3.2", false, true, "section", 2, []int{3, 2}, ""},
		{"ALLENBELL", true, false, "", 0, nil, ""}, // one word, not "Allenbel" L
		{"CLIVE", true, false, "", 0, nil, ""},
		{"Section3", true, true, "section", 3, nil, ""},
		{"3.2.1 Scope", false, true, "", 1, []int{3, 2, 1}, ""},
		{"1.3 子曰：“巧言令色，鲜矣仁！”", false, true, "", 3, []int{1, 3}, ""},
		{"(一) 劳动报酬", false, true, "", 1, nil, ""},
		{"（二）工作时间", false, true, "", 2, nil, ""},
		{"(3) the third", false, true, "", 3, nil, ""},
		{"(b) second", false, true, "", 2, nil, ""},
		{"iv. fourth", false, true, "", 4, nil, ""},
		{"1) first", false, true, "", 1, nil, ""},
		{"2. Congress shall", false, true, "", 2, nil, ""},
		{"一、总则", false, true, "", 1, nil, ""},
		// Not labels.
		{"In 1990, the law…", false, false, "", 0, nil, ""},
		{"I think so.", false, false, "", 0, nil, ""},
		{"Mix the flour.", false, false, "", 0, nil, ""},
		{"The mix is good", false, false, "", 0, nil, ""},
		{"Article IIII", true, false, "", 0, nil, ""},
		{"Version 2 of the law changed", false, false, "", 0, nil, ""},
		{"子曰：学而时习之", false, false, "", 0, nil, ""},
		{"", false, false, "", 0, nil, ""},
		{"第", false, false, "", 0, nil, ""},
	}
	for _, tt := range tests {
		l, _, ok := ParseLabel(tt.line, tt.heading, nil)
		if ok != tt.ok {
			t.Errorf("ParseLabel(%q) ok = %v, want %v (%+v)", tt.line, ok, tt.ok, l)
			continue
		}
		if !ok {
			continue
		}
		if l.Kind != tt.kind || l.Num != tt.num || !slices.Equal(l.Path, tt.path) || l.Name != tt.name {
			t.Errorf("ParseLabel(%q) = %+v, want kind %q num %d path %v name %q", tt.line, l, tt.kind, tt.num, tt.path, tt.name)
		}
	}
}

func TestLabelString(t *testing.T) {
	tests := []struct {
		l    Label
		want string
	}{
		{Label{Kind: "条", Num: 36, Notation: Arabic}, "第三十六条"},
		{Label{Kind: "article", Num: 7, Notation: Roman}, "Article VII"},
		{Label{Kind: "section", Num: 8, Notation: Arabic}, "Section 8"},
		{Label{Path: []int{1, 3}, Num: 3}, "1.3"},
		{Label{Kind: "篇", Name: "学而"}, "学而篇"},
		{Label{Name: "Preamble"}, "Preamble"},
	}
	for _, tt := range tests {
		if got := tt.l.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.l, got, tt.want)
		}
	}
}
