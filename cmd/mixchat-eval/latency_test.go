package main

import (
	"bytes"
	"context"
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

func TestEvalLatencyFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runEvalLatency(context.Background(), []string{"-requests", "0"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Errorf("err = %v, want a refusal of -requests 0", err)
	}
}
