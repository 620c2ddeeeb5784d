package extractive

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// What a follow-up asking for more ("what else", "any other") goes beyond:
// "Did he have other early works?" after an answer naming HPSCHD becomes
// "Besides HPSCHD, did John Cage have other early works?". The phrase is a
// clean clause of the last answer (a phrase, a statement turned into one:
// "Karzai having one sister", else "the fact that …"), else a name of it (a quoted title, a run of capitalised
// words) that is not the conversation's own entity, else a date, else
// nothing: never a fragment starting with punctuation or a preposition,
// nor one ending in a colon, an open quote or a dangling word.

// besidesPhrase returns what q goes beyond in the last answer of history,
// or "" when the last turn is not an answer, the answer and the one before
// it are refusals, or nothing in them reads well after "Besides". ent and topic are the
// conversation's own entity and topic names, which are never the phrase.
func besidesPhrase(history []llm.Message, q, ent string, topic []string) string {
	ans := lastAnswer(history)
	if ans == "" {
		return ""
	}
	own := append([]string{ent}, topic...)
	if p := cleanClause(ans, ent); p != "" {
		return p
	}
	if p := namedPhrase(ans, q, own); p != "" {
		return p
	}
	return datePhraseOf(ans, q, own)
}

// lastAnswer returns the last answer of history (the one before when the
// last is a refusal), or "" when a question follows it.
func lastAnswer(history []llm.Message) string {
	refused := false
	for i := len(history) - 1; i >= 0; i-- {
		h := history[i]
		c := strings.TrimSpace(h.Content)
		switch {
		case h.Role == llm.RoleUser && (!refused || i+1 == len(history)):
			return ""
		case h.Role != llm.RoleAssistant || c == "":
		case !isRefusal(c):
			return c
		case refused:
			return ""
		default:
			refused = true
		}
	}
	return ""
}

var (
	// A quoted title.
	quotedTitle = regexp.MustCompile(`["“]([^"“”\n]{2,80}?)["”]`)
	// A date: "the 1980s", "November 6, 2012", "June 2007", "1969".
	datePhrase = regexp.MustCompile(`\b(?:(?:January|February|March|April|May|June|July|August|September|October|November|December)(?: \d{1,2},?)? )?(?:1[5-9]|20)\d\d(?:s\b)?`)
	// Words that join capitalised words into one name ("Academy Award
	// for Best Film", "Museum of Modern Art").
	nameJoiners = map[string]bool{"of": true, "for": true, "the": true, "de": true, "von": true, "van": true, "du": true, "la": true, "del": true, "&": true}
)

// namedPhrase returns the first name of ans that the question does not
// already say and that is not one of own (the conversation's entity and
// topic): a quoted title or a run of capitalised words (a sentence's first
// word alone is no name). "" when there is none.
func namedPhrase(ans, q string, own []string) string {
	var cands []run
	for _, m := range quotedTitle.FindAllStringSubmatchIndex(ans, -1) {
		if t := strings.TrimSpace(strings.TrimRight(ans[m[2]:m[3]], " ,.;:!?")); t != "" {
			cands = append(cands, run{m[0], `"` + t + `"`})
		}
	}
	cands = append(cands, capitalRuns(ans)...)
	best := run{at: len(ans) + 1}
	for _, c := range cands {
		bare := strings.Trim(c.text, `"`)
		n := len(strings.Fields(bare))
		if c.at < best.at && n >= 1 && n <= 8 && utf8.RuneCountInString(bare) >= 2 && text.IsWordRune(firstRune(bare)) &&
			!text.ContainsWord(q, bare) && !ownName(bare, own) {
			best = c
		}
	}
	return best.text
}

