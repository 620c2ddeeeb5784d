package kb

import "testing"

// hasKey is foldKey compared: ASCII names are compared in place.
func TestHasKeyAsFoldKey(t *testing.T) {
	names := []string{"a.md", "A.MD", "a.MD", "ａ.md", "Ａ.ＭＤ", "b.md", "a.m", "caf\u00e9.md", "cafe\u0301.md", "CAF\u00c9.md",
		"dir/x.md", "DIR/X.md", "dir／x.md", "", "@[`{", "ß.md", "ẞ.md", "ǅ.md", "K.md", "\u212a.md"}
	for _, n := range names {
		for _, m := range names {
			k := foldKey(m)
			if got, want := hasKey(n, k), foldKey(n) == k; got != want {
				t.Errorf("hasKey(%q, foldKey(%q)) = %v, want %v", n, m, got, want)
			}
		}
	}
	// The last name of a key wins, the request's before all.
	nk := &nameKeys{names: []string{"x.md", "X.md", "y.md"}, added: map[string]string{}}
	if n, _ := nk.lookup(foldKey("x.md")); n != "X.md" {
		t.Errorf("lookup: %q, want X.md", n)
	}
	if err := checkNewFile(nk, "Y.md"); err == nil {
		t.Error("Y.md beside y.md accepted")
	}
	if err := checkNewFile(nk, "z.md"); err != nil {
		t.Fatal(err)
	}
	if err := checkNewFile(nk, "Z.md"); err == nil {
		t.Error("Z.md after z.md accepted")
	}
}
