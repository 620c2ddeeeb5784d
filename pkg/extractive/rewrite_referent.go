package extractive

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/text"
)

// The offline follow-up rewrite: a pronoun, a demonstrative ("that one",
// "the place", "这个", a demonstrative and a profile's classifier) or an
// ellipsis is replaced by the most salient entity of the recent turns, so
// the question stands alone; "the X", where the documents say a thing
// named in the conversation is an X, by the last such thing named.

// Vocabulary tells the rewrite which names the knowledge bases know (file
// titles, section headings, frequent proper nouns): such names are
// preferred as referents, and in Chinese, which has no word boundaries,
// they are how most names are found at all.
type Vocabulary interface {
	// NamesIn returns the known names that occur in s (any order; none is
	// fine).
	NamesIn(s string) []string
}

// NameList is a Vocabulary over a fixed list of names (matched as whole
// words in Latin script, as substrings in Chinese).
type NameList []string

// NamesIn returns the names of l that occur in s.
func (l NameList) NamesIn(s string) []string {
	var out []string
	for _, n := range l {
		if n != "" && text.ContainsWord(s, n) {
			out = append(out, n)
		}
	}
	return out
}

// RewriteFollowUp is the offline rewrite of f.Question: its first pronoun
// or demonstrative ("it", "his", "that one", "它", "其", "这家") is
// replaced by the most salient entity — the topic, or the name
// the recent turns (of either speaker) mention most and last, known names
// of vocab (may be nil) first; a partial name ("Yoko") is completed; an
// elliptical question gets the entity ("What happened in 1998?" → "What
// happened in 1998 of Sheryl Crow?"); "what else" questions say what they
// go beyond. The question is returned unchanged when no entity is found.
func RewriteFollowUp(f memory.FollowUp, vocab Vocabulary) string {
	f = validFollowUp(f)
	q := strings.TrimSpace(f.Question)
	if q == "" {
		return q
	}
	return newRWState(vocab).rewrite(f, q)
}

// rewrite is RewriteFollowUp of the valid, trimmed, non-empty q.
func (st *rwState) rewrite(f memory.FollowUp, q string) string {
	if out, ok := st.followStructure(f, q); ok {
		return out
	}
	if text.MostlyCJK(q) {
		return st.rewriteZH(f, q)
	}
	return endQuestionEN(st.rewriteEN(f, q))
}

// endQuestionEN ends with a question mark an English question that starts
// with a question word or an auxiliary verb and ends with no mark ("did
// John Wayne do any TV" → "did John Wayne do any TV?"): the rewrite gives
// a question that stands on its own, written as one.
func endQuestionEN(q string) string {
	t := strings.TrimRight(q, " ")
	if r, _ := utf8.DecodeLastRuneInString(t); t == "" || unicode.IsPunct(r) || unicode.IsSymbol(r) {
		return q
	}
	ws := text.Words(strings.ToLower(t))
	if len(ws) < 2 || !questionWords[ws[0]] {
		return q
	}
	return t + "?"
}

// salience scores candidate referents.
type salience struct {
	score map[string]float64
	first map[string]int // order of first sight, for stable ties
}

func (s *salience) add(name string, w float64) {
	name = strings.TrimSpace(name)
	if name == "" {
		return
	}
	if _, ok := s.first[name]; !ok {
		s.first[name] = len(s.first)
	}
	s.score[name] += w
}

func (s *salience) best() string {
	best, bs := "", 0.0
	for n, v := range s.score {
		if v > bs || v == bs && best != "" && s.first[n] < s.first[best] {
			best, bs = n, v
		}
	}
	return best
}

// How far back a referent is sought, in messages: a name of any kind
// within nameReach; a thing of the documents, when none is named nearer,
// within thingReach (a place the assistant named before three turns of
// booking it is still the one "the room" is in).
const nameReach, thingReach = 6, 8

// thingDecay is how fast a thing of the documents named in an earlier
// message loses weight, message by message.
const thingDecay = 1.5

