package extractive

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// This file answers a yes/no question with "Yes" or "No" (是/不是, 有/没有,
// 能/不能 …) before the evidence, when the sentence the reading chose
// settles it: the answer is yes when the sentence and the question are
// alike in polarity (both plain, or both negated), no otherwise.

var (
	// enAux are the words an English yes/no question starts with.
	enAux = func() map[string]bool {
		m := map[string]bool{}
		for _, w := range strings.Fields("do does did is are was were am can could will would should shall has have had may might must " +
			"don't doesn't didn't isn't aren't wasn't weren't can't couldn't won't wouldn't shouldn't hasn't haven't hadn't") {
			m[w] = true
		}
		return m
	}()
	// enLead are words a question may start with before its auxiliary
	// ("And does it …", "So, is there …").
	enLead = map[string]bool{"and": true, "so": true, "but": true, "also": true, "then": true, "ok": true, "okay": true, "well": true, "great": true, "thanks": true, "hi": true, "hello": true, "oh": true}
	// enNeg are English negations; "n't" ends a negated auxiliary.
	enNeg = map[string]bool{"not": true, "no": true, "never": true, "none": true, "nobody": true, "nothing": true, "neither": true, "nor": true, "cannot": true, "nowhere": true}
	// zhNotNeg are words with a negating character that negate nothing.
	zhNotNeg = []string{"非常", "无论", "不论", "不仅", "不但", "不过", "不断", "不错", "未来", "无线", "别人", "别的", "特别", "区别", "差别", "否则", "不管", "不久", "不少", "不同"}
	// zhAnotA is the A-not-A form of a Chinese question (有没有, 是不是,
	// 能不能, 可不可以).
	zhAnotA = regexp.MustCompile(`(\p{Han})[不没](\p{Han})`)
	// zhVerbs are the verbs a Chinese yes/no answer repeats, in the order
	// they are looked for in a "…吗？" question.
	zhVerbs = []string{"可以", "需要", "允许", "提供", "包括", "有", "能", "会", "要", "是"}
)

// polar reads q as a yes/no question: ok, and for a Chinese one the verb
// its answer repeats ("有", "是", "可以"; "" for an English one).
func polar(q string) (verb string, ok bool) {
	f := strings.TrimSpace(text.Fold(q))
	if f == "" {
		return "", false
	}
	if c, l := text.CountLetters(f); c > 0 && c >= l {
		return zhPolar(f)
	}
	if !strings.HasSuffix(f, "?") {
		return "", false
	}
	words := strings.FieldsFunc(strings.ToLower(f), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	})
	for _, w := range words {
		if w == "or" {
			return "", false // "Is it X or Y?" asks which
		}
	}
	for i, w := range words {
		w = strings.ReplaceAll(w, "’", "'")
		if enLead[w] {
			continue
		}
		if !enAux[w] {
			return "", false
		}
		// "Can you tell me if …", "Do you know whether …" ask yes or no;
		// "Can you tell me how big …" asks how.
		for j := i + 1; j < len(words) && j < i+6; j++ {
			switch words[j] {
			case "if", "whether":
				return "", true
			case "how", "what", "which", "where", "when", "who", "why":
				return "", false
			}
		}
		return "", true
	}
	return "", false
}

// contrasts reports whether s weighs one thing against another ("while …",
// "but …", "虽然…但…"): a sentence that does settles no yes or no.
func contrasts(s string) bool {
	f := " " + strings.ToLower(text.Fold(s)) + " "
	for _, w := range []string{" but ", " while ", " although ", " though ", " however", " whereas ", " except ", "但", "虽然", "不过", "然而", "却"} {
		if strings.Contains(f, w) {
			return true
		}
	}
	return false
}

func zhPolar(f string) (string, bool) {
	body := strings.TrimRightFunc(f, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	if strings.Contains(body, "还是") {
		return "", false // "A还是B" asks which
	}
	if strings.Contains(body, "可不可以") {
		return "可以", true
	}
	for _, m := range zhAnotA.FindAllStringSubmatch(body, -1) {
		if m[1] == m[2] {
			return m[1], true
		}
	}
	if i := strings.Index(body, "是否"); i >= 0 {
		rest := body[i+len("是否"):]
		for _, v := range zhVerbs {
			if strings.HasPrefix(rest, v) {
				return v, true
			}
		}
		return "是", true
	}
	if !strings.HasSuffix(body, "吗") && !strings.HasSuffix(body, "么") {
		return "", false
	}
	for _, w := range []string{"什么", "怎么", "哪", "谁", "几", "多少", "为何", "为什么"} {
		if strings.Contains(body, w) {
			return "", false
		}
	}
	for _, v := range zhVerbs {
		if strings.Contains(body, v) {
			return v, true
		}
	}
	return "是", true
}

// negated reports whether s says no: an odd number of negations.
func negated(s string) bool {
	f := strings.ToLower(text.Fold(s))
	n := 0
	if c, l := text.CountLetters(f); c > 0 && c >= l {
		f = zhAnotA.ReplaceAllStringFunc(f, func(m string) string {
			rs := []rune(m)
			if rs[0] == rs[2] {
				return string(rs[0])
			}
			return m
		})
		f = strings.ReplaceAll(f, "可不可以", "可以")
		for _, w := range zhNotNeg {
			f = strings.ReplaceAll(f, w, "")
		}
		for _, r := range f {
			if strings.ContainsRune("不没无未非否别莫勿", r) {
				n++
			}
		}
		return n%2 == 1
	}
	words := strings.FieldsFunc(f, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	})
	for i, w := range words {
		w = strings.ReplaceAll(w, "’", "'")
		if (w == "not" || w == "no") && i+1 < len(words) && (words[i+1] == "only" || words[i+1] == "just" || words[i+1] == "problem" || words[i+1] == "worries") {
			continue
		}
		if enNeg[w] || strings.HasSuffix(w, "n't") {
			n++
		}
	}
	return n%2 == 1
}

// saysYesNo reports whether s starts with a yes or a no of its own.
func saysYesNo(s string) bool {
	f := strings.ToLower(strings.TrimSpace(text.Fold(s)))
	for _, w := range []string{"yes", "no", "yeah", "nope", "sure", "certainly", "absolutely", "unfortunately", "indeed", "of course"} {
		if strings.HasPrefix(f, w) {
			rest := strings.TrimPrefix(f, w)
			if r, _ := utf8.DecodeRuneInString(rest); rest == "" || !unicode.IsLetter(r) {
				return true
			}
		}
	}
	for _, w := range []string{"是的", "不是", "是，", "有，", "有的", "没有", "不能", "可以，", "不可以", "对，", "不会", "会的", "能，", "不需要", "需要，"} {
		if strings.HasPrefix(f, w) {
			return true
		}
	}
	return false
}

// yesNo is the word that answers a yes/no question (its verb for a Chinese
// one) with the given polarity: "Yes." / "No.", "有。" / "没有。".
func yesNo(verb string, yes bool) string {
	if verb == "" {
		if yes {
			return "Yes."
		}
		return "No."
	}
	if yes {
		if verb == "是" {
			return "是的。"
		}
		return verb + "。"
	}
	if verb == "有" {
		return "没有。"
	}
	return "不" + verb + "。"
}
