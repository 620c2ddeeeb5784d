// Package evalqa measures the answers a person reads, end to end: questions
// go through a real knowledge-base service (a temporary folder, the
// default settings, the offline hashed n-gram embedder) and the offline
// extractive model, along the path of /chat/knowledge_base_chat (kb.Service
// Chat at the configured threshold), and each reply is checked against the
// gold answers.
//
// Three question sets: CMRC 2018 (every paragraph in one knowledge base,
// every question asked), questions generated from the Zhouyi's own
// structure (judgements, line texts, the Great Image, quoted passages →
// their hexagram) and absent questions (CMRC questions against the Zhouyi
// base, which should be refused).
package evalqa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mixchat/mixchat/demo"
	"io"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// MaxAnswerChars is the longest reply that can count as correct: a reply
// that dumps its context is not an answer.
const MaxAnswerChars = 200

// Options selects the question set.
type Options struct {
	// Data is a CMRC 2018 (SQuAD-format) file: every paragraph goes into
	// one knowledge base and every question is asked.
	Data string
	// Zhouyi is the folder of the Zhouyi texts (zhouyi-traditional.txt and
	// yizhuan-simplified/): the knowledge base, and the questions generated
	// from its structure.
	Zhouyi string
	// Absent asks questions whose answer is in no knowledge base, which
	// should be refused: those of Data against the Zhouyi base (with
	// Zhouyi), or, with Data alone, those of every other CMRC paragraph
	// against a knowledge base of the rest (same domain, the harder case).
	Absent bool
	// Limit asks only the first N questions (0: all).
	Limit int
	// JSON prints the report as one JSON object instead of a table.
	JSON bool
	// Progress, when not nil, receives a line now and then.
	Progress io.Writer
}

// Metrics are the figures of a set of questions.
type Metrics struct {
	Questions int `json:"questions"`
	// AnswerContainsGold is the share of replies that hold a gold answer
	// (after normalising punctuation, width and script) and are at most
	// MaxAnswerChars long.
	AnswerContainsGold float64 `json:"answer_contains_gold"`
	// Answered is the share of replies that are not refusals.
	Answered float64 `json:"answered"`
	// RefusedWithEvidence is the share of questions refused although the
	// evidence was among the top-k chunks (searched without threshold).
	RefusedWithEvidence float64 `json:"refused_with_evidence"`
	// RefusedWhenAbsent is the share of refusals among questions whose
	// answer is in no knowledge base (absent set only).
	RefusedWhenAbsent *float64 `json:"refused_when_absent,omitempty"`
	// EvidenceInTopK is the share of questions whose evidence is among the
	// top-k chunks (retrieval, for reading the other figures).
	EvidenceInTopK float64 `json:"evidence_in_top_k"`
	// AvgAnswerChars is the mean reply length in characters.
	AvgAnswerChars float64 `json:"avg_answer_chars"`
}

// Row is one question's outcome.
type Row struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Question string   `json:"question"`
	Gold     []string `json:"gold,omitempty"`
	Answer   string   `json:"answer"`
	Correct  bool     `json:"correct"`
	Answered bool     `json:"answered"`
	Evidence bool     `json:"evidence_in_top_k"`
	// BestRelevance is the first chunk's relevance without threshold.
	BestRelevance float64 `json:"best_relevance"`
	// Reason says why the knowledge base passed no chunk to the model.
	Reason   string   `json:"reason,omitempty"`
	TopFiles []string `json:"top_files,omitempty"`
}

// Report is the result of Run.
type Report struct {
	Set          string  `json:"set"` // cmrc, zhouyi, absent or absent-in-domain
	Files        int     `json:"files"`
	Chunks       int     `json:"chunks"`
	MinRelevance float64 `json:"min_relevance"`
	TopK         int     `json:"top_k"`
	Model        string  `json:"model"`
	Embedder     string  `json:"embedder"`
	Metrics
	ByType    map[string]Metrics `json:"by_type"`
	Seconds   float64            `json:"seconds"`
	Questions []Row              `json:"questions"`
}

// question is one question to ask.
type question struct {
	id, typ, text string
	gold          []string
	// goldFile, when set, is the file that holds the evidence; otherwise
	// a chunk holding a gold answer (with its section path) is evidence.
	goldFile string
	// evidence, when set, is what a chunk must hold to be the evidence
	// (a quoted phrase, whose gold answer is the hexagram's name).
	evidence string
	absent   bool
}

