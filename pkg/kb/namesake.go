package kb

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// This file tells a chunk of a document about a namesake of what a Chinese
// question names from a chunk about it. Chinese names put the kind last
// (异齿前肛鳗 and 黑尾前肛鳗 are both 前肛鳗, 乍浦镇 and 澉浦镇 both 浦镇),
// and a base that holds one thing of a kind is asked about another of the
// same kind: the question shares the kind and the question's form with the
// document of the namesake, and often enough of its words to pass the
// threshold, yet the document says nothing of the thing asked. When the
// question names, before the end of the document's title, something other
// than the title's own beginning, and neither the chunk nor the title says
// the question's name, the chunk is about a namesake.

// nameBoundary are the function characters that end a name in a question
// as punctuation does ("兴建关帝庙的愿景": 关帝庙 is named there whole).
const nameBoundary = "的是在有和与了"

// commonKindShare is the share of a base's chunks above which a kind of
// two characters is a common word rather than the end of a name (比赛,
// 火山, 广场: a question that writes "本次比赛" names the document's
// 比赛 by its kind alone). Kinds of three characters or more are names'
// ends whatever their frequency.
const commonKindShare = 0.01

// nameWordShare is the share of a base's chunks above which the two
// characters before a kind of two characters are a word of their own (退出
// in 退出平台, 几个 in 几个等级: a verb or a count before the kind) rather
// than the rest of a name (川纹 in 川纹笛鲷, which a chunk or two says).
const nameWordShare = 0.0025

// isNameRune reports whether r can be part of a name: a letter or digit
// that is no name boundary.
func isNameRune(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !strings.ContainsRune(nameBoundary, r)
}

// docTitle is the title of a result's document as a name: the first part
// of its section path (its file name without extension when it has none),
// folded, without a trailing qualifier in brackets ("大曲车站 (青森县)" is
// 大曲车站).
func docTitle(r Result) string {
	t, _, _ := strings.Cut(r.Path, " > ")
	if t == "" {
		t = titleOf(r.File, nil)
	}
	t = strings.TrimSpace(text.Fold(t))
	for _, br := range [][2]string{{"(", ")"}, {"（", "）"}} {
		if strings.HasSuffix(t, br[1]) {
			if i := strings.LastIndex(t, br[0]); i > 0 {
				t = strings.TrimSpace(t[:i])
			}
		}
	}
	return t
}

// namesake reports whether the question q (folded, question words
// stripped: stripQuestion) names a namesake of the thing a document
// titled title is about, of which the chunks found say body: q holds the longest
// end of the title it holds (its kind, two characters or more, CJK),
// after a name character other than the one before that end in the title,
// and
//   - the question does not hold the title whole;
//   - the kind, when two characters long, is rare in the base, and so
//     are the two characters before it in the question (share is the
//     share of the base's chunks that hold a term);
//   - the question's two characters before the kind are not in the title
//     (莱索托足球队 for 莱索托国家足球队 names the title shortened);
//   - body says neither the question's name (the kind with the two
//     characters before it) nor the kind alone, after a boundary: a
//     document that speaks of its subject by its kind is asked about it
//     that way.
func namesake(q, title, body string, share func(string) float64) bool {
	name, kind, ok := namesakeName(q, title, share)
	return ok && !saysName(body, name, kind)
}

// namesakeName is the name the question q gives a namesake of the thing
// the document titled title is about, and the kind of both, when it
// names one (namesake's conditions but the last, on what the document
// says: see saysName).
func namesakeName(q, title string, share func(string) float64) (name, kind string, ok bool) {
	if utf8.RuneCountInString(title) < 3 || strings.Contains(q, title) {
		return "", "", false
	}
	tr := []rune(title)
	for n := len(tr) - 1; n >= 2; n-- {
		kind := string(tr[len(tr)-n:])
		first, _ := utf8.DecodeRuneInString(kind)
		if !text.IsCJK(first) {
			continue
		}
		i := strings.Index(q, kind)
		if i < 0 {
			continue
		}
		before, _ := utf8.DecodeLastRuneInString(q[:i])
		if i == 0 || !isNameRune(before) || !text.IsCJK(before) {
			return "", "", false // the question names the kind alone
		}
		if t := tr[len(tr)-n-1]; !isNameRune(t) || t == before {
			return "", "", false // a name part of its own ("哈兰·艾里森"), or the same name
		}
		if n == 2 && share(kind) > commonKindShare {
			return "", "", false
		}
		name := string(before)
		if qs := []rune(q[:i]); len(qs) >= 2 && isNameRune(qs[len(qs)-2]) {
			if name = string(qs[len(qs)-2:]); strings.Contains(title, name) || (n == 2 && share(name) > nameWordShare) {
				return "", "", false
			}
		}
		return name, kind, true
	}
	return "", "", false
}

// saysName reports whether body says the question's name of a thing of
// this kind (the kind with the two characters before it) or the kind
// alone, after a boundary: then its document is no namesake's.
func saysName(body, name, kind string) bool {
	return strings.Contains(body, name+kind) || saysKindAlone(body, kind)
}

// determiners point at a thing already named ("该协定", "本鱼", "此次"):
// the kind after one is the kind alone.
const determiners = "该本此这其"

// saysKindAlone reports whether s holds kind after a character that is not
// part of a name, or after a determiner.
func saysKindAlone(s, kind string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], kind)
		if i < 0 {
			return false
		}
		i += off
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		if i == 0 || !isNameRune(r) || strings.ContainsRune(determiners, r) {
			return true
		}
		off = i + len(kind)
	}
}

// dropNamesakes removes the similarity results (Match "") whose document
// is about a namesake of what the Chinese question q names (namesake),
// the share of chunks that hold a term read from the lexical indexes of
// bases.
func dropNamesakes(q string, rs []Result, bases []*base) []Result {
	if cjk, _ := text.CountLetters(q); cjk == 0 || len(rs) == 0 {
		return rs
	}
	fq := text.Fold(stripQuestion(q))
	n := 0
	for _, b := range bases {
		n += b.lex.Len()
	}
	share := func(t string) float64 {
		df := 0
		for _, b := range bases {
			df += b.lex.DocFreq(t)
		}
		return float64(df) / float64(max(n, 1))
	}
	// What the candidates of a document say is read together: a document
	// speaks of its subject in one chunk and of its kind in another. It is
	// read only for a document whose title the question may name a
	// namesake of (most searches have none).
	var said map[string]string
	// out is rs until a result is dropped (most searches drop none), then
	// a copy of those kept.
	var out []Result
	dropped := false
	for i, r := range rs {
		if r.Match != "" {
			if dropped {
				out = append(out, r)
			}
			continue
		}
		name, kind, ok := namesakeName(fq, docTitle(r), share)
		if ok && said == nil {
			said = map[string]string{}
			for _, r := range rs {
				k := r.KnowledgeBase + "\x00" + r.File
				said[k] += text.Fold(r.Text) + "\n"
			}
		}
		switch keep := !ok || saysName(said[r.KnowledgeBase+"\x00"+r.File], name, kind); {
		case keep && dropped:
			out = append(out, r)
		case !keep && !dropped:
			dropped = true
			out = append(make([]Result, 0, len(rs)-1), rs[:i]...)
		}
	}
	if !dropped {
		return rs
	}
	return out
}
