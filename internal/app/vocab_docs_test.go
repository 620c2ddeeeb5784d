package app

import (
	"slices"
	"testing"

	"github.com/mixchat/mixchat/demo"
	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/kb"
)

// TestBuildDocs: the documents are read again from their chunks: their
// titles and aliases, the kinds of parts they use, the profile of the
// knowledge base (the demo's for the demo's), and what each says its
// subject is, found however a conversation writes its name.
func TestBuildDocs(t *testing.T) {
	files := map[string][]kb.FileInfo{
		"laws":   {{Name: "labour.md"}},
		"places": {{Name: "efes.md"}, {Name: "acorn.md"}},
	}
	chunks := map[string][]kb.Chunk{
		"laws": {
			{File: "labour.md", Seq: 1, Text: "第二条 在中华人民共和国境内的企业适用本法。\n\n第三条 劳动者享有平等就业的权利。"},
			{File: "labour.md", Seq: 0, Text: "# 中华人民共和国劳动法\n\n## 第一章 总则\n\n第一条 为了保护劳动者的合法权益，制定本法。"},
		},
		"places": {
			{File: "efes.md", Text: "# EFES RESTAURANT\n\nEFES RESTAURANT is a restaurant.\n\nQ: Do you serve beer?\nA: Yes."},
			{File: "acorn.md", Text: "# Acorn Guest House\n\nCategory: hotel\n\nForty rooms."},
		},
		demo.KnowledgeBase: nil,
	}
	// The demo's base names the demo's profile; the others none.
	profileOf := func(name string) *docstruct.Profile {
		if name != demo.KnowledgeBase {
			return nil
		}
		p, err := demo.StructureProfile()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := buildDocs([]string{demo.KnowledgeBase, "laws", "places"}, files, chunks, profileOf)
	var titles []string
	for _, tt := range d.known.Titles {
		titles = append(titles, tt.Title)
	}
	slices.Sort(titles)
	if want := []string{"Acorn Guest House", "EFES RESTAURANT", "中华人民共和国劳动法"}; !slices.Equal(titles, want) {
		t.Errorf("titles %q, want %q", titles, want)
	}
	for _, k := range []string{"条", "章"} {
		if !slices.Contains(d.known.Kinds, k) {
			t.Errorf("kinds %q lack %s", d.known.Kinds, k)
		}
	}
	if d.known.Profile == nil || d.known.Profile.Name != "zhouyi" {
		t.Errorf("profile %+v, want the demo's", d.known.Profile)
	}
	got := d.things.Named("Is Efes open? And the acorn guesthouse? 劳动法呢？")
	var names []string
	for _, n := range got {
		names = append(names, n.Name+"/"+n.Kind)
	}
	if want := []string{"EFES RESTAURANT/restaurant", "Acorn Guest House/hotel", "中华人民共和国劳动法/"}; !slices.Equal(names, want) {
		t.Errorf("Named = %q, want %q", names, want)
	}
}
