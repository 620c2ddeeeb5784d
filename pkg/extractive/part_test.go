package extractive_test

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
)

// part is evidence retrieval found as the part a question addresses.
func part(id int, path, text string) llm.Evidence {
	return llm.Evidence{ID: id, Path: path, Text: text, From: "kb", Match: rag.MatchPart}
}

// TestAddressedPart: the part retrieval resolved is the reply from its
// label on (its heading kept, list markers dropped), quoted from its start,
// whatever the similarity of other passages to the question.
func TestAddressedPart(t *testing.T) {
	m := extractive.New(extractive.Options{})
	law := part(1, "劳动法 > 第四章 工作时间和休息休假 > 第三十六条",
		"第三十六条 国家实行劳动者每日工作时间不超过八小时、平均每周工作时间不超过四十四小时的工时制度。")
	cites := chunk(2, "劳动法 > 第四章 工作时间和休息休假 > 第四十一条\n第四十一条 用人单位由于生产经营需要，经与工会和劳动者协商后可以延长工作时间，但不得违反本法第三十六条规定的工时制度。")
	amend := part(1, "United States Constitution > Amendments > Amendment IV",
		"The right of the people to be secure in their persons, houses, papers, and effects, against unreasonable searches and seizures, shall not be violated, and no Warrants shall issue, but upon probable cause, supported by Oath or affirmation, and particularly describing the place to be searched, and the persons or things to be seized.")
	heading := part(1, "United States Constitution > Amendments > Amendment IV",
		"### Amendment IV\n- The right of the people to be secure in their persons, houses, papers, and effects, against unreasonable searches and seizures, shall not be violated.")
	lunyu := part(3, "论语 > 学而篇第一 > 1.3", "1.3 子曰：“巧言令色，鲜矣仁！”")
	article := part(1, "United States Constitution > Article I",
		"## Article I\n### Section 1\nAll legislative Powers herein granted shall be vested in a Congress of the United States, which shall consist of a Senate and House of Representatives.\n### Section 2\nThe House of Representatives shall be composed of Members chosen every second Year.")
	chapter := part(1, "论语 > 学而篇第一",
		"1.1 子曰：“学而时习之，不亦说乎？有朋自远方来，不亦乐乎？人不知而不愠，不亦君子乎？”\n1.2 有子曰：“其为人也孝弟，而好犯上者，鲜矣；不好犯上而好作乱者，未之有也。君子务本，本立而道生。孝弟也者，其为仁之本与！”")
	section8 := part(1, "United States Constitution > Article I > Section 8",
		"The Congress shall have Power To lay and collect Taxes, Duties, Imposts and Excises, to pay the Debts and provide for the common Defence and general Welfare of the United States; but all Duties, Imposts and Excises shall be uniform throughout the United States;\n- To borrow Money on the credit of the United States;\n- To regulate Commerce with foreign Nations, and among the several States, and with the Indian Tribes;\n- To establish Post Offices and post Roads;")
	pay := part(1, "劳动法 > 第四章 工作时间和休息休假 > 第四十四条",
		"第四十四条 有下列情形之一的，用人单位应当按照下列标准支付高于劳动者正常工作时间工资的工资报酬：\n（一）安排劳动者延长工作时间的，支付不低于工资的百分之一百五十的工资报酬；\n（二）休息日安排劳动者工作又不能安排补休的，支付不低于工资的百分之二百的工资报酬；\n（三）法定休假日安排劳动者工作的，支付不低于工资的百分之三百的工资报酬。")
	numbered := part(1, "United States Constitution > Amendments > Amendment XIII",
		"1. Neither slavery nor involuntary servitude, except as a punishment for crime whereof the party shall have been duly convicted, shall exist within the United States, or any place subject to their jurisdiction.\n2. Congress shall have power to enforce this article by appropriate legislation.")
	plainHeading := part(2, "论语 > 学而篇第一", "学而篇第一\n\n1.1 子曰：“学而时习之，不亦说乎？”\n\n1.2 有子曰：“其为人也孝弟。”")
	tests := []struct {
		name string
		ev   []llm.Evidence
		q    string
		want string
	}{
		{"labelled paragraph", []llm.Evidence{law, cites}, "劳动法第三十六条规定了什么？",
			"第三十六条 国家实行劳动者每日工作时间不超过八小时、平均每周工作时间不超过四十四小时的工时制度[1]。"},
		{"heading from the path", []llm.Evidence{amend}, "What is Amendment IV?",
			"Amendment IV: The right of the people to be secure in their persons, houses, papers, and effects, against unreasonable searches and seizures, shall not be violated, and no Warrants shall issue, but upon probable cause, supported by Oath or affirmation, and particularly describing the place to be searched, and the persons or things to be seized [1]."},
		{"heading in the text, list marker", []llm.Evidence{heading}, "What does the Fourth Amendment say?",
			"Amendment IV: The right of the people to be secure in their persons, houses, papers, and effects, against unreasonable searches and seizures, shall not be violated [1]."},
		{"dotted label", []llm.Evidence{lunyu}, "《论语》1.3是什么？", "1.3 子曰：“巧言令色，鲜矣仁[3]！”"},
		{"part with sections", []llm.Evidence{article}, "What does Article I say?",
			"Article I, Section 1: All legislative Powers herein granted shall be vested in a Congress of the United States, which shall consist of a Senate and House of Representatives [1]."},
		{"the part's opening, then what is asked within it", []llm.Evidence{section8}, "What does Article I, Section 8 say about post offices?",
			"Section 8: The Congress shall have Power To lay and collect Taxes, Duties, Imposts and Excises, to pay the Debts and provide for the common Defence and general Welfare of the United States; … To establish Post Offices and post Roads [1]."},
		{"the part's opening only, when it says it all", []llm.Evidence{section8}, "What does Article I, Section 8 say?",
			"Section 8: The Congress shall have Power To lay and collect Taxes, Duties, Imposts and Excises, to pay the Debts and provide for the common Defence and general Welfare of the United States [1]."},
		{"a short part whole, items included", []llm.Evidence{pay}, "劳动法第四十四条中法定休假日工作的工资是多少？",
			"第四十四条 有下列情形之一的，用人单位应当按照下列标准支付高于劳动者正常工作时间工资的工资报酬：\n（一）安排劳动者延长工作时间的，支付不低于工资的百分之一百五十的工资报酬；\n（二）休息日安排劳动者工作又不能安排补休的，支付不低于工资的百分之二百的工资报酬；\n（三）法定休假日安排劳动者工作的，支付不低于工资的百分之三百的工资报酬[1]。"},
		{"numbered items: the number stays with its text", []llm.Evidence{numbered}, "What is Amendment XIII?",
			"Amendment XIII: 1. Neither slavery nor involuntary servitude, except as a punishment for crime whereof the party shall have been duly convicted, shall exist within the United States, or any place subject to their jurisdiction [1]."},
		{"a heading line without Markdown", []llm.Evidence{plainHeading}, "论语学而篇是什么？",
			"学而篇第一：1.1 子曰：“学而时习之，不亦说乎[2]？”"},
		{"long part from its start", []llm.Evidence{chapter}, "学而篇是什么？",
			"学而篇第一：1.1 子曰：“学而时习之，不亦说乎？有朋自远方来，不亦乐乎？人不知而不愠，不亦君子乎[1]？”"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: tt.ev})
			if resp.Text != tt.want || resp.NothingFound {
				t.Errorf("%s\n got %q (nothing found %v)\nwant %q", tt.q, resp.Text, resp.NothingFound, tt.want)
			}
		})
	}
}

// TestAbsentPart: the statement that the addressed part does not exist is
// the reply, and nothing else; it answers the question (not NothingFound).
func TestAbsentPart(t *testing.T) {
	m := extractive.New(extractive.Options{})
	tests := []struct{ q, statement string }{
		{"What does Article IX say?", "United States Constitution has no Article IX; its articles run from I to VII."},
		{"劳动法第一百零八条是什么？", "《劳动法》没有第一百零八条，它的条从第一条到第一百零七条。"},
	}
	for _, tt := range tests {
		ev := []llm.Evidence{{ID: 1, Text: tt.statement, From: "kb", Match: rag.MatchAbsent}}
		resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: ev})
		if resp.Text != tt.statement || resp.NothingFound {
			t.Errorf("%s → %q (nothing found %v), want %q", tt.q, resp.Text, resp.NothingFound, tt.statement)
		}
	}
}
