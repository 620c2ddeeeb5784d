package kb

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

func offlineModels() *llm.Registry {
	r := llm.NewRegistry("offline")
	r.Add("offline", extractive.New(extractive.Options{Profiles: demoProfiles()}))
	return r
}

// demoProfiles are the profiles the app gives the offline model: the
// demo's, read from its file.
func demoProfiles() []*docstruct.Profile {
	f, err := os.Open("../../demo/zhouyi/profile.json")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	p, err := docstruct.LoadProfile(f)
	if err != nil {
		panic(err)
	}
	return []*docstruct.Profile{p}
}

// TestChatThreeNotesAtDefaults is the first thing a new user tries: a
// knowledge base of three short notes, asked about each at the default
// settings (the offline embedder and model, the configured threshold, as
// /chat/knowledge_base_chat asks). Each is answered from its note, with the
// note cited, and search and chat agree on what passes: what chat used is
// what search returns at the same threshold. A question about none of them
// is refused, and the refusal says why.
func TestChatThreeNotesAtDefaults(t *testing.T) {
	ctx := context.Background()
	s := newHashKB(t, "notes", offlineModels())
	mustAdd(t, s, "notes",
		FileData{Name: "birthday.txt", Data: []byte("李雷的生日是三月五日。")},
		FileData{Name: "home.txt", Data: []byte("韩梅梅住在杭州西湖边。")},
		FileData{Name: "job.txt", Data: []byte("王芳的职业是医院的护士。")},
	)
	cite := regexp.MustCompile(`\[1\]`)
	for _, tt := range []struct{ q, want string }{
		{"李雷的生日是哪天？", "三月五日"},
		{"韩梅梅住在哪里？", "杭州西湖边"},
		{"王芳的职业是什么？", "护士"},
	} {
		req := ChatRequest{Query: tt.q, KnowledgeBases: []string{"notes"}, MinRelevance: s.DefaultMinRelevance()}
		reply, err := s.Chat(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if reply.Empty || !strings.Contains(reply.Text, tt.want) || !cite.MatchString(reply.Text) {
			t.Errorf("%s → %q (empty %v, best relevance %.3f, threshold %.3f): want %q cited [1]",
				tt.q, reply.Text, reply.Empty, reply.BestRelevance, reply.MinRelevance, tt.want)
		}
		rs, err := s.Search(ctx, SearchRequest{Query: tt.q, KnowledgeBases: []string{"notes"}, MinRelevance: s.DefaultMinRelevance()})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != len(reply.Results) {
			t.Errorf("%s: search passes %d chunks, chat used %d", tt.q, len(rs), len(reply.Results))
		}
	}
	reply, err := s.Chat(ctx, ChatRequest{Query: "量子计算机的原理是什么？", KnowledgeBases: []string{"notes"}, MinRelevance: s.DefaultMinRelevance()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reply.Empty || reply.Reason == "" || reply.BestRelevance >= reply.MinRelevance {
		t.Errorf("absent question: empty %v, reason %q, best %.3f, threshold %.3f: want a refusal that says why",
			reply.Empty, reply.Reason, reply.BestRelevance, reply.MinRelevance)
	}
}

// TestChatZhouyiStructure asks the Zhouyi for parts of hexagrams and the
// source of quoted phrases at the default settings, in simplified
// characters against the traditional text: the reply is the part asked
// for (not the section's heading), cited, and a phrase's hexagram is named.
func TestChatZhouyiStructure(t *testing.T) {
	files := zhouyiFiles(t)
	ctx := context.Background()
	s := newHashKB(t, "zhouyi", offlineModels())
	mustAdd(t, s, "zhouyi", files...)
	for _, tt := range []struct{ q, want, not string }{
		{"坤卦的卦辞是什么？", "坤，元亨，利牝馬之貞", "坤為地"},
		{"比卦的九五爻辞是什么？", "顯比", ""},
		{"节卦的大象传是什么？", "君子以制数度", ""},
		{"「履霜坚冰」出自哪一卦？", "坤卦", ""},
		{"《说卦传》中震为什么？", "震", ""},
		{"复卦的卦辞是什么？", "復，亨", ""},     // 復 is written 复 in simplified text
		{"遁卦的大象传是什么？", "君子以远小人", ""}, // and 遯 遁
		{"《序卦传》中比卦之后是什么卦？", "比必有所畜", ""},
	} {
		reply, err := s.Chat(ctx, ChatRequest{Query: tt.q, KnowledgeBases: []string{"zhouyi"}, MinRelevance: s.DefaultMinRelevance()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := reply.Text
		if !strings.Contains(foldNorm(got), foldNorm(tt.want)) || (tt.not != "" && strings.Contains(got, tt.not)) || !strings.Contains(got, "[") {
			t.Errorf("%s → %q: want %q cited", tt.q, got, tt.want)
		}
	}
}

// foldNorm keeps the letters and digits of s, traditional Chinese folded to
// simplified.
func foldNorm(s string) string {
	var b strings.Builder
	for _, r := range text.Fold(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestContextEntrySaysAPathOnce: the section path above a chunk names a
// heading once, though a Markdown file's first heading repeats its title,
// and the chunk does not start with the heading the path ends with.
func TestContextEntrySaysAPathOnce(t *testing.T) {
	res := func(file, text, section string) Result {
		r := Result{Chunk: Chunk{File: file, Text: text}}
		if section != "" {
			r.Metadata = map[string]any{"section": section}
		}
		return r
	}
	for _, tt := range []struct {
		name string
		r    Result
		want string
	}{
		{"title repeated by the first heading",
			res("卦辞/六十四卦卦辞.md", "## 第一卦 乾\n乾卦的卦辞是：乾，元亨，利貞。", "六十四卦卦辞 > 六十四卦卦辞 > 第一卦 乾"),
			"[1] 六十四卦卦辞 > 第一卦 乾\n乾卦的卦辞是：乾，元亨，利貞。"},
		{"other headings kept", res("zhouyi.txt", "# 乾\n元亨利貞。", "上經 > 坤"), "[1] zhouyi > 上經 > 坤\n# 乾\n元亨利貞。"},
		{"a heading alone stays", res("notes.md", "## Setup", "Setup"), "[1] notes > Setup\n## Setup"},
		{"no section", res("a/b.txt", "text", ""), "[1] b\ntext"},
	} {
		if got := contextEntry(1, tt.r); got != tt.want {
			t.Errorf("%s: contextEntry =\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}
