//go:build ignore

// gen_related writes wordnet/related.txt.gz, the English words Related
// returns, from WordNet 3.0 (Princeton University; its licence is
// wordnet/LICENSE). Debian's wordnet-base package ships the database:
//
//	apt-get install wordnet-base
//	go run gen_related.go [/usr/share/wordnet]
//
// For every single-word lemma of a noun or an adjective it keeps the words of its commonest senses:
// the first sense of each part of speech, and the next when the tagged
// corpus of WordNet saw it; of each such sense the synset's other words
// and, for an adjective in a cluster (a satellite: "spacious"), the words
// of the cluster's head ("large, big"); the relation is made symmetric.
// Words are written as pkg/text's
// terms (Porter2 stems), one line per term: the term, then its related
// terms, space-separated, sorted.
package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mixchat/mixchat/pkg/text"
)

type synset struct {
	words   []string
	heads   []string // offsets of similar-to heads (satellite adjectives)
	isSatel bool
}

func main() {
	dir := "/usr/share/wordnet"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	// Nouns and adjectives: verbs are too many-sensed ("say" is also
	// "order", "state"), adverbs mostly the adjectives again.
	files := map[string]string{"n": "noun", "a": "adj"}
	syn := map[string]*synset{} // pos:offset
	for pos, f := range files {
		each(filepath.Join(dir, "data."+f), func(line string) {
			body, _, _ := strings.Cut(line, " | ")
			p := strings.Fields(body)
			off, typ := p[0], p[2]
			wc, _ := strconv.ParseInt(p[3], 16, 32)
			s := &synset{isSatel: typ == "s"}
			for i := 0; i < int(wc); i++ {
				w := strings.ToLower(p[4+2*i])
				if j := strings.IndexByte(w, '('); j >= 0 {
					w = w[:j] // adjective markers: "(a)", "(p)"
				}
				s.words = append(s.words, w)
			}
			i := 4 + 2*int(wc)
			pc, _ := strconv.Atoi(p[i])
			i++
			for k := 0; k < pc; k++ {
				if p[i] == "&" && s.isSatel {
					s.heads = append(s.heads, pos+":"+p[i+1])
				}
				i += 4
			}
			syn[pos+":"+off] = s
		})
	}
	related := map[string]map[string]bool{}
	for pos, f := range files {
		each(filepath.Join(dir, "index."+f), func(line string) {
			p := strings.Fields(line)
			lemma := p[0]
			sc, _ := strconv.Atoi(p[2])
			pc, _ := strconv.Atoi(p[3])
			tagged, _ := strconv.Atoi(p[5+pc])
			offs := p[6+pc : 6+pc+sc]
			if !word(lemma) {
				return
			}
			from := term(lemma)
			if from == "" {
				return
			}
			for r, off := range offs {
				if r >= 2 || (r > 0 && r >= tagged) {
					break
				}
				s := syn[pos+":"+off]
				if s == nil {
					continue
				}
				words := append([]string{}, s.words...)
				for _, h := range s.heads {
					if hs := syn[h]; hs != nil {
						words = append(words, hs.words...)
					}
				}
				for _, w := range words {
					if !word(w) {
						continue
					}
					if t := term(w); t != "" && t != from {
						if related[from] == nil {
							related[from] = map[string]bool{}
						}
						related[from][t] = true
					}
				}
			}
		})
	}
	// The relation is symmetric: a cluster's head is related to the
	// satellites whose commonest senses are in its cluster ("large" to
	// "spacious"), as they are to it.
	for from, ts := range related {
		for t := range ts {
			if related[t] == nil {
				related[t] = map[string]bool{}
			}
			related[t][from] = true
		}
	}
	keys := make([]string, 0, len(related))
	for k := range related {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out, err := os.Create(filepath.Join("wordnet", "related.txt.gz"))
	if err != nil {
		log.Fatal(err)
	}
	zw, err := gzip.NewWriterLevel(out, gzip.BestCompression)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriter(zw)
	for _, k := range keys {
		rs := make([]string, 0, len(related[k]))
		for r := range related[k] {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		fmt.Fprintln(w, k+" "+strings.Join(rs, " "))
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := out.Close(); err != nil {
		log.Fatal(err)
	}
}

// word reports whether a lemma is one plain word: lower-case ASCII
// letters, no underscore (a collocation) or digit.
func word(w string) bool {
	if len(w) < 2 {
		return false
	}
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// term is a word as pkg/text indexes it, "" for a stop word.
func term(w string) string {
	ts := text.Terms(w)
	if len(ts) != 1 {
		return ""
	}
	return ts[0]
}

func each(path string, fn func(line string)) {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "  ") {
			fn(l)
		}
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
}