// Weights of salience: a topic name outweighs a name mentioned once or
// twice in passing; a name the knowledge bases know counts double; the
// latest message counts most.
const (
	topicWeight = 3.0
	knownFactor = 2.0
	// lastAskedFactor weighs the names of the latest user message when it
	// asks what something is (Chinese).
	lastAskedFactor = 2.0
)

// recentMessages returns the user and assistant messages of history, the
// latest first, at most n.
func recentMessages(history []llm.Message, n int) []llm.Message {
	var out []llm.Message
	for i := len(history) - 1; i >= 0 && len(out) < n; i-- {
		h := history[i]
		if (h.Role == llm.RoleUser || h.Role == llm.RoleAssistant) && strings.TrimSpace(h.Content) != "" {
			out = append(out, h)
		}
	}
	return out
}

// referentEN finds the most salient entity of f in English. Things the
// documents name (Documents.Named) count as known names, as the documents
// write them, however the conversation writes them ("allenbell").
func (st *rwState) referentEN(f memory.FollowUp) string {
	vocab := st.vocab
	s := &salience{score: map[string]float64{}, first: map[string]int{}}
	topics := map[string]bool{}
	for i, t := range f.Topic {
		t = cleanTopic(t)
		if t == "" || text.MostlyCJK(t) != text.MostlyCJK(f.Question) {
			continue
		}
		topics[t] = true
		s.add(t, topicWeight/float64(i+1))
	}
	known := map[string]bool{}
	display := map[string]string{} // a thing's name → how to write it
	for i, h := range recentMessages(f.History, thingReach) {
		w := 1 / (1 + 0.5*float64(i))
		seen := map[string]bool{}
		var written []string // how the things named are written here
		if i >= nameReach && (st.docs == nil || len(display) > 0) {
			break
		}
		far := i >= nameReach // only a thing of the documents counts
		if st.docs != nil {
			for _, n := range st.docs.Named(h.Content) {
				written = append(written, strings.ToLower(n.As))
				known[n.Name] = true
				if _, ok := display[n.Name]; !ok {
					display[n.Name] = displayName(n)
				}
				if !seen[n.Name] {
					seen[n.Name] = true
					// The thing the latest turns name outweighs one
					// named more often before ("not Golden Wok, anything
					// else?" "The Nirala is …").
					s.add(n.Name, knownFactor/(1+thingDecay*float64(i)))
				}
			}
		}
		if vocab != nil && !far {
			for _, n := range vocab.NamesIn(h.Content) {
				if coveredBy(n, written) {
					continue
				}
				if !hasUpper(n) && !strings.Contains(n, " ") {
					// "outdoor dining space" does not name the knowledge
					// base "dining"; "golden wok" in lower-cased text is
					// still the place.
					continue
				}
				known[n] = true
				if !seen[n] {
					seen[n] = true
					s.add(n, knownFactor*w)
				}
			}
		}
		for _, sent := range text.Sentences(h.Content) {
			if far {
				break
			}
			for _, n := range names(sent, known) {
				if seen[n] || coveredBy(n, written) || notNames[n] || !known[n] && strings.ContainsAny(n, "0123456789") || n == "AM" || n == "PM" {
					continue
				}
				seen[n] = true
				// A name that is part of a topic name counts for the topic.
				if t := topicWith(s, f.Topic, n); t != "" {
					s.add(t, w)
					continue
				}
				s.add(n, w)
			}
		}
	}
	s.preferLonger(known)
	if len(display) > 0 {
		// Turns naming things of the documents speak of them: a
		// capitalised word of an answer ("Reference number …",
		// "British food") stands for none of them.
		for n := range s.score {
			if _, thing := display[n]; !thing && !topics[n] {
				delete(s.score, n)
			}
		}
	}
	best := s.best()
	if d, ok := display[best]; ok {
		return d
	}
	return best
}

