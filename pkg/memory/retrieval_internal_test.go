package memory

import (
	"slices"
	"testing"
	"time"
)

// TestQuestionAndMessageShapes covers the predicates behind the answer-shape
// priors of turnIndex.rank: what a question asks for, what a message holds.
func TestQuestionAndMessageShapes(t *testing.T) {
	preds := map[string]func(string) bool{
		"asksWhen":     asksWhen,
		"hasTimeWords": hasTimeWords,
		"asksName":     reAsksName.MatchString,
		"asksCount":    reAsksCount.MatchString,
	}
	for _, tt := range []struct {
		pred, s string
		want    bool
	}{
		{"asksWhen", "When did Melanie paint a sunrise?", true},
		{"asksWhen", "How long has Caroline had her friends?", true},
		{"asksWhen", "Which year did Jolene start yoga?", true},
		{"asksWhen", "What date is the party?", true},
		{"asksWhen", "我什么时候去的北京？", true},
		{"asksWhen", "What did Melanie paint?", false},
		{"asksWhen", "How many children does Melanie have?", false},
		{"asksWhen", "Whenever I ask, what do you say?", false},
		{"hasTimeWords", "I went hiking last week and got into a bad spot.", true},
		{"hasTimeWords", "Yesterday I tried a new recipe.", true},
		{"hasTimeWords", "I've had them for 3 years now.", true},
		{"hasTimeWords", "We moved here in 2019.", true},
		{"hasTimeWords", "See you on Friday!", true},
		{"hasTimeWords", "我昨天去了公园。", true},
		{"hasTimeWords", "That painting is awesome!", false},
		{"hasTimeWords", "我喜欢画画。", false},
		{"asksName", "Where did Caroline move from?", true},
		{"asksName", "Who supports Caroline?", true},
		{"asksName", "Which cities has Jon visited?", true},
		{"asksName", "In what country did Jolene buy her snake?", true},
		{"asksName", "What did Melanie paint?", false},
		{"asksCount", "How many children does Melanie have?", true},
		{"asksCount", "How often does Sam get checkups?", true},
		{"asksCount", "How did Sam feel?", false},
	} {
		if got := preds[tt.pred](tt.s); got != tt.want {
			t.Errorf("%s(%q) = %v, want %v", tt.pred, tt.s, got, tt.want)
		}
	}
}

