package kb

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Uploads are spooled to disk before they are indexed (FileData.Path):
// each request gets a folder of its own under DIR/.spool (not a knowledge
// base: it holds no kb.db), which the server removes when the request
// ends. A folder left by a process that was killed is removed by the next
// one that starts, once it is older than spoolStale.

const (
	spoolDir   = ".spool"
	spoolStale = time.Hour
)

// SpoolDir makes an empty folder for one request's uploaded files; the
// caller removes it (os.RemoveAll) when the request is done.
func (s *Service) SpoolDir() (string, error) {
	root := filepath.Join(s.cfg.Dir, spoolDir)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("spool uploads: %w", err)
	}
	dir, err := os.MkdirTemp(root, "upload-*")
	if err != nil {
		return "", fmt.Errorf("spool uploads: %w", err)
	}
	return dir, nil
}

// removeStaleSpools removes the spool folders of requests that ended
// without removing theirs (a process killed meanwhile). Best effort.
func removeStaleSpools(dir string, now time.Time) {
	root := filepath.Join(dir, spoolDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && now.Sub(info.ModTime()) > spoolStale {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// size is the document's size in bytes.
func (f FileData) size() (int, error) {
	if f.Data != nil || f.Path == "" {
		return len(f.Data), nil
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		return 0, fmt.Errorf("read upload %s: %w", f.Name, err)
	}
	return int(st.Size()), nil
}
