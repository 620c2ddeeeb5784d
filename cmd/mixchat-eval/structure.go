package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/internal/evalqa"
	"github.com/mixchat/mixchat/pkg/kb"
)

const evalStructureUsage = `mixchat-eval structure --data DIR [flags]

Questions that address the parts of documents by number and name, end to
end. Every .md and .txt file under DIR (but README.md, which describes the
folder) goes as it is into one knowledge
base of the app as mixchat serve wires it at the offline defaults (hashed
n-gram embedder, offline extractive model, default threshold); the parts
are read from the documents themselves (Markdown headings at every level,
lines labelled 第N条/章/节/篇…, NAME篇第N, Article/Section/Amendment… N, § N,
dotted numbers 1.3, list items), and the questions are built from them:

  lookup         a part by its label, in every number form of the language:
                 digits, Roman numerals, ordinal words (English); Chinese
                 numerals, digits (Chinese); dotted labels; 篇 names
  nested         a part numbered within its parent: "Article I, Section 8",
                 "学而篇第三章"
  absent         one beyond the last number of a kind: "Article VIII"
  absent_nested  one beyond the last child of a parent: "学而篇第十七章"
  followup_next  turn 2 "And the next section?" / "下一章呢？"
  followup_doc   turn 2 the same part of another document: "那《X》呢？"
  wherefrom      a passage of a part: "「…」出自哪里？", "Which section says "…"?"

Each is asked through /chat/knowledge_base_chat (follow-ups with turn 1
and its reply as history) and /knowledge_base/search_docs. Scores:
answer_contains_part (the reply holds the part's first 12 characters of
text, labels and punctuation left out; of its first line when that is
shorter, but at least 4), top1_is_part (search_docs' first hit holds
them; for where-from, the passage), absent_said (absent kinds: the reply holds no text of
any part of that number nor of the parent addressed, and says the part
is not there in one of the server's own phrasings: 没有找到, 无法回答, 没有,
不存在, 并无, "nothing in the given context", "cannot be answered",
"nothing relevant", "has no", "does not have", "does not exist", "there
is no", "only has", "runs from"), names_part (where-from: the reply names
the part's label in one of its forms). By kind, by number form and by
document.
`

// stRow is one question's outcome.
type stRow struct {
	stQuestion
	Answer   string `json:"answer"`
	Answer1  string `json:"answer1,omitempty"`
	Empty    bool   `json:"empty"`
	Top1     string `json:"top1"`
	Contains bool   `json:"answer_contains_part"`
	Top1OK   bool   `json:"top1_is_part"`
	Absent   bool   `json:"absent_said"`
	Names    bool   `json:"names_part"`
}

// stMetrics are the figures of a set of rows; a figure is nil when no row
// of the set is scored on it.
type stMetrics struct {
	N                  int      `json:"n"`
	AnswerContainsPart *float64 `json:"answer_contains_part,omitempty"`
	Top1IsPart         *float64 `json:"top1_is_part,omitempty"`
	AbsentSaid         *float64 `json:"absent_said,omitempty"`
	NamesPart          *float64 `json:"names_part,omitempty"`
}

// stReport is the result of the eval.
type stReport struct {
	Data    string                          `json:"data"`
	Docs    []stDocInfo                     `json:"docs"`
	Chunks  int                             `json:"chunks"`
	Model   string                          `json:"model"`
	Seconds float64                         `json:"seconds"`
	All     stMetrics                       `json:"all"`
	ByKind  map[string]stMetrics            `json:"by_kind"`
	ByForm  map[string]stMetrics            `json:"by_form"`
	ByDoc   map[string]map[string]stMetrics `json:"by_doc_kind"`
	Rows    []stRow                         `json:"rows,omitempty"`
}

type stDocInfo struct {
	File  string `json:"file"`
	Title string `json:"title"`
	Lang  string `json:"lang"`
	Parts int    `json:"parts"`
}

// stKB is the knowledge base the corpus goes into.
const stKB = "structure"

