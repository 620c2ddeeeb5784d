package extractive_test

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/memory"
)

// TestRewriteEllipsisZH: a follow-up that names only what changes becomes
// the previous question with that part swapped, not the fragment with a
// topic in front ("关于乾卦，那九二呢？").
func TestRewriteEllipsisZH(t *testing.T) {
	for _, tt := range []struct {
		name    string
		history []string
		q       string
		vocab   extractive.Vocabulary
		want    string
	}{
		{"line for line", []string{"乾卦的初九爻辞是什么？", "初九：潜龙勿用。"}, "那九二呢？", nil, "乾卦的九二爻辞是什么？"},
		{"the previous question made standalone first",
			[]string{"乾卦的卦辞是什么？", "乾：元亨利贞。", "它的初九爻辞是什么？", "初九：潜龙勿用。"}, "那九二呢？",
			extractive.NameList{"乾卦"}, "乾卦的九二爻辞是什么？"},
		{"a known name for a known name", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "那坤卦呢？",
			extractive.NameList{"乾卦", "坤卦"}, "坤卦的卦辞是什么？"},
		{"the same kind without a vocabulary", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "坤卦呢？", nil, "坤卦的卦辞是什么？"},
		{"names of a kind differ in length", []string{"履卦的卦辞是什么？", "履虎尾，不咥人，亨。"}, "那小畜卦呢？", nil, "小畜卦的卦辞是什么？"},
		{"and back", []string{"小畜卦的卦辞是什么？", "小畜，亨。"}, "履卦呢？", nil, "履卦的卦辞是什么？"},
		{"a bare name takes the subject's classifier", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "那坤呢？", nil, "坤卦的卦辞是什么？"},
		{"the conversation's subject swapped", []string{"北京的人口是多少？", "北京常住人口约两千一百万。"}, "那上海呢？", nil,
			"上海的人口是多少？"},
		{"a line the previous question has no counterpart for", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "那九二呢？", nil,
			"乾卦的九二是什么？"},
		{"a number the previous question has no counterpart for", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "那三次呢？", nil,
			"关于乾卦，那三次呢？"},
		{"a day for a day", []string{"今天天气怎么样？", "今天晴。"}, "明天呢？", nil, "明天天气怎么样？"},
		{"a person for a person", []string{"张三的电话是多少？", "13800000000。"}, "李四的呢？", nil, "李四的电话是多少？"},
		{"an ordinal for an ordinal", []string{"第一章讲什么？", "讲学习。"}, "第二章呢？", nil, "第二章讲什么？"},
		{"a year for a year", []string{"2020年的收入是多少？", "一百万。"}, "2021年呢？", nil, "2021年的收入是多少？"},
		{"a question of its own is not a part", []string{"什么是太极？", "易有太极。"}, "为什么呢？", nil, "关于太极，为什么呢？"},
		{"nor is 然后", []string{"什么是太极？", "易有太极，是生两仪。"}, "然后呢？", nil, "关于太极，然后呢？"},
		{"它 of a part of a hexagram is the hexagram", []string{"“潜龙勿用”出自哪一卦？", "「潜龙勿用」出自乾卦：初九：潛龍勿用。"},
			"它的彖传怎么说？", nil, "乾卦的彖传怎么说？"},
		{"the subject of the last question over older frequent names", []string{
			"乾卦的卦辞是什么？", "乾卦的卦辞是：乾，元亨，利貞（据知识库）。",
			"“潜龙勿用”出自哪一卦？", "「潜龙勿用」出自乾卦：初九：潛龍勿用（据知识库）。",
			"它的彖传怎么说？", "乾卦·彖传上：大哉乾元，万物资始，乃统天（据网络资料）。",
			"什么是太极？", "是故《易》有太极，是生两仪（据知识库、网络资料）。"},
			"它生出什么？", nil, "太极生出什么？"},
		{"an ordinal is not a name", []string{"周易的第一卦是哪一卦？", "第一卦是乾卦，象征天。"}, "它的卦辞是什么？", nil,
			"乾卦的卦辞是什么？"},
		{"a statement is not rewritten", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "我叫李雷，我想学习周易。", nil,
			"我叫李雷，我想学习周易。"},
		{"nor a question about the speaker", []string{"我叫李雷。", "你好，李雷。"}, "我叫什么名字？", nil, "我叫什么名字？"},
	} {
		f := memory.FollowUp{History: msgs(tt.history...), Question: tt.q}
		if got := extractive.RewriteFollowUp(f, tt.vocab); got != tt.want {
			t.Errorf("%s: RewriteFollowUp(%q) = %q, want %q", tt.name, tt.q, got, tt.want)
		}
	}
}
