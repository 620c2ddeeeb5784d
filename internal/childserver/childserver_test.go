package childserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLogWriterFindsAddress(t *testing.T) {
	w := &logWriter{addr: make(chan string, 1)}
	// The listening line may arrive in pieces.
	for _, p := range []string{"time=1 level=INFO msg=\"mixchat listen", "ing\" addr=http://127.0.0.1:4", "321 version=dev\n"} {
		w.Write([]byte(p))
	}
	select {
	case a := <-w.addr:
		if a != "http://127.0.0.1:4321" {
			t.Errorf("address %q", a)
		}
	default:
		t.Fatal("no address found")
	}
}

func TestLastLines(t *testing.T) {
	if got := LastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("LastLines = %q", got)
	}
	if got := LastLines("a", 5); got != "a" {
		t.Errorf("LastLines = %q", got)
	}
}

// TestStartReportsEarlyExit: a binary that exits before listening is
// reported with its output.
func TestStartReportsEarlyExit(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fake")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"cannot open store\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), bin, t.TempDir(), nil, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "cannot open store") {
		t.Errorf("err %v, want the child's output", err)
	}
}
