package kb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/rag"
)

// Documents of several kinds: a Chinese law with 第N条 inside 第N章, an
// English constitution with Article and Section headings, a text of dotted
// numbers inside named chapters.
var (
	lawText = `# 中华人民共和国劳动示范法

第一章 总则

第一条 为了保护劳动者的合法权益，制定本法。

第二条 在中华人民共和国境内的企业和与之形成劳动关系的劳动者，适用本法。

第二章 工作时间

第三条 劳动者每日工作时间不超过八小时。依照本法第一条的规定执行。

第四条 用人单位应当保证劳动者每周至少休息一日。

第五条 用人单位由于生产经营需要，经与工会和劳动者协商后可以延长工作时间。
`
	constitutionText = `# Model Constitution

## Preamble

We the members, in order to form a more perfect club, establish this constitution.

## Article I

### Section 1

All legislative powers herein granted shall be vested in a council of members.

### Section 2

The council shall be composed of members chosen every second year by the people.

## Article II

### Section 1

The executive power shall be vested in a president elected for four years.

## Article III

### Section 1

The judicial power shall be vested in one supreme court and in such inferior courts as the council may establish.
`
	dottedText = `# 示范语录

## 学习篇第一

1.1 子曰：学习而时常温习，也是快乐的事情。

1.2 有子曰：孝顺父母、尊敬兄长的人，很少喜欢冒犯上级。

1.3 子曰：花言巧语，满脸堆笑，这种人很少有仁德。

## 为政篇第二

2.1 子曰：以道德治理国家，就像北极星一样受众星环绕。

2.2 子曰：诗三百篇，用一句话概括，就是思想纯正。
`
)

func TestAddressedSearch(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "docs", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "docs",
		FileData{Name: "labor-law.md", Data: []byte(lawText)},
		FileData{Name: "constitution.md", Data: []byte(constitutionText)},
		FileData{Name: "yulu.txt", Data: []byte(strings.ReplaceAll(dottedText, "# ", ""))},
	)
	for _, tc := range []struct {
		q     string
		match string // "" for no addressed result
		want  string // the first result holds this
		file  string
		path  string // the first result's path ends so
		only  bool   // the only result
	}{
		{q: "劳动示范法第三条规定了什么？", match: rag.MatchPart, want: "第三条 劳动者每日工作时间不超过八小时", file: "labor-law.md", path: "第二章 工作时间 > 第三条 劳动者每日工作时间不超过八小时。依照本法第一条的规定执行。"},
		{q: "劳动示范法3条是什么", match: rag.MatchPart, want: "第三条 劳动者每日工作时间", file: "labor-law.md"},
		{q: "第一条规定了什么？", match: rag.MatchPart, want: "为了保护劳动者的合法权益", file: "labor-law.md"},
		{q: "劳动示范法第二章第四条", match: rag.MatchPart, want: "每周至少休息一日", file: "labor-law.md"},
		{q: "劳动示范法第九条规定了什么？", match: rag.MatchAbsent, want: "没有第九条", file: "labor-law.md", only: true},
		{q: "What does Article I, Section 2 of the Model Constitution say?", match: rag.MatchPart, want: "composed of members chosen every second year", file: "constitution.md", path: "Article I > Section 2"},
		{q: "What is Article 3 of the constitution?", match: rag.MatchPart, want: "judicial power", file: "constitution.md"},
		{q: "What does the Second Article say?", match: rag.MatchPart, want: "executive power", file: "constitution.md"},
		{q: "What does Article IX of the Model Constitution say?", match: rag.MatchAbsent, want: "has no Article IX", file: "constitution.md", only: true},
		{q: "What does Article II, Section 5 of the Model Constitution say?", match: rag.MatchAbsent, want: "Section 5", file: "constitution.md", only: true},
		{q: "《示范语录》1.3是什么？", match: rag.MatchPart, want: "花言巧语", file: "yulu.txt"},
		{q: "《示范语录》学习篇第二章是什么？", match: rag.MatchPart, want: "孝顺父母", file: "yulu.txt"},
		{q: "《不存在的书》第三条是什么？", match: rag.MatchAbsent, want: "没有《不存在的书》", only: true},
		{q: "劳动者每日工作多少小时？", match: ""},
		{q: "「依照本法第一条的规定执行」出自哪里？", match: ""},
		{q: `Which article says "chosen every second year, as Article IX provides"?`, match: ""},
		{q: "第一次休息是什么时候？", match: ""},
		{q: "学习的快乐增加了 7.5 倍吗？", match: ""},                                            // a decimal, not a part 7.5 said to be missing
		{q: "1.3 子曰：花言巧语，满脸堆笑", match: rag.MatchPart, want: "花言巧语", file: "yulu.txt"}, // a bare number that labels a part finds it
	} {
		t.Run(tc.q, func(t *testing.T) {
			rs := search(t, s, tc.q, "docs")
			if tc.match == "" {
				for _, r := range rs {
					if r.Match != "" {
						t.Fatalf("an ordinary question got %s result %q", r.Match, r.Text)
					}
				}
				return
			}
			if len(rs) == 0 {
				t.Fatal("no result")
			}
			r := rs[0]
			if r.Match != tc.match || !strings.Contains(r.Text, tc.want) || r.File != tc.file || r.Relevance != 1 {
				t.Fatalf("first result = %s %q in %q (relevance %v), want %s %q in %q", r.Match, r.Text, r.File, r.Relevance, tc.match, tc.want, tc.file)
			}
			if tc.path != "" && !strings.HasSuffix(r.Path, tc.path) {
				t.Errorf("path = %q, want … %q", r.Path, tc.path)
			}
			if tc.only && len(rs) != 1 {
				t.Errorf("%d results, want the absent statement alone: %+v", len(rs), rs)
			}
			for _, o := range rs[1:] {
				if o.Match != "" {
					t.Errorf("result after the first has match %q", o.Match)
				}
				if o.File == r.File && strings.Contains(letters(r.Text), letters(o.Text)) {
					t.Errorf("similarity result repeats the part: %q", o.Text)
				}
			}
		})
	}
}