// Run builds the knowledge base the options name, asks its questions and
// writes the report to out (a table, or JSON with Options.JSON).
func Run(ctx context.Context, opts Options, out io.Writer) (Report, error) {
	var (
		files []kb.FileData
		qs    []question
		set   string
		err   error
	)
	switch {
	case opts.Absent && opts.Zhouyi == "":
		// In-domain: every other paragraph in the knowledge base, the
		// questions of the others asked.
		if opts.Data == "" {
			return Report{}, errors.New("eval qa --absent: give --data (the questions), and --zhouyi to ask them of the Zhouyi base")
		}
		set = "absent-in-domain"
		var all []kb.FileData
		var cq []question
		if all, cq, err = loadCMRC(opts.Data); err != nil {
			return Report{}, err
		}
		left := map[string]bool{}
		for i, f := range all {
			if i%2 == 0 {
				files = append(files, f)
			} else {
				left[f.Name] = true
			}
		}
		for _, q := range cq {
			if left[q.goldFile] {
				q.absent, q.typ, q.gold, q.goldFile = true, "absent", nil, ""
				qs = append(qs, q)
			}
		}
	case opts.Absent:
		if opts.Data == "" {
			return Report{}, errors.New("eval qa --absent: give --data (the questions) and --zhouyi (the knowledge base)")
		}
		set = "absent"
		if files, err = zhouyiFiles(opts.Zhouyi); err != nil {
			return Report{}, err
		}
		var cq []question
		if _, cq, err = loadCMRC(opts.Data); err != nil {
			return Report{}, err
		}
		for _, q := range cq {
			q.absent, q.typ, q.gold, q.goldFile = true, "absent", nil, ""
			qs = append(qs, q)
		}
	case opts.Zhouyi != "" && opts.Data != "":
		return Report{}, errors.New("eval qa: give --data or --zhouyi (both only with --absent)")
	case opts.Zhouyi != "":
		set = "zhouyi"
		if files, err = zhouyiFiles(opts.Zhouyi); err != nil {
			return Report{}, err
		}
		if qs, err = zhouyiQuestions(files[0].Data); err != nil {
			return Report{}, err
		}
		qs = append(qs, zaguaQuestions(files)...)
	case opts.Data != "":
		set = "cmrc"
		if files, qs, err = loadCMRC(opts.Data); err != nil {
			return Report{}, err
		}
	default:
		return Report{}, errors.New("eval qa: give --data CMRC_JSON, --zhouyi DIR, or both with --absent")
	}
	if opts.Limit > 0 && len(qs) > opts.Limit {
		qs = spread(qs, opts.Limit)
	}

	start := time.Now()
	dir, err := os.MkdirTemp("", "mixchat-evalqa-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(dir)
	cfg := kb.DefaultConfig()
	cfg.Dir = dir
	emb := retrieve.NewHashEmbedder(retrieve.DefaultEmbedDim)
	models := llm.NewRegistry("offline")
	// The Zhouyi is read through its profile, as the demo's knowledge
	// base is, and the offline model names its parts with it as the app's
	// does.
	prof, err := demo.StructureProfile()
	if err != nil {
		return Report{}, err
	}
	models.Add("offline", extractive.New(extractive.Options{Profiles: []*docstruct.Profile{prof}}))
	svc, err := kb.New(cfg, sqlite.NewKBCatalog(cfg.Dir), emb, models, kb.WithProfiles(prof))
	if err != nil {
		return Report{}, err
	}
	defer svc.Close()
	const name = "evalqa"
	var copts kb.CreateOptions
	if opts.Zhouyi != "" {
		copts.Profile = prof.Name
	}
	if _, err := svc.Create(ctx, name, copts); err != nil {
		return Report{}, err
	}
	const batch = 128
	for lo := 0; lo < len(files); lo += batch {
		res, err := svc.AddFiles(ctx, name, files[lo:min(lo+batch, len(files))], kb.AddOptions{}, nil)
		if err != nil {
			return Report{}, fmt.Errorf("index: %w", err)
		}
		for f, err := range res.Failed {
			return Report{}, fmt.Errorf("index %s: %w", f, err)
		}
	}
	info, err := svc.Info(ctx, name)
	if err != nil {
		return Report{}, err
	}
	rep := Report{
		Set: set, Files: info.Files, Chunks: info.Chunks, MinRelevance: round4(svc.DefaultMinRelevance()),
		TopK: cfg.TopK, Model: "offline", Embedder: emb.Model(),
	}
	for i, q := range qs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		row, err := ask(ctx, svc, name, q)
		if err != nil {
			return rep, fmt.Errorf("question %s %q: %w", q.id, q.text, err)
		}
		rep.Questions = append(rep.Questions, row)
		if opts.Progress != nil && (i+1)%200 == 0 {
			fmt.Fprintf(opts.Progress, "%d/%d questions\n", i+1, len(qs))
		}
	}
	absent := strings.HasPrefix(set, "absent")
	rep.Metrics = metrics(rep.Questions, absent)
	rep.ByType = map[string]Metrics{}
	byType := map[string][]Row{}
	for _, r := range rep.Questions {
		byType[r.Type] = append(byType[r.Type], r)
	}
	for t, rs := range byType {
		rep.ByType[t] = metrics(rs, absent)
	}
	rep.Seconds = round4(time.Since(start).Seconds())
	if opts.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return rep, enc.Encode(rep)
	}
	return rep, printTable(out, rep)
}

