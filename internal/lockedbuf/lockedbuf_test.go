package lockedbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: lines written at once by many goroutines (run
// with -race) all arrive whole.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				fmt.Fprintf(&b, "line %d-%d\n", i, j)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 20*50 {
		t.Fatalf("%d lines, want %d", len(lines), 20*50)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "line ") {
			t.Fatalf("torn line %q", l)
		}
	}
}
