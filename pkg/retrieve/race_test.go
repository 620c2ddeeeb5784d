//go:build race

package retrieve

// raceEnabled is true when the tests run under the race detector, which
// makes the real-data tests (single-goroutine, minutes under it) skip.
const raceEnabled = true
