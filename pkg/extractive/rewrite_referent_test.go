package extractive_test

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

func msgs(pairs ...string) []llm.Message {
	var out []llm.Message
	for i, p := range pairs {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		out = append(out, llm.Message{Role: role, Content: p})
	}
	return out
}

// TestRewriteFollowUp covers the failure modes of the offline rewrite:
// the referent named only by the assistant, by the topic, by a known name;
// possessives; demonstratives; words that only look like pronouns; and
// never a "(following up: …)" or "（上文：…）" suffix.
func TestRewriteFollowUp(t *testing.T) {
	restaurants := msgs("Okay, pick one for me please. It should be in the west.",
		"Okay, that leaves one option, and that's the La Margherita.")
	hotels := msgs("I need a guesthouse with free parking.",
		"The Acorn Guest House has free parking and wifi.")
	for _, tt := range []struct {
		name  string
		f     memory.FollowUp
		vocab extractive.Vocabulary
		want  string
	}{
		{"assistant-only entity", memory.FollowUp{History: restaurants, Question: "Does it have a nice outdoor dining space?"}, nil,
			"Does La Margherita have a nice outdoor dining space?"},
		{"possessive", memory.FollowUp{History: restaurants, Question: "What are its opening hours?"}, nil,
			"What are La Margherita's opening hours?"},
		{"a kind the documents give", memory.FollowUp{History: hotels, Question: "How many stars does the hotel have?"},
			places(extractive.Thing{Name: "Acorn Guest House", Kind: "hotel"}), "How many stars does Acorn Guest House have?"},
		{"the place", memory.FollowUp{History: hotels, Question: "Is the place expensive?"}, nil, "Is Acorn Guest House expensive?"},
		{"there", memory.FollowUp{History: hotels, Question: "How do I get there?"}, nil,
			"How do I get to Acorn Guest House?"},
		{"latest name wins", memory.FollowUp{History: msgs("Tell me about Pizza Hut.", "Pizza Hut is in the centre.",
			"Anything in the west?", "Yes, La Margherita."), Question: "Is it expensive?"}, nil, "Is La Margherita expensive?"},
		{"known name preferred", memory.FollowUp{History: msgs("Which city hosts Auto Shanghai?", "Shanghai hosts it every April."),
			Question: "When does it open?"}, extractive.NameList{"Auto Shanghai"}, "When does Auto Shanghai open?"},
		{"topic", memory.FollowUp{Topic: []string{"Frank Zappa (musician)", "Disbandment"}, History: msgs("What group disbanded?",
			"The Mothers of Invention"), Question: "Why did he disband them?"}, nil, "Why did Frank Zappa disband them?"},
		{"her as possessive", memory.FollowUp{Topic: []string{"Courtney Love"}, Question: "What was her first album?"}, nil,
			"What was Courtney Love's first album?"},
		{"her as object", memory.FollowUp{Topic: []string{"Courtney Love"}, Question: "Who married her?"}, nil,
			"Who married Courtney Love?"},
		{"a question written without its mark", memory.FollowUp{Topic: []string{"John Wayne"}, Question: "did he do any TV"}, nil,
			"did John Wayne do any TV?"},
		{"a request keeps its full stop", memory.FollowUp{History: hotels, Question: "Please book it for two nights."}, nil,
			"Please book Acorn Guest House for two nights."},
		{"partial name completed", memory.FollowUp{Topic: []string{"Yoko Ono"}, History: msgs("Where was she born?", "Tokyo."),
			Question: "Was Yoko interested in music?"}, nil, "Was Yoko Ono interested in music?"},
		{"what else: says what it goes beyond", memory.FollowUp{Topic: []string{"Frank Zappa"}, History: msgs("What did he record?",
			"Well, he recorded Hot Rats in 1969."), Question: "What else did he record?"}, nil,
			"Besides Frank Zappa recording Hot Rats in 1969, what else did Frank Zappa record?"},
		{"entity already named: unchanged", memory.FollowUp{History: restaurants, Question: "Is it near La Margherita?"}, nil,
			"Is it near La Margherita?"},
		{"codes and times are not entities", memory.FollowUp{History: msgs("Book La Margherita for two, please.",
			"Booked for 7 PM, reference number XK42B7."), Question: "Can you cancel it?"}, nil, "Can you cancel La Margherita?"},
		{"no entity: unchanged", memory.FollowUp{History: msgs("hello", "hi, how can I help?"), Question: "Why is it so?"}, nil,
			"Why is it so?"},
		{"zh assistant-only entity", memory.FollowUp{History: msgs("推荐一家北京的烤鸭店。", "推荐全聚德，它是百年老字号。"),
			Question: "它几点开门？"}, nil, "全聚德几点开门？"},
		{"zh definition", memory.FollowUp{History: msgs("什么是太极？", "易有太极，是生两仪。"), Question: "它生出什么？"}, nil,
			"太极生出什么？"},
		{"zh possessive 其", memory.FollowUp{History: msgs("什么是太极？", "易有太极。"), Question: "其含义是什么？"}, nil,
			"太极的含义是什么？"},
		{"zh classifier prefers its kind", memory.FollowUp{History: msgs("乾卦和太极有什么关系？", "乾卦象征天，太极是本原。"),
			Question: "这卦的卦辞是什么？"}, zhouyi(t, "乾卦", "太极"), "乾卦的卦辞是什么？"},
		{"zh known name from the assistant", memory.FollowUp{History: msgs("有什么适合初学者的卦？", "可以先读坤卦，卦辞浅显。"),
			Question: "该卦讲什么？"}, zhouyi(t, "坤卦"), "坤卦讲什么？"},
		{"zh person is not a book", memory.FollowUp{History: msgs("孔子写了什么？", "孔子作《春秋》。"), Question: "他生于哪一年？"}, nil,
			"孔子生于哪一年？"},
		{"zh it may be a book", memory.FollowUp{History: msgs("孔子写了什么？", "孔子作《春秋》。"), Question: "它讲什么？"}, nil,
			"《春秋》讲什么？"},
		{"zh not pronouns", memory.FollowUp{History: msgs("什么是太极？", "易有太极。"), Question: "因此应该读其他什么书？"}, nil,
			"关于太极，因此应该读其他什么书？"},
	} {
		if got := extractive.RewriteFollowUp(tt.f, tt.vocab); got != tt.want {
			t.Errorf("%s: RewriteFollowUp(%q) = %q, want %q", tt.name, tt.f.Question, got, tt.want)
		}
	}
}

