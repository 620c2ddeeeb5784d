// Package evalcanard measures the offline follow-up rewrite of pkg/extractive
// on CANARD (QuAC dialogues with human standalone rewrites): corpus BLEU-4
// of the rewrites against the human ones, beside the BLEU of copying the
// question unchanged.
package evalcanard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"regexp"
	"time"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// Options select the data and the output.
type Options struct {
	// Data is the path of CANARD's dev.json (or any split in its format).
	Data string
	// Limit evaluates only the first Limit items (0 = all).
	Limit int
	// Items asks for the per-item rows in the report.
	Items bool
}

// Item is one CANARD example as the file holds it.
type Item struct {
	History    []string `json:"History"`
	DialogID   string   `json:"QuAC_dialog_id"`
	Question   string   `json:"Question"`
	QuestionNo int      `json:"Question_no"`
	Rewrite    string   `json:"Rewrite"`
}

// Row is the rewrite of one item.
type Row struct {
	DialogID  string `json:"dialog_id"`
	N         int    `json:"question_no"`
	Question  string `json:"question"`
	Rewrite   string `json:"rewrite"`
	Reference string `json:"reference"`
}

// Report is the result of a run. BLEU figures are corpus BLEU-4 in
// percent; tokens are words and single punctuation marks, case kept.
type Report struct {
	Items     int     `json:"items"`
	BLEU      float64 `json:"bleu"`
	CopyBLEU  float64 `json:"copy_bleu"`
	Rewritten float64 `json:"rewritten"` // share of questions changed
	// HalfBLEU is the BLEU of the two halves of the dialogues (split by a
	// hash of the dialogue id): a rewrite tuned to single examples of one
	// half shows as a gap.
	HalfBLEU [2]float64 `json:"half_bleu"`
	Seconds  float64    `json:"seconds"`
	Rows     []Row      `json:"rows,omitempty"`
}

// Load reads a CANARD file.
func Load(path string) ([]Item, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("canard: %w", err)
	}
	var items []Item
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, fmt.Errorf("canard %s: %w", path, err)
	}
	return items, nil
}

// FollowUp turns an item into the rewrite's input: the first two History
// entries (article and section title) are the topic, the rest alternate
// question and answer.
func FollowUp(it Item) memory.FollowUp {
	f := memory.FollowUp{Question: it.Question}
	h := it.History
	if len(h) >= 2 {
		f.Topic, h = []string{h[0], h[1]}, h[2:]
	} else {
		f.Topic, h = h, nil
	}
	for i, s := range h {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		f.History = append(f.History, llm.Message{Role: role, Content: s})
	}
	return f
}

// Run rewrites every item offline and scores the rewrites. out, when not
// nil, receives a one-line progress note.
func Run(ctx context.Context, opts Options, out io.Writer) (Report, error) {
	if opts.Data == "" {
		return Report{}, errors.New("canard: the data path is required")
	}
	start := time.Now()
	items, err := Load(opts.Data)
	if err != nil {
		return Report{}, err
	}
	if opts.Limit > 0 && opts.Limit < len(items) {
		items = items[:opts.Limit]
	}
	var rw, cp [3]bleu // all, half 0, half 1
	changed := 0
	var rows []Row
	for i, it := range items {
		if i%256 == 0 && ctx.Err() != nil {
			return Report{}, ctx.Err()
		}
		got := extractive.RewriteFollowUp(FollowUp(it), nil)
		if got != it.Question {
			changed++
		}
		half := 1 + halfOf(it.DialogID)
		for _, k := range []int{0, half} {
			rw[k].add(got, it.Rewrite)
			cp[k].add(it.Question, it.Rewrite)
		}
		if opts.Items {
			rows = append(rows, Row{DialogID: it.DialogID, N: it.QuestionNo, Question: it.Question, Rewrite: got, Reference: it.Rewrite})
		}
	}
	rep := Report{Items: len(items), BLEU: round(rw[0].score()), CopyBLEU: round(cp[0].score()),
		HalfBLEU: [2]float64{round(rw[1].score()), round(rw[2].score())}, Rows: rows}
	if len(items) > 0 {
		rep.Rewritten = round(100*float64(changed)/float64(len(items))) / 100
	}
	rep.Seconds = round(time.Since(start).Seconds())
	if out != nil {
		fmt.Fprintf(out, "canard: %d items in %.1fs\n", len(items), rep.Seconds)
	}
	return rep, nil
}

func halfOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % 2)
}

func round(x float64) float64 { return math.Round(x*100) / 100 }

// Tokens are words and single punctuation marks, case kept.
var tokenRE = regexp.MustCompile(`[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]`)

// Tokens splits s as the BLEU score does.
func Tokens(s string) []string { return tokenRE.FindAllString(s, -1) }

// bleu accumulates corpus BLEU-4 (one reference per hypothesis, brevity
// penalty over the corpus, no smoothing).
type bleu struct {
	match, total [4]int
	hypLen, ref  int
}

func (b *bleu) add(hyp, ref string) {
	h, r := Tokens(hyp), Tokens(ref)
	b.hypLen += len(h)
	b.ref += len(r)
	for n := 1; n <= 4; n++ {
		rc := map[string]int{}
		for i := 0; i+n <= len(r); i++ {
			rc[joinGram(r[i:i+n])]++
		}
		for i := 0; i+n <= len(h); i++ {
			g := joinGram(h[i : i+n])
			if rc[g] > 0 {
				rc[g]--
				b.match[n-1]++
			}
		}
		b.total[n-1] += max(0, len(h)-n+1)
	}
}

func joinGram(ts []string) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += "\x00"
		}
		s += t
	}
	return s
}

// score is BLEU-4 in percent.
func (b *bleu) score() float64 {
	if b.hypLen == 0 {
		return 0
	}
	lp := 0.0
	for i := range 4 {
		if b.match[i] == 0 {
			return 0
		}
		lp += math.Log(float64(b.match[i]) / float64(b.total[i]))
	}
	bp := 1.0
	if b.hypLen < b.ref {
		bp = math.Exp(1 - float64(b.ref)/float64(b.hypLen))
	}
	return 100 * bp * math.Exp(lp/4)
}
