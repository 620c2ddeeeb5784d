package llm_test

import (
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/prompts"
)

type fuseAnswer struct {
	N          int
	From, Text string
}

// fusionPrompt renders the mix_chat fusion prompt as the mixer does.
func fusionPrompt(t *testing.T, name, question string, answers ...fuseAnswer) llm.Request {
	t.Helper()
	p, err := prompts.Render("mix_chat", name, struct {
		Persona, Question, Standalone, Context string
		Dialog                                 []llm.Message
		Answers                                []fuseAnswer
	}{Persona: "你是周易专家", Question: question, Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	hints := make([]string, len(answers))
	for i, a := range answers {
		hints[i] = a.Text
	}
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: p}}, Question: question, Context: hints}
}

// TestOfflineFusion: the offline model answering the fusion prompt
// composes the answers instead of picking one: what they agree on is said
// once with every source, where they differ the knowledge base leads and
// each part is attributed, refusals are dropped, the model's own
// knowledge goes unattributed.
func TestOfflineFusion(t *testing.T) {
	m := llm.NewOffline(llm.OfflineOptions{})
	tests := []struct {
		name    string
		req     llm.Request
		want    []string // in this order
		exclude []string
	}{
		{
			name: "agree",
			req: fusionPrompt(t, "default", "乾卦的卦辞是什么？",
				fuseAnswer{1, "llm", "乾卦的卦辞是“元亨利贞”。"},
				fuseAnswer{2, "kb", "乾，元亨，利貞[1]。"},
				fuseAnswer{3, "search", "乾：元亨利贞[2]。"}),
			want:    []string{"乾，元亨，利貞（据知识库、网络资料）。"},
			exclude: []string{"[1]", "[2]"},
		},
		{
			name: "differ",
			req: fusionPrompt(t, "default", "李雷的生日是哪天？",
				fuseAnswer{1, "search", "李雷的生日是四月一日[1]。"},
				fuseAnswer{2, "kb", "李雷的生日是三月五日[1]。"}),
			want: []string{"李雷的生日是三月五日（据知识库）。", "李雷的生日是四月一日（据网络资料）。"},
		},
		{
			name: "off the question dropped",
			req: fusionPrompt(t, "default", "乾卦的卦辞是什么？",
				fuseAnswer{1, "kb", "乾卦的卦辞是：乾，元亨，利貞[1]。"},
				fuseAnswer{2, "search", "其於人也，为大腹，为乾卦[1]。"}),
			want:    []string{"乾卦的卦辞是：乾，元亨，利貞（据知识库）。"},
			exclude: []string{"大腹"},
		},
		{
			name: "a quoted passage kept whole",
			req: fusionPrompt(t, "default", "坤卦的彖传怎么说？",
				fuseAnswer{1, "kb", "《彖》曰：至哉坤元！萬物資生，乃順承天。坤厚載物，德合無疆[3]。"},
				fuseAnswer{2, "search", "坤卦·彖传上：至哉坤元，万物资生，乃顺承天[1]。"}),
			want: []string{"《彖》曰：至哉坤元！萬物資生，乃順承天。坤厚載物，德合無疆"},
		},
		{
			name: "the knowledge base's answer kept though it repeats less of the question",
			req: fusionPrompt(t, "default", "乾卦的彖传怎么说？",
				fuseAnswer{1, "kb", "《彖》曰：大哉乾元，萬物資始，乃統天。云行雨施，品物流形[3]。"},
				fuseAnswer{2, "search", "乾卦·彖传上：大哉乾元、万物资始，乃统天[1]。"}),
			want:    []string{"《彖》曰：大哉乾元，萬物資始，乃統天。云行雨施，品物流形（据知识库、网络资料）。"},
			exclude: []string{"彖传上"}, // the web's copy of the same words is said once
		},
		{
			name: "the fuller saying kept",
			req: fusionPrompt(t, "default", "什么是太极？",
				fuseAnswer{1, "kb", "是故《易》有太极，是生两仪[1]。是故《易》有太極，是生兩儀，兩儀生四象，四象生八卦[2]。"},
				fuseAnswer{2, "search", "是故《易》有太极，是生两仪[1]。"}),
			want: []string{"是故《易》有太極，是生兩儀，兩儀生四象，四象生八卦（据知识库、网络资料）。"},
		},
		{
			name: "an English question under the Chinese prompt",
			req: fusionPrompt(t, "default", "Does La Margherita have outdoor seating?",
				fuseAnswer{1, "kb", "It has a large outdoor dining space in its garden [1]."}),
			want:    []string{"It has a large outdoor dining space in its garden (knowledge base)."},
			exclude: []string{"据"},
		},
		{
			name: "the model's echo of an earlier reply left out beside the sources' answer",
			req: fusionPrompt(t, "default", "When does Golden Wok open?",
				fuseAnswer{1, "llm", "It opens at noon every day and closes at 11 pm (knowledge base)."},
				fuseAnswer{2, "kb", "It serves dim sum at lunch and opens at 11 am [1]."}),
			want:    []string{"It serves dim sum at lunch and opens at 11 am (knowledge base)."},
			exclude: []string{"noon"},
		},
		{
			name: "the model's answer kept when no source has one",
			req: fusionPrompt(t, "default", "我叫什么名字？",
				fuseAnswer{1, "llm", "你之前说过：“我叫李雷。”"},
				fuseAnswer{2, "kb", "知识库中没有找到与问题相关的内容。"},
				fuseAnswer{3, "search", "搜索引擎 local 没有找到与问题相关的结果。"}),
			want:    []string{"你之前说过：“我叫李雷。”"},
			exclude: []string{"没有找到"},
		},
		{
			name: "refusal dropped",
			req: fusionPrompt(t, "default", "李雷的生日是哪天？",
				fuseAnswer{1, "kb", "（离线抽取式模型）在已知内容中没有找到与问题相关的信息。"},
				fuseAnswer{2, "search", "李雷的生日是四月一日[1]。"}),
			want:    []string{"李雷的生日是四月一日（据网络资料）。"},
			exclude: []string{"没有找到"},
		},
		{
			name: "english",
			req: fusionPrompt(t, "en", "When is Li Lei's birthday?",
				fuseAnswer{1, "kb", "Li Lei's birthday is March 5 [1]."},
				fuseAnswer{2, "search", "Li Lei's birthday is April 1 [2]."}),
			want: []string{"Li Lei's birthday is March 5 (knowledge base).", "Li Lei's birthday is April 1 (web)."},
		},
	}
	for _, tt := range tests {
		resp := complete(t, m, tt.req)
		got := resp.Text
		at := 0
		for _, w := range tt.want {
			i := strings.Index(got[at:], w)
			if i < 0 {
				t.Errorf("%s: reply %q lacks %q (in order)", tt.name, got, w)
				break
			}
			at += i + len(w)
		}
		for _, x := range tt.exclude {
			if strings.Contains(got, x) {
				t.Errorf("%s: reply %q has %q", tt.name, got, x)
			}
		}
	}
}
