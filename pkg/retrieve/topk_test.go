package retrieve

import (
	"fmt"
	"math/rand"
	"slices"
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

// TestIDKeyOrder checks that ids whose idKeys differ are in the order of
// their keys, on ids that share prefixes and are prefixes of one another.
func TestIDKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	const alphabet = "\x000a\xff"
	word := func() string {
		b := make([]byte, rng.Intn(11))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	for range 100000 {
		a, b := word(), word()
		if ka, kb := idKey(a), idKey(b); ka != kb && (ka < kb) != (a < b) {
			t.Fatalf("idKey(%q) = %x, idKey(%q) = %x", a, ka, b, kb)
		}
	}
}

// TestTopKMatchesSort checks topK against sorting every hit, with most
// scores tied and ids that share long prefixes.
func TestTopKMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for range 500 {
		n, k := rng.Intn(200), 1+rng.Intn(40)
		var all []Hit
		for i := range n {
			all = append(all, Hit{ID: fmt.Sprintf("chunk-%0*d", rng.Intn(4), rng.Intn(1000)) + fmt.Sprint(i%3), Score: float64(rng.Intn(3))})
		}
		top := newTopK(k)
		for _, h := range all {
			top.push(h)
		}
		got := top.sorted()
		sortHits(all)
		want := all[:min(k, len(all))]
		if !slices.Equal(got, want) {
			t.Fatalf("n %d, k %d:\ngot  %v\nwant %v", n, k, got, want)
		}
	}
}
