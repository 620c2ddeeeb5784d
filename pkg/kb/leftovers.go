package kb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// This file keeps a knowledge base's content folder to its documents: the
// temporary files an interrupted upload leaves are removed when the base
// is opened, links are never followed to serve a document, and a name the
// file system would refuse is refused before anything is committed.

// staleUploadAge is how old a temporary upload (".upload-*") must be to be
// removed as left over by an interrupted process: the live ones exist only
// between an ingestion's last write and its rename, well under a minute.
const staleUploadAge = time.Minute

// removeStaleUploads removes the temporary uploads older than
// staleUploadAge below dir's content folder and returns how many it
// removed.
func removeStaleUploads(dir string) (int, error) {
	root := filepath.Join(dir, contentDir)
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), ".upload-") || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err != nil || time.Since(info.ModTime()) < staleUploadAge {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// errNotPlainFile: a document's path in the content folder is a link, a
// folder or a hidden file, which are never served or overwritten.
var errNotPlainFile = errors.New("not a plain file")

// openOriginal opens the original rel (a valid file name) below dir's
// content folder, refusing hidden names and any link on the way (a link
// could point anywhere on the server).
func openOriginal(dir, rel string) (*os.File, fs.FileInfo, error) {
	p := filepath.Join(dir, contentDir)
	for _, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, ".") {
			return nil, nil, errNotPlainFile
		}
		p = filepath.Join(p, seg)
		st, err := os.Lstat(p)
		if err != nil {
			return nil, nil, err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return nil, nil, errNotPlainFile
		}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, errNotPlainFile
	}
	return f, st, nil
}

// placeable checks that a document's original can be renamed to dst: the
// name is one the file system takes and nothing but a plain file is there.
// Its errors name no path (they reach clients).
func placeable(dst string) error {
	st, err := os.Lstat(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%w: the file system refuses the name: %v", ErrBadRequest, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%w: a folder or link of that name is in the way", ErrExists)
	}
	return nil
}
