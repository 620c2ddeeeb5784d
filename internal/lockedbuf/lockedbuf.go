// Package lockedbuf is a byte buffer safe for concurrent writers: the log
// sink of tests and harnesses that read a server's log while it runs.
package lockedbuf

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it; its zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
