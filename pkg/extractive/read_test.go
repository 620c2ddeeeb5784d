package extractive_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
)

// The knowledge-base answerer's evidence: numbered chunks under their
// section paths (two of the traditional text, one commentary file).
var zhouyiChunks = []llm.Evidence{
	chunk(1, "zhouyi > 《易經》第二卦坤 坤為地 坤上坤下\n《易經》第二卦坤 坤為地 坤上坤下\n坤，元亨，利牝馬之貞。君子有攸往，先迷后得主。\n《彖》曰：至哉坤元！萬物資生，乃順承天。\n《象》曰：地勢坤，君子以厚德載物。\n初六：履霜，堅冰至。\n《象》曰：履霜堅冰，陰始凝也。\n六二：直，方，大，不習無不利。"),
	chunk(2, "zhouyi > 《易經》第四卦蒙山水蒙艮上坎下\n蒙，亨。匪我求童蒙，童蒙求我。\n《彖》曰：蒙，山下有險，險而止，蒙。\n《象》曰：山下出泉，蒙。君子以果行育德。\n初六：發蒙，利用刑人，用說桎梏，以往吝。"),
	chunk(3, "象传上-屯\n云雷，屯；君子以经纶。\n虽磐桓，志行正也。"),
}

// TestReadsStructure: asked for a part of a hexagram or for the
// source of a quoted phrase, the model answers with that part
// (simplified question, traditional text), cites its chunk and never
// answers with a heading.
func TestReadsStructure(t *testing.T) {
	m := withDemoProfile(t, extractive.Options{})
	tests := []struct{ q, want string }{
		{"坤卦的卦辞是什么？", "坤，元亨，利牝馬之貞。君子有攸往，先迷后得主[1]。"},
		{"坤卦的六二爻辞是什么？", "六二：直，方，大，不習無不利[1]。"},
		{"坤卦第一爻是什么？", "初六：履霜，堅冰至[1]。"},
		{"蒙卦的大象传是什么？", "《象》曰：山下出泉，蒙。君子以果行育德[2]。"},
		{"坤卦的彖传是什么？", "《彖》曰：至哉坤元！萬物資生，乃順承天[1]。"},
		{"屯卦的象传是什么？", "云雷，屯；君子以经纶[3]。"},
		{"「利用刑人」出自哪一卦？", "「利用刑人」出自蒙卦（《易經》第四卦蒙山水蒙艮上坎下）：初六：發蒙，利用刑人，用說桎梏，以往吝[2]。"},
		{"“履霜坚冰”出自哪里？", "「履霜坚冰」出自《zhouyi》坤卦（《易經》第二卦坤 坤為地 坤上坤下）：初六：履霜，堅冰至[1]。"},
		{"蒙卦是什么？", "《易經》第四卦蒙山水蒙艮上坎下\n蒙，亨。匪我求童蒙，童蒙求我[2]。"},
		{"「潜龙勿用」出自哪一卦？", nothingZH},                                                   // not in the context: no sentence sharing 出自
		{"利用刑人用说桎梏出自哪一卦？", "「利用刑人用说桎梏」出自蒙卦（《易經》第四卦蒙山水蒙艮上坎下）：初六：發蒙，利用刑人，用說桎梏，以往吝[2]。"}, // unquoted
	}
	expectReplies(t, m, zhouyiChunks, tests)
}

// expectReplies asks m each question over the evidence ev and checks the
// replies.
func expectReplies(t *testing.T, m *extractive.Model, ev []llm.Evidence, tests []struct{ q, want string }) {
	t.Helper()
	for _, tt := range tests {
		resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: ev})
		if resp.Text != tt.want {
			t.Errorf("%s → %q, want %q", tt.q, resp.Text, tt.want)
		}
	}
}

// TestOfflineLineOfTheAskedHexagram: a line named with the wrong number
// ("坤卦的九二": 坤's second line is 六二) is answered with the line at that
// place, saying so; a line the hexagram's chunks lack is not answered with
// another hexagram's line of that name.
func TestLineOfTheAskedHexagram(t *testing.T) {
	m := withDemoProfile(t, extractive.Options{})
	ctx := []llm.Evidence{
		zhouyiChunks[0],
		chunk(2, "zhouyi > 《易經》第十九卦臨 地澤臨 坤上兌下\n九二：咸臨，吉無不利。\n《象》曰：咸臨吉無不利，未順命也。\n六五：知臨，大君之宜，吉。"),
	}
	expectReplies(t, m, ctx, []struct{ q, want string }{
		{"坤卦的九二爻辞是什么？", "坤卦没有九二，这一爻是六二：直，方，大，不習無不利[1]。"},
		{"坤卦九二的爻辞是什么？", "坤卦没有九二，这一爻是六二：直，方，大，不習無不利[1]。"},
		{"坤卦的六五爻辞是什么？", nothingZH},
		{"临卦的九二爻辞是什么？", "九二：咸臨，吉無不利[2]。"},
	})
}

