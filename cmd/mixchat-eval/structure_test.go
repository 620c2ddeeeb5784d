package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestParseNumber(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		form string
	}{
		{"36", 36, "digits"}, {"３６", 36, "digits"}, {"三十六", 36, "chinese"}, {"十", 10, "chinese"},
		{"十二", 12, "chinese"}, {"二十", 20, "chinese"}, {"一百零五", 105, "chinese"}, {"两", 2, "chinese"},
		{"廿三", 23, "chinese"}, {"卅", 30, "chinese"}, {"一〇五", 105, "chinese"}, {"一万二千", 12000, "chinese"},
		{"XIV", 14, "roman"}, {"XXVII", 27, "roman"}, {"IIII", 0, ""}, {"abc", 0, ""}, {"", 0, ""},
	} {
		n, form := parseNumber(tt.in)
		if n != tt.n || form != tt.form {
			t.Errorf("parseNumber(%q) = %d, %q; want %d, %q", tt.in, n, form, tt.n, tt.form)
		}
	}
}

func TestNumberWords(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{chinese(3), "三"}, {chinese(10), "十"}, {chinese(16), "十六"}, {chinese(20), "二十"}, {chinese(36), "三十六"},
		{chinese(105), "一百零五"}, {chinese(110), "一百一十"}, {chinese(1094), "一千零九十四"},
		{roman(4), "IV"}, {roman(14), "XIV"}, {roman(1999), "MCMXCIX"},
		{ordinal(1), "First"}, {ordinal(14), "Fourteenth"}, {ordinal(20), "Twentieth"}, {ordinal(27), "Twenty-Seventh"}, {ordinal(100), ""},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	for n := 1; n < 200; n++ {
		if m, _ := parseNumber(chinese(n)); m != n {
			t.Errorf("chinese(%d) = %q reads back as %d", n, chinese(n), m)
		}
		if m, _ := parseNumber(roman(n)); m != n {
			t.Errorf("roman(%d) = %q reads back as %d", n, roman(n), m)
		}
	}
}

// fixtureDocs reads testdata/structure: an English charter (Markdown
// headings, sections numbered within articles, a numbered list), a
// Chinese set of rules as plain text (第N章 / 第N条 lines), a second one
// (第N条 only), and sayings with 篇 headings and dotted paragraphs.
func fixtureDocs(t *testing.T) []stDoc {
	t.Helper()
	_, docs, err := stCorpus("testdata/structure")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 4 {
		t.Fatalf("%d documents, want 4", len(docs))
	}
	return docs
}

func TestParseStructure(t *testing.T) {
	docs := fixtureDocs(t)
	byFile := map[string]stDoc{}
	for _, d := range docs {
		byFile[d.File] = d
	}
	for _, tt := range []struct {
		file, path, key, kind string
		num                   int
	}{
		{"charter.md", "Club Charter > Article I", "membershipis", "Article", 1},
		{"charter.md", "Club Charter > Article I > Section 2", "amemberwhomi", "Section", 2},
		{"charter.md", "Club Charter > Amendments > Amendment II > 2.", "thechairdeci", "list", 2},
		{"charter.md", "Club Charter > Preamble", "wethemembers", "", 0},
		{"守则.txt", "第二章 > 第四条", "逾期归还的图书每册每天收", "条", 4},
		{"守则.txt", "第一章", "为了规范图书馆的借阅秩序", "章", 1},
		{"语录.md", "语录 > 夏篇第二", "弟子问勤师曰滴水穿石非一", "篇", 2},
		{"语录.md", "语录 > 夏篇第二 > 2.3", "师曰知之为知之不知则问人", "dotted", 3},
	} {
		d := byFile[tt.file]
		found := false
		for i, p := range d.Parts {
			if d.path(i) == tt.path {
				found = true
				if p.Key != tt.key || p.Kind != tt.kind || p.Num != tt.num {
					t.Errorf("%s %s: key %q kind %q num %d; want %q %q %d", tt.file, tt.path, p.Key, p.Kind, p.Num, tt.key, tt.kind, tt.num)
				}
			}
		}
		if !found {
			t.Errorf("%s: no part %s", tt.file, tt.path)
		}
	}
	for file, want := range map[string][2]string{"charter.md": {"Club Charter", "en"}, "守则.txt": {"社区图书馆守则", "zh"}, "语录.md": {"语录", "zh"}} {
		if d := byFile[file]; d.Title != want[0] || d.Lang != want[1] {
			t.Errorf("%s: title %q lang %s, want %q %s", file, d.Title, d.Lang, want[0], want[1])
		}
	}
	// A plain line that is a heading keeps its words as the name; a
	// labelled paragraph keeps its words as text.
	d := parseStructure("x.txt", []byte("《某书》第一卦乾 乾为天\n乾，元亨，利贞。\n第二卦坤\n坤，元亨。\n"))
	if len(d.Parts) != 2 || d.Parts[0].Name != "乾" || !d.Parts[0].nameForm || d.Parts[0].Key != "乾元亨利贞" || d.Parts[1].Parent != -1 {
		t.Errorf("heading lines: %+v", d.Parts)
	}
}

