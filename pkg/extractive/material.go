package extractive

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file turns a grounding into the material the model reads: its
// lines, each with its section path and citation, and their sentences,
// each with its speaker.

// speaker of a sentence.
const (
	speakerNone = iota
	speakerHuman
	speakerAI
)

type sentence struct {
	text string
	// scope is the section path of a cited sentence: the question's terms
	// it holds count as the sentence's own (a question naming the book or
	// section is answered by any sentence of it).
	scope   string
	cite    int   // its evidence's citation number, 0 when it carries none (or its own: see appendPassage)
	pos     int32 // order in the material
	line    int32 // index of its line in the material's lines
	speaker int8
	heading bool // a heading (see appendLines)
}

// material finds the question, the sentences of g's evidence and history,
// in that order, and their lines with their section paths.
func material(g llm.Grounding) (string, []sentence, []ctxLine) {
	q := strings.TrimSpace(g.Question)
	// Room for two sentences a line.
	n := 0
	for _, e := range g.Evidence {
		n += 1 + strings.Count(e.Text, "\n")
	}
	for _, m := range g.History {
		n += 1 + strings.Count(m.Content, "\n")
	}
	out := make([]sentence, 0, 2*n)
	lines := make([]ctxLine, 0, n)
	entry := 0
	for _, e := range g.Evidence {
		if e.Path == "" {
			out, lines, entry = appendPassage(out, lines, e, entry)
			continue
		}
		out, lines = appendLines(out, lines, e.Text, speakerNone, e.Path, e.ID, entry)
		entry++
	}
	for _, m := range g.History {
		out, lines = appendLines(out, lines, m.Content, roleSpeaker(m.Role), "", 0, entry)
		entry++
	}
	// The question itself, and questions the user asked before, answer
	// nothing.
	qn := normalize(q)
	out = slices.DeleteFunc(out, func(s sentence) bool {
		empty, same := normalizedIs(s.text, qn)
		return empty || same || (s.speaker == speakerHuman && isQuestion(s.text))
	})
	for i := range out {
		out[i].pos = int32(i)
	}
	return q, out, lines
}

func roleSpeaker(role string) int {
	switch role {
	case llm.RoleUser:
		return speakerHuman
	case llm.RoleAssistant:
		return speakerAI
	}
	return speakerNone
}

// appendLines adds the lines of t (one entry of the material, the
// entry-th), said by speaker, under the section path and with the
// citation cite, and their sentences. A heading (a short line that ends
// no sentence, followed by more text) sets the path of the lines after
// it and is a sentence marked as a heading.
func appendLines(out []sentence, lines []ctxLine, t string, speaker int, path string, cite, entry int) ([]sentence, []ctxLine) {
	var body []string
	for _, line := range strings.Split(t, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			body = append(body, line)
		}
	}
	for i, line := range body {
		heading := i+1 < len(body) && isHeading(line)
		if heading {
			path = joinPath(path, line)
		}
		lines = append(lines, ctxLine{text: line, path: path, cite: cite, entry: entry, speaker: speaker})
		for _, s := range text.Sentences(line) {
			sn := sentence{text: s, speaker: int8(speaker), line: int32(len(lines) - 1), cite: cite, heading: heading}
			if cite > 0 {
				sn.scope = path
			}
			out = append(out, sn)
		}
	}
	return out, lines
}

// appendPassage adds a passage without sections (a web page's excerpt)
// sentence by sentence: each sentence is a line and an entry of its own
// (the entry-th onwards) and carries the passage's citation before its
// closing punctuation ("…是生两仪[1]。").
func appendPassage(out []sentence, lines []ctxLine, e llm.Evidence, entry int) ([]sentence, []ctxLine, int) {
	for _, line := range strings.Split(e.Text, "\n") {
		for _, s := range text.Sentences(line) {
			if s = citeSentence(s, e.ID); s == "" {
				continue
			}
			out, lines = appendLines(out, lines, s, speakerNone, "", 0, entry)
			entry++
		}
	}
	return out, lines, entry
}

// citeSentence puts the citation [n] into sentence s before its closing
// punctuation; "" for a sentence of punctuation only. n 0 leaves s as it is.
func citeSentence(s string, n int) string {
	body := strings.TrimRightFunc(s, func(r rune) bool { return strings.ContainsRune("。！？；!?;.…”’\"'」』）)】》", r) })
	if body == "" || body == "…" {
		return ""
	}
	if n <= 0 {
		return s
	}
	return markSentence(s, fmt.Sprintf("[%d]", n))
}

// markSentence puts mark (citation markers, "[1][3]") into sentence s
// before its closing punctuation.
func markSentence(s, mark string) string {
	body := strings.TrimRightFunc(s, func(r rune) bool { return strings.ContainsRune("。！？；!?;.…”’\"'」』）)】》", r) })
	if body == "" {
		return s
	}
	tail := s[len(body):]
	last, _ := utf8.DecodeLastRuneInString(body)
	if text.IsCJK(last) || strings.ContainsRune("，、：", last) {
		return body + mark + tail
	}
	return body + " " + mark + tail
}

func isQuestion(s string) bool {
	s = strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("”’\"'」』)）", r) })
	return strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") || strings.HasSuffix(s, "吗")
}

// normalize keeps letters and digits, lower-cased, for equality tests.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// normalizedIs reports whether normalize(s) is empty and whether it is
// n, a normalized text, without building it.
func normalizedIs(s, n string) (empty, same bool) {
	empty, same = true, true
	j := 0 // normalize(s) so far is n[:j]
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			continue
		}
		empty = false
		if !same {
			break
		}
		r = unicode.ToLower(r)
		if r < utf8.RuneSelf {
			same = j < len(n) && n[j] == byte(r)
			j++
			continue
		}
		got, size := utf8.DecodeRuneInString(n[j:])
		same = size > 0 && got == r && got != utf8.RuneError
		j += size
	}
	return empty, same && j == len(n)
}

func isChinese(q string, sents []sentence) bool {
	if c, l := text.CountLetters(q); c > 0 || l > 0 {
		return c > 0
	}
	var c, l int
	for _, s := range sents {
		a, b := text.CountLetters(s.text)
		c, l = c+a, l+b
	}
	return c >= l/4 && c > 0
}
