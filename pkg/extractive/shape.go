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
var listMarker = regexp.MustCompile(`^(?:[-*•·+]\s+|\d{1,3}[.)]\s+|\d{1,3}、\s*|[(（]\d{1,3}[)）]\s*|[一二三四五六七八九十]{1,3}、\s*)`)

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

// shape returns the sentences the reading ranks: a copy of sents with
// tables read by row, list markers removed, and the answers to questions
// of the documents scoped under them; and which sentences are such
// questions (they count as the closest the material comes to the question,
// but are never a reply). zh chooses the separators of a table row's
// cells.
func shape(sents []sentence, zh bool) ([]sentence, []bool) {
	out := make([]sentence, 0, len(sents))
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
				for k := i + 1; k < j; k++ {
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
		if s.heading && strings.Contains(s.text, " | ") {
			s.heading = false
		}
		s.scope = tablelessPath(s.scope)
		if firstOfLine(i) && s.speaker != speakerHuman {
			if t := listMarker.ReplaceAllString(s.text, ""); strings.TrimSpace(t) != "" {
				s.text = t
			}
		}
		out = append(out, s)
	}
	// A question a document asks (an FAQ's) answers nothing. When it is
	// the first line of its passage, the rest of the passage (up to a
	// heading or another question) is its answer, read under it as under
	// a heading.
	asks := make([]bool, len(out))
	for i := 0; i < len(out); i++ {
		s := out[i]
		if s.speaker == speakerHuman || !isQuestion(s.text) {
			continue
		}
		asks[i] = true
		// The question that opens a passage (an FAQ's pair, a section
		// headed by a question) is what the rest answers.
		if s.speaker != speakerNone || s.cite == 0 || (i > 0 && out[i-1].cite == s.cite) || (i+1 < len(out) && out[i+1].line == s.line) {
			continue
		}
		q := strings.TrimSpace(s.text)
		for j := i + 1; j < len(out); j++ {
			a := &out[j]
			if a.cite != s.cite || a.speaker != s.speaker || a.heading || isQuestion(a.text) {
				break
			}
			if a.scope == "" {
				a.scope = q
			} else {
				a.scope += " > " + q
			}
		}
	}
	return out, asks
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
