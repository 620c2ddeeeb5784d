package docstruct

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
)

func loadShared(t *testing.T, rel string) *Doc {
	t.Helper()
	p := shareddata.Path(t, rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(filepath.Base(p), string(b), FormatOf(p), nil)
}

func pathString(p *Part) string { return strings.Join(p.Path(), " > ") }

func TestConstitutionTree(t *testing.T) {
	d := loadShared(t, "structured/us-constitution.md")
	if d.Title != "United States Constitution" {
		t.Errorf("title %q", d.Title)
	}
	want := map[string]bool{}
	sections := map[int]int{1: 10, 2: 4, 3: 3, 4: 4}
	for a := 1; a <= 7; a++ {
		art := "United States Constitution > Article " + FormatNumber(a, Roman)
		want[art] = true
		for s := 1; s <= sections[a]; s++ {
			want[fmt.Sprintf("%s > Section %d", art, s)] = true
		}
	}
	for n := 1; n <= 27; n++ {
		want["United States Constitution > Amendments > Amendment "+FormatNumber(n, Roman)] = true
	}
	got := map[string]*Part{}
	for _, p := range d.Parts() {
		got[pathString(p)] = p
	}
	for w := range want {
		p := got[w]
		if p == nil {
			t.Errorf("no part %s", w)
			continue
		}
		if !strings.HasPrefix(p.Text(d), "#") || !strings.Contains(p.Text(d), p.Heading) {
			t.Errorf("%s: text starts %q", w, p.Text(d)[:min(40, len(p.Text(d)))])
		}
	}
	// A part's text runs to the next part of its level or a higher one.
	a1 := got["United States Constitution > Article I"]
	s8 := got["United States Constitution > Article I > Section 8"]
	if !strings.Contains(s8.Text(d), "To borrow Money") || strings.Contains(s8.Text(d), "Habeas Corpus") {
		t.Errorf("Article I, Section 8 runs wrong: %q…", s8.Text(d)[:80])
	}
	if a1.End != got["United States Constitution > Article II"].Start {
		t.Errorf("Article I ends at %d, Article II starts at %d", a1.End, got["United States Constitution > Article II"].Start)
	}
}

func TestLunyuTree(t *testing.T) {
	d := loadShared(t, "structured/lunyu.md")
	if d.Title != "论语" {
		t.Errorf("title %q", d.Title)
	}
	counts := []int{16, 24, 26, 26, 28, 30, 38, 21, 31, 27, 26, 24, 30, 44, 42, 14, 26, 11, 25, 3}
	if len(d.Root.Children) != 20 {
		t.Fatalf("%d books, want 20", len(d.Root.Children))
	}
	for i, book := range d.Root.Children {
		if book.Label.Kind != "篇" || book.Label.Num != i+1 || book.Label.Name == "" {
			t.Errorf("book %d: label %+v", i+1, book.Label)
		}
		if len(book.Children) != counts[i] {
			t.Errorf("%s: %d chapters, want %d", book.Heading, len(book.Children), counts[i])
		}
		for j, ch := range book.Children {
			want := fmt.Sprintf("论语 > %s > %d.%d", book.Heading, i+1, j+1)
			if got := pathString(ch); !strings.HasPrefix(got, want+" ") {
				t.Errorf("chapter path %q, want %q…", got, want)
			}
		}
	}
}

// TestAddressesResolveOnRealDocuments asks for parts in several forms.
func TestAddressesResolveOnRealDocuments(t *testing.T) {
	con := loadShared(t, "structured/us-constitution.md")
	lun := loadShared(t, "structured/lunyu.md")
	docs := []*Doc{con, lun}
	Distinguish(docs)
	known := Known{Titles: TitlesOf(docs...), Kinds: KindsOf(docs...)}
	tests := []struct {
		q, doc, path string // path: the part's path, or "" for absent
		absent       string
	}{
		{"What does the First Amendment say?", "", "United States Constitution > Amendments > Amendment I", ""},
		{"What does Amendment 4 say?", "", "United States Constitution > Amendments > Amendment IV", ""},
		{"What is Amendment IV?", "", "United States Constitution > Amendments > Amendment IV", ""},
		{"the Fourteenth Amendment", "", "United States Constitution > Amendments > Amendment XIV", ""},
		{"What does the 14th Amendment guarantee?", "", "United States Constitution > Amendments > Amendment XIV", ""},
		{"What does the twenty-first amendment repeal?", "", "United States Constitution > Amendments > Amendment XXI", ""},
		{"Article I, Section 8 of the Constitution", "United States Constitution", "United States Constitution > Article I > Section 8", ""},
		{"What does Section 9 of Article I say?", "", "United States Constitution > Article I > Section 9", ""},
		{"Article two, section 4", "", "United States Constitution > Article II > Section 4", ""},
		{"What is Article VII?", "", "United States Constitution > Article VII", ""},
		{"Amendment XIV, Section 2", "", "United States Constitution > Amendments > Amendment XIV > 2. Representatives", ""},
		{"论语学而篇第三章是什么？", "论语", "论语 > 学而篇第一 > 1.3 ", ""},
		{"《论语》1.3是什么？", "论语", "论语 > 学而篇第一 > 1.3 ", ""},
		{"《论语》为政篇第十一章", "论语", "论语 > 为政篇第二 > 2.11 ", ""},
		{"《论语》第二篇第4章", "论语", "论语 > 为政篇第二 > 2.4 ", ""},
		{"论语尧曰篇第三章", "论语", "论语 > 尧曰篇第二十 > 20.3 ", ""},
		{"论语20.3", "论语", "论语 > 尧曰篇第二十 > 20.3 ", ""},
		{"What does Article 1 Section 8 say?", "", "United States Constitution > Article I > Section 8", ""},
		{"Tell me about the first section of Article III.", "", "United States Constitution > Article III > Section 1", ""},
		{"Quote Amendment XXVII of the US Constitution", "United States Constitution", "United States Constitution > Amendments > Amendment XXVII", ""},
		{"What does Article Four say?", "", "United States Constitution > Article IV", ""},
		{"the 1st Amendment", "", "United States Constitution > Amendments > Amendment I", ""},
		{"论语·为政第二章", "论语", "论语 > 为政篇第二 > 2.2 ", ""},
		{"《论语·学而》第三章", "论语", "论语 > 学而篇第一 > 1.3 ", ""},
		{"里仁篇第4章", "", "论语 > 里仁篇第四 > 4.4 ", ""},
		{"What is Article IX?", "", "", "United States Constitution has no Article IX; its articles run from I to VII."},
		{"What does Amendment XXVIII say?", "", "", "United States Constitution has no Amendment XXVIII; its amendments run from I to XXVII."},
		{"论语学而篇第二十章是什么？", "论语", "", "《论语》学而篇第一没有第二十章；其章从第一章到第十六章。"},
		{"《论语》尧曰篇第四章", "论语", "", "《论语》尧曰篇第二十没有第四章；其章从第一章到第三章。"},
		{"Article I, Section 11", "", "", "Article I of United States Constitution has no Section 11; its sections run from 1 to 10."},
	}
	for _, tt := range tests {
		a := ParseAddress(tt.q, known)
		if tt.doc != "" && a.Doc != tt.doc {
			t.Errorf("%q: document %q, want %q", tt.q, a.Doc, tt.doc)
		}
		d := con
		if a.Doc == lun.Title || Lang(tt.q) == "zh" {
			d = lun
		}
		r := Resolve(d, a)
		switch {
		case tt.path != "" && r.Part == nil:
			t.Errorf("%q (%+v): absent (%s), want %s", tt.q, a, r.Absent.Sentence(Lang(tt.q)), tt.path)
		case tt.path != "" && !strings.HasPrefix(pathString(r.Part), tt.path):
			t.Errorf("%q (%+v): %s, want %s", tt.q, a, pathString(r.Part), tt.path)
		case tt.path == "" && r.Absent == nil:
			t.Errorf("%q (%+v): found %v, want absent", tt.q, a, r.Part.Path())
		case tt.path == "" && r.Absent.Sentence(Lang(tt.q)) != tt.absent:
			t.Errorf("%q: %q, want %q", tt.q, r.Absent.Sentence(Lang(tt.q)), tt.absent)
		}
	}
}

// TestEveryPartResolvesByItsLabel addresses every article, section,
// amendment and chapter in several notations.
func TestEveryPartResolvesByItsLabel(t *testing.T) {
	con := loadShared(t, "structured/us-constitution.md")
	lun := loadShared(t, "structured/lunyu.md")
	known := Known{Titles: TitlesOf(con, lun), Kinds: KindsOf(con, lun)}
	n := 0
	for _, p := range con.Parts() {
		if p.Label.Kind != "article" && p.Label.Kind != "amendment" && p.Label.Kind != "section" {
			continue
		}
		var forms []string
		num := p.Label.Num
		kind := titleWord(p.Label.Kind)
		forms = append(forms, fmt.Sprintf("What is %s %d?", kind, num), fmt.Sprintf("What is %s %s?", kind, FormatNumber(num, Roman)))
		if num < 100 {
			forms = append(forms, fmt.Sprintf("What does the %s %s say?", ordinalWord(num), kind))
		}
		if p.Label.Kind == "section" {
			art := p.Parent.Label
			for i := range forms {
				forms[i] = fmt.Sprintf("Article %s, %s %d", FormatNumber(art.Num, Roman), kind, num)
			}
			forms = append(forms, fmt.Sprintf("%s %d of Article %d", kind, num, art.Num))
		}
		for _, q := range forms {
			n++
			r := Resolve(con, ParseAddress(q, known))
			if r.Part != p {
				t.Errorf("%q: got %v, want %v", q, partPath(r), p.Path())
			}
		}
	}
	for _, book := range lun.Root.Children {
		for _, ch := range book.Children {
			b, c := book.Label.Num, ch.Label.Num
			for _, q := range []string{
				fmt.Sprintf("论语%s篇第%s章是什么？", book.Label.Name, FormatNumber(c, Chinese)),
				fmt.Sprintf("《论语》%d.%d是什么？", b, c),
				fmt.Sprintf("论语第%s篇第%d章", FormatNumber(b, Chinese), c),
			} {
				n++
				if r := Resolve(lun, ParseAddress(q, known)); r.Part != ch {
					t.Errorf("%q: got %v, want %v", q, partPath(r), ch.Path())
				}
			}
		}
	}
	t.Logf("%d addresses resolved", n)
}

func partPath(r Result) any {
	if r.Part == nil {
		if r.Absent != nil {
			return "absent: " + r.Absent.Sentence("en")
		}
		return nil
	}
	return r.Part.Path()
}

func ordinalWord(n int) string {
	if n < 20 {
		return enOrdOnes[n]
	}
	if n%10 == 0 {
		return enOrdTens[n/10]
	}
	return enTens[n/10] + "-" + enOrdOnes[n%10]
}

func BenchmarkParseConstitution(b *testing.B) {
	p := shareddata.Path(b, "structured/us-constitution.md")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Parse("us-constitution.md", string(data), Markdown, nil)
	}
}

func BenchmarkParseAddress(b *testing.B) {
	known := Known{Titles: []Title{{Title: "United States Constitution", Aliases: []string{"Constitution"}}, {Title: "论语"}},
		Kinds: []string{"article", "section", "amendment", "篇"}}
	for b.Loop() {
		ParseAddress("What does Article I, Section 8 of the Constitution say?", known)
		ParseAddress("论语学而篇第三章是什么？", known)
	}
}
