package text

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"strings"
	"sync"
)

// This file relates English words that mean the same in their commonest
// senses ("quiet" and "silent", "spacious" and "large", "beverage" and
// "drink"), so a question can find a passage that says what it asks in
// other words. The relations come from WordNet 3.0 (Princeton University;
// wordnet/LICENSE), written as terms by gen_related.go.

//go:generate go run gen_related.go

//go:embed wordnet/related.txt.gz
var relatedGz []byte

var related = sync.OnceValue(func() map[string][]string {
	zr, err := gzip.NewReader(bytes.NewReader(relatedGz))
	if err != nil {
		panic("text: wordnet/related.txt.gz: " + err.Error())
	}
	m := make(map[string][]string, 40000)
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 1 {
			m[f[0]] = f[1:]
		}
	}
	if err := sc.Err(); err != nil {
		panic("text: wordnet/related.txt.gz: " + err.Error())
	}
	return m
})

// Related returns the terms of the English words that share a common sense
// with the word whose term (Terms) is t: its synonyms in its commonest
// senses, and an adjective's cluster ("spacious" with "large", "big"). nil
// for a term it does not know, a CJK term among them. The slice is shared:
// callers must not change it.
func Related(t string) []string {
	if t == "" || t[0] >= 0x80 {
		return nil
	}
	return related()[t]
}
