package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/demo"
	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
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
	d := buildDocs([]string{demo.KnowledgeBase, "laws", "places"}, files, chunks, nil, profileOf, nil)
	checkBuildDocs(t, d)
	// Builds that keep the subject kinds for the next one name the same
	// things, the first and the next alike.
	var kinds kindCache
	for build := range 2 {
		t.Run(fmt.Sprint("kept kinds, build ", build+1), func(t *testing.T) {
			checkBuildDocs(t, buildDocs([]string{demo.KnowledgeBase, "laws", "places"}, files, chunks, nil, profileOf, &kinds))
		})
	}
	if len(kinds.prev) != 3 || kinds.cur != nil {
		t.Errorf("kinds kept %d (%d in the build under way), want the 3 documents' after a build", len(kinds.prev), len(kinds.cur))
	}
}

func checkBuildDocs(t *testing.T, d vocabDocs) {
	t.Helper()
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

// hideDocuments is a catalog without the structure index's shortcut: the
// vocabulary reads its chunks.
type hideDocuments struct{ kbLister }

// countListings counts the chunk listings of a catalog.
type countListings struct {
	*kb.Service
	listed int
}

func (c *countListings) ListChunks(ctx context.Context, name, file string, metadata map[string]any) ([]kb.Chunk, error) {
	c.listed++
	return c.Service.ListChunks(ctx, name, file, metadata)
}

// TestVocabularyFromIndex: over a knowledge-base service the vocabulary
// takes the documents from the structure index and the headings from the
// chunks' distinct metadata, reading no chunk, and knows what reading
// every chunk would tell it: the same names, titles, kinds and things.
func TestVocabularyFromIndex(t *testing.T) {
	ctx := context.Background()
	cfg := kb.DefaultConfig()
	cfg.Dir = t.TempDir()
	svc, err := kb.New(cfg, sqlite.NewKBCatalog(cfg.Dir), retrieve.NewHashEmbedder(64), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	for name, files := range map[string][]kb.FileData{
		"laws": {{Name: "labour.md", Data: []byte("# 中华人民共和国劳动法\n\n## 第一章 总则\n\n第一条 为了保护劳动者的合法权益，制定本法。\n\n第二条 在中华人民共和国境内的企业适用本法。\n\n## 第二章 促进就业\n\n第十条 国家创造就业条件。\n")}},
		"places": {
			{Name: "efes.md", Data: []byte("# EFES RESTAURANT\n\nEFES RESTAURANT is a restaurant.\n\n## Opening hours\n\nQ: Do you serve beer?\nA: Yes.\n")},
			{Name: "acorn.md", Data: []byte("# Acorn Guest House\n\nCategory: hotel\n\n## Rooms\n\nForty rooms.\n")},
		},
	} {
		if _, err := svc.Create(ctx, name, kb.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AddFiles(ctx, name, files, kb.AddOptions{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	counted := &countListings{Service: svc}
	_, files, err := kbStamp(ctx, counted)
	if err != nil {
		t.Fatal(err)
	}
	fastNames, fast, err := buildVocabulary(ctx, counted, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	if counted.listed != 0 {
		t.Errorf("the vocabulary listed chunks %d times", counted.listed)
	}
	slowNames, slow, err := buildVocabulary(ctx, hideDocuments{counted}, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	if counted.listed == 0 {
		t.Fatal("hideDocuments did not hide the shortcut")
	}
	if !slices.Equal(fastNames, slowNames) {
		t.Errorf("names %v, reading the chunks %v", fastNames, slowNames)
	}
	titles := func(d vocabDocs) (out []string) {
		for _, tt := range d.known.Titles {
			out = append(out, tt.Title+"|"+strings.Join(tt.Aliases, ","))
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(titles(fast), titles(slow)) {
		t.Errorf("titles %q, reading the chunks %q", titles(fast), titles(slow))
	}
	if !slices.Equal(fast.known.Kinds, slow.known.Kinds) || !slices.Contains(fast.known.Kinds, "条") {
		t.Errorf("kinds %q, reading the chunks %q", fast.known.Kinds, slow.known.Kinds)
	}
	q := "Is Efes open? And the acorn guesthouse? 劳动法呢？"
	named := func(d vocabDocs) (out []string) {
		for _, n := range d.things.Named(q) {
			out = append(out, n.Name+"/"+n.Kind)
		}
		return out
	}
	if got, want := named(fast), []string{"EFES RESTAURANT/restaurant", "Acorn Guest House/hotel", "中华人民共和国劳动法/"}; !slices.Equal(got, want) {
		t.Errorf("Named = %q, want %q (reading the chunks: %q)", got, want, named(slow))
	}
}
