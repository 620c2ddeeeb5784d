package extractive

import "testing"

func TestPolar(t *testing.T) {
	tests := []struct {
		q    string
		verb string
		ok   bool
	}{
		{"Do they serve beer?", "", true},
		{"And is there parking?", "", true},
		{"Can you tell me if they allow dogs?", "", true},
		{"Can you tell me how big the rooms are?", "", false},
		{"Is it cash or card?", "", false},
		{"What is the price?", "", false},
		{"酒店有停车场吗？", "有", true},
		{"有没有停车场？", "有", true},
		{"是不是要预约？", "是", true},
		{"可不可以带狗？", "可以", true},
		{"是否提供早餐？", "提供", true},
		{"病假需要证明吗？", "需要", true},
		{"早餐几点开始吗？", "", false},
		{"去北京还是上海？", "", false},
	}
	for _, tt := range tests {
		verb, ok := polar(tt.q)
		if verb != tt.verb || ok != tt.ok {
			t.Errorf("polar(%q) = %q, %v; want %q, %v", tt.q, verb, ok, tt.verb, tt.ok)
		}
	}
}

func TestNegated(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"Pets are not allowed.", true},
		{"We don't offer parking.", true},
		{"Not only breakfast but dinner too.", false},
		{"It is never closed, not even on Sundays.", false},
		{"Free parking is available.", false},
		{"酒店不接受宠物。", true},
		{"酒店没有停车场。", true},
		{"有没有停车场？", false},
		{"房间非常干净，无线网络很快。", false},
	}
	for _, tt := range tests {
		if got := negated(tt.s); got != tt.want {
			t.Errorf("negated(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestYesNo(t *testing.T) {
	for _, tt := range []struct {
		verb string
		yes  bool
		want string
	}{
		{"", true, "Yes."}, {"", false, "No."}, {"有", false, "没有。"}, {"是", true, "是的。"}, {"是", false, "不是。"}, {"可以", false, "不可以。"},
	} {
		if got := yesNo(tt.verb, tt.yes); got != tt.want {
			t.Errorf("yesNo(%q, %v) = %q, want %q", tt.verb, tt.yes, got, tt.want)
		}
	}
}