// TestRewriteFollowUpBeyond covers questions asking for more ("what else",
// "any other"): what they go beyond is a readable phrase of the last answer
// — a clause without its leading punctuation, discourse word or
// preposition (a statement turned into a gerund phrase, else "the fact
// that …"), else a name of the answer that is not the conversation's own,
// else a date — or nothing; and the entity follows "this article".
func TestRewriteFollowUpBeyond(t *testing.T) {
	turn := func(topic []string, answer, q string) memory.FollowUp {
		return memory.FollowUp{Topic: topic, History: msgs("Tell me more.", answer), Question: q}
	}
	for _, tt := range []struct {
		name string
		f    memory.FollowUp
		want string
	}{
		{"leading date phrase dropped", turn([]string{"Nina Simone", "1974-1993: Later life"},
			"During the 1980s, Simone performed regularly at Ronnie Scott's Jazz Club in London,",
			"Did she perform in other parts of the world?"),
			"Besides Simone performing regularly at Ronnie Scott's Jazz Club in London, did Nina Simone perform in other parts of the world?"},
		{"discourse word and colon dropped", turn([]string{"Karlheinz Stockhausen", "Family and home"},
			"Together they had four children:", "Did he have any other wives ?"),
			"Besides them having four children, did Karlheinz Stockhausen have any other wives ?"},
		{"leading quote and by dropped", turn([]string{"Miracle on Ice", "Exhibitions"},
			`" by causing the Soviets to underestimate the American team.`, "What else did you find interesting about this section?"),
			"Besides causing the Soviets to underestimate the American team, what else did you find interesting about this section about Miracle on Ice?"},
		{"date kept whole, long clause gives way to a name", turn([]string{"Grover Norquist", "Taxpayer Protection Pledge"},
			"The November 6, 2012 elections resulted in a decline in the number of Taxpayer Protection Pledge signatories in both the upper and lower houses",
			"Was there anything else significant about the pledge?"),
			"Besides the November 6, 2012 elections, was there anything else significant about the pledge of Grover Norquist?"},
		{"fragment gives way to a name", turn([]string{"Chesley Sullenberger", "Military service"},
			"in Red Flag Exercises.", "Did he accomplish anything else while in the Military?"),
			"Besides Red Flag Exercises, did Chesley Sullenberger accomplish anything else while in the Military?"},
		{"quoted title", turn([]string{"The Verve", "A Northern Soul"}, `"This Is Music" reached No. 35.`, "did it have any other music?"),
			`Besides "This Is Music", did The Verve have any other music?`},
		{"the conversation's own name is skipped", turn([]string{"Hamid Karzai", "Personal life"},
			"with Hamid Karzai and Fauzia Karzai.", "Was anyone else in his family involved in politics?"),
			"Besides Fauzia Karzai, was anyone else in Hamid Karzai's family involved in politics?"},
		{"date as the last resort", turn([]string{"Vicente Fernández", "Career"}, "in 1998.", "Did he record anything else?"),
			"Besides what happened in 1998, did Vicente Fernández record anything else?"},
		{"a refusal: the answer before", memory.FollowUp{Topic: []string{"Frank Zappa"}, History: msgs("What did he record?",
			"He recorded Hot Rats in 1969.", "Did it sell?", "I don't know."), Question: "What else did he record?"},
			"Besides Frank Zappa recording Hot Rats in 1969, what else did Frank Zappa record?"},
		{"two refusals: nothing to go beyond", memory.FollowUp{Topic: []string{"Jane Jacobs", "Career"}, History: msgs("Did she write?",
			"I don't know.", "Did she teach?", "I don't know."), Question: "Are there any other interesting aspects about this article?"},
			"Are there any other interesting aspects about this article about Jane Jacobs?"},
		{"a clause without its subject gives way to a name", turn([]string{"Tom Glavine", "Atlanta Braves"},
			"named the Series MVP.", "Are there any other interesting aspects about this article?"),
			"Besides the Series MVP, are there any other interesting aspects about this article about Tom Glavine?"},
		{"a number continues a name", turn([]string{"T-Pain", "Career"}, "with four singles on the Billboard Hot 100 chart",
			"Did he have any other hits?"), "Besides the Billboard Hot 100, did T-Pain have any other hits?"},
		{"about after interesting", memory.FollowUp{Topic: []string{"MC Hammer", "Career"}, History: msgs("Did he tour?",
			"I don't know.", "Did he act?", "I don't know."), Question: "Anything else interesting?"},
			"Anything else interesting about MC Hammer?"},
		{"the answer's own besides dropped", turn([]string{"Ben Hecht", "Journalism"},
			"Besides being a war reporter, he was noted for being a tough crime reporter.", "What else did he do as a journalist?"),
			"Besides being a war reporter, what else did Ben Hecht do as a journalist?"},
		{"an initial is no full stop", turn([]string{"Patsy Mink", "Career"}, "with John A. Burns.", "Did she work anywhere else?"),
			"Besides John A. Burns, did Patsy Mink work anywhere else?"},
		{"leading adverb and time dropped", turn([]string{"Bear Bryant", "Death"}, "Shortly before his death, Bryant spoke of Alabama.",
			"What else did he talk about?"), "Besides Bryant speaking of Alabama, what else did Bear Bryant talk about?"},
		{"a second verb becomes a gerund too", turn([]string{"Adolf Hitler", "Early years"},
			"The family returned to Austria and settled in Leonding in 1894.", "Did he live anywhere else?"),
			"Besides the family returning to Austria and settling in Leonding in 1894, did Adolf Hitler live anywhere else?"},
		{"a negation keeps the statement", turn([]string{"Pink Floyd – The Wall", "Production"}, "EMI did not intend to make the film.",
			"Was there anything else significant?"),
			"Besides the fact that EMI did not intend to make the film, was there anything else significant about Pink Floyd – The Wall?"},
		{"a verb of a clause inside the clause", turn([]string{"Pinhead", "Powers"},
			"eliminates these restraints when he is separated from Elliot Spencer.", "Are there any other interesting aspects about this article?"),
			"Besides Elliot Spencer, are there any other interesting aspects about this article about Pinhead?"},
		{"more about: not beyond", turn([]string{"David Hume", "Early life"}, "Hume's father died when Hume was a child.",
			"Can you tell me more about his mom?"), "Can you tell me more about David Hume's mom?"},
		{"his other: not beyond", turn([]string{"J. R. Jayewardene", "Early life"}, "Jayewardene was the eldest of 11 children.",
			"Were his other siblings political?"), "Were J. R. Jayewardene's other siblings political?"},
		{"already says beyond what", turn([]string{"A-Teens", "Tours"}, "They toured Asia and the US.",
			"did they tour anywhere else other than Asia and US?"), "did A-Teens tour anywhere else other than Asia and US?"},
	} {
		if got := extractive.RewriteFollowUp(tt.f, nil); got != tt.want {
			t.Errorf("%s: RewriteFollowUp(%q) =\n %q, want\n %q", tt.name, tt.f.Question, got, tt.want)
		}
	}
}

