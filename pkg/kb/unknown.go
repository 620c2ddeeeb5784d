package kb

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// unknownName returns what a question written in Chinese names that no
// chunk of the knowledge bases named holds, in its text or its title, ""
// when there is none. Such a name tells that the base knows nothing of
// what the question is about, however much of the rest (its way of asking,
// the kind of thing it names) the chunks share with it. Two kinds of name
// are read:
//
//   - a word in Latin script that holds a letter ("Playfish", "41R",
//     "Kellylicious"): in a Chinese question it is a name, a title or a
//     code, not the question's own way of asking (the questions about
//     "九龙巴士41R线" that a base of other bus routes would answer with
//     another route);
//   - the question's first two characters, when they open a name
//     (leadingPair) and the bases hold a thousand chunks or more
//     (unknownFullAt): a question says its subject first ("赵鹏的职业是什么？",
//     "叶乔波是什么运动员？"), and a pair of characters that opens the
//     subject and that no chunk of a large base holds, neither as a pair
//     nor (the first) as a word of its own (a one-character name: "䲟体长"),
//     names something the base lacks. A small base lacks common words too,
//     so there the pair tells nothing.
//
// English questions are left to relevance: their words are mostly the
// asker's own.
func (s *Service) unknownName(ctx context.Context, names []string, query string) (string, error) {
	cjk, _ := text.CountLetters(query)
	if cjk == 0 {
		return "", nil
	}
	stripped := stripQuestion(query)
	var words []string
	for _, t := range lexTerms(stripped) {
		if hasLatinLetter(t) {
			words = append(words, t)
		}
	}
	lead := leadingPair(query)
	if len(words) == 0 && lead == "" {
		return "", nil
	}
	first, _ := utf8.DecodeRuneInString(lead)
	df := make([]int, len(words))
	leadDF, n := 0, 0
	err := s.eachLexicon(ctx, names, func(lex *retrieve.BM25) {
		n += lex.Len()
		for i, w := range words {
			df[i] += lex.DocFreq(w) + lex.DocFreq(titleMark+w)
		}
		if lead != "" {
			leadDF += lex.DocFreq(lead) + lex.DocFreq(titleMark+lead) + lex.DocFreq(string(first))
		}
	})
	if err != nil {
		return "", err
	}
	for i, w := range words {
		if df[i] == 0 {
			return w, nil
		}
	}
	if lead != "" && leadDF == 0 && n >= unknownFullAt {
		return lead, nil
	}
	return "", nil
}

// clauseOpeners are the characters that open a Chinese question's clause
// rather than a name: question words, pronouns and demonstratives,
// prepositions, modal verbs and other function characters (请 as in 请简述,
// 一 as in 一般, 要 as in 要修建).
const clauseOpeners = "谁哪什怎几为何么多少请问是的在有和与了被把对从向由将当这那该本此其一我你您他她它要应还就才再受"

// leadingPair returns the first two characters of the folded question q
// when both are CJK and neither
// opens a clause (clauseOpeners): the opening of the name the question is
// about. "" otherwise (a question that opens with a quotation, a number, a
// Latin word or a function character).
func leadingPair(q string) string {
	q = strings.TrimSpace(text.Fold(q))
	var rs []rune
	for _, r := range q {
		if len(rs) == 2 {
			break
		}
		if !text.IsCJK(r) || strings.ContainsRune(clauseOpeners, r) {
			return ""
		}
		rs = append(rs, r)
	}
	if len(rs) < 2 {
		return ""
	}
	return string(rs)
}

// hasLatinLetter reports whether a term holds a letter that is not CJK.
func hasLatinLetter(t string) bool {
	for _, r := range t {
		if unicode.IsLetter(r) && !text.IsCJK(r) {
			return true
		}
	}
	return false
}
