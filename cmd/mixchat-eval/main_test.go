package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mixchatBinary builds the server command (cmd/mixchat), which the crash
// benchmark runs, into a folder removed after the test.
func mixchatBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mixchat")
	if out, err := exec.Command("go", "build", "-o", bin, "../mixchat").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestHelp: -h on the command and on every benchmark prints its usage and
// is not an error (exit 0); help NAME is NAME -h.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		var out, errb bytes.Buffer
		if err := run(context.Background(), args, &out, &errb); err != nil {
			t.Errorf("%q: %v", args, err)
		}
		for _, b := range benchmarks {
			if !strings.Contains(out.String(), "  "+b.name+" ") {
				t.Errorf("%q: usage lacks %s:\n%s", args, b.name, out.String())
			}
		}
	}
	for _, b := range benchmarks {
		for _, args := range [][]string{{b.name, "-h"}, {b.name, "--help"}, {"help", b.name}} {
			var out, errb bytes.Buffer
			err := run(context.Background(), args, &out, &errb)
			if !errors.Is(err, flag.ErrHelp) {
				t.Errorf("%q: err %v, want flag.ErrHelp (exit 0)", args, err)
			}
			if !strings.Contains(errb.String(), "-") || out.Len() != 0 {
				t.Errorf("%q: want the flags on stderr and nothing on stdout; stdout %q stderr %q", args, out.String(), errb.String())
			}
		}
	}
}

func TestUnknownBenchmark(t *testing.T) {
	for _, args := range [][]string{nil, {"nope"}} {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, &out, &errb)
		if err == nil || errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), "beir, cmrc") {
			t.Errorf("%q: err %v, want an error listing the benchmarks", args, err)
		}
	}
}

// TestDataMissing: a benchmark that reads data names what is missing and
// where the public data comes from.
func TestDataMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"beir"}, []string{"--data is required", "SciFact", "https://"}},
		{[]string{"beir", "--data", missing}, []string{missing, "no such file", "corpus.jsonl", "scifact.zip"}},
		{[]string{"beir", "--data", t.TempDir()}, []string{"corpus.jsonl: no such file", "BEIR"}},
		{[]string{"cmrc"}, []string{"--data is required", "CMRC 2018", "github.com/ymcui/cmrc2018"}},
		{[]string{"cmrc", "--data", missing}, []string{missing, "no such file", "cmrc2018_dev.json"}},
		{[]string{"locomo"}, []string{"--data is required", "LoCoMo", "github.com/snap-research/locomo"}},
		{[]string{"locomo", "--data", missing}, []string{missing, "no such file", "locomo10.json"}},
		{[]string{"dstc"}, []string{"--data is required", "DSTC11", "github.com/alexa/dstc11-track5"}},
		{[]string{"dstc", "--data", t.TempDir()}, []string{"knowledge.json: no such file", "DSTC11"}},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		err := run(context.Background(), tt.args, &out, &errb)
		if err == nil {
			t.Errorf("%q succeeded", tt.args)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not mention %q", tt.args, err, w)
			}
		}
	}
}
