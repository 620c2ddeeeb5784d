package sqlite_test

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/kb/catalogtest"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

func TestKBCatalog(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) kb.Catalog { return sqlite.NewKBCatalog(t.TempDir()) })
}