// datePhraseOf returns the first date of ans the question does not say,
// as a phrase ("the 2012 elections", "what happened in June 2007"), or "".
func datePhraseOf(ans, q string, own []string) string {
	for _, loc := range datePhrase.FindAllStringIndex(ans, -1) {
		d := ans[loc[0]:loc[1]]
		if text.ContainsWord(q, d) || ownName(d, own) {
			continue
		}
		before := strings.ToLower(strings.TrimSpace(ans[:loc[0]]))
		if before != "the" && !strings.HasSuffix(before, " the") {
			return "what happened in " + d
		}
		// "the 2012 elections", else "the 1980s".
		if m := followingWord.FindStringSubmatch(ans[loc[1]:]); m != nil && !danglingEnd(m[1]) && !clauseOpeners[m[1]] {
			return "the " + d + " " + m[1]
		}
		return "what happened in the " + d
	}
	return ""
}

var followingWord = regexp.MustCompile(`^ ([a-z][a-z-]+)`)

// ownName reports whether every word of p (of three letters or more, not
// a joiner) belongs to one of own's names: "Karzai" is Hamid Karzai's.
func ownName(p string, own []string) bool {
	all := false
	for _, w := range text.Words(p) {
		if utf8.RuneCountInString(w) < 3 || nameJoiners[strings.ToLower(w)] {
			continue
		}
		in := false
		for _, o := range own {
			if text.ContainsWord(cleanTopic(o), strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
		all = true
	}
	return all
}

// run is a name found in a text, with its byte offset.
type run struct {
	at   int
	text string
}

// word is a word of a text with its byte span.
type word struct {
	s          string
	start, end int
}

// spanWords splits s into words (letters, digits, inner apostrophes and
// hyphens) with their spans.
func spanWords(s string) []word {
	var out []word
	start := -1
	for i, r := range s {
		inner := (r == '\'' || r == '’' || r == '-' || r == '.') && start >= 0
		if text.IsWordRune(r) || inner {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, trimWord(s, start, i))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, trimWord(s, start, len(s)))
	}
	return out
}

func trimWord(s string, start, end int) word {
	for end > start {
		r, n := utf8.DecodeLastRuneInString(s[start:end])
		if text.IsWordRune(r) {
			break
		}
		end -= n
	}
	// An abbreviation or an initial keeps its last dot ("U.S.", "John
	// A. Burns").
	if end < len(s) && s[end] == '.' && (strings.Contains(s[start:end], ".") || isInitial(s[start:end])) {
		end++
	}
	return word{s[start:end], start, end}
}

// capitalRuns returns the runs of capitalised words of s, joined by "of",
// "for", "the" and the like (a number may continue one: "Billboard Hot
// 100"), in order. A run that is a sentence's first
// word alone, or starts with a word that starts sentences (notNames), is
// skipped; a "the" just before a run is kept with it.
func capitalRuns(s string) []run {
	ws := spanWords(s)
	var out []run
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if !startsUpper(w.s) || notNames[w.s] || isAllDigits(w.s) {
			continue
		}
		// Capitalised words, joined by up to two joiners ("Museum of
		// Modern Art", "Footballer of the Year").
		j := i
		for {
			k := j + 1
			for k < len(ws) && k <= j+2 && nameJoiners[ws[k].s] && !gapBreaks(s[ws[k-1].end:ws[k].start]) {
				k++
			}
			if k >= len(ws) || gapBreaks(s[ws[k-1].end:ws[k].start]) || notInName[ws[k].s] ||
				!startsUpper(ws[k].s) && !(k == j+1 && isAllDigits(ws[k].s)) {
				break
			}
			j = k
		}
		initial := i == 0 || sentenceEnd(s[ws[i-1].end:w.start])
		// A sentence's first word alone, or a hyphenated word there
		// ("Sixteen-year-old Lew"), is no name.
		if lw := strings.ToLower(w.s); initial && j > i && (strings.Contains(w.s, "-") || clauseOpeners[lw] || clauseLead[lw]) {
			i++
			w = ws[i]
			initial = false
		}
		if initial && j == i || isNationality(ws[i:j+1]) || strings.HasSuffix(ws[j].s, "'s") || strings.HasSuffix(ws[j].s, "’s") {
			i = j
			continue
		}
		start := w.start
		if i > 0 && strings.EqualFold(ws[i-1].s, "the") && !gapBreaks(s[ws[i-1].end:w.start]) {
			start = ws[i-1].start
		}
		text := s[start:ws[j].end]
		if start < w.start && (initial || ws[i-1].s == "the") {
			text = "the" + text[3:]
		}
		out = append(out, run{start, text})
		i = j
	}
	return out
}

