package kb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/width"
)

// Names as they are created: a knowledge base's and a document's name is
// stored in Unicode's composed form (NFC), so the decomposed spelling some
// systems send (macOS file names) names the same thing; a new name that
// differs from an existing one only by case or by width ("ｔ1" beside "t1",
// "A.txt" beside "a.txt") is refused, since readers cannot tell them apart
// and case-insensitive file systems would merge them; and a document name
// with a segment starting with a dot is refused at upload, since hidden
// files are never listed, served or kept (".upload-*" are temporary
// uploads, removed as leftovers).
//
// Document lookups take the name as given when it exists so spelled (a
// name stored before names were normalised), else its NFC form. A
// knowledge base is looked up by its name exactly as given: the server's
// access rules (private knowledge bases) are kept by that name, so two
// spellings must never reach one knowledge base. Create stores the NFC
// form and refuses one that an existing name matches.

// nfc is name in Unicode's composed form.
func nfc(name string) string { return norm.NFC.String(name) }

// foldKey is what two names that differ only by case or width share:
// fullwidth and halfwidth forms folded to their usual width, then lower
// case.
func foldKey(name string) string {
	return strings.ToLower(width.Fold.String(nfc(name)))
}

// validUploadName checks the name of a document being created: a valid
// file name with no segment starting with a dot.
func validUploadName(name string) error {
	if err := ValidFileName(name); err != nil {
		return err
	}
	if hiddenName(name) {
		return fmt.Errorf("%w: file name %s %w", ErrInvalidName, shortQuote(name),
			badName("has a segment starting with a dot: hidden files are never listed or served"))
	}
	return nil
}

// errLookalike is a new name refused because an existing one differs from
// it only by case or width.
func errLookalike(what, name, existing string) error {
	return fmt.Errorf("%w: %s %s differs from the existing %s only by case or width", ErrExists, what, shortQuote(name), shortQuote(existing))
}

// kbName resolves the name of a knowledge base a rebuild may create (an
// admin's request): as given when a knowledge base of that very spelling
// exists, else NFC.
func (s *Service) kbName(ctx context.Context, name string) (string, error) {
	n := nfc(name)
	if n == name {
		return name, nil
	}
	ok, err := s.cat.Exists(ctx, name)
	if err != nil {
		return "", err
	}
	if ok {
		return name, nil
	}
	return n, nil
}

// checkNewKB refuses a new knowledge base name an existing one differs
// from only by case or width.
func (s *Service) checkNewKB(ctx context.Context, name string) error {
	names, err := s.cat.Names(ctx)
	if err != nil {
		return err
	}
	key := foldKey(name)
	for _, n := range names {
		if n != name && foldKey(n) == key {
			return errLookalike("knowledge base", name, n)
		}
	}
	return nil
}

// fileName resolves a document's name as a client spelled it: as given
// when the knowledge base has a document or an original of that very
// spelling, else NFC.
func (b *base) fileName(ctx context.Context, name string) string {
	n := nfc(name)
	if n == name {
		return name
	}
	if _, err := getFile(ctx, b.db, name); err == nil {
		return name
	}
	if b.dbOriginals {
		if _, ok, err := originalHash(ctx, b.db, name); err == nil && ok {
			return name
		}
	} else if f, _, err := openOriginal(b.dir, name); err == nil {
		f.Close()
		return name
	}
	return n
}

// nameKeys are the names of a knowledge base's documents and originals,
// found by foldKey, and the names a request creates (checkNewFile adds
// them). A name is sought among the others when a request names it, not
// every name keyed ahead: a request names a few.
type nameKeys struct {
	names []string          // the documents', then the originals': a later one of a key wins
	added map[string]string // the request's, by key: they win
}

// nameKeys returns the names of the documents and originals of the
// knowledge base.
func (b *base) nameKeys(ctx context.Context) (*nameKeys, error) {
	names, err := b.fileNames(ctx)
	if err != nil {
		return nil, err
	}
	var orig []string
	if b.dbOriginals {
		orig, err = originalNames(ctx, b.db)
	} else {
		orig, err = contentFiles(b.dir)
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return &nameKeys{names: append(names, orig...), added: map[string]string{}}, nil
}

// lookup returns the name of key k: the last one a request added, else
// the last of the names.
func (nk *nameKeys) lookup(k string) (string, bool) {
	if n, ok := nk.added[k]; ok {
		return n, true
	}
	for i := len(nk.names) - 1; i >= 0; i-- {
		if hasKey(nk.names[i], k) {
			return nk.names[i], true
		}
	}
	return "", false
}

// hasKey reports whether foldKey(name) is k; an ASCII name's key is its
// lower case (NFC and width leave ASCII as it is), compared in place.
func hasKey(name, k string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return foldKey(name) == k
		}
	}
	if len(name) != len(k) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != k[i] {
			return false
		}
	}
	return true
}

// checkNewFile refuses the name of a new document that differs from an
// existing one (keys, from nameKeys, with the request's names added as
// they are accepted) only by case or width; the same name replaces.
func checkNewFile(keys *nameKeys, name string) error {
	k := foldKey(name)
	if n, ok := keys.lookup(k); ok && n != name {
		return errLookalike("file name", name, n)
	}
	keys.added[k] = name
	return nil
}
