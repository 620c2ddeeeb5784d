package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/viterin/vek/vek32"

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
type turnIndex struct {
	mu   sync.RWMutex
	bm25 *retrieve.BM25
	// vecs holds the unit vector of docs[i] at [i*dim, (i+1)*dim) (zero
	// until embedded; embedded counts those that are), scored against a
	// question in place: what a flat vector index and a fusion of hit
	// lists would compute, without their maps and sorts of every message.
	dim      int
	vecs     []float32
	embedded []bool
	nvecs    int
	embedder llm.Embedder
	docs     []indexDoc
	pos      map[string]int // doc id → position in docs
	pending  []int          // docs not embedded yet
	speakers map[string]bool
	gap      time.Duration
	session  int
	count    func(string) int
	// sessions indexes each session as one document (the term counts of
	// its messages in sessionTF), for the session prior.
	sessions  *retrieve.BM25
	sessionTF []map[string]int

	// last is the latest ranking, returned again for the same question
	// over the same messages (Search then Recall rank the same question).
	lastMu sync.Mutex
	last   *rankCache
}

// rankCache is a ranking and what it was computed from.
type rankCache struct {
	question         string
	vectorWeight, nb float64
	loc              *time.Location
	docs             int
	vectors          bool // every document was embedded
	out              []ranked
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

// indexDoc is one indexed message.
type indexDoc struct {
	id      string
	turn    int64
	line    line
	at      time.Time
	session int
	tokens  int      // of line.String() plus a line break
	timed   bool     // the message has time words (hasTimeWords)
	counts  bool     // the message has a number (numberWord)
	names   []string // properNouns of the message
	asks    bool     // the message asks something (has a question mark)
}

func newTurnIndex(e llm.Embedder, dim int, gap time.Duration, count func(string) int) *turnIndex {
	return &turnIndex{
		count:    count,
		bm25:     retrieve.NewBM25(retrieve.BM25Params{}),
		sessions: retrieve.NewBM25(retrieve.BM25Params{}),
		dim:      dim,
		embedder: e,
		pos:      map[string]int{},
		speakers: map[string]bool{},
		gap:      gap,
	}
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
	first := x.session // the sessions this call adds to are indexed once, at the end
	defer func() { x.indexSessions(first) }()
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
			d := indexDoc{id: id, turn: t.ID, line: line{turn: t.ID, role: m.Role, speaker: speakerOf(m), text: c}, at: at, session: x.session}
			d.tokens = x.count(d.line.String()) + 1
			d.timed = hasTimeWords(c)
			d.counts = numberWord.MatchString(c)
			d.names = properNouns(c)
			d.asks = strings.ContainsAny(c, "?？")
			if d.line.speaker != "" {
				x.speakers[d.line.speaker] = true
			}
			x.pos[id] = len(x.docs)
			x.pending = append(x.pending, len(x.docs))
			x.docs = append(x.docs, d)
			x.vecs = append(x.vecs, make([]float32, x.dim)...)
			x.embedded = append(x.embedded, false)
			terms := docTerms(c)
			x.bm25.Add(id, withPairs(terms))
			x.addToSession(terms)
		}
	}
}

// addToSession adds the terms of a message to the term counts of the
// current session.
func (x *turnIndex) addToSession(terms []string) {
	for len(x.sessionTF) <= x.session {
		x.sessionTF = append(x.sessionTF, map[string]int{})
	}
	tf := x.sessionTF[x.session]
	for _, t := range terms {
		tf[t]++
	}
}

// indexSessions indexes (again) the documents of sessions first to the
// current one under their numbers.
func (x *turnIndex) indexSessions(first int) {
	for i := first; i < len(x.sessionTF); i++ {
		x.sessions.AddCounts(strconv.Itoa(i), x.sessionTF[i]) // replaces the session's previous document
	}
}

