package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

func TestRunKB(t *testing.T) {
	ctx := context.Background()
	cfg := kb.DefaultConfig()
	cfg.Dir = t.TempDir()
	svc, err := kb.New(cfg, sqlite.NewKBCatalog(cfg.Dir), retrieve.NewHashEmbedder(256), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	docs := t.TempDir()
	os.MkdirAll(filepath.Join(docs, "sub"), 0o755)
	os.WriteFile(filepath.Join(docs, "qian.txt"), []byte("乾卦\n\n乾，元亨，利贞。初九：潜龙勿用。"), 0o644)
	os.WriteFile(filepath.Join(docs, "sub", "kun.md"), []byte("# 坤卦\n\n坤，元亨，利牝马之贞。"), 0o644)
	os.WriteFile(filepath.Join(docs, "image.png"), []byte("\x89PNG"), 0o644)

	run := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := runKB(ctx, svc, args, &out, &errb)
		return out.String(), errb.String(), err
	}
	if _, _, err := run("create", "zy", "--info", "周易"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run("create", "zy"); err == nil {
		t.Error("creating a KB twice must fail")
	}
	out, errOut, err := run("add", "zy", docs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "2 added") || !strings.Contains(errOut, "skip image.png") || !strings.Contains(errOut, "[2/2]") {
		t.Errorf("add: %q / %q", out, errOut)
	}
	out, _, _ = run("add", "--force=false", "zy", docs+"/qian.txt")
	if !strings.Contains(out, "1 unchanged") {
		t.Errorf("flags and arguments in any order, unchanged files skipped: %q", out)
	}
	out, _, err = run("ls")
	if err != nil || !strings.Contains(out, "zy") || !strings.Contains(out, "周易") {
		t.Errorf("ls: %q %v", out, err)
	}
	out, _, _ = run("ls", "zy")
	if !strings.Contains(out, "qian.txt") || !strings.Contains(out, "sub/kun.md") {
		t.Errorf("ls zy: %q", out)
	}
	out, _, err = run("search", "zy", "潜龙勿用", "-k", "1")
	if err != nil || !strings.Contains(out, "[1]") || !strings.Contains(out, "潜龙勿用") {
		t.Errorf("search: %q %v", out, err)
	}
	out, _, _ = run("rm", "zy", "qian.txt")
	if !strings.Contains(out, "removed qian.txt") {
		t.Errorf("rm file: %q", out)
	}
	if _, _, err := run("rm", "zy"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run("search", "zy", "x"); err == nil {
		t.Error("search of a removed KB must fail")
	}
	if _, _, err := run("frobnicate"); err == nil {
		t.Error("unknown subcommand must fail")
	}
}

// A subcommand given too few or too many arguments fails with what it
// wants before it touches the knowledge bases (there are none here).
func TestRunKBArguments(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"create"}, "kb create: give one knowledge base name"},
		{[]string{"create", "zy", "yi"}, "kb create: give one knowledge base name"},
		{[]string{"add", "zy", "--force"}, "kb add: give a knowledge base name and at least one file or folder"},
		{[]string{"list", "zy", "yi"}, "kb ls: give at most one knowledge base name"},
		{[]string{"delete"}, "kb rm: give a knowledge base name (and documents to remove only those)"},
		{[]string{"search", "zy"}, "kb search: give knowledge base name(s) and a query"},
	} {
		var out, errb bytes.Buffer
		if err := runKB(context.Background(), nil, tt.args, &out, &errb); err == nil || err.Error() != tt.want {
			t.Errorf("kb %v: %v, want %q", tt.args, err, tt.want)
		}
	}
}