// TestOfflinePartFromPlainPages: from pages without the Zhouyi's layout
// (search results), a question for a named part of a hexagram is answered
// only by a sentence that can be that part, never by one that merely names
// the hexagram.
func TestPartFromPlainPages(t *testing.T) {
	m := withDemoProfile(t, extractive.Options{})
	pages := []llm.Evidence{
		chunk(1, "周易·说卦传\n离为火、为日、为电。其於人也，为大腹，为乾卦。"),
		chunk(2, "易学入门\n乾卦象征天，刚健不息。"),
	}
	withAnswer := append(slices.Clone(pages), chunk(3, "读易笔记\n乾卦的卦辞是“元亨利贞”，讲的是天道。"))
	for _, tt := range []struct {
		q    string
		ctx  []llm.Evidence
		want string
	}{
		{"乾卦的卦辞是什么？", pages, nothingZH},
		{"乾卦的卦辞是什么？", withAnswer, "乾卦的卦辞是“元亨利贞”，讲的是天道[3]。"},
		{"乾卦象征什么？", pages, "乾卦象征天，刚健不息[2]。"},
		{"坤卦的彖传怎么说？", []llm.Evidence{chunk(1, "周易·彖传上\n乾卦·彖传上：大哉乾元，万物资始，乃统天。")}, nothingZH}, // another hexagram's part
		{"坤卦的彖传怎么说？", []llm.Evidence{chunk(1, "周易·彖传上\n坤卦·彖传上：至哉坤元，万物资生，乃顺承天。")}, "坤卦·彖传上：至哉坤元，万物资生，乃顺承天[1]。"},
	} {
		resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: tt.ctx})
		if resp.Text != tt.want {
			t.Errorf("%s (%d pages) → %q, want %q", tt.q, len(tt.ctx), resp.Text, tt.want)
		}
	}
}

// TestOfflineNoFragments: a reply does not give a clause that another of
// its sentences holds whole, and does not end at a clause mark.
func TestNoFragments(t *testing.T) {
	m := withDemoProfile(t, extractive.Options{})
	ctx := []llm.Evidence{
		chunk(1, "象传上-乾\n天行健；君子以自强不息。"),
		chunk(2, "zhouyi > 《易經》第一卦乾 乾為天 乾上乾下\n《象》曰：天行健，君子以自強不息。"),
	}
	resp := ask(t, m, llm.Grounding{Question: "天行健是什么意思？", Evidence: ctx})
	if want := "《象》曰：天行健，君子以自強不息[2]。"; !strings.Contains(resp.Text, want) || strings.HasPrefix(resp.Text, "天行健[1]") ||
		strings.HasSuffix(resp.Text, "；") {
		t.Errorf("天行健是什么意思？ → %q, want it to hold %q, not the fragment 天行健[1]; and to end a sentence", resp.Text, want)
	}
	resp = ask(t, m, llm.Grounding{Question: "天行健出自哪篇？", Evidence: ctx[:1]})
	if strings.HasSuffix(resp.Text, "；") {
		t.Errorf("天行健出自哪篇？ → %q, ends at a clause mark", resp.Text)
	}
	// The structured reading too.
	resp = ask(t, m, llm.Grounding{Question: "“潜龙勿用”出自哪里？", Evidence: []llm.Evidence{chunk(1, "周易·文言\n潜龙勿用，下也；见龙在田，时舍也；")}})
	if want := "「潜龙勿用」出自《周易·文言》：潜龙勿用，下也[1]。"; resp.Text != want {
		t.Errorf("“潜龙勿用”出自哪里？ → %q, want %q", resp.Text, want)
	}
}

// TestOfflineRemembersWhatTheUserSaid: a question about the user is
// answered with what they said of themselves in the question's words
// ("我叫韩梅梅" for "我叫什么名字？", though it shares no 名字).
func TestRemembersWhatTheUserSaid(t *testing.T) {
	m := withDemoProfile(t, extractive.Options{})
	history := dialog("我叫韩梅梅，住在北京。", "你好，韩梅梅。", "乾卦的卦辞是什么？", "乾，元亨利贞。")
	for _, q := range []string{"我叫什么名字？", "我住在哪里？"} {
		if got := ask(t, m, llm.Grounding{Question: q, History: history}).Text; !strings.Contains(got, "我叫韩梅梅") {
			t.Errorf("%s → %q, want what the user said", q, got)
		}
	}
}