func runEvalStructure(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval structure", evalStructureUsage, stderr)
	data := fs.String("data", "", "folder of .md and .txt documents with numbered parts (searched recursively)")
	limit := fs.Int("limit", 0, "ask only N questions, spread over the set (0 = all)")
	jsonOut := fs.Bool("json", false, "print one JSON object with a row per question")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *data == "" {
		return errors.New("eval structure: --data DIR is required (a folder of Markdown or text documents)")
	}
	rep, err := evalStructure(ctx, *data, *limit, *jsonOut, stderr)
	if err != nil {
		return err
	}
	if *jsonOut {
		return printJSON(stdout, rep)
	}
	return printStructure(stdout, rep)
}

// stCorpus reads every .md and .txt file under dir, in name order.
func stCorpus(dir string) ([]kb.FileData, []stDoc, error) {
	var files []kb.FileData
	var docs []stDoc
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := strings.ToLower(filepath.Ext(p))
		if e.IsDir() || (ext != ".md" && ext != ".txt") || strings.EqualFold(e.Name(), "README.md") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		files = append(files, kb.FileData{Name: rel, Data: b})
		docs = append(docs, parseStructure(rel, b))
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("eval structure: %w", err)
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("eval structure: no .md or .txt file under %s", dir)
	}
	return files, docs, nil
}

// evalStructure builds the app with the corpus as its knowledge base and
// asks every question.
func evalStructure(ctx context.Context, dir string, limit int, rows bool, progress io.Writer) (stReport, error) {
	start := time.Now()
	files, docs, err := stCorpus(dir)
	if err != nil {
		return stReport{}, err
	}
	qs := stBuild(docs)
	if len(qs) == 0 {
		return stReport{}, fmt.Errorf("eval structure: no numbered parts found under %s", dir)
	}
	if limit > 0 && limit < len(qs) {
		kept := make([]stQuestion, 0, limit)
		for i := 0; i < limit; i++ {
			kept = append(kept, qs[i*len(qs)/limit])
		}
		qs = kept
	}
	a, chunks, cleanup, err := startCorpusApp(ctx, "structure", stKB, files)
	if err != nil {
		return stReport{}, err
	}
	defer cleanup()
	rep := stReport{Data: dir, Chunks: chunks, Model: "offline", ByKind: map[string]stMetrics{}, ByForm: map[string]stMetrics{},
		ByDoc: map[string]map[string]stMetrics{}}
	for _, d := range docs {
		rep.Docs = append(rep.Docs, stDocInfo{File: d.File, Title: d.Title, Lang: d.Lang, Parts: len(d.Parts)})
	}
	var all []stRow
	for i, q := range qs {
		row, err := a.askStructure(ctx, q)
		if err != nil {
			return rep, fmt.Errorf("%s %q: %w", q.ID, q.Text, err)
		}
		all = append(all, row)
		if progress != nil && (i+1)%200 == 0 {
			fmt.Fprintf(progress, "%d/%d questions\n", i+1, len(qs))
		}
	}
	rep.All = stScore(all)
	byKind, byForm, byDoc := map[string][]stRow{}, map[string][]stRow{}, map[string]map[string][]stRow{}
	for _, r := range all {
		byKind[r.Kind] = append(byKind[r.Kind], r)
		byForm[r.Form] = append(byForm[r.Form], r)
		if byDoc[r.Doc] == nil {
			byDoc[r.Doc] = map[string][]stRow{}
		}
		byDoc[r.Doc][r.Kind] = append(byDoc[r.Doc][r.Kind], r)
	}
	for k, rs := range byKind {
		rep.ByKind[k] = stScore(rs)
	}
	for f, rs := range byForm {
		rep.ByForm[f] = stScore(rs)
	}
	for d, m := range byDoc {
		rep.ByDoc[d] = map[string]stMetrics{}
		for k, rs := range m {
			rep.ByDoc[d][k] = stScore(rs)
		}
	}
	if rows {
		rep.Rows = all
	}
	rep.Seconds = float64(time.Since(start).Milliseconds()) / 1000
	return rep, nil
}

