package memory

import (
	"slices"
	"testing"
	"time"
)

func TestAsksWhen(t *testing.T) {
	for _, tt := range []struct {
		q    string
		want bool
	}{
		{"When did Melanie paint a sunrise?", true},
		{"How long has Caroline had her friends?", true},
		{"Which year did Jolene start yoga?", true},
		{"What date is the party?", true},
		{"我什么时候去的北京？", true},
		{"What did Melanie paint?", false},
		{"Where has Melanie camped?", false},
		{"How many children does Melanie have?", false},
		{"Whenever I ask, what do you say?", false},
	} {
		if got := asksWhen(tt.q); got != tt.want {
			t.Errorf("asksWhen(%q) = %v, want %v", tt.q, got, tt.want)
		}
	}
}

func TestHasTimeWords(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"I went hiking last week and got into a bad spot.", true},
		{"Yesterday I tried a new recipe.", true},
		{"I've had them for 3 years now.", true},
		{"We moved here in 2019.", true},
		{"See you on Friday!", true},
		{"我昨天去了公园。", true},
		{"That painting is awesome!", false},
		{"Thanks, it means a lot to me.", false},
		{"我喜欢画画。", false},
	} {
		if got := hasTimeWords(tt.s); got != tt.want {
			t.Errorf("hasTimeWords(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestWithPairs(t *testing.T) {
	got := withPairs([]string{"pride", "parad", "fun"})
	want := []string{"pride", "parad", "fun", "pride parad", "parad fun"}
	if !slices.Equal(got, want) {
		t.Errorf("withPairs = %q, want %q", got, want)
	}
	if got := withPairs([]string{"one"}); !slices.Equal(got, []string{"one"}) {
		t.Errorf("withPairs(one term) = %q", got)
	}
}

// TestWhenQuestionPrefersTimedMessages: of two messages that match a
// question asking when equally, the one that says when ranks first; the
// same words without "when" keep the lexical order.
func TestWhenQuestionPrefersTimedMessages(t *testing.T) {
	x := newTurnIndex(nil, 64, 0, func(s string) int { return len(s) / 4 })
	x.add([]Turn{
		{ID: 1, Question: Message{Role: "user", Content: "We adopted a dog, a sweet one.", Timestamp: 1000}},
		{ID: 2, Question: Message{Role: "user", Content: "We adopted a dog, a sweet and very lively one, last Friday.", Timestamp: 2000}},
		{ID: 3, Question: Message{Role: "user", Content: "The weather is nice.", Timestamp: 3000}},
	})
	top := func(q string) int64 {
		rs, _ := x.rank(t.Context(), q, 0, 0, time.UTC)
		return rs[0].doc.turn
	}
	if got := top("What dog did we adopt?"); got != 1 {
		t.Errorf("lexical question: top turn %d, want 1 (the shorter match)", got)
	}
	if got := top("When did we adopt a dog?"); got != 2 {
		t.Errorf("when question: top turn %d, want 2 (says when)", got)
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

func TestQuestionShapes(t *testing.T) {
	for _, tt := range []struct {
		q           string
		name, count bool
	}{
		{"Where did Caroline move from?", true, false},
		{"Who supports Caroline?", true, false},
		{"Which cities has Jon visited?", true, false},
		{"In what country did Jolene buy her snake?", true, false},
		{"How many children does Melanie have?", false, true},
		{"How often does Sam get checkups?", false, true},
		{"What did Melanie paint?", false, false},
	} {
		if got := reAsksName.MatchString(tt.q); got != tt.name {
			t.Errorf("reAsksName(%q) = %v, want %v", tt.q, got, tt.name)
		}
		if got := reAsksCount.MatchString(tt.q); got != tt.count {
			t.Errorf("reAsksCount(%q) = %v, want %v", tt.q, got, tt.count)
		}
	}
}

// TestWhereQuestionPrefersNames: of two messages that match a question
// asking where equally, the one naming a place ranks first, and the
// speakers' own names do not count as one.
func TestWhereQuestionPrefersNames(t *testing.T) {
	x := newTurnIndex(nil, 64, 0, func(s string) int { return len(s) / 4 })
	speaker := func(s string) Metadata { return Metadata{Extra: map[string]any{SpeakerKey: s}} }
	x.add([]Turn{
		{ID: 1, Question: Message{Role: "user", Content: "Thanks Jon, the trip was great.", Timestamp: 1000, Metadata: speaker("Gina")}},
		{ID: 2, Question: Message{Role: "user", Content: "The trip was great, we loved every day of it in Rome.", Timestamp: 2000, Metadata: speaker("Gina")},
			Answer: Message{Role: "assistant", Content: "Sounds lovely, Gina!", Timestamp: 2001, Metadata: speaker("Jon")}},
	})
	top := func(q string) int64 {
		rs, _ := x.rank(t.Context(), q, 0, 0, time.UTC)
		return rs[0].doc.turn
	}
	if got := top("What was the trip like?"); got != 1 {
		t.Errorf("lexical question: top turn %d, want 1 (the shorter match)", got)
	}
	if got := top("Where was the trip?"); got != 2 {
		t.Errorf("where question: top turn %d, want 2 (names a place)", got)
	}
}

func TestDocTermsShorthand(t *testing.T) {
	if got, want := docTerms("my fav pics of my gf"), docTerms("my favorite pictures of my girlfriend"); !slices.Equal(got, want) {
		t.Errorf("docTerms(shorthand) = %q, want %q", got, want)
	}
}
