package kb

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNotFound: the knowledge base or file does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: a knowledge base or file of that name already exists.
	ErrExists = errors.New("already exists")
	// ErrInvalidName: the name is empty or could escape the KB directory.
	ErrInvalidName = errors.New("invalid name")
	// ErrEmptyName: the name is empty or only white space.
	ErrEmptyName = errors.New("empty name")
	// ErrUnsupported: no loader reads files of that type.
	ErrUnsupported = errors.New("unsupported file type")
	// ErrCorrupt: the file could not be parsed as its type says.
	ErrCorrupt = errors.New("corrupt file")
	// ErrTooLarge: the file decompresses to more than MaxDecompressedBytes.
	ErrTooLarge = errors.New("too large")
	// ErrNoText: the file parsed but holds no text (e.g. a scanned PDF).
	ErrNoText = errors.New("no text")
	// ErrEmbedModel: the KB was built with another embedding model than
	// the one configured to query it.
	ErrEmbedModel = errors.New("embedding model mismatch")
	// ErrBadRequest: a parameter is out of range or malformed.
	ErrBadRequest = errors.New("bad request")
)

// LimitError is a request or document refused for going past a configured
// limit: Msg says what and by how much, Setting names the setting that
// sets the limit. It is ErrTooLarge.
type LimitError struct {
	Msg     string
	Setting string
}

func (e *LimitError) Error() string        { return e.Msg + " (" + e.Setting + ")" }
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// FileError is a per-file failure of an ingestion; one bad file never
// aborts the others.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Name limits: a knowledge-base name and every "/"-separated segment of a
// file name is at most 200 characters and 255 bytes of UTF-8 (what file
// systems take as one name); a file name is at most 1024 bytes in all.
const (
	maxNameRunes    = 200
	MaxNameBytes    = 255
	MaxFileNameSize = 1024
)

// nameError is a name refused for its length or characters (not for
// trying to leave the knowledge base's folder): it is ErrBadRequest.
type nameError string

func (e nameError) Error() string        { return string(e) }
func (e nameError) Is(target error) bool { return target == ErrBadRequest }

func badName(format string, a ...any) error { return nameError(fmt.Sprintf(format, a...)) }

// ValidName checks a knowledge-base name: not empty, no path separators,
// no "." or ".." segments, no control characters (NUL, tab, ...) or
// invisible format characters (zero-width, bidirectional controls such as
// U+202E), no leading or trailing space, at most 200 characters and 255
// bytes. It returns ErrEmptyName or ErrInvalidName (wrapped, with the
// reason; also wrapping ErrBadRequest when the reason is length or
// characters).
func ValidName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w: knowledge base name is empty", ErrEmptyName)
	}
	if err := safeSegment(name); err != nil {
		return fmt.Errorf("%w: knowledge base name %s %w", ErrInvalidName, shortQuote(name), err)
	}
	return nil
}

// shortQuote quotes a name for a message, cut to 60 characters.
func shortQuote(s string) string {
	if utf8.RuneCountInString(s) > 60 {
		s = string([]rune(s)[:60]) + "…"
	}
	return strconv.Quote(s)
}

// ValidFileName checks a document name inside a knowledge base. It may
// contain "/" to keep a folder structure ("wiki/Home.md"), but every
// segment obeys the rules of ValidName.
func ValidFileName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w: file name is empty", ErrEmptyName)
	}
	if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return fmt.Errorf("%w: file name %s must be a relative path with / separators", ErrInvalidName, shortQuote(name))
	}
	if len(name) > MaxFileNameSize {
		return fmt.Errorf("%w: file name %s is %d bytes: %w", ErrInvalidName, shortQuote(name), len(name),
			badName("at most %d bytes", MaxFileNameSize))
	}
	for _, seg := range strings.Split(name, "/") {
		if err := safeSegment(seg); err != nil {
			return fmt.Errorf("%w: file name %s %w", ErrInvalidName, shortQuote(name), err)
		}
	}
	return nil
}

func safeSegment(s string) error {
	switch {
	case s == "":
		return errors.New("has an empty path segment")
	case s == "." || s == ".." || strings.Contains(s, "../") || strings.Contains(s, "..\\"):
		return errors.New("must not contain \".\" or \"..\" segments")
	case strings.ContainsAny(s, "/\\"):
		return errors.New("must not contain / or \\")
	case !utf8.ValidString(s):
		return badName("is not valid UTF-8")
	case utf8.RuneCountInString(s) > maxNameRunes:
		return badName("is longer than %d characters", maxNameRunes)
	case len(s) > MaxNameBytes:
		return badName("is %d bytes of UTF-8, more than %d (a Chinese character takes 3)", len(s), MaxNameBytes)
	case strings.TrimSpace(s) != s:
		return badName("must not start or end with white space")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return badName("must not contain control characters (%U)", r)
		}
		if unicode.Is(unicode.Cf, r) {
			return badName("must not contain invisible format characters (%U: zero-width, bidirectional controls)", r)
		}
	}
	return nil
}

// DistanceToRelevance converts a Langchain-Chatchat score threshold (the
// Euclidean distance d of unit vectors, 0..2, smaller is closer) to mixchat's
// normalised relevance: 1 - d²/2, which is the cosine of the two vectors,
// clamped to [0,1]. So d = 0 → 1 (only perfect matches), d = 1 (Chatchat's
// default) → 0.5, d ≥ √2 → 0 (keep everything).
func DistanceToRelevance(d float64) float64 {
	if math.IsNaN(d) {
		return 0
	}
	return clamp01(1 - d*d/2)
}

// RelevanceToDistance is the inverse of DistanceToRelevance for reporting a
// relevance r in [0,1] as a Chatchat score: √(2(1-r)), in [0, √2].
func RelevanceToDistance(r float64) float64 {
	return math.Sqrt(2 * (1 - clamp01(r)))
}

func clamp01(x float64) float64 {
	switch {
	case x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}