func TestProperNouns(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want []string
	}{
		{"Took a short trip last week to Rome to clear my mind.", []string{"rome"}},
		{"I met Anna's sister. She lives in Paris, France!", []string{"anna", "paris", "france"}},
		{"Hey! I'm fine. I've been busy.", nil},
		{"Thanks Caroline, I really appreciate it.", []string{"caroline"}},
		{"我去了北京。", nil},
	} {
		if got := properNouns(tt.s); !slices.Equal(got, tt.want) {
			t.Errorf("properNouns(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestDocTermsPairsAndShorthand(t *testing.T) {
	got := withPairs([]string{"pride", "parad", "fun"})
	if want := []string{"pride", "parad", "fun", "pride parad", "parad fun"}; !slices.Equal(got, want) {
		t.Errorf("withPairs = %q, want %q", got, want)
	}
	if got := withPairs([]string{"one"}); !slices.Equal(got, []string{"one"}) {
		t.Errorf("withPairs(one term) = %q", got)
	}
	if got, want := docTerms("my fav pics of my gf"), docTerms("my favorite pictures of my girlfriend"); !slices.Equal(got, want) {
		t.Errorf("docTerms(shorthand) = %q, want %q", got, want)
	}
}

// TestAnswerShapePriors: of two messages that match a question equally, the
// shorter ranks first; when the question asks when (or where), the one that
// says when (names a place — the speakers' own names do not count) does.
func TestAnswerShapePriors(t *testing.T) {
	speaker := func(s string) Metadata { return Metadata{Extra: map[string]any{SpeakerKey: s}} }
	for _, tt := range []struct {
		name              string
		shorter, shaped   string
		lexical, asksThat string
	}{
		{"when", "We adopted a dog, a sweet one.", "We adopted a dog, a sweet and very lively one, last Friday.",
			"What dog did we adopt?", "When did we adopt a dog?"},
		{"where", "Thanks Jon, the trip was great.", "The trip was great, we loved every day of it in Rome.",
			"What was the trip like?", "Where was the trip?"},
	} {
		x := newTurnIndex(nil, 64, 0, func(s string) int { return len(s) / 4 })
		x.add([]Turn{
			{ID: 1, Question: Message{Role: "user", Content: tt.shorter, Timestamp: 1000, Metadata: speaker("Gina")}},
			{ID: 2, Question: Message{Role: "user", Content: tt.shaped, Timestamp: 2000, Metadata: speaker("Gina")},
				Answer: Message{Role: "assistant", Content: "Sounds lovely, Gina!", Timestamp: 2001, Metadata: speaker("Jon")}},
		})
		top := func(q string) int64 {
			rk, _, _ := x.rank(t.Context(), q, 0, 0, time.UTC)
			rs := rk.top(rk.len())
			return rs[0].doc.turn
		}
		if got := top(tt.lexical); got != 1 {
			t.Errorf("%s: %q: top turn %d, want 1 (the shorter match)", tt.name, tt.lexical, got)
		}
		if got := top(tt.asksThat); got != 2 {
			t.Errorf("%s: %q: top turn %d, want 2", tt.name, tt.asksThat, got)
		}
	}
}

// TestReplyToQuestionTakesItsScore: the reply to a message that asks
// something takes its whole score (replyWeight), so "Super good!" after
// "How did the coconut ice cream taste?" outranks another message about ice
// cream; after a statement the reply takes only NeighborWeight of it and
// stays below.
func TestReplyToQuestionTakesItsScore(t *testing.T) {
	speaker := func(s string) Metadata { return Metadata{Extra: map[string]any{SpeakerKey: s}} }
	for _, tt := range []struct {
		prompt    string
		replyWins bool
	}{
		{"How did the coconut ice cream taste?", true},
		{"I made coconut ice cream and tasted it.", false},
	} {
		x := newTurnIndex(nil, 64, 0, func(s string) int { return len(s) / 4 })
		x.add([]Turn{
			{ID: 1, Question: Message{Role: "user", Content: "We had ice cream at the beach.", Timestamp: 1000, Metadata: speaker("Jo")},
				Answer: Message{Role: "assistant", Content: "Nice!", Timestamp: 1001, Metadata: speaker("Nate")}},
			{ID: 2, Question: Message{Role: "user", Content: tt.prompt, Timestamp: 2000, Metadata: speaker("Jo")},
				Answer: Message{Role: "assistant", Content: "Super good! Rich and creamy, my new favorite snack.", Timestamp: 2001, Metadata: speaker("Nate")}},
		})
		rk, _, _ := x.rank(t.Context(), "What about the coconut ice cream?", 0, 0.6, time.UTC)
		rs := rk.top(rk.len())
		pos := map[string]int{}
		for i, r := range rs {
			pos[r.doc.id] = i
		}
		if got := pos["2a"] < pos["1q"]; got != tt.replyWins {
			t.Errorf("after %q: reply at %d, the other ice-cream message at %d; reply first = %v, want %v",
				tt.prompt, pos["2a"], pos["1q"], got, tt.replyWins)
		}
	}
}

// TestSessionReadAsOneDocument: of two replies that share nothing with the
// question, after the same matching message, the one in the session that
// talks more about the question's subject ranks first (without the session
// prior the later one would).
func TestSessionReadAsOneDocument(t *testing.T) {
	day := int64(24 * time.Hour / time.Millisecond)
	var turns []Turn
	for i, pair := range [][3]string{
		{"0", "I love camping.", "Me too."},
		{"0", "What else is new?", "Not much."},
		{"0", "We took the kids camping in the forest.", "They must have loved camping."},
		{"30", "I love camping.", "Me too."},
		{"30", "What else is new?", "Not much."},
	} {
		at := int64(1000 + i*60_000)
		if pair[0] == "30" {
			at += 30 * day
		}
		turns = append(turns, Turn{ID: int64(i + 1),
			Question: Message{Role: "user", Content: pair[1], Timestamp: at},
			Answer:   Message{Role: "assistant", Content: pair[2], Timestamp: at + 1}})
	}
	x := newTurnIndex(nil, 64, time.Hour, func(s string) int { return len(s) / 4 })
	x.add(turns)
	if got := x.sessionRelevance(queryTerms("camping")); len(got) != 2 || got[0] != 1 || !(got[1] > 0 && got[1] < 1) {
		t.Fatalf("sessionRelevance = %v, want [1, (0,1)]", got)
	}
	rk, _, _ := x.rank(t.Context(), "Where did they go camping?", 0, 0.6, time.UTC)
	rs := rk.top(rk.len())
	pos := map[string]int{}
	for i, r := range rs {
		pos[r.doc.id] = i
	}
	if pos["1a"] > pos["4a"] {
		t.Errorf("reply in the camping session at %d, the same reply in the other session at %d; want the first ahead", pos["1a"], pos["4a"])
	}
}
