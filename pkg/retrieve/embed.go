package retrieve

import (
	"context"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// DefaultEmbedDim is the dimension NewHashEmbedder uses when given none.
const DefaultEmbedDim = 512

// HashEmbedder is an offline embedder for zero-setup use: a text becomes the
// signed feature-hashing sketch (Weinberger et al., 2009) of its n-grams,
// L2-normalised, so the cosine of two vectors approximates a weighted n-gram
// overlap of the texts. It knows no meaning, only surface form; it is what a
// knowledge base uses when no embedding model is configured.
//
// Features:
//   - Chinese, Japanese, Korean: character unigrams, bigrams and trigrams of
//     each run of CJK characters, traditional characters folded to
//     simplified so both scripts meet;
//   - other scripts: the words of text.Terms (lower-cased, stop words
//     dropped, stemmed) and their character 3- to 5-grams with word boundary
//     marks (fastText's subwords, which match across inflections and
//     compounds the stemmer misses).
//
// Weighting: each feature counts 1 + ln(tf) (sublinear term frequency) times a
// fixed weight for its kind. The weights stand in for IDF without a corpus:
// longer words and n-grams weigh more, since they are rarer, and a fixed
// list of very common English words and Chinese function characters
// (commonWords, commonHan) weighs a fifth. A per-corpus IDF would rank
// better, but it changes every vector whenever a document arrives, which
// would force re-embedding a whole knowledge base; a fixed weighting keeps
// each vector a function of its own text alone, stable across processes and
// corpus versions.
//
// Measured with "mixchat eval" (vector search alone): SciFact nDCG@10 0.513
// (BM25 0.681), CMRC 2018 recall@1 0.753 (BM25 0.958). It is a weak
// retriever on its own and a small help fused with BM25.
type HashEmbedder struct {
	dim int
	w   hashWeights
}

// Calibration is how an embedder's vectors are to be read when a hybrid
// retriever fuses their cosines with BM25 (the knowledge bases do): zero
// fields mean the plain reading. An embedder reports its own (an optional
// ability, see HashEmbedder.Calibration); embedding models are not
// calibrated.
type Calibration struct {
	// RelevanceMid is the hybrid score at which the embedder's matches and
	// non-matches part: it reads as relevance 0.5. 0 means 0.5 itself.
	RelevanceMid float64
	// VectorWeight is the share of the cosine in the hybrid score, in
	// (0,1]; 0 means the retriever's default.
	VectorWeight float64
}

// Calibration reports the HashEmbedder's reading, both measured with the
// knowledge bases' hybrid retrieval at the default weights.
//
// RelevanceMid, 0.36, measured with "mixchat eval qa" and "mixchat eval
// cmrc --threshold 1" (offline defaults): questions whose answer is in
// another domain (3,219 CMRC questions against the Zhouyi) score below
// 0.21 for 99% of them; questions about an entity of the same domain whose
// paragraph was left out (CMRC, half the paragraphs indexed) overlap the
// answerable ones: at 0.37, 14% of them still find a chunk, while 94% of
// answerable questions find theirs, every generated Zhouyi question scores
// above it (lowest 0.41), and so does a question over three short notes
// that shares its words with its note (0.42). A question that shares one
// word with a heading and nothing else ("天水围河在哪里？" and the heading
// 天水訟) scores about 0.30. It was 0.37 until knowledge bases refused the
// questions about a namesake or a name no chunk holds whatever their score
// (kb's namesake.go, unknown.go), most of the left-out questions that
// passed; 0.36 lets six more answerable CMRC questions through (0.855 →
// 0.857) and keeps 0.907 of the left-out ones refused (0.35: 0.900).
//
// VectorWeight, 0.25, measured on the Zhouyi questions (kb's
// TestZhouyiRetrieval): the n-gram cosines are noisy for short questions
// and repeat what BM25 already sees.
func (e *HashEmbedder) Calibration() Calibration {
	return Calibration{RelevanceMid: 0.36, VectorWeight: 0.25}
}

// hashWeights are the per-kind feature weights.
type hashWeights struct {
	word     float64    // a whole word
	longWord float64    // extra word weight per rune of length beyond 4, up to 8
	sub      [6]float64 // a word's character n-gram, by n (3..5 used)
	cjk      [4]float64 // a CJK character n-gram, by n (1..3 used)
	common   float64    // factor for common words and characters (commonWords, commonHan)
}

var defaultHashWeights = hashWeights{
	word:     1.0,
	longWord: 0.1,
	sub:      [6]float64{3: 0.25, 4: 0.3, 5: 0.35},
	cjk:      [4]float64{1: 0.3, 2: 1.0, 3: 0.7},
	common:   0.2,
}

// HashVectorWeight is the vector share (HybridParams.VectorWeight) that
// suits HashEmbedder vectors fused with BM25, tuned on the SciFact training
// queries: hashed n-grams repeat much of what BM25 already sees, so they
// get a small share (larger shares fell below BM25 alone there). Vectors of
// a real embedding model deserve more; 0.5 is Hybrid's default.
const HashVectorWeight = 0.15

// VectorWeight returns HashVectorWeight, so a caller holding any embedder
// can ask for a suggested fusion weight through a one-method interface.
func (e *HashEmbedder) VectorWeight() float64 { return HashVectorWeight }

// NewHashEmbedder returns an embedder of dimension dim (DefaultEmbedDim
// when dim ≤ 0). The same text always gives the same vector.
func NewHashEmbedder(dim int) *HashEmbedder {
	if dim <= 0 {
		dim = DefaultEmbedDim
	}
	return &HashEmbedder{dim: dim, w: defaultHashWeights}
}

// Dim returns the vector dimension.
func (e *HashEmbedder) Dim() int { return e.dim }

// Model names the embedding scheme and dimension, for example
// "mixchat-hash-v1-512". Vectors from embedders with different names are
// not comparable; the version changes whenever the features or weights do,
// so a store that records it knows when to re-embed.
func (e *HashEmbedder) Model() string { return "mixchat-hash-v1-" + strconv.Itoa(e.dim) }

// Embed returns one unit vector per text, in order (the zero vector for a
// text with no features). It only fails when ctx is done.
//
// A batch is embedded on all cores: an ingestion's embedding is then as
// fast as its other stages, which a remote embedder's concurrency gives
// it too.
func (e *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts)/embedPerWorker)
	if workers <= 1 {
		for i, s := range texts {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			out[i] = e.embed(s)
		}
		return out, nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(texts) || ctx.Err() != nil {
					return
				}
				out[i] = e.embed(texts[i])
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// embedPerWorker is the fewest texts of a batch per goroutine that embeds
// them (a text takes some 50 µs).
const embedPerWorker = 8

// Feature kinds, mixed into the hash so equal strings of different kinds do
// not collide on purpose.
const (
	kindWord uint64 = iota + 1
	kindSub
	kindCJK
)

// embedScratch is one embedding's working memory, reused from a pool: an
// ingestion embeds tens of thousands of texts, and their maps and slices
// were most of its allocations.
type embedScratch struct {
	feats  featMap
	wordTF map[string]int
	words  []string
	rs     []rune
	marked []rune
	run    []rune
	keys   []uint64
	acc    []float64
}

var embedScratchPool = sync.Pool{New: func() any {
	return &embedScratch{feats: featMap{}, wordTF: map[string]int{}}
}}

func (e *HashEmbedder) embed(s string) []float32 {
	sc := embedScratchPool.Get().(*embedScratch)
	defer embedScratchPool.Put(sc)
	if len(sc.feats) > 1<<14 {
		sc.feats = featMap{} // do not keep a long text's map for every short one
	}
	clear(sc.feats)
	clear(sc.wordTF)
	feats := sc.feats

	// Words (of every script but CJK), counted first for sublinear tf.
	wordTF := sc.wordTF
	for _, t := range text.Terms(s) {
		if r, _ := utf8.DecodeRuneInString(t); !text.IsCJK(r) {
			wordTF[t]++
		}
	}
	words := sc.words[:0]
	for w := range wordTF {
		words = append(words, w)
	}
	slices.Sort(words) // a fixed order: float sums must not depend on map order
	sc.words = words
	marked := sc.marked
	for _, w := range words {
		tf := wordTF[w]
		rs := sc.rs[:0]
		for _, r := range w {
			rs = append(rs, r)
		}
		sc.rs = rs
		f := 1.0
		if commonWords[w] {
			f = e.w.common
		}
		l := float64(min(max(len(rs), 4), 8) - 4)
		feats.add(hashRunes(kindWord, rs), f*e.w.word*(1+e.w.longWord*l), tf)
		marked = append(append(append(marked[:0], '<'), rs...), '>')
		for n := 3; n <= 5; n++ {
			if n >= len(marked) { // the whole word is already a feature
				break
			}
			for i := 0; i+n <= len(marked); i++ {
				feats.add(hashRunes(kindSub+uint64(n)<<8, marked[i:i+n]), f*e.w.sub[n], tf)
			}
		}
	}

	sc.marked = marked

	// CJK runs, traditional characters folded to simplified so both
	// scripts meet.
	run := sc.run[:0]
	flush := func() {
		for n := 1; n <= 3; n++ {
			for i := 0; i+n <= len(run); i++ {
				g := run[i : i+n]
				f := e.w.cjk[n]
				for _, r := range g {
					if commonHan[r] {
						f *= e.w.common
					}
				}
				feats.add(hashRunes(kindCJK+uint64(n)<<8, g), f, 1)
			}
		}
		run = run[:0]
	}
	for _, r := range s {
		if text.IsCJK(r) {
			run = append(run, text.FoldRune(r))
		} else if len(run) > 0 {
			flush()
		}
	}
	flush()
	sc.run = run

	keys := sc.keys[:0]
	for h := range feats {
		keys = append(keys, h)
	}
	slices.Sort(keys)
	sc.keys = keys
	if len(sc.acc) != e.dim {
		sc.acc = make([]float64, e.dim)
	}
	acc := sc.acc
	clear(acc)
	for _, h := range keys {
		f := feats[h]
		x := f.w / f.tf * (1 + math.Log(f.tf)) // mean weight × sublinear tf
		if h>>63 == 1 {
			x = -x
		}
		acc[(h>>1)%uint64(e.dim)] += x
	}
	v := make([]float32, e.dim)
	for i, x := range acc {
		v[i] = float32(x)
	}
	Normalize(v)
	return v
}

// featAcc accumulates one feature: Σ weight·tf and Σ tf over its
// occurrences (a hashed feature can come from sources of different weight).
type featAcc struct {
	w  float64
	tf float64
}

type featMap map[uint64]featAcc

func (m featMap) add(h uint64, w float64, tf int) {
	if w == 0 {
		return
	}
	f := m[h]
	f.w += w * float64(tf)
	f.tf += float64(tf)
	m[h] = f
}

// hashRunes hashes a rune sequence with a seed (FNV-1a over the code
// points, then a 64-bit finaliser so every bit is well mixed; the low bits
// pick the dimension, the top bit the sign).
func hashRunes(seed uint64, rs []rune) uint64 {
	h := uint64(14695981039346656037) ^ seed*0x9e3779b97f4a7c15
	for _, r := range rs {
		h ^= uint64(r)
		h *= 1099511628211
	}
	return mix64(h)
}

// mix64 is the SplitMix64 finaliser.
func mix64(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// commonWords are frequent English words beyond text's stop words (as
// stems): function words, auxiliaries, question words and the commonest
// verbs and adverbs. They carry little topic, so the embedder down-weighs
// them; a fixed list keeps vectors independent of the corpus.
var commonWords = func() map[string]bool {
	const list = `i me my mine we us our ours you your yours he him his she her hers its they them
	what which who whom whose when where why how all any both each few more most other some own same
	so than too very can could may might must shall should would do does did doing done have has had
	having been being were am just now also however thus therefore although though while whereas
	after before between during through about above below up down out off over under again further
	once here only nor from using use used one two three first new well like within without among
	per via upon get got make made many much even still yet whether either neither every another
	because since until unless whose those this these what's it's let say said see seen show shown
	know known take taken give given way time year years people thing things`
	m := make(map[string]bool)
	for _, w := range strings.Fields(list) {
		for _, t := range text.Terms(w) {
			m[t] = true
		}
	}
	return m
}()

// commonHan are the commonest Chinese function characters (particles,
// pronouns, copulas, question words), down-weighed like commonWords.
var commonHan = func() map[rune]bool {
	const list = "的了是在和有我你他她它们这那个之与及或也就都而被把对从为以于上下中不没很到说要会能可等将其此所并还又该哪什么谁吗呢吧啊几多少怎样如何即已"
	m := make(map[rune]bool)
	for _, r := range list {
		m[r] = true
	}
	return m
}()