// TestAddressedSearchAfterReopen checks that the structure index is
// derived again from the originals when a knowledge base is opened, and
// follows deletions.
func TestAddressedSearchAfterReopen(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "docs", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "docs", FileData{Name: "labor-law.md", Data: []byte(lawText)}, FileData{Name: "constitution.md", Data: []byte(constitutionText)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := newService(t, cfg, newFakeEmbedder(), nil)
	rs := search(t, s2, "What does Article I, Section 2 of the Model Constitution say?", "docs")
	if len(rs) == 0 || rs[0].Match != rag.MatchPart || !strings.Contains(rs[0].Text, "every second year") {
		t.Fatalf("after reopening: %+v", rs)
	}
	if _, err := s2.DeleteFiles(ctx, "docs", []string{"constitution.md"}, true); err != nil {
		t.Fatal(err)
	}
	rs = search(t, s2, "What does Article I, Section 2 of the Model Constitution say?", "docs")
	for _, r := range rs {
		if r.Match == rag.MatchPart {
			t.Fatalf("a deleted document's part: %+v", r)
		}
	}
}

// TestProfileChangeRereadsStructure: a knowledge base names a profile (an
// unknown one is refused), and changing it reads the structure again: the
// profile's named position addresses a part only while it is in force.
func TestProfileChangeRereadsStructure(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	dir := t.TempDir()
	prof := `{"name": "club", "positions": [{"names": ["开篇条"], "kind": "条", "number": 2}]}`
	if err := os.WriteFile(filepath.Join(dir, "club.json"), []byte(prof), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.ProfilesDir = dir
	s := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "docs", CreateOptions{Profile: "nope"}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "club") {
		t.Fatalf("unknown profile: %v, want ErrBadRequest listing club", err)
	}
	if _, err := s.Create(ctx, "docs", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "docs", FileData{Name: "labor-law.md", Data: []byte(lawText)})
	const q = "劳动示范法的开篇条是什么？"
	first := func() Result {
		t.Helper()
		rs := search(t, s, q, "docs")
		if len(rs) == 0 {
			t.Fatal("no result")
		}
		return rs[0]
	}
	if r := first(); r.Match == rag.MatchPart || r.Profile != "" {
		t.Fatalf("without the profile: %+v", r)
	}
	if err := s.SetProfile(ctx, "docs", "nope"); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("SetProfile(nope) = %v", err)
	}
	if err := s.SetProfile(ctx, "docs", "club"); err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Info(ctx, "docs"); info.Profile != "club" {
		t.Errorf("info.Profile = %q", info.Profile)
	}
	if r := first(); r.Match != rag.MatchPart || !strings.Contains(r.Text, "第二条") || r.Profile != "club" {
		t.Fatalf("with the profile (named by each result, for its reader): %+v", r)
	}
}

// TestPostgresAddressedOnEveryReplica: the structure index of a knowledge
// base shared by replicas follows the changes another replica makes (an
// upload, a deletion), reading the originals from the database.
func TestPostgresAddressedOnEveryReplica(t *testing.T) {
	ctx := context.Background()
	a, b := twoReplicas(t)
	const q = "What does Article I, Section 2 of the Model Constitution say?"
	if rs := searchKB(t, b, q); len(rs) > 0 && rs[0].Match != "" {
		t.Fatalf("empty base: %+v", rs[0])
	}
	pgAdd(t, a, AddOptions{}, FileData{Name: "constitution.md", Data: []byte(constitutionText)})
	rs := searchKB(t, b, q)
	if len(rs) == 0 || rs[0].Match != rag.MatchPart || !strings.Contains(rs[0].Text, "every second year") {
		t.Fatalf("after another replica's upload: %+v", rs)
	}
	if _, err := a.DeleteFiles(ctx, pgKB, []string{"constitution.md"}, true); err != nil {
		t.Fatal(err)
	}
	for _, r := range searchKB(t, b, q) {
		if r.Match != "" {
			t.Fatalf("after another replica's deletion: %+v", r)
		}
	}
}

// TestAdoptProfile: a base made before bases named profiles takes one
// once; a base that records a choice, none included, keeps it.
func TestAdoptProfile(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := newService(t, cfg, newFakeEmbedder(), nil)
	p := demoProfile(t)
	WithProfiles(p)(s)
	if _, err := s.Create(ctx, "old", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, release, err := s.get(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.db.ExecContext(ctx, `DELETE FROM meta WHERE key = 'profile'`) // as an older version made it
	release()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptProfile(ctx, "old", p.Name); err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Info(ctx, "old"); info.Profile != p.Name {
		t.Fatalf("adopted profile = %q, want %q", info.Profile, p.Name)
	}
	if err := s.SetProfile(ctx, "old", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptProfile(ctx, "old", p.Name); err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Info(ctx, "old"); info.Profile != "" {
		t.Fatalf("a base that chose none took %q", info.Profile)
	}
}
