package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestEvalCost asks two turns each way: every way is counted, the plain
// chat makes one answer call per turn, and mix_chat's answers mode costs
// more than its context mode, which costs more than the plain chat.
func TestEvalCost(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runEvalCost(context.Background(), []string{"-turns", "2", "-json"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var runs []costRun
	if err := json.Unmarshal(out.Bytes(), &runs); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want chat, mix answers, mix context", len(runs))
	}
	chat, answers, ctx := runs[0], runs[1], runs[2]
	if chat.ByKind[callAnswer].Calls != 2 || chat.PromptVsChat != 1 {
		t.Errorf("chat run: %+v", chat)
	}
	if ctx.ByKind[callContext].Calls != 2 || ctx.ByKind[callFusion].Calls != 0 {
		t.Errorf("context run made %+v", ctx.ByKind)
	}
	if !(answers.PromptPerTurn > ctx.PromptPerTurn && ctx.PromptPerTurn > chat.PromptPerTurn) {
		t.Errorf("prompt tokens per turn: chat %.0f, answers %.0f, context %.0f", chat.PromptPerTurn, answers.PromptPerTurn, ctx.PromptPerTurn)
	}
}

// TestEvalCostTargets asks the whole script and holds mix_chat to issue
// 15's budget: prompt tokens per turn at most 2.5× the plain chat's in
// answers mode and 1.5× in context mode.
func TestEvalCostTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("the ten-turn script three ways")
	}
	var out, errOut bytes.Buffer
	if err := runEvalCost(context.Background(), []string{"-json"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var runs []costRun
	if err := json.Unmarshal(out.Bytes(), &runs); err != nil || len(runs) != 3 {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	for _, c := range []struct {
		run   costRun
		limit float64
	}{{runs[1], 2.5}, {runs[2], 1.5}} {
		if c.run.PromptVsChat > c.limit {
			t.Errorf("%s: %.2f× the plain chat's prompt tokens, want at most %.1f× (by kind: %+v)", c.run.Name, c.run.PromptVsChat, c.limit, c.run.ByKind)
		}
	}
}