// spread keeps n questions spread evenly over qs (so a quick run sees
// every question type and every part of the data).
func spread(qs []question, n int) []question {
	out := make([]question, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, qs[i*len(qs)/n])
	}
	return out
}

// ask puts one question through the knowledge-base chat at the default
// threshold, and searches without threshold to see whether the evidence
// was there.
func ask(ctx context.Context, svc *kb.Service, name string, q question) (Row, error) {
	reply, err := svc.Chat(ctx, kb.ChatRequest{
		Query: q.text, KnowledgeBases: []string{name}, MinRelevance: svc.DefaultMinRelevance(),
	}, nil)
	if err != nil {
		return Row{}, err
	}
	top, err := svc.Search(ctx, kb.SearchRequest{Query: q.text, KnowledgeBases: []string{name}})
	if err != nil {
		return Row{}, err
	}
	row := Row{ID: q.id, Type: q.typ, Question: q.text, Gold: q.gold, Answer: reply.Text, Reason: reply.Reason}
	row.Answered = !reply.Empty && !IsRefusal(reply.Text) && !SaysAbsent(reply.Results)
	row.Correct = row.Answered && ContainsGold(reply.Text, q.gold)
	if len(top) > 0 {
		row.BestRelevance = round4(top[0].Relevance)
	}
	for _, r := range top {
		row.TopFiles = append(row.TopFiles, r.File)
		switch {
		case q.absent:
		case q.goldFile != "":
			row.Evidence = row.Evidence || r.File == q.goldFile
		case q.evidence != "":
			row.Evidence = row.Evidence || holds(r.Text, []string{q.evidence})
		default:
			row.Evidence = row.Evidence || holds(section(r)+"\n"+r.Text, q.gold)
		}
	}
	return row, nil
}

func section(r kb.Result) string {
	s, _ := r.Metadata["section"].(string)
	return s
}

func metrics(rs []Row, absent bool) Metrics {
	m := Metrics{Questions: len(rs)}
	if len(rs) == 0 {
		return m
	}
	var correct, answered, refusedEv, ev, chars int
	for _, r := range rs {
		chars += utf8.RuneCountInString(r.Answer)
		if r.Correct {
			correct++
		}
		if r.Answered {
			answered++
		} else if r.Evidence {
			refusedEv++
		}
		if r.Evidence {
			ev++
		}
	}
	n := len(rs)
	m.AnswerContainsGold = ratio(correct, n)
	m.Answered = ratio(answered, n)
	m.RefusedWithEvidence = ratio(refusedEv, n)
	m.EvidenceInTopK = ratio(ev, n)
	m.AvgAnswerChars = round4(float64(chars) / float64(n))
	if absent {
		x := ratio(n-answered, n)
		m.RefusedWhenAbsent = &x
	}
	return m
}

func printTable(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "set %s: %d files, %d chunks, top_k %d, min relevance %.3f, %s + %s, %.1fs\n",
		rep.Set, rep.Files, rep.Chunks, rep.TopK, rep.MinRelevance, rep.Embedder, rep.Model, rep.Seconds)
	fmt.Fprintf(w, "%-10s %6s %8s %8s %9s %9s %8s %7s\n", "type", "n", "gold", "answered", "refused+e", "evidence", "absent", "chars")
	line := func(name string, m Metrics) {
		abs := "-"
		if m.RefusedWhenAbsent != nil {
			abs = fmt.Sprintf("%.3f", *m.RefusedWhenAbsent)
		}
		fmt.Fprintf(w, "%-10s %6d %8.3f %8.3f %9.3f %9.3f %8s %7.1f\n", name, m.Questions, m.AnswerContainsGold,
			m.Answered, m.RefusedWithEvidence, m.EvidenceInTopK, abs, m.AvgAnswerChars)
	}
	types := make([]string, 0, len(rep.ByType))
	for t := range rep.ByType {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		line(t, rep.ByType[t])
	}
	line("all", rep.Metrics)
	_, err := fmt.Fprintln(w, strings.Repeat("-", 72))
	return err
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return round4(float64(a) / float64(b))
}

func round4(x float64) float64 {
	return float64(int64(x*10000+0.5)) / 10000
}
