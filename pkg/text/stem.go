package text

import (
	"sync"

	snowball "github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// stemEnglish returns the Porter2 (Snowball English) stem of w, a lower-case
// ASCII word. Words of up to two letters and the Snowball English stop words
// are kept as they are, the stems every index written so far holds.
//
// The generated Snowball stemmer (blevesearch/snowballstem) replaced
// kljensen/snowball, whose romance package links the testing package into
// every binary that stems; TestStemEnglishMatches checks on a large
// vocabulary that the stems are the same, so existing indexes stay valid.
func stemEnglish(w string) string {
	if len(w) <= 2 || snowballStop[w] {
		return w
	}
	env := snowball.NewEnv(w)
	english.Stem(env)
	return env.Current()
}

// snowballStop is the Snowball project's English stop word list.
var snowballStop = setOf(
	"a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
	"be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "did", "do",
	"does", "doing", "don", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have",
	"having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into",
	"is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of",
	"off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "s", "same",
	"she", "should", "so", "some", "such", "t", "than", "that", "the", "their", "theirs", "them", "themselves",
	"then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very",
	"was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "you",
	"your", "yours", "yourself", "yourselves",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// stems caches stemEnglish: a corpus repeats its words, and stemming is
// most of what Terms costs on English text. The cache is bounded: when it
// holds maxStems words it starts again empty. Its values are shared, so
// the terms of many documents hold one copy of each stem.
var stems = struct {
	sync.RWMutex
	m map[string]string
}{m: make(map[string]string)}

const maxStems = 1 << 16

// stemCached is stemEnglish through the cache.
func stemCached(w string) string {
	stems.RLock()
	s, ok := stems.m[w]
	stems.RUnlock()
	if ok {
		return s
	}
	s = stemEnglish(w)
	stems.Lock()
	if len(stems.m) >= maxStems {
		clear(stems.m)
	}
	stems.m[w] = s
	stems.Unlock()
	return s
}
