package extractive

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// This file reshapes the sentences of the material before the generic
// reading ranks them: a table is read row by row, each row's cells with
// their column names; a list item loses its marker; a question in a
// document is not an answer, and what follows it is its answer.

// listMarker is a list item's marker at the start of a line: "- ", "* ",
// "• ", "1. ", "1) ", "(1) ", "（1）", "一、", "1、".
var (
	listMarker = regexp.MustCompile(`^(?:[-*•·+]\s+|\d{1,3}[.)]\s+|\d{1,3}、\s*|[(（]\d{1,3}[)）]\s*|[一二三四五六七八九十]{1,3}、\s*)`)
	qMark      = regexp.MustCompile(`^(?:Q|Question|问|問|问题|問題)\s*[:：]\s*`)
	aMark      = regexp.MustCompile(`^(?:A|Answer|答|回答|答案)\s*[:：]\s*`)
)

// mayOpenList reports whether s starts with a rune listMarker's matches
// start with: most sentences do not, and need no regular expression.
func mayOpenList(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r >= '0' && r <= '9' || strings.ContainsRune("-*•·+(（一二三四五六七八九十", r)
}

// mayOpenQuestion reports whether s starts with a rune qMark's matches
// start with.
func mayOpenQuestion(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == 'Q' || r == '问' || r == '問'
}

// cutMarker returns s without the marker re finds at its start, and
// whether there was one (with text after it).
func cutMarker(re *regexp.Regexp, s string) (string, bool) {
	loc := re.FindStringIndex(s)
	if loc == nil || strings.TrimSpace(s[loc[1]:]) == "" {
		return s, false
	}
	return s[loc[1]:], true
}

