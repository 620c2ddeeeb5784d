package kb

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Knowledge-base names are stored in NFC, and one that differs from an
// existing name only by case or width is refused.
func TestKBNamesNormalisedAndLookalikesRefused(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	for _, n := range []string{"t1", "Cafe\u0301"} {
		if _, err := s.Create(ctx, n, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"ｔ1", "T1", "Ｔ１", "Café", "CAFÉ"} {
		if _, err := s.Create(ctx, n, CreateOptions{}); !errors.Is(err, ErrExists) {
			t.Errorf("Create(%q) = %v, want ErrExists", n, err)
		}
	}
	names, _ := s.Names(ctx)
	if !slices.Equal(names, []string{"Café", "t1"}) { // "Café" in NFC
		t.Errorf("names = %q", names)
	}
	// A knowledge base answers to its stored name only: access rules are
	// kept by name, so another spelling must not reach it.
	if ok, err := s.Exists(ctx, "Cafe\u0301"); ok || err != nil {
		t.Errorf("Exists(NFD) = %v, %v: want false", ok, err)
	}
	if _, err := s.Create(ctx, "Cafe\u0301", CreateOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("Create(NFD) again: %v, want ErrExists", err)
	}
}

// Document names: NFC, no lookalike of an existing document, no hidden
// segment.
func TestFileNamesNormalisedAndLookalikesRefused(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	s.Create(ctx, "k", CreateOptions{})
	res, err := s.AddFiles(ctx, "k", []FileData{
		{Name: "a.txt", Data: []byte(qianText)},
		{Name: "A.txt", Data: []byte(kunText)},                  // the same request
		{Name: "re\u0301sume\u0301.txt", Data: []byte(kunText)}, // NFD
		{Name: ".upload-x.txt", Data: []byte(kunText)},
		{Name: "dir/.hidden.md", Data: []byte(kunText)},
		{Name: ".git/config.txt", Data: []byte(kunText)},
	}, AddOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Added)
	if !slices.Equal(res.Added, []string{"a.txt", "résumé.txt"}) {
		t.Errorf("added %q", res.Added)
	}
	if !errors.Is(res.Failed["A.txt"], ErrExists) {
		t.Errorf("A.txt beside a.txt: %v", res.Failed["A.txt"])
	}
	for _, f := range []string{".upload-x.txt", "dir/.hidden.md", ".git/config.txt"} {
		if !errors.Is(res.Failed[f], ErrInvalidName) || !errors.Is(res.Failed[f], ErrBadRequest) {
			t.Errorf("%s: %v, want refused as a hidden name", f, res.Failed[f])
		}
	}
	// A later request: fullwidth and upper case are refused, the same
	// name (and its NFD spelling) replaces.
	res, _ = s.AddFiles(ctx, "k", []FileData{
		{Name: "ａ.txt", Data: []byte(kunText)},
		{Name: "RÉSUMÉ.txt", Data: []byte(kunText)},
		{Name: "re\u0301sume\u0301.txt", Data: []byte(qianText)},
	}, AddOptions{Override: true}, nil)
	for _, f := range []string{"ａ.txt", "RÉSUMÉ.txt"} {
		if !errors.Is(res.Failed[f], ErrExists) {
			t.Errorf("%s: %v, want ErrExists", f, res.Failed[f])
		}
	}
	if !slices.Equal(res.Added, []string{"résumé.txt"}) {
		t.Errorf("the NFD spelling should replace résumé.txt: %+v", res)
	}
	files, _ := s.Files(ctx, "k")
	if len(files) != 2 {
		t.Errorf("files = %+v", files)
	}
	// Deleting by the NFD spelling deletes the document.
	failed, err := s.DeleteFiles(ctx, "k", []string{"re\u0301sume\u0301.txt"}, true)
	if err != nil || len(failed) != 0 {
		t.Fatalf("delete: %v %v", failed, err)
	}
	if files, _ := s.Files(ctx, "k"); len(files) != 1 {
		t.Errorf("after delete: %+v", files)
	}
}
