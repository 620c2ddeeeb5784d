package memory

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Dates a question names ("on 7 July, 2023", "in May 2023", "in June",
// "between August 11 and August 15 2023", "on Aug 15th", "summer 2022",
// "2023年7月7日", "yesterday", "上周"), so retrieval can favour what was said
// then. Written here rather than taken from a date-parsing library because
// only these few question forms matter and they must work offline in both
// languages; a general parser would also match much that is not a date.

const monthAlt = `january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec`

var (
	reDayMonthYear = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+(` + monthAlt + `)\.?,?\s+(\d{4})\b`)
	reMonthDayYear = regexp.MustCompile(`(?i)\b(` + monthAlt + `)\.?\s+(\d{1,2})(?:st|nd|rd|th)?(?:,\s*|\s+)(\d{4})\b`)
	reBetween      = regexp.MustCompile(`(?i)\bbetween\s+(` + monthAlt + `)\.?\s+(\d{1,2})(?:st|nd|rd|th)?(?:(?:,\s*|\s+)(\d{4}))?\s+and\s+(?:(` + monthAlt + `)\.?\s+)?(\d{1,2})(?:st|nd|rd|th)?(?:,\s*|\s+)(\d{4})\b`)
	reMonthDay     = regexp.MustCompile(`(?i)\b(?:on|since|by|before|after)\s+(?:(` + monthAlt + `)\.?\s+(\d{1,2})(?:st|nd|rd|th)?|(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(` + monthAlt + `))\b`)
	reSeasonYear   = regexp.MustCompile(`(?i)\b(spring|summer|fall|autumn|winter)\s+(?:of\s+)?((?:19|20)\d\d)\b`)
	reMonthYear    = regexp.MustCompile(`(?i)\b(` + monthAlt + `)\.?,?\s+(\d{4})\b`)
	reMonthOnly    = regexp.MustCompile(`(?i)\b(?:in|during|of|since|early|late|mid)\s+(` + monthAlt + `)\b`)
	reYearOnly     = regexp.MustCompile(`\b(?:in|during|of)\s+((?:19|20)\d\d)\b`)
	reISODate      = regexp.MustCompile(`\b((?:19|20)\d\d)-(\d{1,2})-(\d{1,2})\b`)
	reZhYMD        = regexp.MustCompile(`((?:19|20)\d\d)\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]`)
	reZhYM         = regexp.MustCompile(`((?:19|20)\d\d)\s*年\s*(\d{1,2})\s*月`)
	reZhMD         = regexp.MustCompile(`(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]`)
	reZhM          = regexp.MustCompile(`(\d{1,2})\s*月(?:份)?`)
)

var monthByName = map[string]time.Month{}

func init() {
	for m := time.January; m <= time.December; m++ {
		name := strings.ToLower(m.String())
		monthByName[name] = m
		monthByName[name[:3]] = m
	}
	monthByName["sept"] = time.September
}

// dateSpan is a half-open interval of days [From, To).
type dateSpan struct {
	From, To time.Time
}

// questionDates finds the period a question names, relative to now (the
// time of the conversation's latest message) in loc. A month or date
// without a year is the latest such one not after now.
func questionDates(q string, now time.Time, loc *time.Location) (dateSpan, bool) {
	now = now.In(loc)
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, loc) }
	valid := func(y int, m time.Month, d int) bool {
		return m >= 1 && m <= 12 && d >= 1 && d <= 31 && day(y, m, d).Day() == d
	}
	oneDay := func(t time.Time) (dateSpan, bool) { return dateSpan{t, t.AddDate(0, 0, 1)}, true }
	month := func(y int, m time.Month) (dateSpan, bool) {
		t := day(y, m, 1)
		return dateSpan{t, t.AddDate(0, 1, 0)}, true
	}
	latestYear := func(m time.Month, d int) int {
		y := now.Year()
		if day(y, m, d).After(now) {
			y--
		}
		return y
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }

	if m := reISODate.FindStringSubmatch(q); m != nil {
		if y, mo, d := atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]); valid(y, mo, d) {
			return oneDay(day(y, mo, d))
		}
	}
	if m := reZhYMD.FindStringSubmatch(q); m != nil {
		if y, mo, d := atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]); valid(y, mo, d) {
			return oneDay(day(y, mo, d))
		}
	}
	if m := reBetween.FindStringSubmatch(q); m != nil {
		// "between August 11 and August 15 2023", "between May 3 and 9, 2023"
		y2, mo2, d2 := atoi(m[6]), monthByName[strings.ToLower(m[4])], atoi(m[5])
		if m[4] == "" {
			mo2 = monthByName[strings.ToLower(m[1])]
		}
		y1, mo1, d1 := y2, monthByName[strings.ToLower(m[1])], atoi(m[2])
		if m[3] != "" {
			y1 = atoi(m[3])
		}
		if valid(y1, mo1, d1) && valid(y2, mo2, d2) && !day(y2, mo2, d2).Before(day(y1, mo1, d1)) {
			return dateSpan{day(y1, mo1, d1), day(y2, mo2, d2).AddDate(0, 0, 1)}, true
		}
	}
	if m := reDayMonthYear.FindStringSubmatch(q); m != nil {
		if y, mo, d := atoi(m[3]), monthByName[strings.ToLower(m[2])], atoi(m[1]); valid(y, mo, d) {
			return oneDay(day(y, mo, d))
		}
	}
	if m := reMonthDayYear.FindStringSubmatch(q); m != nil {
		if y, mo, d := atoi(m[3]), monthByName[strings.ToLower(m[1])], atoi(m[2]); valid(y, mo, d) {
			return oneDay(day(y, mo, d))
		}
	}
	if m := reZhYM.FindStringSubmatch(q); m != nil {
		if y, mo := atoi(m[1]), time.Month(atoi(m[2])); mo >= 1 && mo <= 12 {
			return month(y, mo)
		}
	}
	if m := reMonthYear.FindStringSubmatch(q); m != nil {
		return month(atoi(m[2]), monthByName[strings.ToLower(m[1])])
	}
	if m := reSeasonYear.FindStringSubmatch(q); m != nil {
		// Seasons of the northern hemisphere, by whole months.
		y := atoi(m[2])
		switch strings.ToLower(m[1]) {
		case "spring":
			return dateSpan{day(y, 3, 1), day(y, 6, 1)}, true
		case "summer":
			return dateSpan{day(y, 6, 1), day(y, 9, 1)}, true
		case "fall", "autumn":
			return dateSpan{day(y, 9, 1), day(y, 12, 1)}, true
		default: // winter: December of that year to February
			return dateSpan{day(y, 12, 1), day(y+1, 3, 1)}, true
		}
	}
	if m := reMonthDay.FindStringSubmatch(q); m != nil {
		// "on Aug 15th", "on the 3rd of June": the latest such day.
		mo, d := monthByName[strings.ToLower(m[1])], atoi(m[2])
		if m[1] == "" {
			mo, d = monthByName[strings.ToLower(m[4])], atoi(m[3])
		}
		if valid(2000, mo, d) {
			return oneDay(day(latestYear(mo, d), mo, d))
		}
	}
	if m := reZhMD.FindStringSubmatch(q); m != nil {
		if mo, d := time.Month(atoi(m[1])), atoi(m[2]); valid(2000, mo, d) {
			return oneDay(day(latestYear(mo, d), mo, d))
		}
	}
	if m := reMonthOnly.FindStringSubmatch(q); m != nil {
		mo := monthByName[strings.ToLower(m[1])]
		// "may" is also a verb: only "in May" and the like get here.
		return month(latestYear(mo, 1), mo)
	}
	if m := reZhM.FindStringSubmatch(q); m != nil {
		if mo := time.Month(atoi(m[1])); mo >= 1 && mo <= 12 {
			return month(latestYear(mo, 1), mo)
		}
	}
	if m := reYearOnly.FindStringSubmatch(q); m != nil {
		t := day(atoi(m[1]), 1, 1)
		return dateSpan{t, t.AddDate(1, 0, 0)}, true
	}

	today := day(now.Year(), now.Month(), now.Day())
	lq := strings.ToLower(q)
	switch {
	case strings.Contains(q, "前天") || strings.Contains(lq, "day before yesterday"):
		return oneDay(today.AddDate(0, 0, -2))
	case strings.Contains(q, "昨天") || strings.Contains(lq, "yesterday"):
		return oneDay(today.AddDate(0, 0, -1))
	case strings.Contains(q, "今天") || containsWord(lq, "today"):
		return oneDay(today)
	case strings.Contains(q, "上周") || strings.Contains(q, "上个星期") || strings.Contains(lq, "last week"):
		return dateSpan{today.AddDate(0, 0, -14), today.AddDate(0, 0, -6)}, true
	case strings.Contains(q, "上个月") || strings.Contains(q, "上月") || strings.Contains(lq, "last month"):
		m := day(now.Year(), now.Month(), 1).AddDate(0, -1, 0)
		return dateSpan{m, m.AddDate(0, 1, 0)}, true
	}
	return dateSpan{}, false
}

// Time words of a message ("yesterday", "last Friday", "3 years ago", "in
// May", "下周"): a message that places something in time is what a
// question asking when needs.
var reTimeWords = regexp.MustCompile(`(?i)\b(?:yesterday|today|tonight|tomorrow|recently|ago|lately|since|(?:last|next|this|past|coming|previous|that)\s+(?:week|weekend|month|year|night|morning|evening|summer|winter|spring|fall|autumn|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|` + monthAlt + `|(?:19|20)\d\d|(?:\d+|a|one|two|three|four|five|six|few|couple of)\s+(?:years?|months?|weeks?|days?)|the other day)\b|昨天|今天|明天|前天|上周|下周|上个月|下个月|去年|今年|明年|周末|星期|礼拜|\d+\s*[年月日号]`)

// reAsksWhen matches questions that ask for a time ("When did…", "How
// long…", "What year…", "什么时候").
var reAsksWhen = regexp.MustCompile(`(?i)^\s*(?:when\b|how long\b|how many (?:years|months|weeks|days)\b|(?:what|which) (?:year|month|day|date|time|week|weekend)\b)|什么时候|哪一?年|哪一?天|几月|多久|多长时间`)

// hasTimeWords reports whether a message places something in time.
func hasTimeWords(s string) bool { return reTimeWords.MatchString(s) }

// asksWhen reports whether a question asks for a time.
func asksWhen(q string) bool { return reAsksWhen.MatchString(q) }
