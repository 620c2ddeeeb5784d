package postgres

import "testing"

func TestRebind(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT value FROM meta WHERE key = ?`, `SELECT value FROM meta WHERE key = $1`},
		{`INSERT INTO t(a, b) VALUES(?,?) ON CONFLICT(a) DO UPDATE SET b = excluded.b`, `INSERT INTO t(a, b) VALUES($1,$2) ON CONFLICT(a) DO UPDATE SET b = excluded.b`},
		{`SELECT '?', "a?b", ? FROM x WHERE y LIKE ? ESCAPE '\'`, `SELECT '?', "a?b", $1 FROM x WHERE y LIKE $2 ESCAPE '\'`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
	} {
		if got := Rebind(tc.in); got != tc.want {
			t.Errorf("Rebind(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
