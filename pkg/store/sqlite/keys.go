package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mixchat/mixchat/pkg/auth"
)

// OpenKeys opens (creating if needed) the SQLite database at path, its
// directory included, and migrates the auth tables: the API keys and
// knowledge-base access records, beside the conversations or apart.
func OpenKeys(ctx context.Context, path string) (*auth.Store, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open auth store: bad sqlite path %q", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open auth store: %w", err)
	}
	db, err := openFile(ctx, path, 0)
	if err != nil {
		return nil, fmt.Errorf("open auth store %s: %w", path, err)
	}
	s, err := auth.NewStore(ctx, db, auth.Dialect{})
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}