// TestOfflineCitesAndSkipsPaths: the generic reading cites the numbered
// chunk a sentence comes from, never answers with the section path above a
// chunk, and keeps replies short.
func TestCitesAndSkipsPaths(t *testing.T) {
	m := withDemoProfile(t, extractive.Options{})
	long := strings.Repeat("这是一段与问题无关的很长的说明文字，", 20)
	ctx := []llm.Evidence{
		chunk(1, "notes > 生日\n李雷的生日是三月五日。"+long+"韩梅梅的生日是六月一日。"),
		chunk(2, "李雷的爱好\n李雷喜欢踢足球。"),
	}
	for _, tt := range []struct{ q, want string }{
		{"李雷的生日是哪天？", "李雷的生日是三月五日[1]。"},
		{"李雷喜欢什么？", "李雷喜欢踢足球[2]。"},
	} {
		resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: ctx})
		if !strings.Contains(resp.Text, tt.want) || strings.Contains(resp.Text, "notes >") || len([]rune(resp.Text)) > 200 {
			t.Errorf("%s → %q, want it to hold %q, no path, at most 200 characters", tt.q, resp.Text, tt.want)
		}
	}
}

// TestReadsWithTheEvidencesProfile: evidence that names its profile
// (llm.Evidence.Profile, a knowledge base's) is read with that profile
// only; naming another profile the model has, the demo's names read
// nothing; naming none, every profile the model has applies.
func TestReadsWithTheEvidencesProfile(t *testing.T) {
	other, err := docstruct.LoadProfile(strings.NewReader(`{"name": "laws", "kinds": [{"name": "注释"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := withDemoProfile(t, extractive.Options{Profiles: []*docstruct.Profile{other}})
	named := func(profile string) []llm.Evidence {
		ev := slices.Clone(zhouyiChunks)
		for i := range ev {
			ev[i].Profile = profile
		}
		return ev
	}
	const q, want = "坤卦的卦辞是什么？", "坤，元亨，利牝馬之貞。君子有攸往，先迷后得主[1]。"
	for _, tt := range []struct {
		profile string
		read    bool
	}{{"zhouyi", true}, {"", true}, {"laws", false}} {
		got := ask(t, m, llm.Grounding{Question: q, Evidence: named(tt.profile)}).Text
		if (got == want) != tt.read {
			t.Errorf("evidence of profile %q: %q, read by the demo's names %v, want %v", tt.profile, got, got == want, tt.read)
		}
	}
}

// TestReadWeighsTermsByTheCorpus: among the few sentences read, the word
// the question is about (the one they share) looks common and a word the
// collection holds everywhere looks rare; the corpus weights of the
// grounding (llm.Grounding.Weights) set that right.
func TestReadWeighsTermsByTheCorpus(t *testing.T) {
	m := extractive.New(extractive.Options{})
	ev := []llm.Evidence{
		chunk(1, "Inn\nThe lamp in the hall is dim at night."),
		chunk(2, "Inn\nThe lamp has a brass switch."),
		chunk(3, "Inn\nThe lamp stands by the door."),
		chunk(4, "Inn\nThe garden is nice in spring."),
	}
	q := "Is the lamp nice?"
	tests := []struct {
		name    string
		weights map[string]float64
		want    string
		not     string
	}{
		{"sentences alone", nil, "garden", "lamp"},
		{"corpus weights", map[string]float64{"lamp": 6, "nice": 0.5}, "lamp", "garden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ask(t, m, llm.Grounding{Question: q, Evidence: ev, Weights: tt.weights}).Text
			if !strings.Contains(got, tt.want) || strings.Contains(got, tt.not) {
				t.Errorf("%q: got %q, want it to hold %q and not %q", q, got, tt.want, tt.not)
			}
		})
	}
}

// TestReplyLengthByLanguage: the reply's length is held to what a Chinese
// reply of maxReplyRunes says, so an English reply keeps the reviews that
// answer (some 220 runes for the first two) where a Chinese one of as many
// runes would be cut to one.
func TestReplyLengthByLanguage(t *testing.T) {
	m := extractive.New(extractive.Options{})
	ev := []llm.Evidence{
		chunk(1, "Inn > Review 1\nThe view from our room over the river was lovely in the early morning light, with the boats passing by."),
		chunk(2, "Inn > Review 2\nWe asked for a room with a view and got one facing the old bridge, which we enjoyed every single evening."),
		chunk(3, "Inn > Review 3\nThe view was the best part of the stay, although the breakfast was small and the coffee was cold."),
		chunk(4, "Inn > Review 4\nParking was hard to find on the narrow street behind the inn."),
	}
	got := ask(t, m, llm.Grounding{Question: "Is the view from the rooms good?", Evidence: ev}).Text
	for _, want := range []string{"river", "old bridge"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want the reviews of the rooms' view (%q)", got, want)
		}
	}
	if strings.Contains(got, "Parking") {
		t.Errorf("got %q, want no review of the parking", got)
	}
}