// notInName are capitalised words that do not continue a name.
var notInName = map[string]bool{"I": true, "It": true, "He": true, "She": true, "They": true, "We": true, "You": true,
	"This": true, "That": true, "These": true, "Those": true, "But": true, "And": true, "Or": true, "So": true}

// isNationality reports whether a one-word run names a people or a
// language ("Canadian", "British"), which follows "Besides" badly.
func isNationality(ws []word) bool {
	return len(ws) == 1 && demonyms[strings.TrimSuffix(ws[0].s, "s")]
}

var demonyms = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`American African Asian European Australian Canadian Mexican British English Scottish Irish
		Welsh French German Dutch Belgian Swiss Austrian Italian Spanish Portuguese Greek Turkish Russian Soviet Polish Czech
		Hungarian Romanian Swedish Norwegian Danish Finnish Icelandic Ukrainian Serbian Croatian Israeli Arab Arabic Persian
		Iranian Iraqi Egyptian Indian Pakistani Chinese Japanese Korean Vietnamese Thai Filipino Indonesian Brazilian
		Argentine Argentinian Chilean Colombian Peruvian Cuban Jamaican Nigerian Kenyan Latin Western Eastern Northern
		Southern Catholic Protestant Christian Jewish Muslim Islamic Buddhist Hindu Republican Democrat Democratic`) {
		demonyms[w] = true
	}
}

// gapBreaks reports whether the text between two words separates names
// (any punctuation but a space).
func gapBreaks(gap string) bool {
	return strings.TrimSpace(gap) != ""
}

// sentenceEnd reports whether the text between two words ends a sentence
// or opens a quotation or a parenthesis.
func sentenceEnd(gap string) bool {
	return strings.ContainsAny(gap, ".!?:;\"“(\n")
}

// isInitial reports whether w is a single capital letter ("A" of "John
// A. Burns").
func isInitial(w string) bool {
	r, n := utf8.DecodeRuneInString(w)
	return n == len(w) && unicode.IsUpper(r)
}

func isAllDigits(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return s != ""
}

// Leading words a clause is better without ("and", "Together", "by").
var clauseLead = map[string]bool{"and": true, "but": true, "so": true, "or": true, "also": true, "then": true, "well": true,
	"okay": true, "ok": true, "yes": true, "no": true, "together": true, "however": true, "thus": true, "therefore": true,
	"meanwhile": true, "later": true, "finally": true, "eventually": true, "instead": true}

// maxClauseWords is the longest clause kept whole; a longer one is
// skipped (cutting it would leave it dangling).
const maxClauseWords = 20

// clauseOpeners are prepositions and conjunctions that make a clause read
// badly after "Besides" ("Besides during the 1980s").
var clauseOpeners = map[string]bool{}

// danglingWords end a clause cut short ("… and", "… of the").
var danglingWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`as when whenever wherever while after before because although though since if until unless by during in at on
		from to with without into onto upon under over through throughout within despite following once where whereas
		whether which who whom whose what how why that than like near among between against toward towards about of for
		around across along beyond behind below above via per off out up down except including such both either neither`) {
		clauseOpeners[w] = true
	}
	for _, w := range strings.Fields(`and or but nor the a an of to in on at for with by from as that which who whose his her
		their its my our your this these those than into onto upon is are was were has have had be been being`) {
		danglingWords[w] = true
	}
}

// danglingEnd reports whether w cannot end a phrase.
func danglingEnd(w string) bool {
	lw := strings.ToLower(w)
	return danglingWords[lw] || finiteVerbs[lw] || pastVerbs[lw] || w == lw && len(lw) > 4 && strings.HasSuffix(lw, "ed") ||
		strings.HasSuffix(lw, "'s") || strings.HasSuffix(lw, "’s")
}

