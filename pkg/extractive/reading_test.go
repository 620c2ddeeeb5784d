package extractive_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
)

// kbEvidence loads a document of testdata as a knowledge base would and
// gives its chunks as the evidence, each under its section path.
func kbEvidence(t *testing.T, name string) []llm.Evidence {
	t.Helper()
	return fileEvidence(t, filepath.Join("testdata", filepath.FromSlash(name)))
}

// TestReadingAnswersTheQuestionAsked: a table of conditions answers the
// row whose condition holds; a list item comes without its marker and
// without its neighbours; a yes/no question gets a yes or a no when the
// chosen sentence settles it, and none when it does not.
func TestReadingAnswersTheQuestionAsked(t *testing.T) {
	tests := []struct {
		doc, q   string
		prefix   string // the reply starts with it ("" for no check)
		contains []string
		excludes []string
	}{
		{"holiday-policy.md", "入职满5年的员工每年有多少天年假？", "", []string{"16天"}, []string{"12天", "20天"}},
		{"holiday-policy.md", "入职满3年的员工有几天年假？", "", []string{"12天"}, []string{"16天", "20天"}},
		{"holiday-policy.md", "入职满12年的员工有多少天年假？", "", []string{"20天"}, []string{"12天", "16天", "满1年后"}},
		{"holiday-policy.md", "年假需要提前几天申请？", "年假需至少提前3个工作日", nil, []string{"- ", "3月31日", "满1年后"}},
		{"holiday-policy.md", "病假需要提供证明吗？", "需要。", []string{"病假证明"}, nil},
		{"holiday-policy.md", "周日加班有加班费吗？", "有。", []string{"200%"}, nil},
		{"group-dining.md", "Is a deposit needed for groups over 8?", "", []string{"20% of the bill"}, []string{"None"}},
		{"group-dining.md", "What menu do you serve for parties under 6?", "", []string{"À la carte"}, []string{"Set menu only"}},
		{"group-dining.md", "Are pets allowed in the dining room?", "No. Pets are not allowed", nil, []string{"1."}},
		{"group-dining.md", "Is there free parking?", "Yes. Free parking is available", nil, nil},
		{"group-dining.md", "Is the kitchen open late on public holidays?", "", nil, []string{"Yes.", "No."}},
		{"group-dining.md", "Can you tell me what time the kitchen closes on Sundays?", "The kitchen closes at 22:00 on Sundays", nil, []string{"Yes.", "No."}},
		{"group-dining.md", "Can you tell me if pets are allowed in the dining room?", "No. Pets are not allowed", nil, nil},
	}
	m := extractive.New(extractive.Options{})
	for _, tt := range tests {
		resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: kbEvidence(t, tt.doc)})
		t.Logf("%s → %s", tt.q, resp.Text)
		if !strings.HasPrefix(resp.Text, tt.prefix) {
			t.Errorf("%s: reply %q does not start with %q", tt.q, resp.Text, tt.prefix)
		}
		for _, s := range tt.contains {
			if !strings.Contains(resp.Text, s) {
				t.Errorf("%s: reply %q lacks %q", tt.q, resp.Text, s)
			}
		}
		for _, s := range tt.excludes {
			if strings.Contains(resp.Text, s) {
				t.Errorf("%s: reply %q has %q", tt.q, resp.Text, s)
			}
		}
	}
}

// TestReadingFAQPairs: an FAQ's question (a pair as the knowledge base
// writes it) is never the reply; its answer is, without its marker, with a
// yes or a no when the question asks for one and the answer settles it.
func TestReadingFAQPairs(t *testing.T) {
	ev := []llm.Evidence{
		{ID: 1, Path: "Hotel > FAQ", Text: "Q: What is the cost of WiFi at your location?\nA: WiFi is free for all guests.", From: "kb"},
		{ID: 2, Path: "Hotel > FAQ", Text: "Q: Do you allow pets?\nA: Pets are not allowed at the hotel.", From: "kb"},
		{ID: 3, Path: "酒店 > 常见问题", Text: "问：酒店有停车场吗？\n答：酒店设有地下停车场，住客免费停车。", From: "kb"},
		{ID: 4, Path: "酒店 > 常见问题", Text: "问：可以带宠物入住吗？\n答：酒店不接受宠物入住。", From: "kb"},
	}
	tests := []struct{ q, want string }{
		{"How much is the WiFi at your location?", "WiFi is free for all guests [1]."},
		{"Are pets allowed?", "No. Pets are not allowed at the hotel [2]."},
		{"酒店有停车场吗？", "有。酒店设有地下停车场，住客免费停车[3]。"},
		{"能带宠物入住吗？", "不能。酒店不接受宠物入住[4]。"},
	}
	m := extractive.New(extractive.Options{})
	for _, tt := range tests {
		resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: ev})
		if resp.Text != tt.want {
			t.Errorf("%s: reply %q, want %q", tt.q, resp.Text, tt.want)
		}
		if strings.Contains(resp.Text, "?") || strings.Contains(resp.Text, "？") {
			t.Errorf("%s: reply %q quotes a question", tt.q, resp.Text)
		}
	}
}

// TestReadingFAQFiles asks the FAQ file of each format the knowledge base
// reads (pkg/kb's fixtures): the reply is the pair's answer, never its
// question.
func TestReadingFAQFiles(t *testing.T) {
	tests := []struct{ file, q, want string }{
		{"faq.md", "Is parking available for members?", "Yes, members park free of charge in the east garage"},
		{"faq.md", "会员卡丢了怎么办？", "请携带身份证到前台补办"},
		{"faq.md", "How can I renew my membership?", "Renew at the front desk"},
		{"faq.md", "Do you offer lockers?", "Yes. Lockers are available on the second floor"},
		{"faq.csv", "How do I reset my password?", "Forgot password"},
		{"faq-noheader.csv", "年假可以跨年使用吗？", "可以，未休完的年假可延至次年三月底"},
		{"faq.json", "How long does delivery take?", "Delivery takes two to four working days"},
		{"faq.jsonl", "如何修改收货地址？", "在订单详情页点击修改地址即可"},
	}
	m := extractive.New(extractive.Options{})
	for _, tt := range tests {
		resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: kbEvidence(t, "../../kb/testdata/faq/"+tt.file)})
		if !strings.Contains(resp.Text, tt.want) || strings.ContainsAny(resp.Text, "?？") {
			t.Errorf("%s: %s → %q, want the answer %q and no question", tt.file, tt.q, resp.Text, tt.want)
		}
	}
}
