//go:build !race

package retrieve

const raceEnabled = false