// verbAt returns the index of the finite verb that makes the words ws a
// statement rather than a phrase ("Karzai has one sister", "Louis
// assigned …", but not "the ruptured ligament"), or -1.
func verbAt(ws []string) int {
	for i, w := range ws {
		lw := strings.ToLower(w)
		if finiteVerbs[lw] || pastVerbs[lw] {
			return i
		}
		// "-ed" after a determiner or an adverb is no verb ("the
		// ruptured ligament", "now owned by the Trust").
		if i > 0 && strings.HasSuffix(lw, "ed") {
			prev := strings.ToLower(ws[i-1])
			if !determiners[prev] && !adverbs[prev] && !isAdverb(prev) {
				return i
			}
		}
	}
	return -1
}

// gerundClause turns the statement ws, whose verb is ws[v], into a phrase
// that can follow "Besides": "Karzai has one sister" → "Karzai having one
// sister", "he recorded Hot Rats" → "ent recording Hot Rats". "" when it
// cannot (no subject, a modal, a negation).
func gerundClause(ws []string, v int, ent string) string {
	if v == 0 || v+1 < len(ws) && (strings.EqualFold(ws[v+1], "not") || strings.EqualFold(ws[v+1], "never")) {
		return ""
	}
	g := gerund(strings.ToLower(ws[v]))
	if g == "" {
		return ""
	}
	subj := slices.Clone(ws[:v])
	if len(subj) == 1 || adverbs[strings.ToLower(subj[len(subj)-1])] || isAdverb(subj[len(subj)-1]) {
		switch lw := strings.ToLower(subj[0]); lw {
		case "he", "she":
			if ent == "" {
				return ""
			}
			subj[0] = ent
		case "they":
			subj[0] = "them"
		case "we":
			subj[0] = "us"
		case "i":
			subj[0] = "me"
		case "it", "you":
			subj[0] = lw
		}
	}
	out := append(append(subj, g), ws[v+1:]...)
	// A second verb of the same subject: "returned to Austria and
	// settled in Leonding" → "returning … and settling …".
	for i := len(subj) + 1; i+1 < len(out); i++ {
		if strings.EqualFold(out[i], "and") {
			if g := gerund(strings.ToLower(out[i+1])); g != "" && g != "being" && g != "having" {
				out[i+1] = g
			}
		}
	}
	return lowerLead(strings.Join(out, " "))
}

// subordinators open a clause inside a clause.
var subordinators = map[string]bool{"when": true, "whenever": true, "while": true, "if": true, "because": true, "although": true,
	"though": true, "since": true, "which": true, "who": true, "that": true, "where": true, "wherever": true, "after": true,
	"before": true, "until": true, "unless": true}

// adverbs are short adverbs that come between a subject and its verb.
var adverbs = map[string]bool{"now": true, "then": true, "also": true, "later": true, "still": true, "once": true,
	"first": true, "soon": true, "just": true, "only": true, "even": true, "never": true, "always": true, "often": true}

// gerund returns the -ing form of a past or finite verb, or "" for a
// modal or a form it does not know.
func gerund(w string) string {
	switch w {
	case "is", "are", "was", "were":
		return "being"
	case "has", "have", "had":
		return "having"
	}
	if g, ok := irregularGerunds[w]; ok {
		return g
	}
	switch {
	case finiteVerbs[w] || utf8.RuneCountInString(w) <= 4 || !strings.HasSuffix(w, "ed"):
		return ""
	case strings.HasSuffix(w, "ied"): // carried → carrying
		return strings.TrimSuffix(w, "ied") + "ying"
	case strings.HasSuffix(w, "eed"): // agreed → agreeing
		return strings.TrimSuffix(w, "d") + "ing"
	}
	return strings.TrimSuffix(w, "ed") + "ing" // managed → managing, stopped → stopping
}

// irregularGerunds maps the irregular past forms of pastVerbs to their
// -ing forms.
var irregularGerunds = map[string]string{}

