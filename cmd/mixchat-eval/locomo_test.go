package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
)

// locomoPath is ../shared/data/locomo/locomo10.json, or the test skips.
func locomoPath(t *testing.T) string {
	t.Helper()
	return shareddata.Path(t, "locomo/locomo10.json")
}

// TestEvalLoCoMo runs the benchmark on the real data with the default and
// retrieval strategies and checks the report's shape and the goals.
func TestEvalLoCoMo(t *testing.T) {
	if testing.Short() {
		t.Skip("LoCoMo eval skipped in -short mode")
	}
	path := locomoPath(t)
	args := []string{"--data", path, "--strategy", "combined,retrieval,window", "--json"}
	if raceEnabled {
		// The race detector makes the whole benchmark take minutes: check
		// the report on the first conversation only.
		args = append(args, "--conversations", "1")
	}
	var out, errOut bytes.Buffer
	err := runEvalLoCoMo(context.Background(), args, &out, &errOut)
	if err != nil {
		t.Fatalf("eval locomo: %v\n%s", err, errOut.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	for _, key := range []string{"recall_at_k", "k", "by_category", "budget_tokens", "evidence_in_context", "avg_context_tokens",
		"strategy", "questions", "dropped_evidence_ids"} {
		if _, ok := rep[key]; !ok {
			t.Errorf("report lacks %q", key)
		}
	}
	if raceEnabled {
		if rep["questions"] != float64(199) || rep["strategy"] != "combined" {
			t.Errorf("first conversation: %v questions, strategy %v; want 199, combined", rep["questions"], rep["strategy"])
		}
		return
	}
	if rep["questions"] != float64(1986) {
		t.Errorf("questions = %v, want 1986", rep["questions"])
	}
	if rep["dropped_evidence_ids"] != float64(3) {
		t.Errorf("dropped_evidence_ids = %v, want 3 (\"D\" and two ids of turns that do not exist)", rep["dropped_evidence_ids"])
	}
	if rep["strategy"] != "combined" {
		t.Errorf("strategy = %v, want combined (the first asked)", rep["strategy"])
	}
	if r := rep["recall_at_k"].(float64); r < 0.80 {
		t.Errorf("recall@10 = %.3f, want >= 0.80", r)
	}
	if c := rep["evidence_in_context"].(float64); c < 0.90 {
		t.Errorf("evidence in context = %.3f, want >= 0.90", c)
	}
	if tok := rep["avg_context_tokens"].(float64); tok > 2000 {
		t.Errorf("avg context tokens = %.0f, over the 2000 budget", tok)
	}
	strategies := rep["strategies"].([]any)
	if len(strategies) != 3 {
		t.Fatalf("%d strategies reported, want 3", len(strategies))
	}
	combined, retrieval := strategies[0].(map[string]any), strategies[1].(map[string]any)
	if c, r := combined["evidence_in_context"].(float64), retrieval["evidence_in_context"].(float64); c < r {
		t.Errorf("combined keeps evidence %.3f < retrieval's %.3f", c, r)
	}
	window := strategies[2].(map[string]any)
	if c := window["evidence_in_context"].(float64); c > 0.2 {
		t.Errorf("window evidence in context = %.3f: the window should hold only a small fraction", c)
	}
	t.Logf("%s", out.String())
}

func TestEvalLoCoMoFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--data", "x.json", "--k", "0"},
		{"--data", filepath.Join(t.TempDir(), "missing.json")},
	} {
		var out, errOut bytes.Buffer
		if err := runEvalLoCoMo(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("runEvalLoCoMo(%q) succeeded, want an error", args)
		}
	}
	// An unknown strategy is refused before any work.
	dir := t.TempDir()
	p := filepath.Join(dir, "tiny.json")
	tiny := `[{"sample_id":"s","qa":[{"question":"When did Ann go to Paris?","evidence":["D1:1","D"],"category":4}],
		"conversation":{"speaker_a":"Ann","speaker_b":"Bob","session_1_date_time":"1:56 pm on 8 May, 2023",
		"session_1":[{"speaker":"Ann","dia_id":"D1:1","text":"I went to Paris."},{"speaker":"Bob","dia_id":"D1:2","text":"Nice!"}]}}]`
	if err := os.WriteFile(p, []byte(tiny), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := runEvalLoCoMo(context.Background(), []string{"--data", p, "--strategy", "nope"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown strategy: err = %v", err)
	}
	// --skip leaves conversations out: skipping the only one leaves none.
	if err := runEvalLoCoMo(context.Background(), []string{"--data", p, "--skip", "1"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "no conversations") {
		t.Errorf("--skip 1 of 1: err = %v, want no conversations", err)
	}
	out.Reset()
	if err := runEvalLoCoMo(context.Background(), []string{"--data", p, "--strategy", "retrieval", "--k", "1", "--json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Recall  float64 `json:"recall_at_k"`
		Dropped int     `json:"dropped_evidence_ids"`
		InCtx   float64 `json:"evidence_in_context"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Recall != 1 || rep.Dropped != 1 || rep.InCtx != 1 {
		t.Errorf("tiny conversation: %+v, want recall 1, 1 dropped id, all evidence in context", rep)
	}
}
