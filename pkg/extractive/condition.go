package extractive

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// This file reads the numeric conditions of a question ("入职满5年",
// "for groups over 8", "under 12 years") and of the sentences that may
// answer it ("满1年不满5年", "5-10年", "10 or more guests"), so the reading
// prefers the sentence or table row whose condition holds for the
// question's, and passes over those whose condition excludes it.

// span is a range of numbers with a unit ("年", "guests"; "" when none
// follows the number).
type span struct {
	lo, hi float64 // ±Inf when open
	unit   string
}

func (s span) holds(v float64) bool { return v >= s.lo && v <= s.hi }

// compatible reports whether a number the question asks of, in unit
// asked, can be compared with one in unit u: the same unit, or none named
// in the question ("groups over 8" and "9 or more guests").
func compatible(asked, u string) bool { return asked == "" || asked == u }

const num = `(\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百]+)`

var (
	// A unit after a number: one CJK character, or a word.
	unitRe = regexp.MustCompile(`^\s*(\p{Han}|[a-z]+)`)
	// Forms that bound a number, in the order they are tried; each names
	// the number's place in the range: lower (inclusive or not), upper,
	// or both of a range.
	rangeForms = []struct {
		re   *regexp.Regexp
		kind string // "range", "lo", "lo>", "hi", "hi<"
	}{
		{regexp.MustCompile(`满` + num + `(\p{Han})?(?:以上)?[，, ]?(?:不满|未满|不足|少于)` + num), "range<"},
		{regexp.MustCompile(num + `\s*(?:[-–—~～至到]|to|and)\s*` + num), "range"},
		{regexp.MustCompile(`between\s+` + num + `\s+and\s+` + num), "range"},
		{regexp.MustCompile(`(?:超过|多于|大于|高于|over|more than|above|greater than|exceeding|older than)\s*` + num), "lo>"},
		{regexp.MustCompile(`(?:不满|未满|不足|少于|低于|小于|under|less than|fewer than|below|younger than)\s*` + num), "hi<"},
		{regexp.MustCompile(`(?:满|至少|不少于|不低于|at least|minimum of|min\.?)\s*` + num), "lo"},
		{regexp.MustCompile(`(?:最多|至多|不超过|up to|at most|no more than|maximum of|max\.?)\s*` + num), "hi"},
		{regexp.MustCompile(num + `\s*(\p{Han})?\s*(?:以上|及以上|或以上|或更多|起|or more|or older|or over|and over|and above|and up|\+)`), "lo"},
		{regexp.MustCompile(num + `\s*(\p{Han})?\s*(?:以下|及以下|或以下|以内|之内|or fewer|or less|or younger|or under|and under|and below)`), "hi"},
	}
	// A bare number is written in digits: a Chinese numeral outside a
	// bound ("八佾", "一些") is seldom a quantity.
	bareNum = regexp.MustCompile(`\d+(?:\.\d+)?`)
)

// zhDigits maps Chinese numerals to their values.
var zhDigits = map[rune]int{'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}

// parseNum reads an Arabic or a Chinese number (up to the hundreds).
func parseNum(s string) (float64, bool) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, true
	}
	total, cur := 0, 0
	for _, r := range s {
		switch {
		case r == '十':
			if cur == 0 {
				cur = 1
			}
			total += cur * 10
			cur = 0
		case r == '百':
			if cur == 0 {
				cur = 1
			}
			total += cur * 100
			cur = 0
		default:
			d, ok := zhDigits[r]
			if !ok {
				return 0, false
			}
			cur = cur*10 + d
		}
	}
	total += cur
	return float64(total), utf8.RuneCountInString(s) > 0
}

// mayHoldNumber reports whether s, folded, holds a digit (of either
// width) or a Chinese numeral: every form spans reads has a number, and
// most sentences have none.
func mayHoldNumber(s string) bool {
	for _, r := range s {
		if r >= '0' && r <= '9' || r >= '０' && r <= '９' {
			return true
		}
		if r >= 0x3007 { // 〇, the first numeral above the digits
			if _, ok := zhDigits[text.FoldRune(r)]; ok || text.FoldRune(r) == '十' || text.FoldRune(r) == '百' {
				return true
			}
		}
	}
	return false
}

// unitAfter is the unit that follows position i of s.
func unitAfter(s string, i int) string {
	m := unitRe.FindStringSubmatch(s[i:])
	if m == nil {
		return ""
	}
	u := m[1]
	switch u {
	case "or", "and", "to", "more", "less", "fewer", "over", "under", "up", "and_":
		return ""
	}
	return strings.TrimSuffix(u, "s") // "guests" and "guest"
}

