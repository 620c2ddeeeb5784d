package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestEvalLatency runs the benchmark small: it must complete every kind of
// request through the served app and report each figure. (The figures
// themselves depend on the machine and are not checked.)
func TestEvalLatency(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-latency", "5ms", "-requests", "2", "-overhead-requests", "3", "-concurrency", "4", "-duration", "200ms"}
	if err := runEvalLatency(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"answers, concurrent", "answers, sequential", "context, concurrent",
		"concurrent / sequential wall time", "instant LLM, 3 requests one at a time", "instant LLM, 4 concurrent conversations", " 0 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestEvalLatencyJSON runs the first-text measurement with a fast model
// and checks the report's figures: the answers' text comes at the model's
// first token, long before the fused reply; context mode's reply comes at
// it too.
func TestEvalLatencyJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-json", "-ttft", "50ms", "-answer-time", "600ms", "-requests", "1"}
	if err := runEvalLatency(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	var rep firstTextReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	ans, ctx := rep.Modes["answers"], rep.Modes["context"]
	if rep.TTFTMs < 50 || rep.AnswerMs < 600 {
		t.Errorf("the test model's pace: ttft %v ms, answer %v ms", rep.TTFTMs, rep.AnswerMs)
	}
	if ans.FirstTextMs <= 0 || ans.FirstTextMs >= ans.FirstFusedMs || ans.FirstFusedMs < rep.AnswerMs {
		t.Errorf("answers mode: first text %v ms, first fused %v ms: the answers must show before the fusion", ans.FirstTextMs, ans.FirstFusedMs)
	}
	if ctx.FirstFusedMs <= 0 || ctx.FirstFusedMs >= rep.AnswerMs {
		t.Errorf("context mode: first fused %v ms, want it at the model's first token", ctx.FirstFusedMs)
	}
}

func TestEvalLatencyFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runEvalLatency(context.Background(), []string{"-requests", "0"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Errorf("err = %v, want a refusal of -requests 0", err)
	}
}
