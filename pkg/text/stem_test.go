package text

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"

	kljensen "github.com/kljensen/snowball/english"

	"github.com/mixchat/mixchat/internal/shareddata"
)

// TestStemEnglishMatches checks that stemEnglish gives the stems of the
// stemmer it replaced (kljensen/snowball with stop words kept), so the
// terms of indexes written before stay the same: on a fixed word list
// covering Porter2's special cases and, when the shared data is there, on
// every word of the SciFact corpus.
func TestStemEnglishMatches(t *testing.T) {
	words := strings.Fields(`a an is was having doing skis skies dying lying tying idly gently ugly early only
		singly sky news howe atlas cosmos bias andes inning innings outing outings canning cannings herring
		herrings earring earrings proceed proceeds proceeded proceeding exceed succeed generate generously
		communication arsenal consign consigned consigning consignment consist consisted consistency
		knack knackeries kneel knelt running runner hopping hoped caresses ponies ties caress cats feed
		agreed disabled matting mating meeting milling messing meetings happy sky fluently controllability
		electrical hopefulness formality sensitivity goodness revival allowance inference airliner adjustable
		defensible irritant replacement adjustment dependent adoption homologou communism activate angulariti
		yes yesterday cry crying cried said saying y ys yy ayy abyss lyss e's dog's dogs' o'neil`)
	t.Run("fixed", func(t *testing.T) { compareStems(t, words) })
	t.Run("scifact", func(t *testing.T) {
		f, err := os.Open(shareddata.Path(t, "scifact/corpus.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		seen := map[string]bool{}
		var vocab []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			for _, w := range strings.FieldsFunc(strings.ToLower(sc.Text()), func(r rune) bool { return !unicode.IsLetter(r) || r > unicode.MaxASCII }) {
				if !seen[w] {
					seen[w] = true
					vocab = append(vocab, w)
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		compareStems(t, vocab)
	})
}

func compareStems(t *testing.T, words []string) {
	diff := 0
	for _, w := range words {
		w = strings.ToLower(w)
		if !isASCIIAlpha(w) {
			continue
		}
		if got, want := stemEnglish(w), kljensen.Stem(w, false); got != want {
			diff++
			if diff <= 20 {
				t.Errorf("stemEnglish(%q) = %q, the old stemmer gave %q", w, got, want)
			}
		}
	}
	if diff > 0 {
		t.Errorf("%d of %d words stem differently", diff, len(words))
	}
	t.Logf("%d words compared", len(words))
}

// TestStemCachedMatches: the cache returns what stemming returns, also once
// it has started again empty.
func TestStemCachedMatches(t *testing.T) {
	for _, w := range []string{"running", "runs", "ran", "generously", "the", "cats"} {
		for range 2 {
			if got, want := stemCached(w), stemEnglish(w); got != want {
				t.Errorf("stemCached(%q) = %q, want %q", w, got, want)
			}
		}
	}
	for i := range maxStems + 10 {
		stemCached("w" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i))
	}
	if got, want := stemCached("generously"), stemEnglish("generously"); got != want {
		t.Errorf("after a reset: %q, want %q", got, want)
	}
}
