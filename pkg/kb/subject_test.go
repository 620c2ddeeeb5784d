package kb

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// subjectDoc is a document about one place: its name, question–answer
// pairs that repeat the name, and notes of visitors, one of which says
// what a question asks (saying); every note ends with tail.
func subjectDoc(name, saying, tail string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s is a garden.\n\n## Questions\n\n", name, name)
	for _, thing := range []string{"a cafe", "parking", "a lift", "a shop", "a guide", "lockers"} {
		fmt.Fprintf(&b, "Q: Does %s have %s?\nA: %s does not have %s.\n\n", name, thing, name, thing)
	}
	b.WriteString("## Notes\n\n")
	notes := []string{
		"We walked the long paths in the morning and the roses were in bloom. The benches were many and shaded, and the staff at the gate told us the history of the walls.",
		"The entry price was fair for what you get. Children liked the maze, although it is small, and the lawns were kept short and green all summer long.",
		saying,
		"The signs were hard to read in places. We got lost twice near the orchard, but the trees were lovely and a gardener showed us the way back to the gate.",
	}
	for i, n := range notes {
		fmt.Fprintf(&b, "### Note %d\n\n%s%s\n\n", i+1, n, tail)
	}
	return b.String()
}

// TestSearchNamedDocument: a question that names a document and asks one
// thing of it finds the chunk of that document that says the thing, not
// the chunks that repeat the name most; the document's relevances are
// kept.
func TestSearchNamedDocument(t *testing.T) {
	ctx := context.Background()
	s := newHashKB(t, "places", nil)
	// The word asked about is common in the base (every note of the
	// other places says it), the name rare: the chunks that repeat the
	// name outrank, on the hybrid score, the one that says the thing.
	files := []FileData{{Name: "BIRCH COURT.md", Data: []byte(subjectDoc("BIRCH COURT",
		"We came for a rest after a busy week. The pond corner was very quiet, so we could read for hours without a sound around us.", ""))}}
	for _, name := range []string{"ELM YARD", "OAK HILL", "ASH PARK", "YEW WALK", "FIR DELL"} {
		files = append(files, FileData{Name: name + ".md", Data: []byte(subjectDoc(name,
			"It was crowded at noon. The fountain was loud but the children loved it and splashed around for an hour.", " It was not quiet."))})
	}
	mustAdd(t, s, "places", files...)
	// The words that make it a question ("does", "have", "you", "know")
	// are those of the pairs' questions: they count for nothing.
	for _, q := range []string{"Is Birch Court quiet?", "Is it quiet at the Birch Court?", "Does Birch Court have quiet spots?",
		"Do you know if Birch Court is quiet?"} {
		rs, err := s.Search(ctx, SearchRequest{Query: q, KnowledgeBases: []string{"places"}, TopK: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 || rs[0].File != "BIRCH COURT.md" || !strings.Contains(rs[0].Text, "quiet") {
			var got []string
			for _, r := range rs {
				got = append(got, fmt.Sprintf("%s %.3f %q", r.File, r.Relevance, r.Text))
			}
			t.Errorf("%s: got %v, want first the note of BIRCH COURT that says quiet", q, got)
		}
	}
}

// TestNamedDocument: which result's document a question names, and what
// it asks besides the name.
func TestNamedDocument(t *testing.T) {
	rs := []Result{{Chunk: Chunk{File: "notes/ELM YARD.md"}}, {Chunk: Chunk{File: "BIRCH COURT.md"}}}
	for _, tt := range []struct {
		q, file string
		rest    []string
	}{
		{"Is Birch Court quiet?", "BIRCH COURT.md", []string{"quiet"}},
		{"Is the Elm Yard open late?", "notes/ELM YARD.md", []string{"open", "late"}},
		{"Is the Birch open late?", "BIRCH COURT.md", []string{"open", "late"}}, // half the title names it
		{"Is it open late?", "", nil},                                           // no name
		{"Birch Court", "", nil},                                                // nothing asked
	} {
		qterms := distinct(lexTerms(stripQuestion(tt.q)))
		file, rest := namedDocument(qterms, rs, fileTitleTerms)
		if file != tt.file || !slices.Equal(rest, lexTerms(strings.Join(tt.rest, " "))) {
			t.Errorf("%s: named %q, rest %q; want %q, %q", tt.q, file, rest, tt.file, tt.rest)
		}
	}
}

// TestApplyNamedDocuments: the results outside the documents whose whole
// title the question holds (numbers aside: "(2)" tells two documents of
// one name apart) are lowered when one is inside; a title the question
// holds only part of names nothing.
func TestApplyNamedDocuments(t *testing.T) {
	for _, tt := range []struct {
		q     string
		order []string
	}{
		{"Does Oak Hill have fast internet?", []string{"OAK HILL (2).md", "OAK HILL.md", "ELM YARD.md"}},
		{"Does Birch Court have fast internet?", []string{"ELM YARD.md", "OAK HILL (2).md", "OAK HILL.md"}}, // no result of BIRCH COURT
		{"Is the hill quiet?", []string{"ELM YARD.md", "OAK HILL (2).md", "OAK HILL.md"}},                   // half a title names nothing
	} {
		rs := []Result{
			{Chunk: Chunk{ID: "1", File: "ELM YARD.md"}, Relevance: 0.9},
			{Chunk: Chunk{ID: "2", File: "OAK HILL (2).md"}, Relevance: 0.81},
			{Chunk: Chunk{ID: "3", File: "OAK HILL.md"}, Relevance: 0.8},
		}
		applyNamedDocuments(tt.q, rs, fileTitleTerms)
		var got []string
		for _, r := range rs {
			got = append(got, r.File)
		}
		if !slices.Equal(got, tt.order) {
			t.Errorf("%s: %q, want %q", tt.q, got, tt.order)
		}
	}
}
