package kb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFAQPairs loads an FAQ file in each format and checks that every
// question–answer pair is one piece: the question on its first line and in
// metadata "question", the answer below it, and prose left as prose.
func TestFAQPairs(t *testing.T) {
	tests := []struct {
		file  string
		pairs map[string]string // question → answer
		prose []string          // pieces that are no pair hold these
		meta  map[string]map[string]any
	}{
		{
			file: "faq.md",
			pairs: map[string]string{
				"Is parking available for members?": "Yes, members park free of charge in the east garage.",
				"Can I bring a guest?":              "No, guests are not admitted on weekdays.",
				"会员卡丢了怎么办？":                         "请携带身份证到前台补办，工本费二十元。",
				"How do I renew my membership?":     "Renew at the front desk or on the website, up to one month before it ends.",
				"Do you offer lockers?":             "Lockers are available on the second floor for a small fee.",
			},
			prose: []string{"Our desk opens at nine every weekday.", "We are open from 9:00 to 21:00."},
			meta: map[string]map[string]any{
				"Can I bring a guest?":          {"section": "Member services > Frequently asked questions"},
				"How do I renew my membership?": {"section": "Member services"},
			},
		},
		{
			file: "faq.csv",
			pairs: map[string]string{
				"How do I pay my bill?":       "Pay online with a card or at any branch.",
				"How do I reset my password?": `Use the "Forgot password" link on the sign-in page.`,
			},
			meta: map[string]map[string]any{"How do I pay my bill?": {"category": "billing", "row": 0}},
		},
		{
			file: "faq-noheader.csv",
			pairs: map[string]string{
				"年假可以跨年使用吗？": "可以，未休完的年假可延至次年三月底。",
				"病假需要什么证明？":  "需要医院开具的病假证明。",
			},
		},
		{
			file: "faq.json",
			pairs: map[string]string{
				"How long does delivery take?": "Delivery takes two to four working days.",
				"Can I return an item?":        "Items can be returned within thirty days.",
			},
			meta: map[string]map[string]any{"How long does delivery take?": {"tag": "shipping"}},
		},
		{
			file: "faq.jsonl",
			pairs: map[string]string{
				"如何修改收货地址？":           "在订单详情页点击修改地址即可。",
				"Do you ship abroad?": "We ship to most countries in Europe.",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "faq", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			docs, err := Load(tt.file, data)
			if err != nil {
				t.Fatal(err)
			}
			ps := Splitter{Size: 250, Overlap: 50}.Split(docs)
			got := map[string]bool{}
			var prose []string
			for _, p := range ps {
				q, _ := p.Metadata["question"].(string)
				if q == "" {
					prose = append(prose, p.Text)
					continue
				}
				got[q] = true
				want, ok := tt.pairs[q]
				if !ok {
					t.Errorf("unexpected pair %q", q)
					continue
				}
				if p.Text != pairText(q, want) {
					t.Errorf("pair %q: text %q, want the question then %q", q, p.Text, want)
				}
				for k, v := range tt.meta[q] {
					if p.Metadata[k] != v {
						t.Errorf("pair %q: metadata %s = %v, want %v (%v)", q, k, p.Metadata[k], v, p.Metadata)
					}
				}
			}
			for q := range tt.pairs {
				if !got[q] {
					t.Errorf("pair %q missing; pieces %q", q, ps)
				}
			}
			for _, want := range tt.prose {
				found := false
				for _, p := range prose {
					found = found || strings.Contains(p, want)
				}
				if !found {
					t.Errorf("prose %q missing from %q", want, prose)
				}
			}
			for _, p := range prose {
				if strings.Contains(p, "Q:") || strings.Contains(p, "A:") || strings.Contains(p, "答：") {
					t.Errorf("a marker left in prose: %q", p)
				}
			}
		})
	}
}

// TestFAQLongAnswer cuts a long answer into pieces that each keep the
// question above them.
func TestFAQLongAnswer(t *testing.T) {
	answer := strings.Repeat("The answer goes on at some length. ", 20)
	ps := Splitter{Size: 120, Overlap: 20}.Split([]Document{{Text: "Q: What happens next?\nA: " + answer}})
	if len(ps) < 2 {
		t.Fatalf("want the answer cut, got %q", ps)
	}
	for _, p := range ps {
		if !strings.HasPrefix(p.Text, "Q: What happens next?\nA: ") || p.Metadata["question"] != "What happens next?" {
			t.Errorf("piece %q (%v) lost its question", p.Text, p.Metadata)
		}
	}
}

// TestFAQNotPairs leaves text that only looks like pairs as it is.
func TestFAQNotPairs(t *testing.T) {
	for _, src := range []string{
		"Q: a question nobody answers?\n\nSome prose.",
		"## Why?\n\n### Because\n\nsub-sections are no answer.",
		"A: an answer with no question.",
	} {
		for _, p := range (Splitter{Size: 250}).Split([]Document{{Text: src}}) {
			if _, ok := p.Metadata["question"]; ok {
				t.Errorf("%q: pair %q", src, p.Text)
			}
		}
	}
}