// displayName is how a rewrite writes a thing named: as the conversation
// wrote it when that is the whole name with a capital ("Gonville Museum"),
// else as its document does, in title case when the document writes it in
// capitals ("allenbell" and "Efes" → "Allenbell", "Efes Bakery").
func displayName(n Named) string {
	if hasUpper(n.As) && strings.Join(nameWords(n.As), "") == strings.Join(nameWords(n.Name), "") {
		if strings.HasPrefix(strings.ToLower(n.Name), "the ") && !strings.HasPrefix(strings.ToLower(n.As), "the ") {
			return "The " + n.As // "The Nirala"
		}
		return n.As
	}
	if strings.IndexFunc(n.Name, unicode.IsLower) < 0 && !text.MostlyCJK(n.Name) {
		ws := strings.Fields(strings.ToLower(n.Name))
		for i, w := range ws {
			ws[i] = titleCase(w)
		}
		return strings.Join(ws, " ")
	}
	return n.Name
}

// coveredBy reports whether the name n is written within one of written
// (lower case): "the Allenbell" within "allenbell" is that thing.
func coveredBy(n string, written []string) bool {
	ln := strings.ToLower(n)
	ln = strings.TrimPrefix(ln, "the ")
	for _, w := range written {
		if strings.Contains(w, ln) || strings.Contains(ln, w) {
			return true
		}
	}
	return false
}

// hasUpper reports whether s has an upper-case letter.
func hasUpper(s string) bool { return strings.IndexFunc(s, unicode.IsUpper) >= 0 }

// preferLonger credits a name to the longer known name it is part of
// ("Margherita" to "La Margherita", a heading of the knowledge base), which
// then stands for both. (Longer names found only by capitalisation are not
// preferred: on CANARD that cost 0.2 BLEU, the short name being the one
// people use.)
func (s *salience) preferLonger(known map[string]bool) {
	for a, sa := range s.score {
		for b := range s.score {
			if a != b && known[b] && len(b) > len(a) && text.ContainsWord(b, a) {
				s.score[b] += sa
				delete(s.score, a)
				break
			}
		}
	}
}

// topicWith returns the topic name containing the name n as words, or "".
func topicWith(s *salience, topic []string, n string) string {
	for _, t := range topic {
		t = cleanTopic(t)
		if t != "" && t != n && text.ContainsWord(t, n) {
			return t
		}
	}
	return ""
}

// cleanTopic drops a title's parenthesised qualifier ("Jack Thompson
// (activist)") and surrounding space.
func cleanTopic(t string) string {
	return strings.TrimSpace(parenthesised.ReplaceAllString(t, ""))
}

var parenthesised = regexp.MustCompile(`\s*[(（][^()（）]*[)）]`)

// English pronouns, by how they are replaced.
var (
	enSubject    = map[string]bool{"he": true, "she": true, "they": true, "him": true, "them": true, "it": true}
	enPossessive = map[string]bool{"his": true, "its": true, "their": true}
	// Words after "her" that make it an object, not a possessive.
	herObject = map[string]bool{"to": true, "in": true, "on": true, "at": true, "for": true, "with": true, "and": true,
		"from": true, "about": true, "as": true, "after": true, "before": true, "by": true, "into": true, "over": true}
	// Demonstrative phrases standing for an entity whatever it is ("the
	// museum" stands for one when a document says what is one:
	// kindReferent).
	enDemonstrative = regexp.MustCompile(`(?i)\b(?:that|this|the) (?:one|place)\b`)
	// "there" as a place: not "is there", "there is".
	enThere = regexp.MustCompile(`(?i)\b(get|go|going|getting|from|stay|staying|eat|eating|park|parking|arrive) there\b`)
	// "there" closing a question ("How much is a pizza there?"), unless it
	// follows a form of "be" ("Is there?", "What is there?").
	enThereEnd = regexp.MustCompile(`(?i)\s+there\s*([?.!]*)\s*$`)
	// "there" after a thing had or booked there ("a table there for 2",
	// "the parking there").
	enThereObject = regexp.MustCompile(`(?i)\b(?:a|an|the|any|some|your|their)\s+\pL+\s+(there)\b`)
	// "that" standing for a thing: after a form of "be" or a verb of
	// booking, before the question's end or a preposition ("What area is
	// that in?", "Is that in the centre?", "please book that.").
	enThat    = regexp.MustCompile(`(?i)\b(?:is|was|book|reserve|try|recommend|choose|take)\s+(that)(?:\s*[?.!]|\s*$|\s+(?:in|on|at|near|for|open|expensive|cheap|available|close|far|one)\b)`)
	enBeThere = regexp.MustCompile(`(?i)\b(?:is|are|was|were|be|been)\s$`)
	// A question asking for more than was said.
	enMore   = regexp.MustCompile(`(?i)\b(else|other|another|more)\b`)
	enTokens = regexp.MustCompile(`[\p{L}\p{N}]+(?:['’][\p{L}]+)?|\s+|.`)
)

