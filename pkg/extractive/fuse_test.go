package extractive_test

import (
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
)

// fusion is the grounding of a fusion: the question and the answers.
func fusion(question string, answers ...llm.Draft) llm.Grounding {
	return llm.Grounding{Question: question, Answers: answers}
}

// TestFusion: given answers to fuse, the model composes the answers instead of picking one: what they agree on is said
// once with every source, where they differ the knowledge base leads and
// each part is attributed, refusals are dropped, the model's own
// knowledge goes unattributed; a sentence is said once whatever its script,
// and each keeps the citation markers of the answers that said it.
func TestFusion(t *testing.T) {
	m := extractive.New(extractive.Options{})
	tests := []struct {
		name    string
		g       llm.Grounding
		want    []string // in this order
		exclude []string
	}{
		{
			name: "agree",
			g: fusion("乾卦的卦辞是什么？",
				llm.Draft{From: "llm", Text: "乾卦的卦辞是“元亨利贞”。"},
				llm.Draft{From: "kb", Text: "乾，元亨，利貞[1]。"},
				llm.Draft{From: "search", Text: "乾：元亨利贞[2]。"}),
			want:    []string{"乾，元亨，利貞[1][2]（据知识库、网络资料）。"},
			exclude: []string{"元亨利贞"},
		},
		{
			name: "differ",
			g: fusion("李雷的生日是哪天？",
				llm.Draft{From: "search", Text: "李雷的生日是四月一日[2]。"},
				llm.Draft{From: "kb", Text: "李雷的生日是三月五日[1]。"}),
			want: []string{"李雷的生日是三月五日[1]（据知识库）。", "李雷的生日是四月一日[2]（据网络资料）。"},
		},
		{
			name: "off the question dropped",
			g: fusion("乾卦的卦辞是什么？",
				llm.Draft{From: "kb", Text: "乾卦的卦辞是：乾，元亨，利貞[1]。"},
				llm.Draft{From: "search", Text: "其於人也，为大腹，为乾卦[1]。"}),
			want:    []string{"乾卦的卦辞是：乾，元亨，利貞[1]（据知识库）。"},
			exclude: []string{"大腹"},
		},
		{
			name: "a quoted passage kept whole",
			g: fusion("坤卦的彖传怎么说？",
				llm.Draft{From: "kb", Text: "《彖》曰：至哉坤元！萬物資生，乃順承天。坤厚載物，德合無疆[3]。"},
				llm.Draft{From: "search", Text: "坤卦·彖传上：至哉坤元，万物资生，乃顺承天[1]。"}),
			want:    []string{"《彖》曰：至哉坤元[1]！萬物資生，乃順承天[1]。坤厚載物，德合無疆[3]"},
			exclude: []string{"万物资生"},
		},
		{
			name: "the knowledge base's answer kept though it repeats less of the question",
			g: fusion("乾卦的彖传怎么说？",
				llm.Draft{From: "kb", Text: "《彖》曰：大哉乾元，萬物資始，乃統天。云行雨施，品物流形[3]。"},
				llm.Draft{From: "search", Text: "乾卦·彖传上：大哉乾元、万物资始，乃统天[1]。"}),
			want:    []string{"《彖》曰：大哉乾元，萬物資始，乃統天[1]。云行雨施，品物流形[3]（据知识库、网络资料）。"},
			exclude: []string{"彖传上"}, // the web's copy of the same words is said once
		},
		{
			name: "the fuller saying kept",
			g: fusion("什么是太极？",
				llm.Draft{From: "kb", Text: "是故《易》有太极，是生两仪[1]。是故《易》有太極，是生兩儀，兩儀生四象，四象生八卦[2]。"},
				llm.Draft{From: "search", Text: "是故《易》有太极，是生两仪[1]。"}),
			want:    []string{"是故《易》有太極，是生兩儀，兩儀生四象，四象生八卦[1][2]（据知识库、网络资料）。"},
			exclude: []string{"是生两仪"},
		},
		{
			name: "one sentence in both scripts said once, in its first form",
			g: fusion("图书馆周末开放吗？",
				llm.Draft{From: "kb", Text: "圖書館週末不開放，平日九點開門[1]。"},
				llm.Draft{From: "search", Text: "图书馆周末不开放，平日九点开门[2]。"}),
			want:    []string{"圖書館週末不開放，平日九點開門[1][2]（据知识库、网络资料）。"},
			exclude: []string{"九点开门"},
		},
		{
			name: "one sentence spanning two of another answer's, in the other script",
			g: fusion("图书馆周末开放吗？",
				llm.Draft{From: "kb", Text: "圖書館週末不開放！平日九點開門。[1]"},
				llm.Draft{From: "search", Text: "图书馆周末不开放，平日九点开门[2]。"}),
			want:    []string{"圖書館週末不開放！平日九點開門[1][2]（据知识库、网络资料）。"},
			exclude: []string{"九点开门"},
		},
		{
			name: "an English question",
			g: fusion("Does La Margherita have outdoor seating?",
				llm.Draft{From: "kb", Text: "It has a large outdoor dining space in its garden [1]."}),
			want:    []string{"It has a large outdoor dining space in its garden [1] (knowledge base)."},
			exclude: []string{"据"},
		},
		{
			name: "the model's echo of an earlier reply left out beside the sources' answer",
			g: fusion("When does Golden Wok open?",
				llm.Draft{From: "llm", Text: "It opens at noon every day and closes at 11 pm (knowledge base)."},
				llm.Draft{From: "kb", Text: "It serves dim sum at lunch and opens at 11 am [1]."}),
			want:    []string{"It serves dim sum at lunch and opens at 11 am [1] (knowledge base)."},
			exclude: []string{"noon"},
		},
		{
			name: "the model's answer kept when no source has one",
			g: fusion("我叫什么名字？",
				llm.Draft{From: "llm", Text: "你之前说过：“我叫李雷。”"},
				llm.Draft{From: "kb", Text: "知识库中没有找到与问题相关的内容。"},
				llm.Draft{From: "search", Text: "搜索引擎 local 没有找到与问题相关的结果。"}),
			want:    []string{"你之前说过：“我叫李雷。”"},
			exclude: []string{"没有找到"},
		},
		{
			name: "refusal dropped",
			g: fusion("李雷的生日是哪天？",
				llm.Draft{From: "kb", Text: "（离线抽取式模型）在已知内容中没有找到与问题相关的信息。"},
				llm.Draft{From: "search", Text: "李雷的生日是四月一日[1]。"}),
			want:    []string{"李雷的生日是四月一日[1]（据网络资料）。"},
			exclude: []string{"没有找到"},
		},
		{
			name: "an answer marked as a refusal dropped, whatever its words",
			g: fusion("李雷的生日是哪天？",
				llm.Draft{From: "kb", Text: "李雷的生日不在这里。", Refusal: true},
				llm.Draft{From: "search", Text: "李雷的生日是四月一日[1]。"}),
			want:    []string{"李雷的生日是四月一日[1]（据网络资料）。"},
			exclude: []string{"不在这里"},
		},
		{
			name: "english",
			g: fusion("When is Li Lei's birthday?",
				llm.Draft{From: "kb", Text: "Li Lei's birthday is March 5 [1]."},
				llm.Draft{From: "search", Text: "Li Lei's birthday is April 1 [2]."}),
			want: []string{"Li Lei's birthday is March 5 [1] (knowledge base).", "Li Lei's birthday is April 1 [2] (web)."},
		},
	}
	for _, tt := range tests {
		resp := ask(t, m, tt.g)
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
