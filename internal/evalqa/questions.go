package evalqa

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/width"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/text"
)

// SQuAD is a SQuAD-format file (CMRC 2018's): articles of paragraphs,
// each with its questions and their gold answers.
type SQuAD struct {
	Data []struct {
		Title      string `json:"title"`
		Paragraphs []struct {
			ID      string `json:"id"`
			Context string `json:"context"`
			QAs     []struct {
				ID       string `json:"id"`
				Question string `json:"question"`
				Answers  []struct {
					Text string `json:"text"`
				} `json:"answers"`
			} `json:"qas"`
		} `json:"paragraphs"`
	} `json:"data"`
}

// loadCMRC reads a SQuAD-format file: one file per paragraph, named after
// its article's title, and every question with its gold answers.
func loadCMRC(path string) ([]kb.FileData, []question, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var d SQuAD
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var files []kb.FileData
	var qs []question
	used := map[string]int{}
	for _, a := range d.Data {
		for _, p := range a.Paragraphs {
			// A knowledge base refuses names that start with a dot and names
			// that differ from another only by case or width: the title is
			// made a name it takes, counted under its folded form.
			base := strings.TrimLeft(strings.NewReplacer("/", "_", "\\", "_").Replace(strings.TrimSpace(a.Title)), ".")
			if base == "" {
				base = p.ID
			}
			key := strings.ToLower(width.Fold.String(norm.NFC.String(base)))
			used[key]++
			if used[key] > 1 {
				base = fmt.Sprintf("%s (%d)", base, used[key])
			}
			file := base + ".txt"
			files = append(files, kb.FileData{Name: file, Data: []byte(p.Context)})
			for _, qa := range p.QAs {
				q := question{id: qa.ID, typ: cmrcType(qa.Question), text: qa.Question, goldFile: file}
				seen := map[string]bool{}
				for _, ans := range qa.Answers {
					if t := strings.TrimSpace(ans.Text); t != "" && !seen[t] {
						seen[t] = true
						q.gold = append(q.gold, t)
					}
				}
				if len(q.gold) > 0 {
					qs = append(qs, q)
				}
			}
		}
	}
	if len(files) == 0 || len(qs) == 0 {
		return nil, nil, fmt.Errorf("%s: no paragraphs or questions", path)
	}
	return files, qs, nil
}

// cmrcType is the form of a question: who, when, where, number, which,
// what, how or other (the first that matches).
func cmrcType(q string) string {
	for _, t := range []struct {
		typ   string
		words []string
	}{
		{"who", []string{"谁"}},
		{"when", []string{"什么时候", "何时", "哪一年", "哪年", "哪一天", "几月", "几年", "时间", "日期", "年份", "哪个朝代", "什么年代"}},
		{"where", []string{"哪里", "哪儿", "什么地方", "何处", "哪个国家", "哪个城市", "位于", "在哪"}},
		{"number", []string{"多少", "几", "多大", "多长", "多高", "多重", "多远"}},
		{"which", []string{"哪"}},
		{"what", []string{"什么", "何"}},
		{"how", []string{"如何", "怎么", "怎样", "为何", "为什么"}},
	} {
		for _, w := range t.words {
			if strings.Contains(q, w) {
				return t.typ
			}
		}
	}
	return "other"
}

// zhouyiFiles reads the Zhouyi folder as it ships: the traditional text
// first, then the Ten Wings files (under yizhuan-simplified/).
func zhouyiFiles(dir string) ([]kb.FileData, error) {
	main := filepath.Join(dir, "zhouyi-traditional.txt")
	b, err := os.ReadFile(main)
	if err != nil {
		return nil, err
	}
	files := []kb.FileData{{Name: "zhouyi-traditional.txt", Data: b}}
	ms, err := filepath.Glob(filepath.Join(dir, "yizhuan-simplified", "*.txt"))
	if err != nil {
		return nil, err
	}
	sort.Strings(ms)
	for _, m := range ms {
		d, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		files = append(files, kb.FileData{Name: "yizhuan-simplified/" + filepath.Base(m), Data: d})
	}
	return files, nil
}

