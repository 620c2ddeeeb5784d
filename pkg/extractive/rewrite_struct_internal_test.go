package extractive

import (
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// countParses counts the calls of parseAddr until the test ends.
func countParses(t *testing.T) *int {
	t.Helper()
	n := new(int)
	parseAddr = func(q string, k docstruct.Known) docstruct.Address {
		*n++
		return docstruct.ParseAddress(q, k)
	}
	t.Cleanup(func() { parseAddr = docstruct.ParseAddress })
	return n
}

// TestStepSpanWork: stepSpan parses only stretches around where the text
// names the step's kind (or name), the shortest first: a step written
// once is found in a few parses however long the text, and no text costs
// more than maxStepParses (a parse of each stretch, as before, cost some
// 64 parses a character).
func TestStepSpanWork(t *testing.T) {
	kn := docstruct.Known{Kinds: []string{"chapter", "章"}}
	long := strings.Repeat("I am learning to cook Sichuan food and wonder which spices to buy first. ", 40)
	zh := strings.Repeat("我在学做川菜，想知道应该先买哪些香料。", 40)
	for _, tt := range []struct {
		name, s, step string
		want          string // "" when s does not write the step
		most          int
	}{
		{"a label at the end", long + "(question 12)", "question 12", "question 12", 4},
		{"a label at the start", "(Chapter 12) " + long, "Chapter 12", "Chapter 12", 4},
		{"a Chinese label", zh + "（第12章）", "第12章", "12章", 4},
		{"a label absent", long + "(question 12)", "Chapter 12", "", 0},
		{"another number", long + "(question 12)", "question 13", "", maxStepParses},
		{"the kind everywhere", strings.Repeat("Which question? The question of questions. ", 40), "question 12", "", maxStepParses},
	} {
		n := countParses(t)
		l := docstruct.ParseAddress(tt.step, kn).Steps[0]
		i, j, ok := stepSpan(tt.s, l, kn)
		got := ""
		if ok {
			got = tt.s[i:j]
		}
		if got != tt.want || *n > tt.most {
			t.Errorf("%s: stepSpan = %q after %d parses, want %q within %d", tt.name, got, *n, tt.want, tt.most)
		}
	}
}

// TestRewriteLabelWork: the rewrite of a follow-up after a long question
// ending with a numbered label parses a few texts, not the thousands a
// parse of every stretch of it took.
func TestRewriteLabelWork(t *testing.T) {
	long := strings.Repeat("My sister Anna is moving to Berlin in March and wonders what to pack for the cold. ", 12)
	for _, tt := range []struct {
		prev, q, want string
	}{
		{long + "What should she pack? (question 12)", "and question 13?", long + "What should she pack? (question 13)"},
		{long + "What should she pack? (question 12)", "I am learning to cook Sichuan food, which spices should I buy first? (question 13)", ""},
	} {
		n := countParses(t)
		f := memory.FollowUp{History: []llm.Message{{Role: llm.RoleUser, Content: tt.prev}, {Role: llm.RoleAssistant, Content: "Warm clothes."}}, Question: tt.q}
		got := RewriteFollowUp(f, nil)
		if tt.want != "" && got != tt.want || tt.want == "" && !strings.HasPrefix(got, strings.TrimSuffix(tt.q, ")")) {
			t.Errorf("RewriteFollowUp(%q) = %q", tt.q, got)
		}
		if *n > 40 {
			t.Errorf("RewriteFollowUp(%q) parsed %d texts, want at most 40", tt.q, *n)
		}
	}
}
