package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpEverywhere: -h and --help on every command and subcommand print
// its usage and succeed (exit 0), and open nothing: no data directory is
// created.
func TestHelpEverywhere(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("PATH", t.TempDir()) // no mixchat-eval
	commands := [][]string{
		{}, {"serve"}, {"chat"}, {"kb"}, {"kb", "create"}, {"kb", "add"}, {"kb", "ls"}, {"kb", "rm"}, {"kb", "search"},
		{"keys"}, {"keys", "create"}, {"keys", "ls"}, {"keys", "revoke"}, {"eval"}, {"eval", "beir"}, {"healthcheck"}, {"version"},
	}
	for _, cmd := range commands {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, cmd...), h)
			var out, errb bytes.Buffer
			err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
			if err != nil && !errors.Is(err, flag.ErrHelp) {
				t.Errorf("mixchat %s: %v (want exit 0)\n%s", strings.Join(args, " "), err, errb.String())
				continue
			}
			if !strings.Contains(out.String()+errb.String(), "Usage") && !strings.Contains(out.String()+errb.String(), "-") {
				t.Errorf("mixchat %s printed no usage: %q %q", strings.Join(args, " "), out.String(), errb.String())
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"help", "kb"}, {"kb", "help"}, {"keys", "help"}, {"eval", "help"}} {
		var out, errb bytes.Buffer
		if err := run(context.Background(), args, strings.NewReader(""), &out, &errb); err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("mixchat %s: %v", strings.Join(args, " "), err)
		}
	}
	if _, err := os.Stat("data"); err == nil {
		t.Error("asking for help created ./data")
	}
}

func TestUnknownCommandFails(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"kb", "frobnicate"}, {"serve", "extra"}} {
		var out, errb bytes.Buffer
		t.Chdir(t.TempDir())
		err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		if err == nil || errors.Is(err, flag.ErrHelp) {
			t.Errorf("mixchat %q: err %v, want a failure", args, err)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		args      []string
		cmd, rest string
		wantErr   bool
	}{
		{nil, "", "", true},
		{[]string{"kb"}, "kb", "", false},
		{[]string{"kb", "ls", "x"}, "kb", "ls x", false},
	}
	for _, tt := range tests {
		var errb bytes.Buffer
		cmd, rest, err := splitCommand(tt.args, "USAGE", &errb, "none")
		if cmd != tt.cmd || strings.Join(rest, " ") != tt.rest || (err != nil) != tt.wantErr {
			t.Errorf("splitCommand(%q) = %q, %q, %v", tt.args, cmd, rest, err)
		}
		if printed := errb.String() == "USAGE"; printed != tt.wantErr {
			t.Errorf("splitCommand(%q) printed %q; want the usage exactly when it fails", tt.args, errb.String())
		}
	}
}

// fakeEval puts a mixchat-eval on PATH that echoes its arguments and stdin
// and exits with status 3.
func fakeEval(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"args:$*\"\ncat\necho oops >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, evalCommand), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestEvalDelegates(t *testing.T) {
	fakeEval(t)
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"eval", "beir", "--data", "x y"}, strings.NewReader("from stdin\n"), &out, &errb)
	var exit exitStatus
	if !errors.As(err, &exit) || exit != 3 {
		t.Errorf("err %v, want exit status 3 passed through", err)
	}
	if out.String() != "args:beir --data x y\nfrom stdin\n" || errb.String() != "oops\n" {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
}

func TestEvalMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"eval", "beir", "--data", "x"}, strings.NewReader(""), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "mixchat-eval is not installed") {
		t.Errorf("err %v, want mixchat-eval reported missing", err)
	}
	for _, want := range []string{"go install ./cmd/mixchat-eval", "go run ./cmd/mixchat-eval NAME"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

// TestChatServerUnreachable: a server that does not answer is an error
// (exit 1), not a session of failed questions.
func TestChatServerUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var out, errb bytes.Buffer
	err = run(context.Background(), []string{"chat", "--server", "http://" + addr}, strings.NewReader("hello\n"), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err %v, want connection refused", err)
	}
}

// TestChatFailedQuestionFails: a question that fails makes the session
// end with an error.
func TestChatFailedQuestionFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		http.Error(w, `{"msg":"upstream down"}`, http.StatusBadGateway)
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"chat", "--server", srv.URL}, strings.NewReader("hello\n"), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 questions failed") || !strings.Contains(out.String(), "upstream down") {
		t.Errorf("err %v, output %q; want the failure shown and reported", err, out.String())
	}
}

func TestChatReplyNote(t *testing.T) {
	tests := []struct {
		name string
		last chatEvent
		want string
	}{
		{"quoted reply", chatEvent{Done: true, Extractive: true, Model: "offline"}, "[offline: extractive, quoted from the conversation]"},
		{"nothing found", chatEvent{Done: true, Extractive: true, NothingFound: true, Model: "offline"}, ""},
		{"generative model", chatEvent{Done: true, Model: "gpt"}, ""},
		{"cut off", chatEvent{Extractive: true}, ""},
	}
	for _, tt := range tests {
		if got := strings.TrimSpace(replyNote(tt.last)); got != tt.want {
			t.Errorf("%s: note %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestChatInProcess runs the terminal chat against a server in its own
// process, on the offline model: a quoted reply is tagged, a nothing-found
// reply is not.
func TestChatInProcess(t *testing.T) {
	t.Setenv("MIXCHAT_LOG_LEVEL", "warn")
	var out, errb bytes.Buffer
	in := "天行健，君子以自强不息。\n天行健是什么意思？\nqwertyuiop zxcvbnm?\n/exit\n"
	err := run(context.Background(), []string{"chat", "--data", t.TempDir()}, strings.NewReader(in), &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	var quoted, nothing bool
	for _, l := range lines {
		if strings.Contains(l, "天行健") && strings.Contains(l, "quoted from the conversation") {
			quoted = true
		}
		if strings.Contains(l, "没有找到") || strings.Contains(l, "Nothing in the given context") {
			nothing = true
			if strings.Contains(l, "quoted from the conversation") {
				t.Errorf("nothing-found reply tagged as quoted: %q", l)
			}
		}
	}
	if !quoted || !nothing {
		t.Errorf("want a quoted reply and a nothing-found reply:\n%s", out.String())
	}
}
