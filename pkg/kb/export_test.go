package kb

import "testing"

// Test helpers for the package kb_test tests.

// PGServiceDSN is pgServiceDSN: a DSN selecting a fresh schema on the test
// PostgreSQL (skipping without one), dropped at the end of t.
func PGServiceDSN(t *testing.T) string { return pgServiceDSN(t) }

// HasLocalVectors reports whether s has the knowledge base name open with
// its vectors in memory (an embedded index); false when it is not open or
// its vectors live in Qdrant.
func HasLocalVectors(s *Service, name string) (open, local bool) {
	s.mu.Lock()
	b := s.open[name]
	s.mu.Unlock()
	return b != nil, b != nil && b.mem != nil
}

// LexLen is the number of chunks in the BM25 index of the knowledge base
// name open on s (-1 when it is not open).
func LexLen(s *Service, name string) int {
	s.mu.Lock()
	b := s.open[name]
	s.mu.Unlock()
	if b == nil {
		return -1
	}
	return b.lex.Len()
}

// NewWithStore is New with the catalog cfg.Store names (newWithStore).
var NewWithStore = newWithStore
