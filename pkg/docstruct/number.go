package docstruct

import (
	"regexp"
	"strconv"
	"strings"
)

// Notation is how a number was written.
type Notation int

// The notations a number is read in.
const (
	Arabic  Notation = iota // 36, ３６
	Chinese                 // 三十六, 廿, 叁拾陆
	Roman                   // XXXVI, xxxvi
	Word                    // thirty-six, thirty-sixth
	Letter                  // (a), b.: a is 1
)

var cnDigits = map[rune]int{
	'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '兩': 2, '三': 3, '四': 4, '五': 5,
	'六': 6, '七': 7, '八': 8, '九': 9,
	'壹': 1, '贰': 2, '貳': 2, '叁': 3, '參': 3, '肆': 4, '伍': 5, '陆': 6, '陸': 6,
	'柒': 7, '捌': 8, '玖': 9,
}

var cnUnits = map[rune]int{'十': 10, '拾': 10, '百': 100, '佰': 100, '千': 1000, '仟': 1000}

// cnTens are the one-character multiples of ten: 廿 20, 卅 30, 卌 40.
var cnTens = map[rune]int{'廿': 20, '卅': 30, '卌': 40}

// numClass is the characters a Chinese or Arabic number is written with,
// for the patterns that find one in a line.
const numClass = `[零〇一二两兩三四五六七八九壹贰貳叁參肆伍陆陸柒捌玖十拾百佰千仟万萬廿卅卌0-9０-９]+`

// maxNumber bounds every number read: a part number is never larger, and
// the bound keeps arithmetic on hostile input from overflowing.
const maxNumber = 1_000_000

// chineseNumber reads s, written in Chinese numerals only (positional
// "一九九八" or with units "一百零八", "十六", "廿一", "叁拾陆").
func chineseNumber(s string) (int, bool) {
	rs := []rune(s)
	if len(rs) == 0 || len(rs) > 12 {
		return 0, false
	}
	positional := true
	for _, r := range rs {
		if _, ok := cnDigits[r]; !ok {
			positional = false
		}
	}
	if positional {
		n := 0
		for _, r := range rs {
			n = n*10 + cnDigits[r]
		}
		return n, n <= maxNumber
	}
	total, section, digit := 0, 0, -1
	for _, r := range rs {
		if d, ok := cnDigits[r]; ok {
			digit = d
			continue
		}
		if u, ok := cnUnits[r]; ok {
			if digit < 0 {
				if u != 10 {
					return 0, false // 百 with no digit before it
				}
				digit = 1 // 十六
			}
			section += digit * u
			digit = -1
			continue
		}
		if t, ok := cnTens[r]; ok {
			if digit >= 0 {
				return 0, false
			}
			section += t
			continue
		}
		if r == '万' || r == '萬' {
			if digit >= 0 {
				section += digit
			}
			if section == 0 {
				return 0, false
			}
			total += section * 10000
			section, digit = 0, -1
			continue
		}
		return 0, false
	}
	if digit >= 0 {
		section += digit
	}
	n := total + section
	return n, n <= maxNumber
}

// arabicNumber reads ASCII or full-width digits.
func arabicNumber(s string) (int, bool) {
	if s == "" || len(s) > 21 {
		return 0, false
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= '０' && r <= '９':
			b.WriteRune('0' + r - '０')
		default:
			return 0, false
		}
	}
	n, err := strconv.Atoi(b.String())
	if err != nil || n > maxNumber {
		return 0, false
	}
	return n, true
}

var romanRE = regexp.MustCompile(`^M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$`)

