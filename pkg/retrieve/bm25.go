package retrieve

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"
)

// BM25Params are the BM25 free parameters. The zero value means the
// defaults K1 0.9, B 0.4 (Anserini's defaults, which BEIR-style baselines
// use); when either field is non-zero both are used as given.
type BM25Params struct {
	K1, B float64
}

func (p BM25Params) withDefaults() BM25Params {
	if p.K1 == 0 && p.B == 0 {
		return BM25Params{K1: 0.9, B: 0.4}
	}
	return p
}

// BM25 is an incremental inverted index scored with Lucene's BM25:
//
//	score(d, q) = Σ_{t ∈ q} qtf(t) · idf(t) · tf / (tf + K1·(1 − B + B·|d|/avgdl))
//	idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// where N is the number of documents, |d| the number of terms of d and avgdl
// the mean over the index; qtf counts a term repeated in the query. (Lucene
// dropped the constant (K1+1) factor of the textbook formula; rankings are
// the same.) Every term score is below idf(t), so a score is below
// MaxScore(query).
//
// Add and Remove update the postings in place: a removed document leaves a
// tombstone that queries skip, and the postings are compacted once
// tombstones outnumber live documents. Statistics (N, df, avgdl) are always
// exact, so an index built incrementally scores exactly like one built from
// scratch.
type BM25 struct {
	mu    sync.RWMutex
	p     BM25Params
	slot  map[string]int32 // id → slot in docs
	docs  []bm25Doc        // by slot; id "" marks a removed document
	post  map[string]*posting
	live  int
	dead  int
	total int64 // Σ|d| over live documents

	scratch sync.Pool // *bm25Scratch
}

type bm25Doc struct {
	id    string
	key   uint64 // idKey(id): ties of score broken without reading id
	len   int32
	terms []string // distinct terms
	tfs   []int32  // their frequencies
}

type posting struct {
	term  string // the map's key, shared by the documents' term lists
	slots []int32
	tfs   []int32
	df    int32 // live documents in slots
}

type bm25Scratch struct {
	scores  []float64
	touched []int32
	// SearchClauses' scratch, by slot like scores: a clause's pseudo
	// frequencies (ptf, the slots holding one in ptouched), and a form's
	// count of terms found (found) and least frequency (least).
	ptf      []float64
	ptouched []int32
	found    []int32
	least    []int32
}

// NewBM25 returns an empty index.
func NewBM25(p BM25Params) *BM25 {
	return &BM25{
		p:    p.withDefaults(),
		slot: make(map[string]int32),
		post: make(map[string]*posting),
	}
}

// Params returns the parameters in use.
func (b *BM25) Params() BM25Params { return b.p }

// Len returns the number of documents.
func (b *BM25) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.live
}

// DocFreq returns the number of documents that hold term.
func (b *BM25) DocFreq(term string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if p := b.post[term]; p != nil {
		return int(p.df)
	}
	return 0
}

