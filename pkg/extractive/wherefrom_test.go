package extractive_test

import (
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
)

// TestWhereFrom: a question for the source of a passage is answered with
// the document and the part path that hold it, at the level asked (the
// book, the chapter, the section), from the evidence's section paths and
// the line's own label; never by the passage alone, never as something the
// user said.
func TestWhereFrom(t *testing.T) {
	m := extractive.New(extractive.Options{})
	lunyu := []llm.Evidence{
		chunk(1, "lunyu > 论语 > 学而篇第一\n1.1 子曰：“学而时习之，不亦说乎？有朋自远方来，不亦乐乎？人不知而不愠，不亦君子乎？”\n1.3 子曰：“巧言令色，鲜矣仁！”"),
		chunk(2, "lunyu > 论语 > 为政篇第二\n2.1 子曰：“为政以德，譬如北辰，居其所而众星共之。”"),
	}
	law := []llm.Evidence{
		chunk(1, "劳动法 > 第四章 工作时间和休息休假\n第三十六条 国家实行劳动者每日工作时间不超过八小时、平均每周工作时间不超过四十四小时的工时制度。\n第三十八条 用人单位应当保证劳动者每周至少休息一日。"),
	}
	usc := []llm.Evidence{
		chunk(1, "us-constitution > United States Constitution > Article I > Section 8\n- To raise and support Armies, but no Appropriation of Money to that Use shall be for a longer Term than two Years;"),
		chunk(2, "us-constitution > United States Constitution > Amendments > Amendment XXVI\n1. The right of citizens of the United States, who are eighteen years of age or older, to vote shall not be denied or abridged by the United States or by any State on account of age."),
	}
	headings := []llm.Evidence{
		chunk(1, "us-constitution > United States Constitution > Article I\n### Section 1\nAll legislative Powers herein granted shall be vested in a Congress of the United States.\n### Section 2\nThe House of Representatives shall be composed of Members chosen every second Year."),
	}
	split := []llm.Evidence{
		chunk(1, "lunyu > 论语 > 学而篇第一\n1.15 子贡曰：“贫而无谄，富而无骄，何如？”\n子曰：“赐也，始可与言《诗》已矣，告诸往而知来者。”"),
	}
	tests := []struct {
		name string
		ev   []llm.Evidence
		hist []llm.Message
		q    string
		want string
	}{
		{"anywhere: path and label", lunyu, nil, "「人不知而不愠」出自哪里？", "「人不知而不愠」出自《论语》学而篇第一 1.1：人不知而不愠，不亦君子乎[1]？”"},
		{"the chapter", lunyu, nil, "「居其所而众星共之」出自哪一篇？", "「居其所而众星共之」出自为政篇第二：2.1 子曰：“为政以德，譬如北辰，居其所而众星共之[2]。”"},
		{"the book", lunyu, nil, "“巧言令色”出自哪一部书？", "「巧言令色」出自《论语》：1.3 子曰：“巧言令色，鲜矣仁[1]！”"},
		{"unquoted, this sentence", lunyu, nil, "巧言令色，鲜矣仁这句话出自哪一篇？", "「巧言令色，鲜矣仁」出自学而篇第一：1.3 子曰：“巧言令色，鲜矣仁[1]！”"},
		{"the article", law, nil, "「每周至少休息一日」出自哪一条？", "「每周至少休息一日」出自第三十八条：第三十八条 用人单位应当保证劳动者每周至少休息一日[1]。"},
		{"the chapter of a law", law, nil, "「每周至少休息一日」出自哪一章？", "「每周至少休息一日」出自第四章 工作时间和休息休假：第三十八条 用人单位应当保证劳动者每周至少休息一日[1]。"},
		{"which section", usc, nil, "Which section says \"but no Appropriation of Money to that Use\"?",
			"\"but no Appropriation of Money to that Use\" is in United States Constitution, Article I, Section 8: To raise and support Armies, but no Appropriation of Money to that Use shall be for a longer Term than two Years [1]."},
		{"which amendment, unquoted", usc, nil, "Which amendment says that the right of citizens of the United States, who are eighteen years of age or older, to vote shall not be denied?",
			"\"the right of citizens of the United States, who are eighteen years of age or older, to vote shall not be denied\" is in United States Constitution, Amendments, Amendment XXVI: The right of citizens of the United States, who are eighteen years of age or older, to vote shall not be denied or abridged by the United States or by any State on account of age [2]."},
		{"headings in the chunk", headings, nil, "Which section says \"composed of Members chosen\"?",
			"\"composed of Members chosen\" is in United States Constitution, Article I, Section 2: The House of Representatives shall be composed of Members chosen every second Year [1]."},
		{"a paragraph the chunk's lines split", split, nil, "「告诸往而知来者」出自哪里？",
			"「告诸往而知来者」出自《论语》学而篇第一 1.15：子曰：“赐也，始可与言《诗》已矣，告诸往而知来者[1]。”"},
		{"said before by the user, not in the evidence", lunyu, dialog("我很喜欢「温故而知新」这句话。", "好的。"), "「温故而知新」出自哪里？", nothingZH},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: tt.ev, History: tt.hist})
			if resp.Text != tt.want {
				t.Errorf("%s\n got %q\nwant %q", tt.q, resp.Text, tt.want)
			}
			if strings.Contains(resp.Text, "你之前说过") || strings.Contains(resp.Text, "You said") {
				t.Errorf("%s → %q: a passage's source is never what the user said", tt.q, resp.Text)
			}
		})
	}
}
