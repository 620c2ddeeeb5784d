package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// Short runs of the operations benchmarks: each command fails when what it
// checks does not hold, so these tests fail with it.

func TestEvalCrashShort(t *testing.T) {
	bin := mixchatBinary(t)
	var out, errb bytes.Buffer
	if err := runEvalCrash(context.Background(), []string{"--n", "4", "--bin", bin}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	for _, want := range []string{"runs (SIGKILL each)  4", "half-written turns found  0", "KB inconsistencies  0"} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestEvalFaultsShort(t *testing.T) {
	args := []string{"--llm-timeout", "1s", "--search-timeout", "100ms", "--postgres=false"}
	if _, err := exec.LookPath("pg_ctl"); err == nil {
		args[len(args)-1] = "--postgres=true"
	} else if _, err := pgBinDir(); err == nil {
		args[len(args)-1] = "--postgres=true"
	}
	var out, errb bytes.Buffer
	if err := runEvalFaults(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "LLM 429") || strings.Contains(out.String(), " NO\n") {
		t.Errorf("unexpected report:\n%s", out.String())
	}
}

func TestEvalLoadShort(t *testing.T) {
	var out, errb bytes.Buffer
	err := runEvalLoad(context.Background(), []string{"--conversations", "8", "--duration", "1s", "--latency", "5ms"}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "goroutines: baseline") {
		t.Errorf("unexpected report:\n%s", out.String())
	}
}
