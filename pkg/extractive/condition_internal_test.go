package extractive

import "testing"

func TestConditionFit(t *testing.T) {
	tests := []struct {
		q, s string
		want float64 // >0 holds (1: bounded), <0 excludes, 0 nothing to compare
	}{
		{"入职满5年的员工有多少天年假？", "满5年不满10年：16天", 1},
		{"入职满5年的员工有多少天年假？", "满1年不满5年：12天", -1},
		{"入职满5年的员工有多少天年假？", "满10年及以上：20天", -1},
		{"入职满5年的员工有多少天年假？", "每年3月发放", 0},
		{"入职满十二年的员工呢？", "满10年以上", 1.0 / (2 + 2.0/12)},
		{"工作超过3年可以休几天？", "3年以下：5天", -1},
		{"Is a deposit needed for groups over 8?", "9 or more guests: 20%", 1.0 / 2},
		{"Is a deposit needed for groups over 8?", "2 to 8 guests: none", -1},
		{"Do children under 12 eat free?", "Children aged 4-11 eat free", 1},
		{"What does line 18 cost?", "Line 12 costs 3 yuan", 0}, // a bare number is a name's
	}
	for _, tt := range tests {
		if got := conditionFit(askedValues(tt.q), tt.s); got != tt.want {
			t.Errorf("conditionFit(%q, %q) = %v, want %v (asked %v, spans %v)", tt.q, tt.s, got, tt.want, askedValues(tt.q), spans(tt.s, true))
		}
	}
}
