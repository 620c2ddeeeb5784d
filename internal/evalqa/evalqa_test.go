package evalqa

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/rag"
)

func TestContainsGold(t *testing.T) {
	long := strings.Repeat("无关", 101)
	for _, tt := range []struct {
		reply string
		gold  []string
		want  bool
	}{
		{"乾，元亨，利貞[1]。", []string{"乾，元亨，利貞。"}, true},
		{"乾元亨利贞", []string{"乾，元亨，利貞。"}, true}, // script and punctuation
		{"由ＡＢＣ公司开发", []string{"abc公司"}, true}, // width and case
		{"元亨[1]利贞", []string{"元亨利贞"}, true},   // a citation inside
		{"元亨", []string{"元亨利贞"}, false},
		{"元亨利贞" + long, []string{"元亨利贞"}, false}, // over 200 characters
		{"元亨利贞", []string{""}, false},            // empty gold
	} {
		if got := ContainsGold(tt.reply, tt.gold); got != tt.want {
			t.Errorf("ContainsGold(%q, %q) = %v, want %v", tt.reply, tt.gold, got, tt.want)
		}
	}
	if !IsRefusal("（离线抽取式模型）在已知内容中没有找到与问题相关的信息。") || IsRefusal("乾，元亨，利貞。") {
		t.Error("IsRefusal: the offline refusal is one, an answer is not")
	}
	absent := kb.Result{Chunk: kb.Chunk{Text: "知识库中没有《夏日旋律》。"}, Match: rag.MatchAbsent}
	part := kb.Result{Chunk: kb.Chunk{Text: "乾，元亨，利貞。"}, Match: rag.MatchPart}
	for _, tt := range []struct {
		rs   []kb.Result
		want bool
	}{
		{[]kb.Result{absent}, true},        // the named document is not there
		{[]kb.Result{absent, part}, false}, // something was found beside it
		{[]kb.Result{part}, false},
		{nil, false}, // nothing at all: Empty says so
	} {
		if got := SaysAbsent(tt.rs); got != tt.want {
			t.Errorf("SaysAbsent(%v) = %v, want %v", tt.rs, got, tt.want)
		}
	}
}

// TestZhouyiQuestions: the generated set has one judgement and one Great
// Image per hexagram, 6 lines per hexagram plus 用九 and 用六, and quoted
// phrases, all asked in simplified characters.
func TestZhouyiQuestions(t *testing.T) {
	dir := shareddata.Path(t, "zhouyi")
	src, err := os.ReadFile(filepath.Join(dir, "zhouyi-traditional.txt"))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := zhouyiQuestions(src)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, q := range qs {
		count[q.typ]++
		if strings.ContainsAny(q.text, "貞龍辭濟訟") {
			t.Errorf("%s: not simplified", q.text)
		}
	}
	if count["卦辞"] != 64 || count["大象"] != 64 || count["爻辞"] != 386 || count["出自"] < 100 {
		t.Errorf("question counts %v: want 64 卦辞, 64 大象, 386 爻辞 (384 + 用九 + 用六), at least 100 出自", count)
	}
	want := map[string]string{
		"乾卦的卦辞是什么？":    "乾，元亨，利貞。",
		"坤卦的用六爻辞是什么？":  "利永貞。",
		"未济卦的上九爻辞是什么？": "有孚于飲酒，無咎，濡其首，有孚失是。",
		"乾卦的大象传是什么？":   "天行健，君子以自強不息。",
		"坎卦的卦辞是什么？":    "坎，習坎，有孚，維心亨，行有尚。",
	}
	for _, q := range qs {
		if g, ok := want[q.text]; ok {
			if len(q.gold) != 1 || q.gold[0] != g {
				t.Errorf("%s: gold %q, want %q", q.text, q.gold, g)
			}
			delete(want, q.text)
		}
	}
	for q := range want {
		t.Errorf("%s: not generated", q)
	}
	files, err := zhouyiFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	zq := zaguaQuestions(files)
	xian := false
	for _, q := range zq {
		if q.text == "《杂卦传》怎么说咸卦？" {
			xian = len(q.gold) == 1 && q.gold[0] == "咸速也"
		}
	}
	if len(zq) < 40 || !xian {
		t.Errorf("杂卦 questions: %d (want at least 40), 咸卦's gold 咸速也: %v", len(zq), xian)
	}
}

// TestRunZhouyi runs a small Zhouyi set end to end and checks the report's
// shape: metrics per type, rows under "questions".
func TestRunZhouyi(t *testing.T) {
	dir := shareddata.Path(t, "zhouyi")
	var out bytes.Buffer
	rep, err := Run(context.Background(), Options{Zhouyi: dir, Limit: 40, JSON: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Questions) != 40 || len(rep.ByType) != 5 {
		t.Fatalf("report: %d questions, %d types", len(rep.Questions), len(rep.ByType))
	}
	var decoded map[string]any
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if rows, _ := decoded["questions"].([]any); len(rows) != 40 {
		t.Errorf("JSON has %d rows under questions, want 40", len(rows))
	}
	if rep.Answered == 0 || rep.AnswerContainsGold == 0 {
		t.Errorf("nothing answered: %+v", rep.Metrics)
	}
	if _, err := Run(context.Background(), Options{}, &out); err == nil {
		t.Error("Run without a question set: no error")
	}
}
