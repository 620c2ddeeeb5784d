package llm_test

import (
	"os"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
)

func readShared(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(shareddata.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
