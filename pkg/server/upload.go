package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mixchat/mixchat/pkg/kb"
)

// upload is an upload_docs request as read off the wire: its form fields
// and its files, the first memUploadBytes of them held in memory, the
// others each streamed into a file of the request's spool folder as it
// arrives, so that memory holds no more of the body than that and a copy
// buffer, whatever its size (kb.max_upload_bytes bounds the disk).
type upload struct {
	values map[string]string // the first value of each field
	files  []kb.FileData     // the parts named "files", in order
}

// memUploadBytes is how many bytes of a request's files are held in
// memory: a small upload (a document of a few pages) is never written to
// the spool folder, which is then not even made.
const memUploadBytes = 64 << 10

// Limits of the non-file fields, which are held in memory (those of
// mime/multipart's ReadForm: 10 MiB and 1000 parts).
const (
	maxFormValueBytes = 10 << 20
	maxFormParts      = 1000
)

var (
	errTooManyFiles = errors.New("too many files in one upload")
	errSpool        = errors.New("spool upload")
)

// readUpload reads a multipart upload_docs body, holding its files in
// memory up to memUploadBytes together and spooling the others into the
// folder spool returns (called once, when a file is the first to go
// there; its error is returned as it is): more than maxFiles files fail
// with errTooManyFiles, a body past its http.MaxBytesReader with
// *http.MaxBytesError, a file that cannot be written with errSpool.
func readUpload(r *http.Request, spool func() (string, error), maxFiles int) (*upload, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, err
	}
	u := &upload{values: map[string]string{}}
	valueBytes, parts, held := 0, 0, 0
	dir := ""
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return u, nil
		}
		if err != nil {
			return nil, err
		}
		parts++
		switch {
		case p.FileName() != "" && p.FormName() == "files":
			if len(u.files) >= maxFiles {
				return nil, errTooManyFiles
			}
			f := kb.FileData{Name: uploadName(p)}
			data, err := io.ReadAll(io.LimitReader(p, int64(max(memUploadBytes-held, 0))+1))
			if err != nil {
				return nil, err
			}
			if len(data) <= memUploadBytes-held {
				f.Data = data // never nil: an empty file is one
				held += len(data)
			} else {
				if dir == "" {
					if dir, err = spool(); err != nil {
						return nil, err
					}
				}
				f.Path = filepath.Join(dir, "part-"+strconv.Itoa(len(u.files)))
				if err := spoolPart(io.MultiReader(bytes.NewReader(data), p), f.Path); err != nil {
					return nil, err
				}
			}
			u.files = append(u.files, f)
		case p.FileName() != "":
			// Files under another field name were never read.
			if _, err := io.Copy(io.Discard, p); err != nil {
				return nil, err
			}
		default:
			if parts > maxFormParts+maxFiles {
				return nil, errTooManyFiles
			}
			var sb strings.Builder
			n, err := io.Copy(&sb, io.LimitReader(p, int64(maxFormValueBytes-valueBytes+1)))
			if err != nil {
				return nil, err
			}
			if valueBytes += int(n); valueBytes > maxFormValueBytes {
				return nil, errBadRequest("form fields larger than %d bytes together", maxFormValueBytes)
			}
			if _, ok := u.values[p.FormName()]; !ok {
				u.values[p.FormName()] = sb.String()
			}
		}
		p.Close()
	}
}

// spoolPart copies one uploaded file (p, the part) to path, errors
// reading the body returned as they are, errors writing wrapped in
// errSpool.
func spoolPart(p io.Reader, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %w", errSpool, err)
	}
	_, err = io.Copy(writerOnly{f}, p)
	var werr *spoolWriteError
	if errors.As(err, &werr) {
		err = fmt.Errorf("%w: %w", errSpool, werr.err)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%w: %w", errSpool, cerr)
	}
	return err
}

// writerOnly marks the spool file's write errors, so that they are told
// apart from the body's read errors after io.Copy (it also hides
// *os.File's ReadFrom, which would copy the same way).
type writerOnly struct{ f *os.File }

type spoolWriteError struct{ err error }

func (e *spoolWriteError) Error() string { return e.err.Error() }

func (w writerOnly) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if err != nil {
		return n, &spoolWriteError{err}
	}
	return n, nil
}