// tableCells splits a table row as the loaders write it ("a | b | c"); nil
// for a line that is not one.
func tableCells(s string) []string {
	if !strings.Contains(s, " | ") {
		return nil
	}
	cells := strings.Split(s, " | ")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

// What a sentence is to the question–answer structure of its passage.
const (
	kindPlain    = iota
	kindQuestion // a question of the material: the closest it may come to the question asked, never a reply
	kindAnswer   // the answer to a question that opens its passage
	kindCells    // a table's row read alone (its header is not in the passage): ranked as a heading
)

// role is what a sentence is to the structure of its passage.
type role struct {
	kind     int
	table    int    // 1 + the index of the table it is a row of, 0 for none
	question string // the question an answer answers
}

// shape returns the sentences the reading ranks: a copy of sents with
// tables read by row, list markers removed, and the answers to questions
// of the documents scoped under them; and the role of each. zh chooses
// the separators of a table row's cells.
func shape(sents []sentence, zh bool) ([]sentence, []role) {
	if plain(sents) {
		return sents, make([]role, len(sents))
	}
	return reshape(sents, zh)
}

// reshape is shape of a material that is not plain.
func reshape(sents []sentence, zh bool) ([]sentence, []role) {
	out := make([]sentence, 0, len(sents))
	var table []int // per sentence of out: 1 + the index of its table, 0 for none
	var cells []int // sentences of out that are a table's lone row
	tables := 0
	firstOfLine := func(i int) bool { return i == 0 || sents[i-1].line != sents[i].line }
	wholeLine := func(i int) bool {
		return firstOfLine(i) && (i+1 == len(sents) || sents[i+1].line != sents[i].line)
	}
	for i := 0; i < len(sents); i++ {
		s := sents[i]
		// A table: a run of whole lines of as many cells, the first its
		// header.
		if cells := tableCells(s.text); len(cells) >= 2 && wholeLine(i) && s.speaker == speakerNone {
			j := i + 1
			for j < len(sents) && wholeLine(j) && sents[j].cite == s.cite && len(tableCells(sents[j].text)) == len(cells) {
				j++
			}
			if j-i >= 2 {
				tables++
				for k := i + 1; k < j; k++ {
					for len(table) < len(out) {
						table = append(table, 0)
					}
					table = append(table, tables)
					r := sents[k]
					r.text = tableRow(cells, tableCells(r.text), zh)
					r.heading = false
					r.scope = tablelessPath(r.scope)
					out = append(out, r)
				}
				i = j - 1
				continue
			}
		}
		if tableCells(s.text) != nil {
			cells = append(cells, len(out)) // cells outside a table of rows: no sentence
		}
		s.scope = tablelessPath(s.scope)
		if firstOfLine(i) && s.speaker != speakerHuman && mayOpenList(s.text) {
			if t := listMarker.ReplaceAllString(s.text, ""); strings.TrimSpace(t) != "" {
				s.text = t
			}
		}
		out = append(out, s)
	}
	// A question–answer pair, as the knowledge base writes an FAQ's ("Q:
	// …" then "A: …" on the next line, "问：" and "答："): the question
	// answers nothing, the answer is read under it.
	for len(table) < len(out) {
		table = append(table, 0)
	}
	kinds := make([]role, len(out))
	for i, t := range table {
		kinds[i].table = t
	}
	for _, i := range cells {
		kinds[i].kind = kindCells
	}
	for i := 0; i < len(out); i++ {
		s := out[i]
		if s.speaker != speakerNone || (i > 0 && out[i-1].line == s.line) {
			continue
		}
		q, ok := cutMarker(qMark, s.text)
		if !ok {
			continue
		}
		k := i + 1 // the question's line ends before k
		for k < len(out) && out[k].line == s.line {
			k++
		}
		if k == len(out) || out[k].cite != s.cite || out[k].speaker != s.speaker {
			continue
		}
		if _, ok := cutMarker(aMark, out[k].text); !ok {
			continue
		}
		// A pair: the question never answers; the sentences after it, up
		// to the next question or heading, are its answer, read under it
		// as under a heading.
		out[i].text = q
		for j := i; j < k; j++ {
			kinds[j].kind = kindQuestion
			if j > i {
				q += " " + out[j].text
			}
		}
		for j := k; j < len(out); j++ {
			a := &out[j]
			if a.cite != s.cite || a.speaker != s.speaker || a.heading {
				break
			}
			if j > k && a.line != out[j-1].line {
				if _, isQ := cutMarker(qMark, a.text); isQ {
					break
				}
			}
			if t, ok := cutMarker(aMark, a.text); ok && j == k {
				a.text = t
			}
			if a.scope == "" {
				a.scope = q
			} else {
				a.scope += " > " + q
			}
			kinds[j].kind, kinds[j].question = kindAnswer, q
		}
	}
	return out, kinds
}

// plain reports whether shape leaves sents as they are, each a plain
// sentence: none is a table's row or cell (none holds " | ", nor does its
// section path), none opens a list item shape cuts, none of the material
// opens a question: such as a conversation's sentences, which shape then
// need not copy.
func plain(sents []sentence) bool {
	for i, s := range sents {
		if strings.Contains(s.text, " | ") || strings.Contains(s.scope, " | ") {
			return false
		}
		if i > 0 && sents[i-1].line == s.line {
			continue
		}
		if s.speaker != speakerHuman && mayOpenList(s.text) {
			if t := listMarker.ReplaceAllString(s.text, ""); strings.TrimSpace(t) != "" {
				return false
			}
		}
		if s.speaker == speakerNone && mayOpenQuestion(s.text) {
			if _, ok := cutMarker(qMark, s.text); ok {
				return false
			}
		}
	}
	return true
}

// tablelessPath is a section path without the segments a table's rows made
// (the material reads a short row as a heading).
func tablelessPath(p string) string {
	if !strings.Contains(p, " | ") {
		return p
	}
	segs := strings.Split(p, " > ")
	kept := segs[:0]
	for _, s := range segs {
		if !strings.Contains(s, " | ") {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, " > ")
}

// tableRow is a row with its column names: "工龄：满5年；年假：16天" or
// "Size: 8 or more; Price: 10".
func tableRow(header, cells []string, zh bool) string {
	sep, colon := "; ", ": "
	if zh {
		sep, colon = "；", "："
	}
	var parts []string
	for k, c := range cells {
		if c == "" {
			continue
		}
		h := ""
		if k < len(header) {
			h = header[k]
		}
		if h == "" || h == c {
			parts = append(parts, c)
			continue
		}
		parts = append(parts, h+colon+c)
	}
	row := strings.Join(parts, sep)
	if last, _ := utf8.DecodeLastRuneInString(row); row != "" && !strings.ContainsRune("。.！!？?", last) {
		if zh || text.IsCJK(last) {
			row += "。"
		} else {
			row += "."
		}
	}
	return row
}
