package kb

import (
	"context"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file resolves a question that addresses a part of a document
// ("劳动法第三十六条", "Article I, Section 8", "《论语》1.3") in the
// structure index (structure.go) before similarity ranks the rest: the
// part, when the document has it, is the first result (Match
// rag.MatchPart); when it has not, the one result is a statement that it
// is absent (Match rag.MatchAbsent), in the question's language, so that
// no neighbour and no other document's part of that number stands for it.

// maxPartRunes bounds the text of an addressed part given as one result:
// a whole chapter of a long law is cut at a line break before it (the
// parts under it are addressed by their own numbers).
const maxPartRunes = 4000

// structDocRef is a document of one of the bases searched.
type structDocRef struct {
	kb string
	sd *structDoc
}

// addressed returns the result an addressed question resolves to in the
// bases' structure: the part (Match rag.MatchPart) or the statement that
// it is absent (rag.MatchAbsent); nil when the question addresses no part
// or no document of the bases holds the kind of part it names. ranked are
// the similarity results, best first: with several documents that may be
// meant, the best-ranked one's is.
func (s *Service) addressed(ctx context.Context, bases []*base, q string, ranked []Result) (*Result, error) {
	var titles []docstruct.Title
	var kinds []string
	var prof *docstruct.Profile
	type baseSet struct {
		kb  string
		set *structSet
	}
	var sets []baseSet
	ndocs := 0
	for _, b := range bases {
		set, err := b.structure(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			continue // found by similarity only
		}
		if prof == nil {
			prof = set.profile
		}
		ndocs += len(set.docs)
		if sets = append(sets, baseSet{b.name, set}); len(sets) == 1 {
			// One base's (the usual search) are read as they are.
			titles, kinds = set.known.Titles, set.known.Kinds
		} else {
			titles = append(slices.Clip(titles), set.known.Titles...)
			kinds = append(slices.Clip(kinds), set.known.Kinds...)
		}
	}
	if ndocs == 0 {
		return nil, nil
	}
	q = unquoted(q)
	addr := docstruct.ParseAddress(q, docstruct.Known{Titles: titles, Kinds: kinds, Profile: prof})
	if len(addr.Steps) == 0 || addr.Relative != 0 {
		return nil, nil // most questions address no part: the documents are not listed
	}
	docs := make([]structDocRef, 0, ndocs)
	for _, bs := range sets {
		for _, d := range bs.set.docs {
			docs = append(docs, structDocRef{kb: bs.kb, sd: d})
		}
	}
	r := resolveAddress(docs, addr, q, ranked)
	if r != nil && r.Match == rag.MatchAbsent && addr.DocKnown {
		// A name may be a document's and a part's of another ("X" the
		// alias of the file "notes-X", and the chapter X of the book):
		// when the document named lacks the part, the name read as the
		// part's finds it, if it is there.
		alt := docstruct.ParseAddress(q, docstruct.Known{Kinds: kinds, Profile: prof})
		if alt.Doc == "" && alt.Relative == 0 && len(alt.Steps) > len(addr.Steps) {
			if ar := resolveAddress(docs, alt, q, ranked); ar != nil && ar.Match == rag.MatchPart {
				return ar, nil
			}
		}
	}
	return r, nil
}

// resolveAddress resolves an address among the documents (see addressed).
func resolveAddress(docs []structDocRef, addr docstruct.Address, q string, ranked []Result) *Result {
	var cands []structDocRef
	switch {
	case addr.Doc != "" && !addr.DocKnown:
		// A title written otherwise than the document's ("《X传》" for
		// the file "X传-上篇", "《X》" for a section of a larger
		// document) is no proof of absence: only a title no document
		// and no heading comes near is said to be absent.
		for _, d := range docs {
			if nearDoc(d.sd, addr.Doc) {
				cands = append(cands, d)
			}
		}
		if len(cands) == 0 {
			if nearHeading(docs, addr.Doc) {
				return nil
			}
			r := absentDocResult(addr.Doc, q)
			return &r
		}
	case addr.Doc != "":
		for _, d := range docs {
			if namesDoc(d.sd.doc, addr.Doc) {
				cands = append(cands, d)
			}
		}
	default:
		for _, d := range docs {
			if hasKind(d, addr.Steps[0]) {
				cands = append(cands, d)
			}
		}
	}
	ref, ok := chooseDoc(cands, addr, q, ranked)
	if !ok {
		return nil
	}
	doc := ref.sd.doc
	res := docstruct.Resolve(doc, addr)
	switch {
	case res.Part != nil && res.Part != doc.Root:
		r := partResult(ref, res.Part)
		return &r
	case res.Absent != nil && res.Absent.Want.HasNumber() && !bareNumber(addr):
		// A part asked for by number is absent for certain; one asked
		// for by a name no part has may be words the question reads as
		// a name, and a bare dotted number with no document named a
		// decimal ("1.5 times"): similarity answers those.
		r := absentResult(ref, res.Absent, q)
		return &r
	}
	return nil
}

// bareNumber reports whether addr is only a dotted number without a kind
// and names no document ("3.2" in "rose 3.2-fold"): what a question may
// address, when such a part exists, but no proof that one is missing.
func bareNumber(addr docstruct.Address) bool {
	if addr.Doc != "" {
		return false
	}
	for _, st := range addr.Steps {
		if st.Kind != "" || len(st.Path) == 0 {
			return false
		}
	}
	return len(addr.Steps) > 0
}

// unquoted is q with the passages it quotes blanked out (text.Unquoted):
// what they hold is text to find, not an address.
func unquoted(q string) string { return text.Unquoted(q) }

// chooseDoc picks the document an address is resolved in among the
// candidates: the one, else the one whose title the question's words
// match best, else the one that alone has the part, else the best-ranked
// similarity hit's.
func chooseDoc(cands []structDocRef, addr docstruct.Address, q string, ranked []Result) (structDocRef, bool) {
	switch len(cands) {
	case 0:
		return structDocRef{}, false
	case 1:
		return cands[0], true
	}
	if addr.Doc == "" {
		if i, ok := bestTitleMatch(cands, q); ok {
			return cands[i], true
		}
	}
	var having []structDocRef
	for _, c := range cands {
		if r := docstruct.Resolve(c.sd.doc, addr); r.Part != nil && r.Part != c.sd.doc.Root {
			having = append(having, c)
		}
	}
	if len(having) == 1 {
		return having[0], true
	}
	pool := cands
	if len(having) > 1 {
		pool = having
	}
	for _, r := range ranked {
		for _, c := range pool {
			if c.kb == r.KnowledgeBase && c.sd.file == r.File {
				return c, true
			}
		}
	}
	return pool[0], true
}

// bestTitleMatch is the candidate whose title, aliases and file name share
// the most terms with the question, when one shares more than the others.
func bestTitleMatch(cands []structDocRef, q string) (int, bool) {
	qt := map[string]bool{}
	for _, t := range lexTerms(stripQuestion(q)) {
		qt[t] = true
	}
	best, bestN, tie := -1, 0, false
	for i, c := range cands {
		names := append([]string{c.sd.doc.Title, strings.TrimSuffix(path.Base(c.sd.file), path.Ext(c.sd.file))}, c.sd.doc.Aliases...)
		seen := map[string]bool{}
		n := 0
		for _, t := range lexTerms(strings.Join(names, " ")) {
			if qt[t] && !seen[t] {
				seen[t] = true
				n++
			}
		}
		switch {
		case n > bestN:
			best, bestN, tie = i, n, false
		case n == bestN && n > 0:
			tie = true
		}
	}
	return best, best >= 0 && !tie
}

// namesDoc reports whether name is the document's title or one of its
// aliases (case and script folded).
func namesDoc(d *docstruct.Doc, name string) bool {
	n := strings.ToLower(text.Fold(name))
	if strings.ToLower(text.Fold(d.Title)) == n {
		return true
	}
	for _, a := range d.Aliases {
		if strings.ToLower(text.Fold(a)) == n {
			return true
		}
	}
	return false
}

// nearDoc reports whether a title a question writes comes near the
// document's title, an alias or its file name (see nearName).
func nearDoc(sd *structDoc, title string) bool {
	names := append([]string{sd.doc.Title, strings.TrimSuffix(path.Base(sd.file), path.Ext(sd.file))}, sd.doc.Aliases...)
	for _, n := range names {
		if nearName(title, n) {
			return true
		}
	}
	return false
}

// nearHeading reports whether some part's heading comes near title.
func nearHeading(docs []structDocRef, title string) bool {
	found := false
	for _, d := range docs {
		d.sd.doc.Root.Walk(func(p *docstruct.Part) bool {
			if p.Depth > 0 && nearName(title, p.Heading) {
				found = true
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// nearName reports whether title and name, letters only, case and script
// folded, share a run of at least two thirds of title's letters (and at
// least two): "劳动法" comes near "劳动法-释义" and "劳动", "Model
// Constitution" near "The Model Constitution".
func nearName(title, name string) bool {
	a, b := []rune(letters(title)), []rune(letters(name))
	need := max(2, (2*len(a)+2)/3)
	if len(a) < 2 || len(b) < need {
		return false
	}
	// The longest common run, by dynamic programming over b.
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
				if cur[j+1] >= need {
					return true
				}
			} else {
				cur[j+1] = 0
			}
		}
		prev, cur = cur, prev
	}
	return false
}

// hasKind reports whether a document has parts of the kind a step names
// (for a step without a kind, a dotted number or an enumeration, whether
// any of its parts carries such a number).
func hasKind(d structDocRef, step docstruct.Label) bool {
	if step.Kind == "" {
		return d.sd.numbered
	}
	for _, k := range d.sd.kinds {
		if docstruct.SameKind(k, step.Kind) {
			return true
		}
	}
	return false
}

// partResult is an addressed part as a search result: its text from its
// heading or label to the next part of its level (bounded), under its
// section path.
func partResult(ref structDocRef, p *docstruct.Part) Result {
	meta := map[string]any{"source": ref.sd.file, "section": strings.Join(p.Path(), " > ")}
	pth := titleOf(ref.sd.file, meta)
	meta["path"] = pth
	meta["match"] = rag.MatchPart
	return Result{
		Chunk: Chunk{ID: "part:" + ref.sd.file + ":" + strconv.Itoa(p.Start), File: ref.sd.file,
			Text: partText(p.Text(ref.sd.doc)), Metadata: meta},
		KnowledgeBase: ref.kb, Relevance: 1, Match: rag.MatchPart, Path: pth,
	}
}

// partText is a part's text as a result gives it: a Markdown heading's
// marks dropped from its first line (the label stays), bounded by
// maxPartRunes at a line break.
func partText(t string) string {
	t = strings.TrimSpace(t)
	if strings.HasPrefix(t, "#") {
		t = strings.TrimSpace(strings.TrimLeft(t, "#"))
	}
	if utf8.RuneCountInString(t) <= maxPartRunes {
		return t
	}
	cut := len(t)
	n := 0
	for i := range t {
		if n == maxPartRunes {
			cut = i
			break
		}
		n++
	}
	if i := strings.LastIndex(t[:cut], "\n"); i > cut/2 {
		cut = i
	}
	return strings.TrimSpace(t[:cut]) + " …"
}

// absentResult is the statement that a document lacks the part asked for.
func absentResult(ref structDocRef, a *docstruct.Absent, q string) Result {
	meta := map[string]any{"source": ref.sd.file, "match": rag.MatchAbsent}
	if len(a.Scope) > 0 {
		meta["section"] = strings.Join(append([]string{ref.sd.doc.Title}, a.Scope...), " > ")
	} else {
		meta["section"] = ref.sd.doc.Title
	}
	pth := titleOf(ref.sd.file, meta)
	meta["path"] = pth
	return Result{
		Chunk: Chunk{ID: "absent:" + ref.sd.file + ":" + a.Want.String(), File: ref.sd.file,
			Text: a.Sentence(docstruct.Lang(q)), Metadata: meta},
		KnowledgeBase: ref.kb, Relevance: 1, Match: rag.MatchAbsent, Path: pth,
	}
}

// absentDocResult is the statement that the knowledge base holds no
// document of the title a question names.
func absentDocResult(title, q string) Result {
	var t string
	if docstruct.Lang(q) == "zh" {
		t = "知识库中没有《" + title + "》。"
	} else {
		t = "The knowledge base has no document titled \"" + title + "\"."
	}
	return Result{
		Chunk:     Chunk{ID: "absent:" + title, Text: t, Metadata: map[string]any{"match": rag.MatchAbsent}},
		Relevance: 1, Match: rag.MatchAbsent,
	}
}

// withAddressed puts an addressed result first: an absent statement alone,
// a part ahead of the similarity results that are not the same text.
func withAddressed(a *Result, rs []Result) []Result {
	if a.Match == rag.MatchAbsent {
		return []Result{*a}
	}
	out := make([]Result, 0, len(rs)+1)
	out = append(out, *a)
	key := letters(a.Text)
	for _, r := range rs {
		if r.KnowledgeBase == a.KnowledgeBase && r.File == a.File {
			if c := letters(r.Text); c != "" && strings.Contains(key, c) {
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// letters is s's letters and digits, lower-cased and folded: text compared
// whatever its markup and spacing.
func letters(s string) string {
	var b strings.Builder
	for _, r := range text.Fold(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}
