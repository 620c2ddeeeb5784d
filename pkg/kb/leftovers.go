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

// errInTheWay says that a document's path in the content folder passes
// through a link, or a file where a folder should be: nothing is written
// or removed there. Its message names no path (it reaches clients).
var errInTheWay = fmt.Errorf("%w: a link, or a file where a folder should be, is in the way in the content folder", ErrExists)

// contentDirs checks the path of the document rel (a valid file name)
// below dir's content folder for writing: no segment may be a link, the
// folders on the way must be folders, and rel itself a plain file or
// missing. With create, missing folders are made one at a time (never
// through a link, unlike os.MkdirAll). The content folder itself may be a
// link (an operator's choice); nothing below it may.
func contentDirs(dir, rel string, create bool) error {
	p := filepath.Join(dir, contentDir)
	if create {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	segs := strings.Split(rel, "/")
	for i, seg := range segs {
		p = filepath.Join(p, seg)
		last := i == len(segs)-1
		st, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && (last || !create):
			return nil
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if st, err = os.Lstat(p); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if st.Mode()&fs.ModeSymlink != 0 || (!last && !st.IsDir()) || (last && !st.Mode().IsRegular()) {
			return errInTheWay
		}
	}
	return nil
}

// removeOriginal removes the original rel below dir's content folder
// when it is a plain file reached through no link, and reports whether it
// did. A link, or anything behind one, is left alone (errInTheWay).
func removeOriginal(dir, rel string) (bool, error) {
	if err := contentDirs(dir, rel, false); err != nil {
		return false, err
	}
	if err := os.Remove(filepath.Join(dir, contentDir, filepath.FromSlash(rel))); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// hiddenName reports whether a segment of the document name rel starts
// with a dot: temporary uploads (".upload-*") and files the knowledge base
// never lists or serves.
func hiddenName(rel string) bool {
	for _, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}
