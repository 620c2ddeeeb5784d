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
