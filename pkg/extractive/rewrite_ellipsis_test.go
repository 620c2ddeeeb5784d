package extractive_test

import (
	"os"
	"testing"

	"github.com/mixchat/mixchat/pkg/docstruct"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/memory"
)

// TestRewriteEllipsisZH: a follow-up that names only what changes becomes
// the previous question with that part swapped, not the fragment with a
// topic in front ("关于乾卦，那九二呢？"); after a topic change, the last
// question asked of the new subject, never two questions glued together.
func TestRewriteEllipsisZH(t *testing.T) {
	zy := zhouyi(t)
	for _, tt := range []struct {
		name    string
		history []string
		q       string
		vocab   extractive.Vocabulary
		want    string
	}{
		// With the demo's profile: its classifier, its positions and its
		// kinds of parts, as data.
		{"line for line", []string{"乾卦的初九爻辞是什么？", "初九：潜龙勿用。"}, "那九二呢？", zy, "乾卦的九二爻辞是什么？"},
		{"the previous question made standalone first",
			[]string{"乾卦的卦辞是什么？", "乾：元亨利贞。", "它的初九爻辞是什么？", "初九：潜龙勿用。"}, "那九二呢？",
			zhouyi(t, "乾卦"), "乾卦的九二爻辞是什么？"},
		{"a known name for a known name", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "那坤卦呢？",
			zhouyi(t, "乾卦", "坤卦"), "坤卦的卦辞是什么？"},
		{"the same kind without names", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "坤卦呢？", zy, "坤卦的卦辞是什么？"},
		{"the same kind without a vocabulary", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "坤卦呢？", nil, "坤卦的卦辞是什么？"},
		{"names of a kind differ in length", []string{"履卦的卦辞是什么？", "履虎尾，不咥人，亨。"}, "那小畜卦呢？", zy, "小畜卦的卦辞是什么？"},
		{"and back", []string{"小畜卦的卦辞是什么？", "小畜，亨。"}, "履卦呢？", zy, "履卦的卦辞是什么？"},
		{"a bare name takes the subject's classifier", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "那坤呢？", zy, "坤卦的卦辞是什么？"},
		{"a bare name that is also a document's", []string{"小畜卦的卦辞是什么？", "小畜，亨。"}, "那履呢？",
			zhouyiDocs(t, docstruct.Title{Title: "彖传上-履", Aliases: []string{"履"}}, docstruct.Title{Title: "象传上-小畜", Aliases: []string{"小畜"}}),
			"履卦的卦辞是什么？"},
		{"a name before the classifier is no document", []string{"同人卦的卦辞是什么？", "同人，同人于野。"}, "那九五呢？",
			zhouyiDocs(t, docstruct.Title{Title: "彖传上-同人", Aliases: []string{"同人"}}, docstruct.Title{Title: "象传上-同人", Aliases: []string{"同人"}}),
			"同人卦的九五是什么？"},
		{"a position the previous question has no counterpart for", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "那九二呢？", zy,
			"乾卦的九二是什么？"},
		{"a new subject after a topic change asks the last question of it",
			[]string{"乾卦的卦辞是什么？", "乾：元亨利贞。", "什么是太极？", "易有太极，是生两仪。"}, "那坤卦呢？", zy, "什么是坤卦？"},
		{"and without the profile", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。", "什么是太极？", "易有太极，是生两仪。"}, "那坤卦呢？", nil,
			"什么是坤卦？"},
		{"a position after a topic change is of the part addressed last",
			[]string{"乾卦的卦辞是什么？", "乾：元亨利贞。", "什么是太极？", "易有太极，是生两仪。"}, "那九二呢？", zy, "乾卦的九二是什么？"},
		{"a number the previous question has no counterpart for", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "那三次呢？", zy,
			"关于乾卦，那三次呢？"},
		{"它 of a part the profile names is a thing named with its classifier", []string{"“潜龙勿用”出自哪一卦？", "「潜龙勿用」出自乾卦：初九：潛龍勿用。"},
			"它的彖传怎么说？", zy, "乾卦的彖传怎么说？"},
		{"the subject of the last question over older frequent names", []string{
			"乾卦的卦辞是什么？", "乾卦的卦辞是：乾，元亨，利貞（据知识库）。",
			"“潜龙勿用”出自哪一卦？", "「潜龙勿用」出自乾卦：初九：潛龍勿用（据知识库）。",
			"它的彖传怎么说？", "乾卦·彖传上：大哉乾元，万物资始，乃统天（据网络资料）。",
			"什么是太极？", "是故《易》有太极，是生两仪（据知识库、网络资料）。"},
			"它生出什么？", zy, "太极生出什么？"},
		{"an ordinal is not a name", []string{"周易的第一卦是哪一卦？", "第一卦是乾卦，象征天。"}, "它的卦辞是什么？", zy,
			"乾卦的卦辞是什么？"},
		// Without a profile.
		{"the conversation's subject swapped", []string{"北京的人口是多少？", "北京常住人口约两千一百万。"}, "那上海呢？", nil,
			"上海的人口是多少？"},
		{"a day for a day", []string{"今天天气怎么样？", "今天晴。"}, "明天呢？", nil, "明天天气怎么样？"},
		{"a person for a person", []string{"张三的电话是多少？", "13800000000。"}, "李四的呢？", nil, "李四的电话是多少？"},
		{"an ordinal for an ordinal", []string{"第一章讲什么？", "讲学习。"}, "第二章呢？", nil, "第二章讲什么？"},
		{"a year for a year", []string{"2020年的收入是多少？", "一百万。"}, "2021年呢？", nil, "2021年的收入是多少？"},
		{"a question of its own is not a part", []string{"什么是太极？", "易有太极。"}, "为什么呢？", nil, "关于太极，为什么呢？"},
		{"nor is 然后", []string{"什么是太极？", "易有太极，是生两仪。"}, "然后呢？", nil, "关于太极，然后呢？"},
		{"a statement is not rewritten", []string{"乾卦的卦辞是什么？", "乾：元亨利贞。"}, "我叫李雷，我想学习周易。", zy,
			"我叫李雷，我想学习周易。"},
		{"nor a question about the speaker", []string{"我叫李雷。", "你好，李雷。"}, "我叫什么名字？", nil, "我叫什么名字？"},
	} {
		f := memory.FollowUp{History: msgs(tt.history...), Question: tt.q}
		if got := extractive.RewriteFollowUp(f, tt.vocab); got != tt.want {
			t.Errorf("%s: RewriteFollowUp(%q) = %q, want %q", tt.name, tt.q, got, tt.want)
		}
	}
}

// zhouyi is a vocabulary knowing names and the demo's profile.
func zhouyi(t testing.TB, names ...string) *extractive.Catalog {
	t.Helper()
	f, err := os.Open("../../demo/zhouyi/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := docstruct.LoadProfile(f)
	if err != nil {
		t.Fatal(err)
	}
	return &extractive.Catalog{Names: names, Known: docstruct.Known{Profile: p}}
}

// zhouyiDocs is zhouyi knowing the documents titles too.
func zhouyiDocs(t testing.TB, titles ...docstruct.Title) *extractive.Catalog {
	c := zhouyi(t)
	c.Known.Titles = titles
	return c
}
