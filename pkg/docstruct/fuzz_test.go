package docstruct

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	f.Add("# 论语\n\n## 学而篇第一\n\n1.1 子曰：“学而时习之”\n\n1.2 有子曰", true)
	f.Add("某法\n\n第一章 总则\n第一条 内容\n（一）项\n1. 列\n(a) 子项\n第二条\n", false)
	f.Add("## Article I\n\n### Section 1\n\n§ 2 text\n\n* Rule 3. x\n\n```\n# no\n```\n", true)
	f.Add("《易經》第一卦乾 乾為天\n初九：潛龍勿用。\n九二：見龍在田\n", false)
	f.Fuzz(func(t *testing.T, txt string, markdown bool) {
		if len(txt) > 1<<16 {
			return
		}
		format := Text
		if markdown {
			format = Markdown
		}
		start := time.Now()
		d := Parse("f.md", txt, format, fuzzProfile)
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("Parse took %v on %d bytes", el, len(txt))
		}
		for _, p := range d.Parts() {
			if p.Start < 0 || p.Start > p.End || p.End > len(txt) || p.Body < p.Start || p.Body > len(txt) {
				t.Fatalf("part %q: start %d body %d end %d, text %d", p.Heading, p.Start, p.Body, p.End, len(txt))
			}
			if p.Depth > maxDepth+1 {
				t.Fatalf("depth %d", p.Depth)
			}
			for _, c := range p.Children {
				if c.Start < p.Start || c.End > p.End || c.Parent != p {
					t.Fatalf("child %q outside its parent %q", c.Heading, p.Heading)
				}
			}
		}
		known := Known{Titles: TitlesOf(d), Kinds: KindsOf(d), Profile: fuzzProfile}
		if len(txt) > 8 {
			if p, ok := d.Locate(txt[len(txt)/2:]); ok && (p.Start > len(txt) || p.End > len(txt)) {
				t.Fatalf("Locate: part out of range")
			}
		}
		for _, line := range strings.SplitN(txt, "\n", 8) {
			a := ParseAddress(line, known)
			r := Resolve(d, a)
			if r.Absent != nil {
				_ = r.Absent.Sentence(Lang(line))
			}
		}
	})
}

func FuzzParseAddress(f *testing.F) {
	for _, q := range []string{
		"劳动法第三十六条规定了什么？", "《论语》1.3是什么？", "Article I, Section 8", "the Fourteenth Amendment",
		"What about Section 9?", "下一条呢？", "乾卦的九二是什么？", "论语学而篇第三章", "X 36条", "第廿一条",
		"Section 8 of Article I", "§ 12", "the twenty first amendment", "第一千零九十四条",
	} {
		f.Add(q)
	}
	d := Parse("law.txt", "示例法\n\n第一章 总则\n\n第一条 内容。\n\n第二条 内容。\n", Text, fuzzProfile)
	known := Known{Titles: []Title{{Title: "中华人民共和国劳动法"}, {Title: "论语"}, {Title: "United States Constitution", Aliases: []string{"us-constitution"}}},
		Kinds: []string{"条", "章", "篇", "article", "section", "amendment"}, Profile: fuzzProfile}
	f.Fuzz(func(t *testing.T, q string) {
		start := time.Now()
		a := ParseAddress(q, known)
		if el := time.Since(start); el > time.Second {
			t.Fatalf("ParseAddress took %v on %d bytes", el, len(q))
		}
		b, spans := ParseAddressSpans(q, known)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("ParseAddressSpans read %+v, ParseAddress %+v", b, a)
		}
		for i, sp := range spans {
			if sp.Start < 0 || sp.Start > sp.End || sp.End > len(q) || i > 0 && sp.Start < spans[i-1].Start {
				t.Fatalf("span %v of %d bytes out of place: %v", sp, len(q), spans)
			}
		}
		if len(q) <= 4096 {
			for _, l := range a.Steps {
				if len(l.Anchors(q)) == 0 {
					t.Fatalf("step %+v has no anchor in %q", l, q)
				}
			}
		}
		prev := ParseAddress("第一章第一条", known)
		a = a.Follow(prev)
		r := Resolve(d, a)
		if r.Part != nil {
			_ = ResolveRelative(d, r.Part, a)
		}
		if r.Absent != nil {
			_ = r.Absent.Sentence("zh") + r.Absent.Sentence("en")
		}
	})
}

// fuzzProfile is a small profile for the fuzz targets.
var fuzzProfile = func() *Profile {
	p := &Profile{Name: "fuzz", Classifiers: []string{"卦"},
		Positions:     []Position{{Names: []string{"初九", "初六"}, Kind: "爻", Number: 1}, {Names: []string{"九二"}, Kind: "爻", Number: 2}},
		FileNameForms: []string{"彖传上-NAME"}}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return p
}()