// hexagramNames are the 64 hexagrams in the received (King Wen) order, in
// simplified characters; a name's length says how much of a heading it
// takes.
var hexagramNames = strings.Fields(`乾 坤 屯 蒙 需 讼 师 比 小畜 履 泰 否 同人 大有 谦 豫 随 蛊 临 观 噬嗑 贲 剥 复
无妄 大畜 颐 大过 坎 离 咸 恒 遁 大壮 晋 明夷 家人 睽 蹇 解 损 益 夬 姤 萃 升 困 井 革 鼎 震 艮 渐 归妹 丰 旅
巽 兑 涣 节 中孚 小过 既济 未济`)

var (
	hexHeading = regexp.MustCompile(`^《易經》第(\p{Han}+?)卦(.*)$`)
	lineRe     = regexp.MustCompile(`^(初[六九]|[六九][二三四五]|上[六九]|用[六九])：(.+)$`)
	imageRe    = regexp.MustCompile(`^《象》曰：(.+)$`)
	tuanRe     = regexp.MustCompile(`^《彖》曰：(.+)$`)
	clauseSep  = regexp.MustCompile(`[，。；：！？、「」『』“”]+`)
)

// hexagram is one hexagram's section of the traditional text.
type hexagram struct {
	name    string // simplified, as a person types it (复, 遁)
	written string // as the heading writes it, folded with text.Fold
	lines   []string
}

// Hexagram is one hexagram of the Zhouyi as the traditional text gives
// it, for the evals that ask about it.
type Hexagram struct {
	Name      string // simplified, as a person types it (复, 遁)
	Judgement string // the judgement (卦辞), the section's first line
	Lines     []Line // the line texts (爻辞), in order, with 用九/用六
	Tuan      string // the Tuan commentary (彖), "" when absent
	Image     string // the Great Image (大象), "" when absent
}

// Line is one line text of a hexagram: its position (初九, 六二, 用六,
// simplified) and its text.
type Line struct {
	Position, Text string
}

// ZhouyiFiles reads the Zhouyi folder as it ships (zhouyi-traditional.txt
// first, then yizhuan-simplified/*.txt), the knowledge base of the Zhouyi
// evals.
func ZhouyiFiles(dir string) ([]kb.FileData, error) { return zhouyiFiles(dir) }

// ZhouyiHexagrams parses the traditional text (the first of ZhouyiFiles)
// into its 64 hexagrams, in the received order.
func ZhouyiHexagrams(src []byte) ([]Hexagram, error) {
	hexes, err := parseHexagrams(src)
	if err != nil {
		return nil, err
	}
	out := make([]Hexagram, 64)
	for i, h := range hexes[:64] {
		out[i] = h.parts()
	}
	return out, nil
}

// parseHexagrams splits the traditional text into its hexagrams' sections
// (64, and a 65th for what follows them, when present).
func parseHexagrams(src []byte) ([]*hexagram, error) {
	var hexes []*hexagram
	for _, raw := range strings.Split(string(src), "\n") {
		l := strings.TrimSpace(raw)
		if m := hexHeading.FindStringSubmatch(l); m != nil {
			i := len(hexes)
			if i >= len(hexagramNames) {
				return nil, fmt.Errorf("zhouyi: more than 64 hexagram headings (%q)", l)
			}
			rest := []rune(text.Fold(strings.TrimSpace(m[2])))
			n := utf8.RuneCountInString(hexagramNames[i])
			if len(rest) < n {
				return nil, fmt.Errorf("zhouyi: heading %q: no hexagram name", l)
			}
			hexes = append(hexes, &hexagram{name: hexagramNames[i], written: string(rest[:n])})
			continue
		}
		if (strings.HasPrefix(l, "系辭") || strings.HasPrefix(l, "繫辭")) && utf8.RuneCountInString(l) <= 6 {
			// The Appended Statements and what follows belong to no
			// hexagram.
			if len(hexes) == 64 {
				hexes = append(hexes, &hexagram{})
			}
		}
		if len(hexes) > 0 && l != "" {
			h := hexes[len(hexes)-1]
			h.lines = append(h.lines, l)
		}
	}
	if len(hexes) < 64 {
		return nil, fmt.Errorf("zhouyi: found %d hexagram headings, want 64", len(hexes))
	}
	for _, h := range hexes[:64] {
		if len(h.lines) == 0 {
			return nil, fmt.Errorf("zhouyi: hexagram %s has no text", h.name)
		}
	}
	return hexes, nil
}