// Add indexes a document under id with its terms (as from text.Terms),
// replacing the document already indexed under id. A document without
// terms is indexed but never matches. The empty id is ignored.
func (b *BM25) Add(id string, terms []string) {
	if id == "" {
		return
	}
	counts := make(map[string]int32, len(terms))
	order := make([]string, 0, len(terms))
	for _, t := range terms {
		if counts[t] == 0 {
			order = append(order, t)
		}
		counts[t]++
	}
	d := bm25Doc{id: id, len: int32(len(terms)), terms: order, tfs: make([]int32, len(order))}
	for i, t := range order {
		d.tfs[i] = counts[t]
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(id)
	b.addLocked(d)
}

// AddCounts indexes a document from its term frequencies (as persisted by a
// caller that stores them) instead of its term sequence; Add(id, terms) and
// AddCounts(id, counts of terms) index the same document.
func (b *BM25) AddCounts(id string, tf map[string]int) {
	if id == "" {
		return
	}
	d := bm25Doc{id: id, terms: make([]string, 0, len(tf)), tfs: make([]int32, 0, len(tf))}
	for t, n := range tf {
		if n <= 0 {
			continue
		}
		d.terms = append(d.terms, t)
		d.tfs = append(d.tfs, int32(n))
		d.len += int32(n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(id)
	b.addLocked(d)
}

func (b *BM25) addLocked(d bm25Doc) {
	s := int32(len(b.docs))
	d.key = idKey(d.id)
	b.docs = append(b.docs, d)
	b.slot[d.id] = s
	b.live++
	b.total += int64(d.len)
	for i, t := range d.terms {
		p := b.post[t]
		if p == nil {
			p = &posting{term: t}
			b.post[t] = p
		}
		d.terms[i] = p.term // one copy of each term, however many documents hold it
		p.slots = append(p.slots, s)
		p.tfs = append(p.tfs, d.tfs[i])
		p.df++
	}
}

// Has reports whether a document is indexed under id.
func (b *BM25) Has(id string) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	_, ok := b.slot[id]
	return ok
}

// IDs returns the ids of the indexed documents, in no particular order.
func (b *BM25) IDs() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	ids := make([]string, 0, len(b.slot))
	for id := range b.slot {
		ids = append(ids, id)
	}
	return ids
}

// Remove deletes the document indexed under id, if any.
func (b *BM25) Remove(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(id)
}

func (b *BM25) removeLocked(id string) {
	s, ok := b.slot[id]
	if !ok {
		return
	}
	delete(b.slot, id)
	d := &b.docs[s]
	for _, t := range d.terms {
		p := b.post[t]
		p.df--
		if p.df == 0 {
			delete(b.post, t)
		}
	}
	b.live--
	b.dead++
	b.total -= int64(d.len)
	*d = bm25Doc{}
	if b.dead > 64 && b.dead > b.live {
		b.compactLocked()
	}
}

// compactLocked drops tombstones: live documents get consecutive slots and
// the postings are rebuilt from them.
func (b *BM25) compactLocked() {
	docs := make([]bm25Doc, 0, b.live)
	for _, d := range b.docs {
		if d.id != "" {
			docs = append(docs, d)
		}
	}
	b.docs = b.docs[:0:0]
	b.slot = make(map[string]int32, len(docs))
	b.post = make(map[string]*posting, len(b.post))
	b.live, b.dead, b.total = 0, 0, 0
	for _, d := range docs {
		b.addLocked(d)
	}
}

func (b *BM25) idf(df int32) float64 {
	n := float64(b.live)
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// queryTerms counts the distinct terms of a query in order of appearance.
func queryTerms(query []string) ([]string, map[string]int) {
	qtf := make(map[string]int, len(query))
	var order []string
	for _, t := range query {
		if qtf[t] == 0 {
			order = append(order, t)
		}
		qtf[t]++
	}
	return order, qtf
}

// MaxScore returns an upper bound of the scores Search gives for query:
// Σ qtf(t)·idf(t) over the query terms present in the index. Dividing a
// score by it gives the matched share of the query's information, a
// query-independent scale in [0,1) that Hybrid can use.
func (b *BM25) MaxScore(query []string) float64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	order, qtf := queryTerms(query)
	var m float64
	for _, t := range order {
		if p := b.post[t]; p != nil {
			m += float64(qtf[t]) * b.idf(p.df)
		}
	}
	return m
}

// Search returns the k best documents for the query terms with their raw
// BM25 scores, best first. Only documents sharing a term with the query are
// returned; allow, when not nil, filters documents by id.
func (b *BM25) Search(query []string, k int, allow func(id string) bool) []Hit {
	sc, avgdl := b.begin(k, len(query))
	if sc == nil {
		return nil
	}
	defer b.end(sc)
	scores, touched, k1, bb := sc.scores, sc.touched[:0], b.p.K1, b.p.B
	order, qtf := queryTerms(query)
	for _, t := range order {
		p := b.post[t]
		if p == nil {
			continue
		}
		w := float64(qtf[t]) * b.idf(p.df)
		for i, s := range p.slots {
			d := &b.docs[s]
			if d.id == "" {
				continue
			}
			tf := float64(p.tfs[i])
			norm := k1 * (1 - bb + bb*float64(d.len)/avgdl)
			if scores[s] == 0 {
				touched = append(touched, s)
			}
			scores[s] += w * tf / (tf + norm)
		}
	}
	sc.touched = touched
	return b.collect(sc, k, allow)
}

// begin read-locks b and returns a scratch with room for every document and
// the average document length, for a search of k results over n query
// terms; nil (and no lock) when there is nothing to search. end undoes it.
// The scores stay in the caller's locals: sharing them through a closure or
// an accumulator struct made Search about 20-30% slower on SciFact
// (BenchmarkBM25SciFact).
func (b *BM25) begin(k, n int) (*bm25Scratch, float64) {
	if k <= 0 || n == 0 {
		return nil, 0
	}
	b.mu.RLock()
	if b.live == 0 {
		b.mu.RUnlock()
		return nil, 0
	}
	sc, _ := b.scratch.Get().(*bm25Scratch)
	if sc == nil {
		sc = &bm25Scratch{}
	}
	if len(sc.scores) < len(b.docs) {
		sc.scores = make([]float64, len(b.docs)+len(b.docs)/4)
	}
	avgdl := float64(b.total) / float64(b.live)
	if avgdl == 0 {
		avgdl = 1
	}
	return sc, avgdl
}

// end puts sc back and releases the read lock begin took.
func (b *BM25) end(sc *bm25Scratch) {
	b.scratch.Put(sc)
	b.mu.RUnlock()
}

// collect returns the k best of the scratch's touched documents that allow
// lets through, best first, and clears their scores. The caller holds b.mu.
func (b *BM25) collect(sc *bm25Scratch, k int, allow func(id string) bool) []Hit {
	top := newTopK(k)
	for _, s := range sc.touched {
		x := sc.scores[s]
		sc.scores[s] = 0
		if top.full() && x < top.worst() {
			continue
		}
		d := &b.docs[s]
		if allow != nil && !allow(d.id) {
			continue
		}
		top.pushKey(Hit{ID: d.id, Score: x}, d.key)
	}
	return top.sorted()
}

// A Clause is one query term scored over several fields of the documents,
// BM25F-style (Robertson, Zaragoza and Taylor, 2004): the fields are indexed
// together as distinct terms (a field's terms carrying a prefix, say), and
// each Form is one way the term occurs. The term's pseudo frequency in a
// document is Σ Weight·tf over its Forms, and it scores
//
//	Count·IDF·ptf / (ptf + K1·(1 − B + B·|d|/avgdl))
//
// like one BM25 term: never more than Count·IDF however many fields hold
// it, so a query's scores stay below Σ Count·IDF over its clauses.
type Clause struct {
	// Count is the term's frequency in the query; 0 counts as 1.
	Count int
	// IDF is the term's weight, given by the caller (MaxScore of the term,
	// say), so every form counts with the same information.
	IDF   float64
	Forms []Form
}

// A Form is one occurrence pattern of a Clause's term: a document holds it
// as often as the least frequent of Terms (all of them must occur; one
// term is a plain occurrence), counted Weight times.
type Form struct {
	Terms  []string
	Weight float64
}

// SearchClauses is Search for a query of Clauses: the k best documents with
// their scores, best first; only documents holding a form of some clause
// are returned, and allow, when not nil, filters them by id.
//
// The pseudo frequencies are summed in slices indexed by slot, not maps: a
// term that most documents hold (a knowledge base about one subject names
// it everywhere) made the maps' hashing most of a search.
func (b *BM25) SearchClauses(query []Clause, k int, allow func(id string) bool) []Hit {
	sc, avgdl := b.begin(k, len(query))
	if sc == nil {
		return nil
	}
	defer b.end(sc)
	if len(sc.ptf) < len(sc.scores) {
		n := len(sc.scores)
		sc.ptf, sc.found, sc.least = make([]float64, n), make([]int32, n), make([]int32, n)
	}
	scores, touched, k1, bb := sc.scores, sc.touched[:0], b.p.K1, b.p.B
	ptf, ptouched := sc.ptf, sc.ptouched[:0]
	for _, c := range query {
		n := max(c.Count, 1)
		w := float64(n) * c.IDF
		if !(w > 0) {
			continue
		}
		for _, f := range c.Forms {
			if f.Weight > 0 {
				b.formTF(sc, f.Terms, func(s int32, tf int32) {
					if ptf[s] == 0 {
						ptouched = append(ptouched, s)
					}
					ptf[s] += f.Weight * float64(tf)
				})
			}
		}
		for _, s := range ptouched {
			x := ptf[s]
			ptf[s] = 0
			norm := k1 * (1 - bb + bb*float64(b.docs[s].len)/avgdl)
			if scores[s] == 0 {
				touched = append(touched, s)
			}
			scores[s] += w * x / (x + norm)
		}
		ptouched = ptouched[:0]
	}
	sc.touched, sc.ptouched = touched, ptouched
	return b.collect(sc, k, allow)
}

// formTF calls fn for every live document holding all of terms with the
// smallest of their frequencies in it, in the order of the first term's
// postings. The caller holds b.mu; sc's found is all zero, and is again
// when formTF returns.
func (b *BM25) formTF(sc *bm25Scratch, terms []string, fn func(slot, tf int32)) {
	if len(terms) == 0 {
		return
	}
	first := b.post[terms[0]]
	if first == nil {
		return
	}
	if len(terms) == 1 {
		for i, s := range first.slots {
			if b.docs[s].id != "" {
				fn(s, first.tfs[i])
			}
		}
		return
	}
	var buf [8]*posting
	rest := buf[:0]
	for _, t := range terms[1:] {
		p := b.post[t]
		if p == nil {
			return
		}
		rest = append(rest, p)
	}
	// found[s] counts the terms found in document s so far (a document
	// is in a posting list once), least[s] holds their least frequency.
	found, least := sc.found, sc.least
	for i, s := range first.slots {
		if b.docs[s].id != "" {
			found[s], least[s] = 1, first.tfs[i]
		}
	}
	for j, p := range rest {
		for i, s := range p.slots {
			if found[s] == int32(j+1) {
				found[s] = int32(j + 2)
				least[s] = min(least[s], p.tfs[i])
			}
		}
	}
	all := int32(len(terms))
	for _, s := range first.slots {
		if found[s] == all {
			fn(s, least[s])
		}
		found[s] = 0
	}
}

const bm25Magic = "mixchat-bm25\x00v1"

// WriteTo serialises the index (parameters and every document's term
// frequencies). ReadBM25 restores it.
func (b *BM25) WriteTo(w io.Writer) (int64, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	e := newEncoder(w, bm25Magic)
	e.f64(b.p.K1)
	e.f64(b.p.B)
	e.uvarint(uint64(b.live))
	// Each document's record is put together in rec and written at once:
	// a snapshot holds some hundreds of terms a document, and a write
	// each cost more than the bytes.
	var rec []byte
	for _, d := range b.docs {
		if d.id == "" {
			continue
		}
		rec = binary.AppendUvarint(rec[:0], uint64(len(d.id)))
		rec = append(rec, d.id...)
		rec = binary.AppendUvarint(rec, uint64(len(d.terms)))
		for i, t := range d.terms {
			rec = binary.AppendUvarint(rec, uint64(len(t)))
			rec = append(rec, t...)
			rec = binary.AppendUvarint(rec, uint64(d.tfs[i]))
		}
		e.bytes(rec)
	}
	return e.flush("write bm25")
}

// ReadBM25 reads an index written by (*BM25).WriteTo.
func ReadBM25(r io.Reader) (*BM25, error) {
	d := newDecoder(r, bm25Magic)
	p := BM25Params{K1: d.f64(), B: d.f64()}
	n := d.count(1 << 32)
	b := NewBM25(p)
	b.p = p
	for i := 0; i < n && d.err == nil; i++ {
		doc := bm25Doc{id: d.str()}
		m := d.count(1 << 24)
		doc.terms = make([]string, 0, m)
		doc.tfs = make([]int32, 0, m)
		for j := 0; j < m && d.err == nil; j++ {
			doc.terms = append(doc.terms, d.str())
			tf := d.count(1 << 31)
			doc.tfs = append(doc.tfs, int32(tf))
			doc.len += int32(tf)
		}
		if d.err == nil {
			if _, dup := b.slot[doc.id]; dup || doc.id == "" {
				d.fail(fmt.Errorf("%w: duplicate or empty document id %q", ErrFormat, doc.id))
				break
			}
			b.addLocked(doc)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("read bm25: %w", d.err)
	}
	return b, nil
}
