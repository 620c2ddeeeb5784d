package kb

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mixchat/mixchat/pkg/docstruct"
)

// TestStructSetIncremental checks that a set changed one document at a
// time (uploads) equals the set made at once of the same documents, and
// docstruct's own Distinguish and KindsOf of them.
func TestStructSetIncremental(t *testing.T) {
	titles := []string{
		"中华人民共和国劳动法", "中华人民共和国劳动合同法", "劳动合同法", "合同法", "宪法",
		"中华人民共和国宪法", "宪法修正案", "United States Constitution", "Constitution",
		"The Constitution", "Rules of Court", "Court Rules", "Local Court Rules", "notes",
	}
	kinds := []string{"Part", "编", "部分", "Article", "条", "章", "Chapter"}
	rng := rand.New(rand.NewPCG(1, 2))
	doc := func(i int) (string, *structDoc) {
		file := fmt.Sprintf("d%02d.md", rng.IntN(12))
		txt := "# " + titles[rng.IntN(len(titles))] + "\n\n"
		for range 3 {
			k := kinds[rng.IntN(len(kinds))]
			if k == "编" || k == "部分" || k == "条" || k == "章" {
				txt += fmt.Sprintf("## 第%d%s\n\n正文%d。\n\n", rng.IntN(5)+1, k, i)
			} else {
				txt += fmt.Sprintf("## %s %d\n\nText %d.\n\n", k, rng.IntN(5)+1, i)
			}
		}
		return file, parseStruct(file, fmt.Sprint(i), txt, docstruct.Markdown, nil)
	}
	cur := newStructSet(0, nil, nil)
	fresh := map[string]*structDoc{} // the documents as parsed, by file
	for i := range 300 {
		file, sd := doc(i)
		fresh[file] = sd
		cur = cur.with(sd)

		var all []*structDoc
		for _, d := range fresh {
			all = append(all, d)
		}
		want := newStructSet(0, nil, all)
		var ref []*docstruct.Doc
		for _, d := range want.docs {
			c := *fresh[d.file].doc
			c.Aliases = slices.Clone(fresh[d.file].parsed)
			ref = append(ref, &c)
		}
		docstruct.Distinguish(ref)
		if !slices.Equal(cur.known.Kinds, docstruct.KindsOf(ref...)) || !slices.Equal(want.known.Kinds, cur.known.Kinds) {
			t.Fatalf("upload %d: kinds %q, at once %q, KindsOf %q", i, cur.known.Kinds, want.known.Kinds, docstruct.KindsOf(ref...))
		}
		if len(cur.docs) != len(ref) {
			t.Fatalf("upload %d: %d documents, want %d", i, len(cur.docs), len(ref))
		}
		for j, d := range cur.docs {
			if d.file != want.docs[j].file || !slices.Equal(d.doc.Aliases, ref[j].Aliases) || !slices.Equal(want.docs[j].doc.Aliases, ref[j].Aliases) ||
				!slices.Equal(cur.known.Titles[j].Aliases, ref[j].Aliases) {
				t.Fatalf("upload %d: %s (%s) aliases %q, at once %q, Distinguish %q", i, d.file, d.doc.Title, d.doc.Aliases, want.docs[j].doc.Aliases, ref[j].Aliases)
			}
		}
	}
}