func TestStructureQuestions(t *testing.T) {
	qs := stBuild(fixtureDocs(t))
	byText := map[string]stQuestion{}
	for _, q := range qs {
		byText[q.Turn1+"|"+q.Text] = q
	}
	for _, tt := range []struct {
		turn1, text, kind, form, key string
	}{
		{"", "What does Article 2 say?", stLookup, "digits", "theclubelect"},
		{"", "What is Article II?", stLookup, "roman", "theclubelect"},
		{"", "What does the First Amendment say?", stLookup, "ordinal", "membersmaysh"},
		{"", "What does Article I, Section 2 say?", stNested, "roman", "amemberwhomi"},
		{"", "What does Article 1, Section 2 say?", stNested, "digits", "amemberwhomi"},
		{"", "What does Article 3 say?", stAbsent, "digits", ""},
		{"", "What does Article I, Section 3 say?", stAbsentNested, "roman", ""},
		{"What does Article 1, Section 1 say?", "And the next section?", stNext, "digits", "amemberwhomi"},
		{"", "社区图书馆守则第四条是什么？", stLookup, "chinese", "逾期归还的图书每册每天收"},
		{"", "社区图书馆守则第4条是什么？", stLookup, "digits", "逾期归还的图书每册每天收"},
		{"", "社区图书馆守则第六条是什么？", stAbsent, "chinese", ""},
		{"社区图书馆守则第三条是什么？", "下一条呢？", stNext, "chinese", "逾期归还的图书每册每天收"},
		{"社区图书馆守则第二条是什么？", "那《宿舍规定》呢？", stOtherDoc, "chinese", "宿舍内禁止使用电炉电热毯"},
		{"", "语录春篇第二章是什么？", stNested, "chinese", "师曰种树之时在十年之前其"},
		{"", "《语录》2.3是什么？", stLookup, "dotted", "师曰知之为知之不知则问人"},
		{"", "语录夏篇是什么？", stLookup, "name", "弟子问勤师曰滴水穿石非一"},
		{"", "语录春篇第三章是什么？", stAbsentNested, "chinese", ""},
		{"", "「借期为三十天」出自哪里？", stWhereFrom, "passage", "每位读者一次最多借阅五册"},
	} {
		q, ok := byText[tt.turn1+"|"+tt.text]
		if !ok {
			t.Errorf("not asked: %q then %q", tt.turn1, tt.text)
			continue
		}
		if q.Kind != tt.kind || q.Form != tt.form || q.Key != tt.key {
			t.Errorf("%q: kind %s form %s key %q; want %s %s %q", tt.text, q.Kind, q.Form, q.Key, tt.kind, tt.form, tt.key)
		}
	}
	for _, q := range qs {
		switch {
		case q.Text == "What does Section 1 say?", q.Text == "语录第一章是什么？", q.Text == "语录第三章是什么？":
			t.Errorf("%q: a number repeated in the document is asked without its parent", q.Text)
		case (q.Kind == stAbsent || q.Kind == stAbsentNested) && q.Key != "":
			t.Errorf("%q: an absent part has a key", q.Text)
		case q.Kind != stAbsent && q.Kind != stAbsentNested && len([]rune(q.Key)) < 4:
			t.Errorf("%q: key %q", q.Text, q.Key)
		}
	}
	// A nested absent part must not be answered with a sibling.
	if q := byText["|What does Article I, Section 3 say?"]; !contains(q.Wrong, "membershipis") || !contains(q.Wrong, "amemberwhomi") {
		t.Errorf("Article I, Section 3: wrong answers %q lack Article I's sections", q.Wrong)
	}
	if q := byText["|「借期为三十天」出自哪里？"]; !contains(q.Labels, "第三条") || q.Passage != "借期为三十天" {
		t.Errorf("where-from: labels %q passage %q", q.Labels, q.Passage)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestStructureScores(t *testing.T) {
	wrong := []string{"membershipis", "amemberwhomi"}
	for _, tt := range []struct {
		reply string
		empty bool
		want  bool
	}{
		{"(offline extractive model) Nothing in the given context is relevant to the question.", false, true},
		{"知识库中没有找到与问题相关的内容。", true, true},
		{"The Club Charter has no Article III; its articles run from I to II.", false, true},
		{"社区图书馆守则没有第六条，共五条。", false, true},
		{"Membership is open to every resident [1].", false, false},                    // a neighbour
		{"There is no Section 3; Membership is open to every resident.", false, false}, // says so but quotes a neighbour
		{"The chair decides when a drought begins.", false, false},                     // no absence said
	} {
		if got := absentSaid(tt.reply, tt.empty, wrong); got != tt.want {
			t.Errorf("absentSaid(%q) = %v, want %v", tt.reply, got, tt.want)
		}
	}
	for _, tt := range []struct {
		text, key string
		want      bool
	}{
		{"1.3 子曰：“巧言令色，鲜矣仁[1]！”", "子曰巧言令色鲜矣仁", true},
		{"子曰：「巧言令色，鮮矣仁！」", "子曰巧言令色鲜矣仁", true}, // traditional folded
		{"### Amendment II\nA well regulated Militia", "awellregulat", true},
		{"A well", "awellregulat", false},
		{"anything", "", false},
	} {
		if got := holdsKey(tt.text, tt.key); got != tt.want {
			t.Errorf("holdsKey(%q, %q) = %v, want %v", tt.text, tt.key, got, tt.want)
		}
	}
	if !namesPart("「借期为三十天」出自《社区图书馆守则》第三条。", []string{"第三条", "第3条"}) || namesPart("借期为三十天。", []string{"第三条"}) {
		t.Error("namesPart: a reply naming 第三条 names it, one quoting the passage back does not")
	}
	rows := []stRow{
		{stQuestion: stQuestion{Kind: stLookup}, Contains: true, Top1OK: true},
		{stQuestion: stQuestion{Kind: stLookup}},
		{stQuestion: stQuestion{Kind: stAbsent}, Absent: true},
		{stQuestion: stQuestion{Kind: stWhereFrom}, Names: true},
	}
	m := stScore(rows)
	if m.N != 4 || *m.AnswerContainsPart != 0.5 || *m.Top1IsPart != 0.3333 || *m.AbsentSaid != 1 || *m.NamesPart != 1 {
		t.Errorf("stScore: %+v", m)
	}
	if m := stScore(rows[:2]); m.AbsentSaid != nil || m.NamesPart != nil {
		t.Errorf("stScore of lookups: absent_said and names_part should be absent: %+v", m)
	}
}

// TestEvalStructureSmoke runs the eval end to end on the fixture corpus:
// every question is asked, the figures are the rows' shares, and the
// command prints JSON.
func TestEvalStructureSmoke(t *testing.T) {
	rep, err := evalStructure(context.Background(), "testdata/structure", 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Docs) != 4 || rep.Chunks == 0 || len(rep.Rows) != rep.All.N || rep.All.N < 50 {
		t.Fatalf("report: %d docs, %d chunks, %d rows, n %d", len(rep.Docs), rep.Chunks, len(rep.Rows), rep.All.N)
	}
	for _, k := range stKinds {
		if rep.ByKind[k].N == 0 {
			t.Errorf("no %s questions", k)
		}
	}
	var n, contains int
	for _, r := range rep.Rows {
		if r.Kind == stLookup || r.Kind == stNested || r.Kind == stNext || r.Kind == stOtherDoc {
			n++
			contains += b2i(r.Contains)
		}
		if r.Answer == "" {
			t.Errorf("%s: no answer", r.Text)
		}
	}
	if got, want := *rep.All.AnswerContainsPart, float64(int64(float64(contains)/float64(n)*10000+0.5))/10000; got != want {
		t.Errorf("answer_contains_part %.4f, rows say %.4f", got, want)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"structure", "--data", "testdata/structure", "--json", "--limit", "10"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		All    stMetrics `json:"all"`
		ByKind map[string]stMetrics
	}
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil || decoded.All.N != 10 {
		t.Errorf("--json --limit 10: %v, n %d:\n%s", err, decoded.All.N, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"structure", "--data", "testdata/structure", "--limit", "5"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "answer_contains_part") || !strings.Contains(out.String(), "all") {
		t.Errorf("table:\n%s", out.String())
	}
}
