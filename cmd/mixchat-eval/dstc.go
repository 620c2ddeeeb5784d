package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/mixchat/mixchat/internal/evalqa"
	"github.com/mixchat/mixchat/pkg/kb"
)

const evalDSTCUsage = `mixchat-eval dstc --data DIR [flags]

FAQ and review questions asked in the middle of English task dialogues
(DSTC11 track 5: hotels and restaurants), end to end. Every place of
knowledge.json becomes one Markdown document (its name, its kind, its
FAQs as "Q: … / A: …" pairs, its reviews), all of them in one knowledge
base of the app as mixchat serve wires it at the offline defaults (hashed
n-gram embedder, offline extractive model, default threshold). Of every
dialogue that needs knowledge (dev_labels.json target true), the last user
turn is asked through /chat/knowledge_base_chat with the earlier turns as
history (user and assistant). Scores, over all the dialogues asked:

  gold_knowledge_in_reply  the reply holds at least 0.6 of the content words
                           (lower-cased words and numbers, a short list of
                           English function words left out) of the gold FAQ
                           answer or of one gold review sentence
  faq_answer_in_reply      the same for the gold FAQ answers alone
                           (n_faq: dialogues with one)
  entity_top1              the first source of the reply is the document of
                           a gold place
  refused                  the reply is empty or a refusal
  quotes_a_question        the reply holds one of the FAQ question sentences
                           (of any place, compared after evalqa.Normalize)

The data is the shared half of the DSTC11 track 5 validation set
(knowledge.json, dev_logs.json, dev_labels.json).
`

var dstcData = dataset{
	name:    "DSTC11 track 5",
	layout:  "a folder with knowledge.json, dev_logs.json and dev_labels.json",
	license: "CDLA-Sharing 1.0",
	source:  "https://github.com/alexa/dstc11-track5 (data/knowledge.json, data/val/logs.json, data/val/labels.json)",
}

// dstcEntity is one place of knowledge.json.
type dstcEntity struct {
	Name string `json:"name"`
	FAQs map[string]struct {
		Question string `json:"question"`
		Answer   string `json:"answer"`
	} `json:"faqs"`
	Reviews map[string]struct {
		TravelerType string            `json:"traveler_type"`
		Sentences    map[string]string `json:"sentences"`
	} `json:"reviews"`
}

// dstcTurn is one turn of a dialogue.
type dstcTurn struct {
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
}

// dstcLabel is a dialogue's label: whether it needs knowledge, and which.
type dstcLabel struct {
	Target    bool `json:"target"`
	Knowledge []struct {
		Domain   string `json:"domain"`
		EntityID any    `json:"entity_id"`
		DocType  string `json:"doc_type"`
		DocID    any    `json:"doc_id"`
		SentID   any    `json:"sent_id"`
	} `json:"knowledge"`
	Response string `json:"response"`
}

// dstcItem is one dialogue to ask.
type dstcItem struct {
	ID       int
	History  []string // alternating user, assistant
	Question string
	Files    []string // the gold places' documents
	FAQs     []string // the gold FAQ answers
	Reviews  []string // the gold review sentences
}