// startCorpusApp starts the app at the offline defaults (as mixchat serve
// runs without a model endpoint, no demo) with files in the knowledge
// base name, and waits until the follow-up rewrite knows them.
func startCorpusApp(ctx context.Context, eval, name string, files []kb.FileData) (*evalApp, int, func(), error) {
	_, dir, cleanup, err := evalTemp(eval)
	if err != nil {
		return nil, 0, nil, err
	}
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = dir, false
	a, err := startEvalLoopback(ctx, cfg, app.Options{}, &http.Client{})
	if err != nil {
		cleanup()
		return nil, 0, nil, err
	}
	done := func() { a.close(); cleanup() }
	fail := func(err error) (*evalApp, int, func(), error) { done(); return nil, 0, nil, err }
	if _, err := a.KB.Create(ctx, name, kb.CreateOptions{}); err != nil {
		return fail(err)
	}
	const batch = 64
	for lo := 0; lo < len(files); lo += batch {
		res, err := a.KB.AddFiles(ctx, name, files[lo:min(lo+batch, len(files))], kb.AddOptions{}, nil)
		if err != nil {
			return fail(fmt.Errorf("index: %w", err))
		}
		for f, err := range res.Failed {
			return fail(fmt.Errorf("index %s: %w", f, err))
		}
	}
	if err := a.WaitVocabulary(ctx); err != nil {
		return fail(err)
	}
	info, err := a.KB.Info(ctx, name)
	if err != nil {
		return fail(err)
	}
	return a, info.Chunks, done, nil
}

// kbChatAnswer is what the evals read of a non-streamed
// knowledge_base_chat reply.
type kbChatAnswer struct {
	Answer  string `json:"answer"`
	Empty   bool   `json:"empty"`
	Reason  string `json:"reason"`
	Sources []struct {
		File string `json:"file"`
		Text string `json:"text"`
	} `json:"sources"`
}

// searchDoc is what the evals read of one search_docs hit.
type searchDoc struct {
	PageContent string         `json:"page_content"`
	Metadata    map[string]any `json:"metadata"`
}

// kbChat asks query of the knowledge base kbName through
// /chat/knowledge_base_chat at its defaults, with history (user and
// assistant turns, alternating) when given.
func (a *evalApp) kbChat(ctx context.Context, kbName, query string, history []string) (kbChatAnswer, error) {
	body := map[string]any{"query": query, "knowledge_base_name": kbName, "stream": false}
	if len(history) > 0 {
		body["history"] = historyItems(history)
	}
	var r kbChatAnswer
	err := a.postFor(ctx, "/chat/knowledge_base_chat", body, &r)
	return r, err
}

func historyItems(turns []string) []map[string]string {
	var h []map[string]string
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		h = append(h, map[string]string{"role": role, "content": t})
	}
	return h
}

// standalone is the question search_docs searches with for query after
// history: the follow-up rewritten, or query itself without history.
func (a *evalApp) standalone(ctx context.Context, kbName, query string, history []string) (string, error) {
	if len(history) == 0 {
		return query, nil
	}
	var r struct {
		Standalone string `json:"standalone"`
	}
	err := a.postFor(ctx, "/knowledge_base/search_docs", map[string]any{"query": query, "knowledge_base_name": kbName, "history": historyItems(history)}, &r)
	return r.Standalone, err
}

// searchFirst is search_docs' first hit for query (with history, the
// standalone question's), "" when there is none.
func (a *evalApp) searchFirst(ctx context.Context, kbName, query string, history []string) (string, error) {
	body := map[string]any{"query": query, "knowledge_base_name": kbName}
	var docs []searchDoc
	if len(history) > 0 {
		body["history"] = historyItems(history)
		var r struct {
			Docs []searchDoc `json:"docs"`
		}
		if err := a.postFor(ctx, "/knowledge_base/search_docs", body, &r); err != nil {
			return "", err
		}
		docs = r.Docs
	} else if err := a.postFor(ctx, "/knowledge_base/search_docs", body, &docs); err != nil {
		return "", err
	}
	if len(docs) == 0 {
		return "", nil
	}
	return docs[0].PageContent, nil
}

