package retrieve

import (
	"math/rand"
	"testing"
)

// TestLessID checks lessID against the string order, on ids that share
// prefixes of every length, prefixes of one another, and empty ones.
func TestLessID(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const alphabet = "0ab\xff"
	word := func() string {
		b := make([]byte, rng.Intn(7))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	for range 100000 {
		a, b := word(), word()
		if got := lessID(a, b); got != (a < b) {
			t.Fatalf("lessID(%q, %q) = %v", a, b, got)
		}
	}
}
