package prompts

import "unicode"

// ForQuestion returns the template of group to render for question when
// the client asked for name: the default ("" or "default") of a group that
// has an English template ("en") becomes that one when the question has no
// Chinese, Japanese or Korean character, so that the model is told to
// answer, and the server speaks, in the question's language. A name the
// client chose is kept.
func ForQuestion(group, name, question string) string {
	if (name != "" && name != "default") || !Has(group, "en") {
		return name
	}
	for _, r := range question {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return name
		}
	}
	return "en"
}