// sessionRelevance returns, by session, its BM25 score for the query terms
// qt as one document, divided by the best session's.
func (x *turnIndex) sessionRelevance(qt []string) []float64 {
	out := make([]float64, x.session+1)
	hits := x.sessions.Search(qt, len(out), nil)
	if len(hits) == 0 || hits[0].Score <= 0 {
		return out
	}
	for _, h := range hits {
		if i, err := strconv.Atoi(h.ID); err == nil && i < len(out) {
			out[i] = h.Score / hits[0].Score
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
	for i, p := range x.pending {
		if i < len(vecs) {
			if len(vecs[i]) != x.dim {
				return fmt.Errorf("embed message %s: dimension %d, want %d", x.docs[p].id, len(vecs[i]), x.dim)
			}
			v := x.vecs[p*x.dim : (p+1)*x.dim]
			copy(v, vecs[i])
			retrieve.Normalize(v)
			if !x.embedded[p] {
				x.embedded[p] = true
				x.nvecs++
			}
		}
	}
	x.pending = x.pending[:0]
	return nil
}

// baseScores returns each message's relevance to the query terms lexical
// (BM25) and the question's vector qvec (nil: none), fused as
// retrieve.Hybrid fuses the two complete lists with weight vectorWeight
// (the vector list's share), and scaled up when there is no vector list
// as rank undoes Hybrid's weighting of a missing one.
func (x *turnIndex) baseScores(lexical []string, qvec []float32, vectorWeight float64) []float64 {
	n := len(x.docs)
	w := min(max(vectorWeight, 1e-9), 1)
	base := make([]float64, n)
	lex := x.bm25.Search(lexical, n, nil)
	norm := 0.0
	for _, h := range lex {
		norm = math.Max(norm, h.Score)
	}
	for _, h := range lex {
		if p, ok := x.pos[h.ID]; ok && norm > 0 && h.Score > 0 {
			base[p] = math.Min(h.Score/norm, 1)
		}
	}
	vectors := qvec != nil && x.dim > 0 && len(qvec) == x.dim && x.nvecs > 0
	var u []float32
	if vectors {
		u = slices.Clone(qvec)
		retrieve.Normalize(u)
	}
	for i := range base {
		var v float64
		if vectors && x.embedded[i] {
			v = retrieve.CosineToRelevance(float64(vek32.Dot(u, x.vecs[i*x.dim:(i+1)*x.dim])))
		}
		s := math.Min(math.Max((1-w)*base[i]+w*v, 0), 1)
		if !vectors {
			s /= 1 - w
		}
		base[i] = s
	}
	return base
}

// ranked is one message with its retrieval score.
type ranked struct {
	doc   *indexDoc // shared, read-only
	score float64
}

// search ranks every message against question, best first (messages
// sharing nothing with the question come last, most recent first). now is
// the time of the latest message, for relative dates.
//
// The result is shared and read-only: the same question over the same
// messages returns it again.
func (x *turnIndex) search(ctx context.Context, question string, vectorWeight, neighbor float64, loc *time.Location) []ranked {
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
	out, complete := x.rank(ctx, question, vectorWeight, neighbor, loc)
	if complete && embedded {
		x.lastMu.Lock()
		x.last = &rankCache{question: question, vectorWeight: vectorWeight, nb: neighbor, loc: loc, docs: len(out), vectors: embedded, out: out}
		x.lastMu.Unlock()
	}
	return out
}

// rank is search without the cache. complete is false when the question
// could not be embedded and the ranking is lexical only.
func (x *turnIndex) rank(ctx context.Context, question string, vectorWeight, neighbor float64, loc *time.Location) (_ []ranked, complete bool) {
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
		return nil, complete
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
	base := x.baseScores(withPairs(qt), qvec, vectorWeight)

	final := make([]float64, n)
	sessRel := x.sessionRelevance(qt)
	sessBest := make([]float64, x.session+1)
	for i, d := range x.docs {
		sessBest[d.session] = max(sessBest[d.session], base[i])
	}
	same := func(i, j int) bool { return j >= 0 && j < n && x.docs[j].session == x.docs[i].session }
	for i := range x.docs {
		s := base[i]
		if neighbor > 0 {
			if same(i, i-1) {
				w := neighbor
				if x.docs[i-1].asks {
					w = replyWeight
				}
				s += w * base[i-1]
			}
			if same(i, i+1) {
				s += neighbor / 2 * base[i+1]
			}
			for _, j := range []int{i - 2, i + 2} {
				if same(i, j) {
					s += neighbor / 4 * base[j]
				}
			}
			s += sessionWeight * sessBest[x.docs[i].session]
			s += sessionTextWeight * sessRel[x.docs[i].session] * (0.5 + base[i])
		}
		final[i] = s
	}

	var boostSpeaker string
	var boostUser bool
	if len(named) == 1 {
		for sp := range named {
			boostSpeaker = sp
		}
	} else if len(named) == 0 && firstPerson(question) {
		boostUser = true
	}
	span, dated := questionDates(question, x.docs[n-1].at, loc)
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
	for i, d := range x.docs {
		if (boostSpeaker != "" && d.line.speaker == boostSpeaker) || (boostUser && d.line.speaker == "" && d.line.role == llm.RoleUser) {
			final[i] *= 1 + speakerBoost
		}
		if dated && !d.at.Before(span.From) && d.at.Before(span.To.Add(dateAfter)) {
			final[i] *= 1 + dateBoost
		}
		if when && d.timed {
			final[i] *= 1 + timeWordsBoost
		}
		if asksName && hasName(&x.docs[i]) {
			final[i] *= 1 + nameBoost
		}
		if asksCount && d.counts {
			final[i] *= 1 + countBoost
		}
	}

	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	// Best first, later first among equals: a total order, so the
	// unstable sort gives the one result.
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(final[b], final[a]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	out := make([]ranked, n)
	for i, p := range order {
		out[i] = ranked{doc: &x.docs[p], score: final[p]}
	}
	return out, complete
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
	v := m.snapshot(cs, true)
	cs.mu.Unlock()
	rs := v.index.search(ctx, question, m.cfg.Retrieval.VectorWeight, m.cfg.Retrieval.NeighborWeight, m.loc)
	out := make([]Hit, 0, min(k, len(rs)))
	for _, r := range rs {
		if len(out) == k {
			break
		}
		d := r.doc
		out = append(out, Hit{TurnID: d.turn, Role: d.line.role, Speaker: d.line.speaker, Content: d.line.text,
			Timestamp: d.at.UnixMilli(), Score: r.score})
	}
	return out, nil
}
