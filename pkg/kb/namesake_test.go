package kb

import (
	"context"
	"testing"
)

// TestNamesake: a question naming another thing of the document title's
// kind (its end) is about a namesake, unless it names the title whole or
// shortened, names the kind alone, or the chunk says the question's name.
func TestNamesake(t *testing.T) {
	rare := func(string) float64 { return 0 }
	common := func(string) float64 { return 0.5 }
	tests := []struct {
		name, q, title, body string
		common               func(string) float64
		want                 bool
	}{
		{"another of the kind", "黑尾前肛鳗分布在 地区？", "异齿前肛鳗", "异齿前肛鳗为辐鳍鱼纲的一种。", rare, true},
		{"two-character kind, rare", "澉浦镇 人口是 ？", "乍浦镇", "乍浦镇面积54平方公里。", rare, true},
		{"two-character kind, common", "澉浦镇 人口是 ？", "乍浦镇", "乍浦镇面积54平方公里。", common, false},
		{"the title whole", "异齿前肛鳗分布在 地区？", "异齿前肛鳗", "本鱼分布于印度西太平洋。", rare, false},
		{"the title shortened", "莱索托足球队代表 国家？", "莱索托国家足球队", "莱索托国家足球队是莱索托的足球代表队。", rare, false},
		{"the kind alone", "前肛鳗 体长是 ？", "异齿前肛鳗", "体长可达22.4公分。", rare, false},
		{"the chunk says the name", "大莱龙铁路位于 ？", "龙烟铁路", "西起大莱龙铁路龙口西站。", rare, false},
		{"the document speaks of the kind alone", "当地人兴建关帝庙 愿景 ？", "深水埗关帝庙", "深水埗关帝庙建于1891年，关帝庙内供奉关帝。", rare, false},
		{"a name part of its own", "表彰艾里森 贡献", "哈兰·艾里森", "哈兰·艾里森是美国作家。", rare, false},
		{"a verb before a two-character kind", "江苏电视台 一年退出平台？", "中国电视体育联播平台", "江苏电视台于2008年退出。",
			func(t string) float64 { return map[string]float64{"退出": 0.004}[t] }, false},
		{"no shared kind", "罗店镇境内 风景名胜区？", "涞滩镇", "涞滩镇位于重庆。", rare, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := namesake(tt.q, tt.title, tt.body, tt.common); got != tt.want {
				t.Errorf("namesake(%q, %q) = %v, want %v", tt.q, tt.title, got, tt.want)
			}
		})
	}
}

// TestSearchNamesake: in a base of fish of one genus, the chunks about
// them are no result for a question about a fish of the genus the base
// does not hold, though they share its kind and the question's form; a
// question naming the genus alone, or a fish the base holds, finds them.
func TestSearchNamesake(t *testing.T) {
	ctx := context.Background()
	s := newHashKB(t, "fish", offlineModels())
	mustAdd(t, s, "fish",
		FileData{Name: "异齿前肛鳗.txt", Data: []byte("异齿前肛鳗为辐鳍鱼纲鳗鲡目的一种。本鱼分布于印度西太平洋海域，体长可达22公分。")},
		FileData{Name: "高氏前肛鳗.txt", Data: []byte("高氏前肛鳗为辐鳍鱼纲鳗鲡目的一种。本鱼分布于西太平洋海域，栖息在珊瑚礁区。")},
		FileData{Name: "乍浦镇.txt", Data: []byte("乍浦镇位于浙江省平湖市，面积54平方公里，常住人口5万余人。")},
	)
	for _, tt := range []struct {
		q    string
		want []string
	}{
		{"异齿前肛鳗分布在什么地区？", []string{"异齿前肛鳗.txt"}},
		{"前肛鳗分布在什么地区？", []string{"异齿前肛鳗.txt", "高氏前肛鳗.txt"}},
		{"黑尾前肛鳗分布在什么地区？", nil},
	} {
		rs, err := s.Search(ctx, SearchRequest{Query: tt.q, KnowledgeBases: []string{"fish"}, TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]bool{}
		for _, r := range rs {
			files[r.File] = true
		}
		for _, f := range tt.want {
			if !files[f] {
				t.Errorf("%s: found %v, want %s among them", tt.q, files, f)
			}
		}
		if len(tt.want) == 0 && (files["异齿前肛鳗.txt"] || files["高氏前肛鳗.txt"]) {
			t.Errorf("%s: found %v, want no namesake", tt.q, files)
		}
	}
}
