package kbtables

import (
	"strings"
	"testing"
)

func TestTables(t *testing.T) {
	for _, types := range [][2]string{{"INTEGER", "BLOB"}, {"BIGINT", "BYTEA"}} {
		got := Tables(types[0], types[1])
		if strings.ContainsAny(got, "{}") {
			t.Errorf("Tables%v leaves a placeholder:\n%s", types, got)
		}
		for _, want := range []string{"size             " + types[0] + " NOT NULL", "vector   " + types[1] + "\n", "CREATE TABLE IF NOT EXISTS meta", "CREATE INDEX IF NOT EXISTS chunks_file"} {
			if !strings.Contains(got, want) {
				t.Errorf("Tables%v has no %q", types, want)
			}
		}
	}
}
