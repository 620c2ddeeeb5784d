package leaktest_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/leaktest"
)

func TestWaitForEndingGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	done := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(done)
	}()
	leaktest.Wait(t, before) // returns once the goroutine has ended
	select {
	case <-done:
	default:
		t.Error("Wait returned while the goroutine was still running")
	}
}
