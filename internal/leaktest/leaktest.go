// Package leaktest checks that a test's goroutines end: the leak check the
// streaming, fan-out and client-disconnect tests share.
package leaktest

import (
	"runtime"
	"testing"
	"time"
)

// Wait waits up to five seconds for the number of goroutines to fall to
// want (the count before the test's work) and otherwise fails t with the
// stacks of every goroutine.
func Wait(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d (leak):\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
