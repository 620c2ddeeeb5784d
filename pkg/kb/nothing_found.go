package kb

import (
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/text"
)

// nothingFound is the answer when no chunk passes the threshold and no
// model is asked: it says so in the question's language, marked Empty so
// that fusion leaves it out, and streams it through fn as one piece.
func nothingFound(question string, fn func(delta string) error) (ChatReply, error) {
	msg := "The knowledge base has nothing relevant to the question."
	for _, r := range question {
		if text.IsCJK(r) {
			msg = "知识库中没有找到与问题相关的内容。"
			break
		}
	}
	reply := ChatReply{Answer: rag.Answer{From: "kb", Text: msg, Empty: true}}
	if fn != nil {
		if err := fn(msg); err != nil {
			return reply, err
		}
	}
	return reply, nil
}