// parts picks a hexagram's judgement, line texts (the first of each
// position), Tuan and Great Image (the first 《彖》 and 《象》 passages)
// out of its section.
func (h *hexagram) parts() Hexagram {
	out := Hexagram{Name: h.name, Judgement: h.lines[0]}
	seenPos := map[string]bool{}
	for _, l := range h.lines[1:] {
		if m := lineRe.FindStringSubmatch(l); m != nil && !seenPos[m[1]] {
			seenPos[m[1]] = true
			out.Lines = append(out.Lines, Line{Position: text.Fold(m[1]), Text: m[2]})
		}
		if m := imageRe.FindStringSubmatch(l); m != nil && out.Image == "" {
			out.Image = m[1]
		}
		if m := tuanRe.FindStringSubmatch(l); m != nil && out.Tuan == "" {
			out.Tuan = m[1]
		}
	}
	return out
}

// zhouyiQuestions generates the questions of the Zhouyi set from the
// traditional text's structure, in simplified characters: each
// hexagram's judgement (卦辞), each line (爻辞, with 用九/用六), its Great
// Image (大象) and quoted passages (出自), one from its lines and one from
// its Tuan commentary, chosen among clauses of 4 to 10 characters that
// occur in no other hexagram's section and do not name the hexagram.
func zhouyiQuestions(src []byte) ([]question, error) {
	hexes, err := parseHexagrams(src)
	if err != nil {
		return nil, err
	}
	// Which hexagrams' sections hold a clause (folded, normalised).
	sections := make([]string, len(hexes))
	for i, h := range hexes {
		sections[i] = Normalize(strings.Join(h.lines, "\n"))
	}
	unique := func(clause string, at int) bool {
		c := Normalize(clause)
		for i, s := range sections {
			if i != at && strings.Contains(s, c) {
				return false
			}
		}
		return true
	}
	quote := func(textOf string, h *hexagram, at int) string {
		for _, c := range clauseSep.Split(textOf, -1) {
			c = strings.TrimSpace(c)
			n := utf8.RuneCountInString(c)
			if n < 4 || n > 10 || strings.Contains(text.Fold(c), h.written) || strings.Contains(text.Fold(c), h.name) || !unique(c, at) {
				continue
			}
			return text.Fold(c)
		}
		return ""
	}
	var qs []question
	add := func(typ, q string, gold ...string) {
		qs = append(qs, question{id: fmt.Sprintf("%s-%d", typ, len(qs)+1), typ: typ, text: q, gold: gold})
	}
	for at, h := range hexes[:64] {
		p := h.parts()
		add("卦辞", h.name+"卦的卦辞是什么？", p.Judgement)
		var lineTexts []string
		for _, l := range p.Lines {
			add("爻辞", h.name+"卦的"+l.Position+"爻辞是什么？", l.Text)
			lineTexts = append(lineTexts, l.Text)
		}
		if p.Image != "" {
			add("大象", h.name+"卦的大象传是什么？", p.Image)
		}
		for _, src := range []string{strings.Join(lineTexts, "。"), p.Tuan} {
			if c := quote(src, h, at); c != "" {
				add("出自", "「"+c+"」出自哪一卦？", h.name+"卦", h.written+"卦")
				qs[len(qs)-1].evidence = c
			}
		}
	}
	return qs, nil
}

// zaguaSaying is one saying of the Miscellaneous Notes (杂卦传): 《咸》速也.
var zaguaSaying = regexp.MustCompile(`《(\p{Han}{1,2})》，?(\p{Han}{1,4}也)`)

// zaguaQuestions are questions scoped to one book, the Miscellaneous Notes
// on the hexagrams (杂卦传), about a hexagram it names in one or two
// characters: "《杂卦传》怎么说咸卦？", gold "《咸》速也" (the scope and a
// one-character name must find the chunk of that book, not the
// hexagram's own section).
func zaguaQuestions(files []kb.FileData) []question {
	var qs []question
	for _, f := range files {
		if !strings.HasSuffix(f.Name, "杂卦传-全文.txt") {
			continue
		}
		seen := map[string]bool{}
		for _, m := range zaguaSaying.FindAllStringSubmatch(string(f.Data), -1) {
			if seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			qs = append(qs, question{
				id: fmt.Sprintf("杂卦-%d", len(qs)+1), typ: "杂卦", text: "《杂卦传》怎么说" + m[1] + "卦？",
				gold: []string{m[1] + m[2]}, evidence: m[1] + m[2],
			})
		}
	}
	return qs
}