// dstcRow is one dialogue's outcome.
type dstcRow struct {
	ID        int      `json:"id"`
	Question  string   `json:"question"`
	Answer    string   `json:"answer"`
	Files     []string `json:"gold_files"`
	Top1      string   `json:"top1_file"`
	Gold      bool     `json:"gold_knowledge_in_reply"`
	FAQ       bool     `json:"faq_answer_in_reply"`
	HasFAQ    bool     `json:"has_faq"`
	Entity    bool     `json:"entity_top1"`
	Refused   bool     `json:"refused"`
	QuotesFAQ bool     `json:"quotes_a_question"`
	// With --why: the question retrieval used, why no chunk was used
	// (when none was), and the gold texts.
	Standalone string   `json:"standalone,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	GoldTexts  []string `json:"gold_texts,omitempty"`
	Sources    []string `json:"sources,omitempty"`
}

// dstcMetrics are the figures of a set of rows.
type dstcMetrics struct {
	Dialogues       int     `json:"dialogues"`
	GoldInReply     float64 `json:"gold_knowledge_in_reply"`
	FAQAnswer       float64 `json:"faq_answer_in_reply"`
	NFAQ            int     `json:"n_faq"`
	FAQAnswerOfFAQ  float64 `json:"faq_answer_in_reply_of_n_faq"`
	EntityTop1      float64 `json:"entity_top1"`
	Refused         float64 `json:"refused"`
	QuotesAQuestion float64 `json:"quotes_a_question"`
}

// dstcReport is the result of the eval.
type dstcReport struct {
	Data      string  `json:"data"`
	Places    int     `json:"places"`
	Chunks    int     `json:"chunks"`
	Model     string  `json:"model"`
	Seconds   float64 `json:"seconds"`
	Selection string  `json:"selection"`
	dstcMetrics
	Rows []dstcRow `json:"rows,omitempty"`
}

// dstcKB is the knowledge base the places go into.
const dstcKB = "places"

func runEvalDSTC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval dstc", evalDSTCUsage, stderr)
	data := fs.String("data", "", "folder of the DSTC11 track 5 data: knowledge.json, dev_logs.json, dev_labels.json")
	limit := fs.Int("limit", 0, "ask only N dialogues, spread over the set (0 = all)")
	faqOnly := fs.Bool("faq", false, "ask only the dialogues whose gold knowledge holds a FAQ")
	jsonOut := fs.Bool("json", false, "print one JSON object with a row per dialogue")
	why := fs.Bool("why", false, "with --json: give each row the standalone question searched with (search_docs with the history), why no chunk was used, the gold texts and the sources' texts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := dstcData.check(*data, "knowledge.json", "dev_logs.json", "dev_labels.json"); err != nil {
		return err
	}
	rep, err := evalDSTC(ctx, *data, *limit, *faqOnly, *jsonOut, *why, stderr)
	if err != nil {
		return err
	}
	if *jsonOut {
		return printJSON(stdout, rep)
	}
	return printDSTC(stdout, rep)
}

// loadDSTC reads the data folder: one document per place, the dialogues
// that need knowledge (with a FAQ in their gold, with faqOnly), and every
// FAQ question sentence.
func loadDSTC(dir string, faqOnly bool) ([]kb.FileData, []dstcItem, []string, error) {
	var know map[string]map[string]dstcEntity
	var logs [][]dstcTurn
	var labels []dstcLabel
	for _, f := range []struct {
		name string
		v    any
	}{{"knowledge.json", &know}, {"dev_logs.json", &logs}, {"dev_labels.json", &labels}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return nil, nil, nil, err
		}
		if err := json.Unmarshal(b, f.v); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if len(logs) != len(labels) {
		return nil, nil, nil, fmt.Errorf("dev_logs.json has %d dialogues, dev_labels.json %d labels", len(logs), len(labels))
	}
	var files []kb.FileData
	fileOf := map[string]string{} // domain/id → file
	var questions []string
	domains := sortedKeys(know)
	for _, dom := range domains {
		for _, id := range sortedKeys(know[dom]) {
			e := know[dom][id]
			name := dstcFileName(e.Name)
			fileOf[dom+"/"+id] = name
			files = append(files, kb.FileData{Name: name, Data: []byte(dstcDocument(dom, e))})
			for _, q := range e.FAQs {
				questions = append(questions, q.Question)
			}
		}
	}
	sort.Strings(questions)
	var items []dstcItem
	for i, l := range labels {
		if !l.Target || len(logs[i]) == 0 || logs[i][len(logs[i])-1].Speaker != "U" {
			continue
		}
		it := dstcItem{ID: i, Question: logs[i][len(logs[i])-1].Text}
		for _, t := range logs[i][:len(logs[i])-1] {
			it.History = append(it.History, t.Text)
		}
		if len(it.History)%2 == 1 { // the history must start with the user
			it.History = it.History[1:]
		}
		seen := map[string]bool{}
		for _, k := range l.Knowledge {
			key := k.Domain + "/" + idString(k.EntityID)
			e, ok := know[k.Domain][idString(k.EntityID)]
			if !ok {
				return nil, nil, nil, fmt.Errorf("dialogue %d: no place %s", i, key)
			}
			if !seen[key] {
				seen[key] = true
				it.Files = append(it.Files, fileOf[key])
			}
			switch k.DocType {
			case "faq":
				it.FAQs = append(it.FAQs, e.FAQs[idString(k.DocID)].Answer)
			case "review":
				it.Reviews = append(it.Reviews, e.Reviews[idString(k.DocID)].Sentences[idString(k.SentID)])
			}
		}
		if faqOnly && len(it.FAQs) == 0 {
			continue
		}
		items = append(items, it)
	}
	if len(files) == 0 || len(items) == 0 {
		return nil, nil, nil, errors.New("eval dstc: no places or no dialogues that need knowledge")
	}
	return files, items, questions, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, errA := strconv.Atoi(keys[i])
		b, errB := strconv.Atoi(keys[j])
		if errA == nil && errB == nil {
			return a < b
		}
		return keys[i] < keys[j]
	})
	return keys
}

// idString is an id of the labels (a number or a string) as the knowledge
// keys it.
func idString(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.Itoa(int(x))
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// dstcFileName is a place's document name: its name, made safe for a
// file name.
func dstcFileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || unicode.IsControl(r) {
			return '_'
		}
		return r
	}, strings.TrimSpace(name)) + ".md"
}

// dstcDocument writes a place as a person would: its name, its kind, its
// FAQs as Q/A pairs and its reviews, each review a paragraph.
func dstcDocument(domain string, e dstcEntity) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s is a %s.\n\n## Frequently asked questions\n\n", e.Name, e.Name, domain)
	for _, k := range sortedKeys(e.FAQs) {
		f := e.FAQs[k]
		fmt.Fprintf(&b, "Q: %s\nA: %s\n\n", strings.TrimSpace(f.Question), strings.TrimSpace(f.Answer))
	}
	b.WriteString("## Reviews\n\n")
	for _, k := range sortedKeys(e.Reviews) {
		r := e.Reviews[k]
		var sents []string
		for _, s := range sortedKeys(r.Sentences) {
			sents = append(sents, strings.TrimSpace(r.Sentences[s]))
		}
		n, _ := strconv.Atoi(k)
		fmt.Fprintf(&b, "### Review %d (%s)\n\n%s\n\n", n+1, r.TravelerType, strings.Join(sents, " "))
	}
	return b.String()
}

// evalDSTC builds the app with one document per place and asks every
// dialogue's last user turn with the earlier ones as history.
func evalDSTC(ctx context.Context, dir string, limit int, faqOnly, rows, why bool, progress io.Writer) (dstcReport, error) {
	start := time.Now()
	files, items, questions, err := loadDSTC(dir, faqOnly)
	if err != nil {
		return dstcReport{}, err
	}
	sel := "every dialogue that needs knowledge"
	if faqOnly {
		sel = "the dialogues that need knowledge with a FAQ in their gold"
	}
	if limit > 0 && limit < len(items) {
		kept := make([]dstcItem, 0, limit)
		for i := 0; i < limit; i++ {
			kept = append(kept, items[i*len(items)/limit])
		}
		items = kept
		sel += fmt.Sprintf(", %d spread over them", limit)
	}
	a, chunks, cleanup, err := startCorpusApp(ctx, "dstc", dstcKB, files)
	if err != nil {
		return dstcReport{}, err
	}
	defer cleanup()
	normQ := make([]string, 0, len(questions))
	for _, q := range questions {
		if n := evalqa.Normalize(q); n != "" {
			normQ = append(normQ, n)
		}
	}
	rep := dstcReport{Data: dir, Places: len(files), Chunks: chunks, Model: "offline", Selection: sel}
	var all []dstcRow
	for i, it := range items {
		r, err := a.kbChat(ctx, dstcKB, it.Question, it.History)
		if err != nil {
			return rep, fmt.Errorf("dialogue %d: %w", it.ID, err)
		}
		row := dstcRow{ID: it.ID, Question: it.Question, Answer: r.Answer, Files: it.Files}
		if len(r.Sources) > 0 {
			row.Top1 = r.Sources[0].File
		}
		scoreDSTC(&row, it, r.Empty, normQ)
		if why {
			row.Reason, row.GoldTexts = r.Reason, append(append([]string{}, it.FAQs...), it.Reviews...)
			for _, src := range r.Sources {
				row.Sources = append(row.Sources, src.File+": "+src.Text)
			}
			if row.Standalone, err = a.standalone(ctx, dstcKB, it.Question, it.History); err != nil {
				return rep, fmt.Errorf("dialogue %d: %w", it.ID, err)
			}
		}
		all = append(all, row)
		if progress != nil && (i+1)%200 == 0 {
			fmt.Fprintf(progress, "%d/%d dialogues\n", i+1, len(items))
		}
	}
	rep.dstcMetrics = dstcScore(all)
	if rows {
		rep.Rows = all
	}
	rep.Seconds = float64(time.Since(start).Milliseconds()) / 1000
	return rep, nil
}

// scoreDSTC sets a row's scores; normQ are the FAQ questions after
// evalqa.Normalize.
func scoreDSTC(row *dstcRow, it dstcItem, empty bool, normQ []string) {
	row.Refused = empty || evalqa.IsRefusal(row.Answer) || isNothingFound(row.Answer)
	if !row.Refused {
		row.FAQ = anyCovered(row.Answer, it.FAQs)
		row.Gold = row.FAQ || anyCovered(row.Answer, it.Reviews)
		n := evalqa.Normalize(row.Answer)
		for _, q := range normQ {
			if strings.Contains(n, q) {
				row.QuotesFAQ = true
				break
			}
		}
	}
	row.HasFAQ = len(it.FAQs) > 0
	for _, f := range it.Files {
		row.Entity = row.Entity || row.Top1 == f
	}
}

// isNothingFound reports the knowledge base's own reply when no chunk
// passes the threshold.
func isNothingFound(s string) bool {
	return strings.Contains(s, "has nothing relevant") || strings.Contains(s, "没有找到与问题相关")
}

// stopWords are the English function words left out of content words.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if of at by for with about to from in on into over under is are was were be been
being am do does did have has had having i me my we our you your he him his she her it its they them their this that these
those there here what which who whom when where why how not no yes so than too very can could will would shall should may might
must just also as s t all any some such only own same other each both few more most up down out off then once again`) {
		stopWords[w] = true
	}
}

