package extractive_test

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/memory"
)

// TestRewriteFollowUpKnownNamesEN: over a knowledge base's names, an English
// follow-up resolves to the whole known name, never to a name the text only
// uses as a common word; "What about X?" asks the previous question of X;
// a closing "there" becomes "at X".
func TestRewriteFollowUpKnownNamesEN(t *testing.T) {
	vocab := extractive.NameList{"La Margherita", "Golden Wok", "dining", "The Lucky Star", "Acorn Guest House"}
	for _, tt := range []struct {
		name    string
		history []string
		q, want string
	}{
		{"the common word is not the name",
			[]string{"Which restaurant is in the west of town?", "La Margherita is an Italian restaurant in the west of town.",
				"Does it have outdoor seating?", "It has a large outdoor dining space in its garden."},
			"When does it open?", "When does La Margherita open?"},
		{"a known name in lower-cased text",
			[]string{"which restaurant is in the centre?", "golden wok is a cantonese restaurant in the centre."},
			"Does it have outdoor seating?", "Does Golden Wok have outdoor seating?"},
		{"the whole known name",
			[]string{"Which one is in the west?", "That's Margherita. La Margherita is on Mill Road."},
			"Does it have outdoor seating?", "Does La Margherita have outdoor seating?"},
		{"what about a known name",
			[]string{"When does La Margherita open?", "It opens at noon every day."},
			"What about Golden Wok?", "When does Golden Wok open?"},
		{"what about something else: not a swap",
			[]string{"When does La Margherita open?", "It opens at noon every day."},
			"What about the weekend?", "What about the weekend of La Margherita?"},
		{"a name beginning with The", []string{"I'm looking for a chinese place.", "The Lucky Star serves chinese food in the south."},
			"What is the address?", "What is the address of The Lucky Star?"},
		{"that for the thing", []string{"I need a place to stay in the north.", "I recommend the Acorn Guest House."},
			"What area is that in?", "What area is Acorn Guest House in?"},
		{"book that", []string{"I need a place to stay in the north.", "I recommend the Acorn Guest House."},
			"Yes please book that.", "Yes please book Acorn Guest House."},
		{"that as a conjunction stays", []string{"I need a place to stay in the north.", "I recommend the Acorn Guest House."},
			"I heard that it is good, is it?", "I heard that Acorn Guest House is good, is it?"},
		{"a table there", []string{"I'm looking for a chinese place.", "The Lucky Star serves chinese food in the south."},
			"Can you book a table there for 2?", "Can you book a table at The Lucky Star for 2?"},
		{"there at the end",
			[]string{"Which restaurant is in the west of town?", "La Margherita is in the west of town."},
			"How much is a pizza there?", "How much is a pizza at La Margherita?"},
	} {
		f := memory.FollowUp{History: msgs(tt.history...), Question: tt.q}
		if got := extractive.RewriteFollowUp(f, vocab); got != tt.want {
			t.Errorf("%s: RewriteFollowUp(%q) = %q, want %q", tt.name, tt.q, got, tt.want)
		}
	}
}