// places is a vocabulary of things the documents are about.
func places(things ...extractive.Thing) *extractive.Catalog {
	return &extractive.Catalog{Things: extractive.NewNameIndex(things)}
}

// TestRewriteNamesAsWritten: things are found however a conversation writes
// them (case, "&", words run together, a distinctive part), "the X" is the
// last thing named that a document says is an X, and "either of these"
// asks of each of the things named.
func TestRewriteNamesAsWritten(t *testing.T) {
	v := places(
		extractive.Thing{Name: "ALLENBELL", Kind: "hotel"},
		extractive.Thing{Name: "A AND B GUEST HOUSE", Kind: "hotel"},
		extractive.Thing{Name: "ACORN GUEST HOUSE", Kind: "hotel"},
		extractive.Thing{Name: "EFES RESTAURANT", Kind: "restaurant"},
		extractive.Thing{Name: "PIZZA HUT CITY CENTRE", Kind: "restaurant"},
		extractive.Thing{Name: "PIZZA HUT FEN DITTON", Kind: "restaurant"},
		extractive.Thing{Name: "BEDOUIN", Kind: "restaurant"},
		extractive.Thing{Name: "THE CAMBRIDGE BELFRY", Kind: "hotel"},
		extractive.Thing{Name: "全聚德", Kind: "餐厅"},
	)
	for _, tt := range []struct {
		name    string
		history []string
		q       string
		want    string
	}{
		{"lower case", []string{"Can you suggest a place to stay?", "Yes, I would suggest allenbell"},
			"Are the bathrooms clean in this hotel?", "Are the bathrooms clean in Allenbell?"},
		{"an ampersand and words run together", []string{"Any guesthouse in the east?", "I recommend the A & B Guesthouse in the east."},
			"Will the room have a view?", "Will the room have a view of A & B Guesthouse?"},
		{"a distinctive part", []string{"I am looking for a turkish place.", "Efes is a turkish restaurant in the centre."},
			"Do they have vegetarian food?", "Do Efes Restaurant have vegetarian food?"},
		{"the restaurant after a hotel and a restaurant", []string{"I am staying at the Cambridge Belfry.", "Great. How can I help?",
			"Is there a restaurant near it?", "the Bedouin is close by."}, "Does the restaurant serve beer?", "Does Bedouin serve beer?"},
		{"the hotel after a hotel and a restaurant", []string{"I am staying at the Cambridge Belfry.", "Great. How can I help?",
			"Is there a restaurant near it?", "the Bedouin is close by."}, "Does the hotel have parking?", "Does The Cambridge Belfry have parking?"},
		{"a part of a name many share is the one named before", []string{"Where can I get pizza?", "Pizza Hut Fen Ditton is in the east.",
			"Is it cheap?", "Yes."}, "Does Pizza hut deliver?", "Does Pizza Hut Fen Ditton deliver?"},
		{"the Bedouin", []string{"Is there a restaurant near the Cambridge Belfry?", "Yes, the Bedouin."}, "Is the Bedouin open late?",
			"Is the Bedouin open late?"},
		{"either of these", []string{"I need a guesthouse in the north.", "I have Allenbell and Acorn Guest House."},
			"Does either of these have free wifi?", "Does Allenbell or Acorn Guest House have free wifi?"},
		{"any of those places", []string{"Any italian place in the centre?", "Yes: Pizza Hut City Centre and Efes."},
			"Do any of those places have nice decor?", "Do Pizza Hut City Centre or Efes Restaurant have nice decor?"},
		{"which one", []string{"Any italian place in the centre?", "Yes: Pizza Hut City Centre and Efes."},
			"Which one has the best view?", "Which of Pizza Hut City Centre or Efes Restaurant has the best view?"},
		{"the latest named over the more often named", []string{"I need a restaurant in the north.", "Efes is in the north.",
			"No, not Efes, anything else?", "Bedouin is also in the north."}, "Do they serve beer?", "Do Bedouin serve beer?"},
		{"which place", []string{"Any italian place in the centre?", "Yes: Pizza Hut City Centre and Efes."},
			"Which place is the quietest?", "Which of Pizza Hut City Centre or Efes Restaurant is the quietest?"},
		{"a capitalised word of an answer is no thing of the documents", []string{"Book Allenbell for two nights.",
			"Booked. Reference number is XK42."}, "Does it have a good view?", "Does Allenbell have a good view?"},
		{"they both", []string{"I need a guesthouse in the north.", "I have Allenbell and Acorn Guest House."},
			"Do they both have parking?", "Do Allenbell and Acorn Guest House both have parking?"},
		{"zh a name of the documents", []string{"推荐一家北京的烤鸭店。", "推荐全聚德，它是百年老字号。"}, "它几点开门？", "全聚德几点开门？"},
	} {
		f := memory.FollowUp{History: msgs(tt.history...), Question: tt.q}
		if got := extractive.RewriteFollowUp(f, v); got != tt.want {
			t.Errorf("%s: RewriteFollowUp(%q) = %q, want %q", tt.name, tt.q, got, tt.want)
		}
	}
}