// contentWords are the lower-cased words and numbers of s that are not
// function words.
func contentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// covered reports whether reply holds at least 0.6 of gold's content words
// (each distinct word once); false for a gold without content words.
func covered(reply, gold string) bool {
	have := map[string]bool{}
	for _, w := range contentWords(reply) {
		have[w] = true
	}
	want := map[string]bool{}
	for _, w := range contentWords(gold) {
		want[w] = true
	}
	if len(want) == 0 {
		return false
	}
	n := 0
	for w := range want {
		if have[w] {
			n++
		}
	}
	return float64(n) >= 0.6*float64(len(want))
}

func anyCovered(reply string, golds []string) bool {
	for _, g := range golds {
		if covered(reply, g) {
			return true
		}
	}
	return false
}

func dstcScore(rows []dstcRow) dstcMetrics {
	m := dstcMetrics{Dialogues: len(rows)}
	if len(rows) == 0 {
		return m
	}
	var gold, faq, nfaq, faqOfFAQ, ent, ref, quotes int
	for _, r := range rows {
		gold += b2i(r.Gold)
		faq += b2i(r.FAQ)
		ent += b2i(r.Entity)
		ref += b2i(r.Refused)
		quotes += b2i(r.QuotesFAQ)
		if r.HasFAQ {
			nfaq++
			faqOfFAQ += b2i(r.FAQ)
		}
	}
	share := func(a, n int) float64 {
		if n == 0 {
			return 0
		}
		return float64(int64(float64(a)/float64(n)*10000+0.5)) / 10000
	}
	n := len(rows)
	m.GoldInReply, m.FAQAnswer, m.EntityTop1, m.Refused, m.QuotesAQuestion = share(gold, n), share(faq, n), share(ent, n), share(ref, n), share(quotes, n)
	m.NFAQ, m.FAQAnswerOfFAQ = nfaq, share(faqOfFAQ, nfaq)
	return m
}

func printDSTC(w io.Writer, rep dstcReport) error {
	fmt.Fprintf(w, "DSTC11 track 5 on %s: %d places (one document each), %d chunks, %s model, %.1fs\n%s: %d dialogues\n\n",
		rep.Data, rep.Places, rep.Chunks, rep.Model, rep.Seconds, rep.Selection, rep.Dialogues)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dialogues\tgold_knowledge_in_reply\tfaq_answer_in_reply\tn_faq\tfaq_answer_of_n_faq\tentity_top1\trefused\tquotes_a_question\t")
	m := rep.dstcMetrics
	fmt.Fprintf(tw, "%d\t%.3f\t%.3f\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t\n", m.Dialogues, m.GoldInReply, m.FAQAnswer, m.NFAQ, m.FAQAnswerOfFAQ,
		m.EntityTop1, m.Refused, m.QuotesAQuestion)
	return tw.Flush()
}
