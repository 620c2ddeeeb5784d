package golden

import (
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.golden")
	r := &recorder{TB: t}
	Check(r, path, "a")
	if !r.failed {
		t.Error("a missing golden file passed")
	}

	*update = true
	r = &recorder{TB: t}
	Check(r, path, "a")
	*update = false
	if r.failed {
		t.Error("-update did not write the golden file")
	}
	for _, tc := range []struct {
		got  string
		fail bool
	}{{"a", false}, {"b", true}} {
		r := &recorder{TB: t}
		Check(r, path, tc.got)
		if r.failed != tc.fail {
			t.Errorf("Check(%q) failed = %v, want %v", tc.got, r.failed, tc.fail)
		}
	}
}