// spans returns the numeric conditions of s: its ranges, bounds and (when
// bare is set) its bare numbers as one-point ranges, with their units.
func spans(s string, bare bool) []span {
	if !mayHoldNumber(s) {
		return nil
	}
	f := strings.ToLower(text.Fold(s))
	f = strings.Map(func(r rune) rune {
		if r >= '０' && r <= '９' {
			return '0' + (r - '０')
		}
		return r
	}, f)
	var out []span
	used := make([]bool, len(f))
	mark := func(a, b int) {
		for k := a; k < b; k++ {
			used[k] = true
		}
	}
	free := func(a, b int) bool {
		for k := a; k < b; k++ {
			if used[k] {
				return false
			}
		}
		return true
	}
	for _, form := range rangeForms {
		for _, m := range form.re.FindAllStringSubmatchIndex(f, -1) {
			if !free(m[0], m[1]) {
				continue
			}
			var nums []float64
			var unit string
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] < 0 {
					continue
				}
				sub := f[m[g]:m[g+1]]
				if v, ok := parseNum(sub); ok {
					nums = append(nums, v)
					if u := unitAfter(f, m[g+1]); u != "" && unit == "" {
						unit = u
					}
				} else if unit == "" && utf8.RuneCountInString(sub) == 1 {
					unit = sub // the unit group of a Chinese form
				}
			}
			if len(nums) == 0 {
				continue
			}
			if unit == "" {
				unit = unitAfter(f, m[1])
			}
			sp := span{lo: math.Inf(-1), hi: math.Inf(1), unit: unit}
			switch form.kind {
			case "range", "range<":
				if len(nums) < 2 || nums[1] < nums[0] {
					continue
				}
				sp.lo, sp.hi = nums[0], nums[1]
				if form.kind == "range<" {
					sp.hi = nums[1] - 0.5 // "满1年不满5年": 5 is out
				}
			case "lo":
				sp.lo = nums[0]
			case "lo>":
				sp.lo = nums[0] + 0.5
			case "hi":
				sp.hi = nums[0]
			case "hi<":
				sp.hi = nums[0] - 0.5
			}
			mark(m[0], m[1])
			out = append(out, sp)
		}
	}
	if bare {
		for _, m := range bareNum.FindAllStringIndex(f, -1) {
			if !free(m[0], m[1]) || strings.HasSuffix(f[:m[0]], "第") {
				continue // an ordinal ("第3条") names a part, not a quantity
			}
			if v, ok := parseNum(f[m[0]:m[1]]); ok {
				out = append(out, span{lo: v, hi: v, unit: unitAfter(f, m[1])})
			}
		}
	}
	return out
}

// askedValues are the values a question's conditions name: a bound's own
// number ("满5年" is 5, "over 8" is 9 for whole numbers). A bare number
// names no condition: in a question it is more often a name's ("18号线",
// "AK-130", "2010年决赛").
func askedValues(q string) []span {
	var out []span
	for _, s := range spans(q, false) {
		v := s.lo
		switch {
		case math.IsInf(s.lo, -1) && math.IsInf(s.hi, 1):
			continue
		case s.lo == s.hi && s.unit == "":
			continue // a bare number without a unit ("Section 8", "a party of 4") is no condition
		case math.IsInf(s.lo, -1):
			v = s.hi
		case !math.IsInf(s.hi, 1) && s.hi != s.lo:
			continue // a range in a question asks of the range
		}
		if v != math.Trunc(v) {
			v = math.Round(v) // the whole number past a strict bound
			if v < s.lo {
				v++
			}
			if v > s.hi {
				v--
			}
		}
		out = append(out, span{lo: v, hi: v, unit: s.unit})
	}
	return out
}

// conditionFit says how closely a sentence's conditions meet the
// question's values: 1 when a bounded range (or a number) holds them, less
// for an open one the further its bound ("满1年后" holds 5 years, less
// closely than "满5年不满10年"), -1 when one excludes them, 0 when it names
// nothing to compare.
func conditionFit(asked []span, s string) float64 {
	if len(asked) == 0 {
		return 0
	}
	fit, excluded := 0.0, false
	for _, sp := range spans(s, true) {
		for _, a := range asked {
			if !compatible(a.unit, sp.unit) || (a.unit == "" && sp.unit == "") {
				continue
			}
			v := a.lo
			switch {
			case !sp.holds(v):
				excluded = true
			case !math.IsInf(sp.lo, 0) && !math.IsInf(sp.hi, 0):
				fit = 1
			case !math.IsInf(sp.lo, 0):
				fit = math.Max(fit, 1/(2+(v-sp.lo)/math.Max(1, math.Abs(v))))
			default:
				fit = math.Max(fit, 1/(2+(sp.hi-v)/math.Max(1, math.Abs(v))))
			}
		}
	}
	if fit == 0 && excluded {
		return -1
	}
	return fit
}

var (
	zhHowMany = regexp.MustCompile(`(?:多少|几)(\p{Han})?`)
	enHowMany = regexp.MustCompile(`how (?:many|much|long|old|often)(?:\s+([a-z]+))?`)
)

// askedQuantity reads a question that asks for a quantity in a unit
// ("多少天", "几年", "how many days"): the unit, and ok.
func askedQuantity(q string) (unit string, ok bool) {
	f := strings.ToLower(text.Fold(q))
	if m := zhHowMany.FindStringSubmatch(f); m != nil && m[1] != "" && m[1] != "个" && m[1] != "么" {
		return m[1], true
	}
	if m := enHowMany.FindStringSubmatch(f); m != nil {
		switch m[1] {
		case "", "is", "are", "does", "do", "did", "will", "would", "can", "should", "was", "were":
			return "", false
		}
		return strings.TrimSuffix(m[1], "s"), true
	}
	return "", false
}

// statesQuantity reports whether s states a number (in unit, when one is
// given).
func statesQuantity(s, unit string) bool {
	for _, sp := range spans(s, true) {
		if unit == "" || sp.unit == unit {
			return true
		}
	}
	return false
}
