package kb

import "strings"

// questionWords are the scaffolding of Chinese questions ("…是什么？",
// "请问…", "…吗"): they carry no content, and documents, classical texts
// above all, rarely contain them, so as query terms they only dilute the
// match. Longer forms come first so they are removed whole.
var questionWords = []string{
	"是什么意思", "什么意思", "为什么", "是什么", "什么是", "怎么样", "怎么办", "是多少", "有哪些", "是哪个", "是哪一",
	"请问", "请教", "什么", "怎么", "怎样", "如何", "哪些", "哪个", "哪一", "哪里", "哪儿", "多少", "一下", "介绍",
	"吗", "呢", "吧", "啊", "呀", "的",
}

var questionReplacer = func() *strings.Replacer {
	pairs := make([]string, 0, 2*len(questionWords))
	for _, w := range questionWords {
		pairs = append(pairs, w, " ")
	}
	return strings.NewReplacer(pairs...)
}()

// stripQuestion removes question scaffolding from a query, leaving a space
// where it was (so no new character pair is made across it). A query that
// is nothing but scaffolding is kept as it is.
func stripQuestion(q string) string {
	out := questionReplacer.Replace(q)
	if strings.TrimSpace(strings.Trim(out, " ？?！!。，,")) == "" {
		return q
	}
	return out
}
