package kb

import (
	"context"
	"strings"
	"testing"
)

// TestChatUnknownName: a Chinese question that names something in Latin
// script no chunk holds ("41R") is refused, with the name in the reason,
// though the chunks about another route share the rest of it; a name the
// base holds is answered.
func TestChatUnknownName(t *testing.T) {
	ctx := context.Background()
	s := newHashKB(t, "routes", offlineModels())
	mustAdd(t, s, "routes",
		FileData{Name: "41M.txt", Data: []byte("九龙巴士41M线是香港九龙的一条巴士路线，来往乐富及尖沙咀码头。")},
		FileData{Name: "7.txt", Data: []byte("九龙巴士7号线是香港九龙市区的一条日间巴士路线，来往乐富及尖沙咀码头。")},
	)
	for _, tt := range []struct{ q, want, reason string }{
		{"九龙巴士41M线来往哪里？", "乐富", ""},
		{"九龙巴士41R线来往哪里？", "", `"41r"`},
	} {
		reply, err := s.Chat(ctx, ChatRequest{Query: tt.q, KnowledgeBases: []string{"routes"}, MinRelevance: s.DefaultMinRelevance()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tt.want == "" {
			if !reply.Empty || !strings.Contains(reply.Reason, tt.reason) {
				t.Errorf("%s → %q (empty %v, reason %q): want a refusal naming %s", tt.q, reply.Text, reply.Empty, reply.Reason, tt.reason)
			}
			continue
		}
		if reply.Empty || !strings.Contains(reply.Text, tt.want) {
			t.Errorf("%s → %q (empty %v, reason %q): want %q", tt.q, reply.Text, reply.Empty, reply.Reason, tt.want)
		}
	}
}

// TestLeadingPair: the opening of the name a Chinese question is about is
// its first two characters once question words are stripped, unless the
// question opens with a function character, a quotation, a number or a
// Latin word.
func TestLeadingPair(t *testing.T) {
	tests := []struct{ q, want string }{
		{"赵鹏的职业是什么？", "赵鹏"},
		{"叶乔波是什么运动员？", "叶乔"},
		{"葉喬波是什麼運動員？", "叶乔"},
		{"哪一句俗语可以表现这种情况？", ""},
		{"受立法会的压力，香港城市大学设立了什么？", ""},
		{"为什么要修建吴淞路闸桥？", ""}, // 要 after the question word: a clause, not a name
		{"谁杀了司马晏？", ""},
		{"哪国的成年礼是在大学进行的？", ""},
		{"「亢龙有悔」出自哪里？", ""},
		{"2009年4月7日徐凤月在哪里举办了记者会？", ""},
		{"Apple Lossless是哪个公司的格式？", ""},
		{"䲟？", ""},
	}
	for _, tt := range tests {
		if got := leadingPair(tt.q); got != tt.want {
			t.Errorf("leadingPair(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
}