func init() {
	for _, p := range strings.Fields(`said:saying felt:feeling got:getting made:making went:going took:taking became:becoming
		began:beginning left:leaving won:winning wrote:writing gave:giving came:coming found:finding saw:seeing knew:knowing
		told:telling thought:thinking sold:selling led:leading met:meeting ran:running held:holding brought:bringing
		built:building kept:keeping lost:losing paid:paying sent:sending spent:spending stood:standing taught:teaching
		bought:buying caught:catching fought:fighting heard:hearing meant:meaning grew:growing drew:drawing threw:throwing
		fell:falling rose:rising chose:choosing broke:breaking spoke:speaking stole:stealing sang:singing rang:ringing
		drove:driving rode:riding wore:wearing tore:tearing swore:swearing beat:beating bore:bearing shot:shooting
		hit:hitting quit:quitting split:splitting spread:spreading`) {
		past, ing, _ := strings.Cut(p, ":")
		irregularGerunds[past] = ing
		pastVerbs[past] = true
	}
}

var determiners = map[string]bool{"the": true, "a": true, "an": true, "his": true, "her": true, "their": true, "its": true,
	"this": true, "that": true, "these": true, "those": true, "some": true, "many": true, "several": true, "two": true}

// pastVerbs are common irregular past forms (filled from
// irregularGerunds).
var pastVerbs = map[string]bool{}

// Auxiliaries and common verbs that make a clause a sentence rather than
// a phrase that can follow "Besides".
var finiteVerbs = map[string]bool{"is": true, "are": true, "was": true, "were": true, "has": true, "have": true, "had": true,
	"did": true, "does": true, "do": true, "will": true, "would": true, "can": true, "could": true, "should": true, "may": true, "might": true,
	"isn't": true, "aren't": true, "wasn't": true, "weren't": true, "hasn't": true, "haven't": true, "hadn't": true, "didn't": true,
	"doesn't": true, "don't": true, "won't": true, "wouldn't": true, "can't": true, "couldn't": true}

// cleanClause returns the first clause of ans that reads as a phrase after
// "Besides": no leading punctuation, quote or discourse word ("and",
// "Together"), no preposition first, no quote, no dangling last word
// ("and", "the", "was"), three to maxClauseWords words; after a comma only
// a clause that opens a phrase of its own; a
// clause stating something becomes a gerund phrase ("Karzai has one
// sister" → "Karzai having one sister"), else "the fact that …". "" when
// there is none.
func cleanClause(ans, ent string) string {
	opens := true // the clause opens a sentence
	for rest := ans; rest != ""; {
		k := clauseEnd(rest)
		clause, sep := rest, ""
		if k >= 0 {
			clause, sep, rest = rest[:k], rest[k:k+1], rest[k+1:]
		} else {
			rest = ""
		}
		first := opens
		opens = strings.ContainsAny(sep, ".!?\n")
		c := strings.TrimLeftFunc(clause, func(r rune) bool { return !text.IsWordRune(r) })
		c = strings.TrimLeftFunc(c[len(besidesLead.FindString(c)):], unicode.IsSpace)
		ws := strings.Fields(c)
		for len(ws) > 0 && (clauseLead[strings.ToLower(ws[0])] || isAdverb(ws[0])) {
			ws = ws[1:]
		}
		// "by causing …" → "causing …".
		if len(ws) > 1 && strings.EqualFold(ws[0], "by") && strings.HasSuffix(ws[1], "ing") {
			ws = ws[1:]
		}
		if n := len(ws); n > 0 {
			ws[n-1] = strings.TrimRightFunc(ws[n-1], func(r rune) bool { return !text.IsWordRune(r) && r != ')' })
		}
		if len(ws) < 3 || len(ws) > maxClauseWords || strings.ContainsAny(c, "\"“”") || clauseOpeners[strings.ToLower(ws[0])] ||
			danglingEnd(ws[len(ws)-1]) || !first && !opensPhrase(ws[0]) || startsWithVerb(ws[0]) ||
			len(ws) <= 4 && unicode.IsDigit(firstRune(ws[len(ws)-1])) {
			continue
		}
		out := strings.Join(ws, " ")
		if v := verbAt(ws); v >= 0 {
			// "eliminates these restraints when he is separated": the
			// verb is not the clause's own.
			if slices.ContainsFunc(ws[:v], func(w string) bool { return subordinators[strings.ToLower(w)] }) {
				continue
			}
			if g := gerundClause(ws, v, ent); g != "" {
				return g
			}
			return "the fact that " + lowerLead(out)
		}
		return lowerLead(out)
	}
	return ""
}