// romanNumber reads a strictly formed Roman numeral, I to MMMCMXCIX, all
// upper case or all lower case ("iv", not "Iv").
func romanNumber(s string) (int, bool) {
	if s == "" || len(s) > 15 {
		return 0, false
	}
	up := strings.ToUpper(s)
	if s != up && s != strings.ToLower(s) {
		return 0, false
	}
	if !romanRE.MatchString(up) {
		return 0, false
	}
	vals := map[byte]int{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
	n := 0
	for i := 0; i < len(up); i++ {
		v := vals[up[i]]
		if i+1 < len(up) && vals[up[i+1]] > v {
			n -= v
		} else {
			n += v
		}
	}
	return n, true
}

var (
	enOnes = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
		"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	enTens    = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
	enOrdOnes = []string{"zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
		"tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth"}
	enOrdTens = []string{"", "", "twentieth", "thirtieth", "fortieth", "fiftieth", "sixtieth", "seventieth", "eightieth", "ninetieth"}
	// enWords maps each English number word to its value and whether it
	// is an ordinal.
	enWords = func() map[string]enWord {
		m := map[string]enWord{"hundred": {100, false}, "hundredth": {100, true}}
		for i, w := range enOnes {
			m[w] = enWord{i, false}
			m[enOrdOnes[i]] = enWord{i, true}
		}
		for i, w := range enTens {
			if w != "" {
				m[w] = enWord{i * 10, false}
				m[enOrdTens[i]] = enWord{i * 10, true}
			}
		}
		return m
	}()
	ordSuffixRE = regexp.MustCompile(`^([0-9]{1,7})(st|nd|rd|th)$`)
)

type enWord struct {
	n   int
	ord bool
}

// englishNumber reads English number words, cardinal or ordinal, from one
// to nine hundred and ninety-nine: "four", "thirty-six", "twenty first",
// "one hundred and one", "hundredth"; and digits with an ordinal suffix
// ("1st", "14th"). ordinal reports an ordinal form.
func englishNumber(s string) (n int, ordinal bool, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if m := ordSuffixRE.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, true, n <= maxNumber
	}
	words := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '-' })
	if len(words) == 0 || len(words) > 6 {
		return 0, false, false
	}
	total, cur := 0, 0
	for i, w := range words {
		if w == "and" && i > 0 && i < len(words)-1 {
			continue
		}
		v, known := enWords[w]
		if !known {
			return 0, false, false
		}
		if ordinal {
			return 0, false, false // an ordinal ends the number
		}
		ordinal = v.ord
		switch {
		case v.n == 100:
			if cur == 0 {
				cur = 1
			}
			if cur >= 10 {
				return 0, false, false
			}
			total += cur * 100
			cur = 0
		case v.n >= 20:
			if cur != 0 {
				return 0, false, false
			}
			cur = v.n
		default:
			if cur != 0 && (cur < 20 || cur%10 != 0 || v.n >= 10) {
				return 0, false, false
			}
			cur += v.n
		}
	}
	n = total + cur
	return n, ordinal, n > 0 || words[0] == "zero" || words[0] == "zeroth"
}

// ParseNumber reads s as a whole as a number in any notation: Arabic
// digits (also full-width), Chinese numerals, a Roman numeral, English
// number words or an ordinal with its suffix ("14th"). It does not read
// letters: "a" is a number only in an enumeration's label.
func ParseNumber(s string) (int, Notation, bool) {
	s = strings.TrimSpace(s)
	if n, ok := arabicNumber(s); ok {
		return n, Arabic, true
	}
	if n, ok := chineseNumber(s); ok {
		return n, Chinese, true
	}
	if n, ok := romanNumber(s); ok {
		return n, Roman, true
	}
	if n, _, ok := englishNumber(s); ok {
		return n, Word, true
	}
	return 0, Arabic, false
}

// FormatNumber writes n in a notation: Chinese numerals (三十六), a Roman
// numeral (XXXVI, for 1 to 3999), an English word (thirty-six), a letter
// (a for 1, to z), else Arabic digits.
func FormatNumber(n int, nt Notation) string {
	switch {
	case nt == Chinese && n >= 0:
		return chineseString(n)
	case nt == Roman && n > 0 && n < 4000:
		return romanString(n)
	case nt == Word && n >= 0 && n < 1000:
		return englishString(n)
	case nt == Letter && n >= 1 && n <= 26:
		return string(rune('a' + n - 1))
	}
	return strconv.Itoa(n)
}

func chineseString(n int) string {
	digits := []rune("零一二三四五六七八九")
	if n < 10 {
		return string(digits[n])
	}
	if n >= 10000 {
		hi, lo := n/10000, n%10000
		s := chineseString(hi) + "万"
		if lo == 0 {
			return s
		}
		if lo < 1000 {
			s += "零"
		}
		return s + chineseString(lo)
	}
	var b strings.Builder
	units := []struct {
		v int
		r rune
	}{{1000, '千'}, {100, '百'}, {10, '十'}}
	zero := false
	started := false
	for _, u := range units {
		d := n / u.v
		n %= u.v
		switch {
		case d > 0:
			if zero {
				b.WriteRune('零')
				zero = false
			}
			if !(u.v == 10 && d == 1 && !started) {
				b.WriteRune(digits[d])
			}
			b.WriteRune(u.r)
			started = true
		case started:
			zero = true
		}
	}
	if n > 0 {
		if zero {
			b.WriteRune('零')
		}
		b.WriteRune(digits[n])
	}
	return b.String()
}

func romanString(n int) string {
	vals := []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
	syms := []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}
	var b strings.Builder
	for i, v := range vals {
		for n >= v {
			b.WriteString(syms[i])
			n -= v
		}
	}
	return b.String()
}

func englishString(n int) string {
	if n < 20 {
		return enOnes[n]
	}
	if n < 100 {
		if n%10 == 0 {
			return enTens[n/10]
		}
		return enTens[n/10] + "-" + enOnes[n%10]
	}
	s := enOnes[n/100] + " hundred"
	if n%100 != 0 {
		s += " " + englishString(n%100)
	}
	return s
}