// TestKindIn: what a text says a thing is, for "the X" to stand for it.
func TestKindIn(t *testing.T) {
	for _, tt := range []struct {
		text  string
		names []string
		want  string
	}{
		{"# Efes\n\nEfes is a turkish restaurant in the centre.", []string{"Efes"}, "restaurant"},
		{"INXS were an Australian rock band, formed in Sydney.", []string{"INXS"}, "band"},
		{"The Lucky Star is a chinese restaurant.", []string{"THE LUCKY STAR"}, "restaurant"},
		{"Name: Archway\nCategory: guest house\n", []string{"Archway"}, "guest house"},
		{"全聚德是一家烤鸭店，在前门。", []string{"全聚德"}, "烤鸭店"},
		{"Golden Wok is a restaurant.", []string{"Efes"}, ""},
		{"Efes serves Turkish food.", []string{"Efes"}, ""},
	} {
		if got := extractive.KindIn(tt.text, tt.names); got != tt.want {
			t.Errorf("KindIn(%q, %q) = %q, want %q", tt.text, tt.names, got, tt.want)
		}
	}
	f := memory.FollowUp{Topic: []string{"INXS"}, History: msgs("How did they start?", "INXS were an Australian rock band, formed in Sydney."),
		Question: "Did the band tour?"}
	if got := extractive.RewriteFollowUp(f, nil); got != "Did INXS tour?" {
		t.Errorf("the band, said to be one: %q, want %q", got, "Did INXS tour?")
	}
}
