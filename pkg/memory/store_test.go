package memory_test

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/memory/storetest"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// openSQLite opens the SQLite conversations store at path (":memory:"
// included), closed at the end of t. The store's own tests, the
// conformance suite among them, are pkg/store/sqlite's and
// pkg/store/postgres's.
func openSQLite(t testing.TB, path string) *sqlite.Conversations {
	t.Helper()
	return storetest.OpenAt(t, sqlite.OpenConversations, path)
}
