package mix

import (
	"regexp"
	"strconv"
	"strings"
)

// citeMark is a citation marker an answerer writes: [n], n counting its own
// sources from 1.
var citeMark = regexp.MustCompile(`[ \t]?\[(\d{1,3})\]`)

// sourceOffsets returns, for each answer, where its sources start in the
// turn's sources list (docsOf: the answers' sources in answer order): the
// client numbers that list from 1, so an answer's [k] is the list's
// [offset+k].
func sourceOffsets(outs []Outcome) map[string]int {
	offs := make(map[string]int, len(outs))
	n := 0
	for _, o := range outs {
		offs[o.From] = n
		n += len(o.Sources)
	}
	return offs
}

// renumber rewrites the citation markers of an answer whose sources start
// at offset in the turn's sources list ([k] becomes [offset+k]); a marker
// that names none of the answer's n sources (one echoed from an earlier
// reply, or a model's slip) is dropped, since it would point at another
// answer's source.
func renumber(text string, offset, n int) string {
	if !strings.Contains(text, "[") {
		return text
	}
	return citeMark.ReplaceAllStringFunc(text, func(m string) string {
		sp := ""
		if m[0] == ' ' || m[0] == '\t' {
			sp, m = m[:1], m[1:]
		}
		k, err := strconv.Atoi(m[1 : len(m)-1])
		if err != nil || k < 1 || k > n {
			return ""
		}
		return sp + "[" + strconv.Itoa(offset+k) + "]"
	})
}
