package demo

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// wings are the Ten Wings (十翼) in their traditional order, each the
// prefix of its section files in zhouyi/yizhuan-simplified and the name of
// its page.
var wings = []string{"彖传上", "彖传下", "象传上", "象传下", "文言传", "系辞传上", "系辞传下", "说卦传", "序卦传", "杂卦传"}

// hexagrams is the received (King Wen) order of the 64 hexagrams, in
// simplified characters, which orders the sections of 彖传 and 象传.
var hexagrams = strings.Fields(`乾 坤 屯 蒙 需 讼 师 比 小畜 履 泰 否 同人 大有 谦 豫 随 蛊 临 观 噬嗑 贲 剥 复 无妄 大畜 颐 大过 坎 离
咸 恒 遁 大壮 晋 明夷 家人 睽 蹇 解 损 益 夬 姤 萃 升 困 井 革 鼎 震 艮 渐 归妹 丰 旅 巽 兑 涣 节 中孚 小过 既济 未济`)

// chapterNumber reads 第N章 (N up to 99 in Chinese numerals) and 上篇/下篇;
// other names order after them.
func chapterNumber(s string) int {
	switch s {
	case "上篇", "乾文言":
		return 1
	case "下篇", "坤文言":
		return 2
	}
	s, ok := strings.CutPrefix(s, "第")
	if !ok {
		return 1000
	}
	s, ok = strings.CutSuffix(s, "章")
	if !ok {
		return 1000
	}
	digits := map[rune]int{'一': 1, '二': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}
	n, cur := 0, 0
	for _, r := range s {
		if r == '十' {
			n += max(cur, 1) * 10
			cur = 0
			continue
		}
		d, ok := digits[r]
		if !ok {
			return 1000
		}
		cur = d
	}
	return n + cur
}

// numeral writes n (1 to 99) in Chinese numerals, as chapterNumber reads
// them.
func numeral(n int) string {
	digits := []rune("〇一二三四五六七八九")
	var out []rune
	if n >= 10 {
		if n >= 20 {
			out = append(out, digits[n/10])
		}
		out = append(out, '十')
	}
	if n%10 != 0 || n < 10 {
		out = append(out, digits[n%10])
	}
	return string(out)
}

// sectionOrder is a section's place in its wing.
func sectionOrder(name string) int {
	if i := slices.Index(hexagrams, name); i >= 0 {
		return i
	}
	if name == "遯" {
		return slices.Index(hexagrams, "遁")
	}
	return chapterNumber(name)
}

type section struct{ name, text string }

// Pages returns the Ten Wings as Markdown pages, one per wing, keyed by
// file name (彖传上.md ...): a title, one paragraph per section (hexagram
// or chapter) opening with its label ("乾卦·彖传上：大哉乾元……"), and a note on
// the source.
func Pages() (map[string][]byte, error) {
	byWing := map[string][]section{}
	err := fs.WalkDir(texts, "zhouyi/yizhuan-simplified", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		wing, name, ok := strings.Cut(strings.TrimSuffix(path.Base(p), ".txt"), "-")
		if !ok || !slices.Contains(wings, wing) {
			return fmt.Errorf("%s: not a Ten Wings section", p)
		}
		b, err := texts.ReadFile(p)
		if err != nil {
			return err
		}
		byWing[wing] = append(byWing[wing], section{name, strings.TrimSpace(strings.ReplaceAll(string(b), "\r\n", "\n"))})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("demo: read Ten Wings: %w", err)
	}
	pages := map[string][]byte{}
	for i, wing := range wings {
		secs := byWing[wing]
		slices.SortStableFunc(secs, func(a, b section) int {
			if d := sectionOrder(a.name) - sectionOrder(b.name); d != 0 {
				return d
			}
			return strings.Compare(a.name, b.name)
		})
		var b strings.Builder
		fmt.Fprintf(&b, "# 周易·%s\n", wing)
		for _, s := range secs {
			heading := s.name
			if slices.Contains(hexagrams, s.name) || s.name == "遯" {
				heading = s.name + "卦"
			}
			// No heading line per section: an extractive model would quote
			// it alone. The label opens the section's first sentence.
			fmt.Fprintf(&b, "\n%s·%s：%s\n", heading, wing, s.text)
		}
		// The source note last, so that it is not a search snippet.
		fmt.Fprintf(&b, "\n---\n\n《周易》十翼之%c。公有领域文本（简体），随 mixchat 分发，来源见仓库 demo/zhouyi/README.md。\n", []rune("一二三四五六七八九十")[i])
		pages[wing+".md"] = []byte(b.String())
	}
	return pages, nil
}

// WritePages writes Pages into dir (created if missing) and returns how
// many it wrote.
func WritePages(dir string) (int, error) {
	pages, err := Pages()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("demo: %w", err)
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return 0, fmt.Errorf("demo: write search page: %w", err)
		}
	}
	return len(pages), nil
}
