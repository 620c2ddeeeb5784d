package pgtest

import "testing"

func TestWithSearchPath(t *testing.T) {
	tests := []struct{ dsn, want string }{
		{"postgres://u@127.0.0.1:5432/db?sslmode=disable", "postgres://u@127.0.0.1:5432/db?search_path=s1&sslmode=disable"},
		{"postgresql://u@h/db", "postgresql://u@h/db?search_path=s1"},
		{"host=127.0.0.1 dbname=db", "host=127.0.0.1 dbname=db search_path=s1"},
	}
	for _, tt := range tests {
		if got := WithSearchPath(t, tt.dsn, "s1"); got != tt.want {
			t.Errorf("WithSearchPath(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}