// askStructure asks one question (two turns for a follow-up) and scores it.
func (a *evalApp) askStructure(ctx context.Context, q stQuestion) (stRow, error) {
	row := stRow{stQuestion: q}
	var history []string
	if q.Turn1 != "" {
		r1, err := a.kbChat(ctx, stKB, q.Turn1, nil)
		if err != nil {
			return row, fmt.Errorf("turn 1: %w", err)
		}
		row.Answer1 = r1.Answer
		history = []string{q.Turn1, r1.Answer}
	}
	r, err := a.kbChat(ctx, stKB, q.Text, history)
	if err != nil {
		return row, err
	}
	row.Answer, row.Empty = r.Answer, r.Empty
	if row.Top1, err = a.searchFirst(ctx, stKB, q.Text, history); err != nil {
		return row, err
	}
	scoreStructure(&row)
	return row, nil
}

// scoreStructure sets a row's scores from its answer and first hit.
func scoreStructure(r *stRow) {
	switch r.Kind {
	case stAbsent, stAbsentNested:
		r.Absent = absentSaid(r.Answer, r.Empty, r.Wrong)
	case stWhereFrom:
		r.Names = !r.Empty && !evalqa.IsRefusal(r.Answer) && namesPart(r.Answer, r.Labels)
		r.Top1OK = holdsKey(r.Top1, evalqa.Normalize(r.Passage))
	default:
		r.Contains = !r.Empty && holdsKey(r.Answer, r.Key)
		r.Top1OK = holdsKey(r.Top1, r.Key)
	}
}

// stScore computes the figures of rows: answer_contains_part and
// top1_is_part over the rows that address a part that exists (lookups,
// nested, follow-ups; top1 also for where-from), absent_said over the
// absent kinds, names_part over where-from.
func stScore(rows []stRow) stMetrics {
	m := stMetrics{N: len(rows)}
	var nPart, contains, nTop, top, nAbs, abs, nWhere, names int
	for _, r := range rows {
		switch r.Kind {
		case stAbsent, stAbsentNested:
			nAbs++
			abs += b2i(r.Absent)
		case stWhereFrom:
			nWhere++
			names += b2i(r.Names)
			nTop++
			top += b2i(r.Top1OK)
		default:
			nPart++
			contains += b2i(r.Contains)
			nTop++
			top += b2i(r.Top1OK)
		}
	}
	share := func(a, n int) *float64 {
		if n == 0 {
			return nil
		}
		x := float64(int64(float64(a)/float64(n)*10000+0.5)) / 10000
		return &x
	}
	m.AnswerContainsPart, m.Top1IsPart, m.AbsentSaid, m.NamesPart = share(contains, nPart), share(top, nTop), share(abs, nAbs), share(names, nWhere)
	return m
}

func printStructure(w io.Writer, rep stReport) error {
	fmt.Fprintf(w, "structure questions on %s: %d documents, %d chunks, %s model, %.1fs\n", rep.Data, len(rep.Docs), rep.Chunks, rep.Model, rep.Seconds)
	for _, d := range rep.Docs {
		if d.Parts > 0 {
			fmt.Fprintf(w, "  %s (%s, %s): %d parts\n", d.File, d.Title, d.Lang, d.Parts)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "by\t\tn\tanswer_contains_part\ttop1_is_part\tabsent_said\tnames_part\t")
	f := func(x *float64) string {
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f", *x)
	}
	line := func(by, name string, m stMetrics) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", by, name, m.N, f(m.AnswerContainsPart), f(m.Top1IsPart), f(m.AbsentSaid), f(m.NamesPart))
	}
	for _, k := range stKinds {
		if m, ok := rep.ByKind[k]; ok {
			line("kind", k, m)
		}
	}
	forms := make([]string, 0, len(rep.ByForm))
	for k := range rep.ByForm {
		forms = append(forms, k)
	}
	sort.Strings(forms)
	for _, k := range forms {
		line("form", k, rep.ByForm[k])
	}
	docs := make([]string, 0, len(rep.ByDoc))
	for d := range rep.ByDoc {
		docs = append(docs, d)
	}
	sort.Strings(docs)
	for _, d := range docs {
		for _, k := range stKinds {
			if m, ok := rep.ByDoc[d][k]; ok {
				line(d, k, m)
			}
		}
	}
	line("all", "", rep.All)
	return tw.Flush()
}