func (st *rwState) rewriteEN(f memory.FollowUp, q string) string {
	if out, ok := st.swapEllipsisEN(f, q); ok {
		return out
	}
	if out, ok := st.severalReferent(f, q); ok {
		return out
	}
	if out, ok := st.kindReferent(f, q); ok {
		return out
	}
	ent := st.referentEN(f)
	if ent == "" {
		return q
	}
	out, done := q, text.ContainsWord(q, ent) // a question naming the entity keeps its pronouns
	if !done {
		out, done = replacePronounEN(q, ent)
	}
	if !done {
		if loc := enDemonstrative.FindStringIndex(out); loc != nil {
			out, done = out[:loc[0]]+ent+out[loc[1]:], true
		} else if m := enThere.FindStringSubmatchIndex(out); m != nil {
			verb := out[m[2]:m[3]]
			prep := " at "
			switch strings.ToLower(verb) {
			case "get", "go", "going", "getting", "arrive":
				prep = " to "
			case "from":
				prep = " "
			}
			out, done = out[:m[3]]+prep+ent+out[m[1]:], true
		} else if m := enThereEnd.FindStringSubmatchIndex(out); m != nil && !enBeThere.MatchString(out[:m[0]+1]) {
			// "How much is a pizza there?" → "… at Golden Wok?"
			out, done = out[:m[0]]+" at "+ent+out[m[1]-len(out[m[2]:m[3]]):], true
		} else if m := enThereObject.FindStringSubmatchIndex(out); m != nil {
			// "Can you book a table there for 2?" → "… a table at X for 2?"
			out, done = out[:m[2]]+"at "+ent+out[m[3]:], true
		} else if m := enThat.FindStringSubmatchIndex(out); m != nil {
			// "What area is that in?", "Yes please book that."
			out, done = out[:m[2]]+ent+out[m[3]:], true
		}
	}
	if !done {
		out, done = saidKind(f, out, ent)
	}
	if !done && st.docs != nil {
		out, done = completeThing(out, ent)
	}
	if !done {
		out, done = completeName(out, ent)
	}
	if !done && !sharesWord(out, ent) {
		out = placeEntity(out, ent)
	}
	if asksBeyond(q) {
		if prev := besidesPhrase(f.History, q, ent, f.Topic); prev != "" {
			out = "Besides " + prev + ", " + lowerFirst(out)
		}
	}
	return out
}

// replacePronounEN replaces q's first third-person pronoun by ent (ent's
// possessive for his/its/their and a possessive her).
func replacePronounEN(q, ent string) (string, bool) {
	toks := enTokens.FindAllString(q, -1)
	for i, t := range toks {
		lt := strings.ToLower(t)
		rep := ""
		switch {
		case enSubject[lt]:
			rep = ent
		case enPossessive[lt]:
			rep = possessiveOf(ent)
		case lt == "her":
			next := ""
			for _, n := range toks[i+1:] {
				if strings.TrimSpace(n) != "" {
					next = strings.ToLower(n)
					break
				}
			}
			if next == "" || !text.IsWordRune(firstRune(next)) || herObject[next] {
				rep = ent
			} else {
				rep = possessiveOf(ent)
			}
		default:
			continue
		}
		toks[i] = rep
		return strings.Join(toks, ""), true
	}
	return q, false
}