// isAdverb reports whether w looks like an adverb ("Shortly",
// "Initially"), not a name ("Kelly", "Emily").
func isAdverb(w string) bool {
	lw := strings.ToLower(w)
	if utf8.RuneCountInString(lw) < 6 {
		return false
	}
	for _, suf := range []string{"ally", "ently", "antly", "ously", "ively", "ately", "rtly", "edly", "ingly", "ully", "ctly", "stly"} {
		if strings.HasSuffix(lw, suf) {
			return true
		}
	}
	return false
}

// besidesLead is an answer's own "Besides" ("Besides being a war
// reporter, he …").
var besidesLead = regexp.MustCompile(`(?i)^(?:besides|aside from|apart from|other than|in addition to)\b`)

// startsWithVerb reports whether a clause starting with w lacks its
// subject ("named the Series MVP").
func startsWithVerb(w string) bool {
	lw := strings.ToLower(w)
	return finiteVerbs[lw] || pastVerbs[lw] || w == lw && len(lw) > 4 && strings.HasSuffix(lw, "ed") || lw == "let"
}

// clauseEnd returns the offset of the punctuation ending s's first
// clause, or -1. A comma inside a number or a date ("1,000", "November 6,
// 2012") ends nothing.
func clauseEnd(s string) int {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(".;,!?\n:()[]", rune(s[i])) {
			continue
		}
		// An initial's dot ("John A. Burns").
		if s[i] == '.' && i > 0 && isInitial(s[i-1:i]) && (i == 1 || !text.IsWordRune(rune(s[i-2]))) {
			continue
		}
		if s[i] == ',' && i > 0 && unicode.IsDigit(rune(s[i-1])) {
			if rest := strings.TrimLeft(s[i+1:], " "); rest != "" && unicode.IsDigit(rune(rest[0])) {
				continue
			}
		}
		return i
	}
	return -1
}

// opensPhrase reports whether a clause after a comma starting with w is
// a phrase of its own (a name, a determiner, a pronoun, a number, a
// gerund) rather than the rest of a list or of a sentence.
func opensPhrase(w string) bool {
	lw := strings.ToLower(w)
	return startsUpper(w) || determiners[lw] || enSubject[lw] || lw == "i" || lw == "we" || lw == "you" ||
		unicode.IsDigit(firstRune(w)) || strings.HasSuffix(lw, "ing")
}

// lowerLead lowers a clause's first word when it is one that starts
// sentences ("The", "His"), keeping names.
func lowerLead(s string) string {
	ws := strings.Fields(s)
	if len(ws) > 0 && notNames[ws[0]] && ws[0] != "I" {
		r, n := utf8.DecodeRuneInString(s)
		return string(unicode.ToLower(r)) + s[n:]
	}
	return s
}

var (
	// "tell me more about", "more than", "the other members", "his other
	// siblings", or a
	// question that already says what it goes beyond.
	enNotBeyond = regexp.MustCompile(`(?i)\b(?:more about|know more|tell me more|more \w* ?than|(?:the|his|her|their|its) other|besides|aside from|apart from|other than|except|in addition to)\b`)
)

// asksBeyond reports whether q asks for more than the last answer said
// ("what else", "any other", "another", "any more") without saying beyond
// what already.
func asksBeyond(q string) bool {
	return enMore.MatchString(q) && !enNotBeyond.MatchString(q)
}

// enArticle is how a question points at the conversation's text ("this
// article", "the section"): the entity goes after it ("this article about
// Jane Jacobs").
var enArticle = regexp.MustCompile(`(?i)\b(this|the) (article|section)\b`)

func placeEntity(q, ent string) string {
	if loc := enArticle.FindStringIndex(q); loc != nil {
		return q[:loc[1]] + " about " + ent + q[loc[1]:]
	}
	return appendEntity(q, ent)
}
