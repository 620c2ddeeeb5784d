package docstruct

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func loadDemoProfile(t *testing.T) *Profile {
	t.Helper()
	f, err := os.Open("../../demo/zhouyi/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := LoadProfile(f)
	if err != nil {
		t.Fatalf("the demo's profile does not load: %v", err)
	}
	return p
}

func TestDemoProfileResolvesALine(t *testing.T) {
	p := loadDemoProfile(t)
	if p.Name != "zhouyi" || p.Persona == "" || len(p.Examples) == 0 {
		t.Errorf("profile %+v", p)
	}
	b, err := os.ReadFile("../../demo/zhouyi/zhouyi-traditional.txt")
	if err != nil {
		t.Fatal(err)
	}
	d := Parse("zhouyi-traditional.txt", string(b), Text, p)
	hexagrams := 0
	for _, c := range d.Root.Children {
		if c.Label.Kind == "卦" {
			hexagrams++
		}
	}
	if hexagrams != 64 {
		t.Errorf("%d hexagrams, want 64", hexagrams)
	}
	known := Known{Titles: TitlesOf(d), Kinds: KindsOf(d), Profile: p}
	tests := []struct{ q, startsWith string }{
		{"乾卦的九二是什么？", "九二：見龍再田"},
		{"乾卦的第二爻", "九二：見龍再田"},
		{"坤卦的六二是什么？", "六二：直，方，大"},
		{"坤卦的上爻", "上六：龍戰於野"},
		{"乾卦的用九", "用九：見群龍無首"},
		{"第二卦的初六", "初六：履霜"},
		{"未济卦的初六", "初六：濡其尾"},
		{"蒙卦的九二", "九二：包蒙"},
		{"需卦的初九", "初九：需于郊"},
		{"比卦的六二", "六二：比之自內"},
		{"小畜卦的初九", "初九：復自道"},
		{"履卦的九二", "九二：履道坦坦"},
	}
	for _, tt := range tests {
		a := ParseAddress(tt.q, known)
		r := Resolve(d, a)
		if r.Part == nil {
			t.Errorf("%q (%+v): absent: %s", tt.q, a, r.Absent.Sentence("zh"))
			continue
		}
		if got := r.Part.Text(d); !strings.HasPrefix(got, tt.startsWith) {
			t.Errorf("%q: %q, want %q…", tt.q, got[:min(len(got), 40)], tt.startsWith)
		}
	}
	// The second line of the first hexagram, by its path.
	r := Resolve(d, ParseAddress("乾卦的九二是什么？", known))
	if r.Part == nil || r.Part.Label.Kind != "爻" || r.Part.Label.Num != 2 || r.Part.Parent.Label.Num != 1 || r.Part.Parent.Label.Kind != "卦" {
		t.Errorf("乾卦的九二: %+v", partPath(r))
	}
	// A line asked for by the other name of its position.
	if r := Resolve(d, ParseAddress("坤卦的九二", known)); r.Part == nil || r.Renamed != "九二" || r.Part.Label.Name != "六二" {
		t.Errorf("坤卦的九二: %v renamed %q", partPath(r), r.Renamed)
	}
	for _, q := range []string{"乾卦的九二", "坤卦的第二爻", "坤卦的二爻"} {
		if r := Resolve(d, ParseAddress(q, known)); r.Part == nil || r.Renamed != "" {
			t.Errorf("%s: %v renamed %q", q, partPath(r), r.Renamed)
		}
	}
	// A hexagram the text does not have.
	if r := Resolve(d, ParseAddress("第六十五卦", known)); r.Absent == nil || r.Absent.Sentence("zh") != "《周易全文（上）》没有第六十五卦；其卦从第一卦到第六十四卦。" {
		t.Errorf("第六十五卦: %+v", partPath(r))
	}
	// The next line, as a follow-up.
	prev := ParseAddress("乾卦的九二是什么？", known)
	from := Resolve(d, prev).Part
	next := ParseAddress("下一爻呢？", known)
	if r := ResolveRelative(d, from, next.Follow(prev)); r.Part == nil || !strings.HasPrefix(r.Part.Heading, "九三") {
		t.Errorf("下一爻: %v", partPath(r))
	}
	// The file-name form names a commentary's hexagram.
	if name, _, ok := p.MatchFileName("彖传上-小畜"); !ok || name != "小畜" {
		t.Errorf("MatchFileName(彖传上-小畜) = %q, %v", name, ok)
	}
	if p.KindOf("彖传") != "彖" || p.KindOf("卦辭") != "卦辞" {
		t.Errorf("KindOf: %q %q", p.KindOf("彖传"), p.KindOf("卦辭"))
	}
}

func TestLoadProfileRefuses(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"no name", `{}`, "name is empty"},
		{"unknown field", `{"name": "x", "persona2": "y"}`, "unknown field"},
		{"position without kind", `{"name": "x", "positions": [{"names": ["a"], "number": 1}]}`, "kind is empty"},
		{"position number", `{"name": "x", "positions": [{"names": ["a"], "kind": "k", "number": 0}]}`, "number 0"},
		{"one name, two positions", `{"name": "x", "positions": [{"names": ["a"], "kind": "k", "number": 1}, {"names": ["a"], "kind": "k", "number": 2}]}`, "already names"},
		{"classifier", `{"name": "x", "classifiers": ["卦象"]}`, "want one character"},
		{"form", `{"name": "x", "file_name_forms": ["abc"]}`, "names neither"},
		{"not json", `name: x`, "invalid"},
	}
	for _, tt := range tests {
		_, err := LoadProfile(strings.NewReader(tt.json))
		if err == nil || !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrInvalidProfile with %q", tt.name, err, tt.want)
		}
	}
}