func possessiveOf(name string) string {
	if strings.HasSuffix(name, "s") {
		return name + "'"
	}
	return name + "'s"
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// completeName replaces a capitalised word of q that is part of the
// multi-word name ent ("Yoko", "Love's") by the whole name.
func completeName(q, ent string) (string, bool) {
	if text.ContainsWord(q, ent) {
		return q, false
	}
	parts := strings.Fields(ent)
	if len(parts) < 2 {
		return q, false
	}
	toks := enTokens.FindAllString(q, -1)
	for i, t := range toks {
		base, suffix := t, ""
		if k := strings.IndexAny(t, "'’"); k > 0 {
			base, suffix = t[:k], t[k:]
		}
		if utf8.RuneCountInString(base) < 3 || !startsUpper(base) || notNames[base] {
			continue
		}
		for _, p := range parts {
			if p == base {
				toks[i] = ent + suffix
				return strings.Join(toks, ""), true
			}
		}
	}
	return q, false
}

// completeThing replaces the longest run of q's words that is a run of
// the name ent's words, whatever their case ("Pizza hut" of "PIZZA HUT FEN
// DITTON"), by ent: a run of two words or more, or one capitalised word,
// with a word of four letters or more that joins nothing.
func completeThing(q, ent string) (string, bool) {
	ews := nameWords(ent)
	qws := spanWords(q)
	bi, bj := -1, -1
	for i := range qws {
		for j := i; j < len(qws); j++ {
			run := make([]string, 0, j-i+1)
			for _, w := range qws[i : j+1] {
				run = append(run, strings.ToLower(w.s))
			}
			if !containsRun(ews, run) {
				break
			}
			if len(run) == 1 && !startsUpper(qws[i].s) {
				continue
			}
			if !slices.ContainsFunc(run, func(w string) bool { return utf8.RuneCountInString(w) >= 4 && !nameJoiners[w] }) {
				continue
			}
			if bi < 0 || j-i > bj-bi {
				bi, bj = i, j
			}
		}
	}
	if bi < 0 {
		return q, false
	}
	start, end := qws[bi].start, qws[bj].end
	if start >= 4 && strings.EqualFold(q[start-4:start], "the ") {
		start -= 4
	}
	return q[:start] + ent + q[end:], true
}

// sharesWord reports whether q has a word of name (of three letters or
// more).
func sharesWord(q, name string) bool {
	for _, w := range text.Words(name) {
		if utf8.RuneCountInString(w) >= 3 && !nameGlue[strings.ToLower(w)] && text.ContainsWord(q, w) {
			return true
		}
	}
	return false
}

// nameGlue are the words of a name that do not name it ("The Lucky Star"
// is not in "What is the address?").
var nameGlue = map[string]bool{"the": true, "and": true, "for": true, "with": true, "from": true}

// appendEntity adds "of ent" ("about ent" after "interesting", "else"…)
// before q's closing punctuation.
func appendEntity(q, ent string) string {
	body := strings.TrimRightFunc(q, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	end := strings.TrimSpace(q[len(body):])
	if end == "" {
		end = "?"
	}
	prep := " of "
	if ws := strings.Fields(body); len(ws) > 0 && aboutAfter[strings.ToLower(ws[len(ws)-1])] {
		prep = " about "
	}
	return body + prep + ent + end
}

// aboutAfter are last words after which the entity follows "about"
// ("anything else interesting about MC Hammer?").
var aboutAfter = map[string]bool{"interesting": true, "important": true, "notable": true, "significant": true, "else": true,
	"know": true, "learn": true}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	ws := strings.Fields(s)
	// Keep "I" and names ("Did Zappa ...": only the first word of a
	// question is lowered, unless it is a name).
	if len(ws) > 0 && (ws[0] == "I" || !notNames[ws[0]] && startsUpper(ws[0]) && !questionWords[strings.ToLower(ws[0])]) {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}

var questionWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`what when where who whom whose why how which is are was were do does did can could will would should has have had any anything tell`) {
		questionWords[w] = true
	}
}

// refusalMarks are how an answer says it has nothing.
var refusalMarks = []string{"i don't know", "i do not know", "no information", "not found", "cannot answer", "can't answer",
	"不知道", "没有找到", "无法回答", "没有相关"}

// isRefusal reports whether s says it does not know.
func isRefusal(s string) bool {
	ls := strings.ToLower(s)
	for _, m := range refusalMarks {
		if strings.Contains(ls, m) {
			return true
		}
	}
	return false
}
