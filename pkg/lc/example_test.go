package lc_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/mixchat/mixchat/pkg/lc"
)

// A knowledge base of a running server as a langchaingo retriever.
func ExampleRetriever() {
	hs := httptest.NewServer(shared.Handler()) // or a `mixchat serve` at http://127.0.0.1:7861
	defer hs.Close()

	r := &lc.Retriever{Client: lc.NewClient(hs.URL), KnowledgeBases: []string{"zhouyi"}, TopK: 1}
	docs, err := r.GetRelevantDocuments(context.Background(), "乾卦的卦辞是什么？")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(docs[0].Metadata["source"], docs[0].Metadata["knowledge_base"])
	fmt.Println(strings.Contains(docs[0].PageContent, "乾，元亨，利貞。"))
	// Output:
	// 六十四卦卦辞.md zhouyi
	// true
}

// A knowledge base of this process (a *kb.Service) as a retriever.
func ExampleKBRetriever() {
	r := &lc.KBRetriever{KB: shared.KB, KnowledgeBases: []string{"zhouyi"}, TopK: 1}
	docs, err := r.GetRelevantDocuments(context.Background(), "天行健")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Contains(docs[0].PageContent, "天行健"), docs[0].Score > 0.5)
	// Output:
	// true true
}

// mixchat-kb as a langchaingo model, called in process through the
// server's handler: no socket.
func ExampleModel() {
	model := &lc.Model{Client: lc.NewHandlerClient(shared.Handler()), Name: lc.ModelKB}
	resp, err := model.GenerateContent(context.Background(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "乾卦的卦辞是什么？"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Choices[0].Content)
	src := lc.ExtraOf(resp).Sources()[0]
	fmt.Println(src.KB, src.File)
	// Output:
	// 乾卦的卦辞是：乾，元亨，利貞[1]。
	// zhouyi 六十四卦卦辞.md
}

// mixchat-mix over HTTP, streamed: the fused reply arrives in pieces.
func ExampleModel_streaming() {
	hs := httptest.NewServer(shared.Handler())
	defer hs.Close()

	model := &lc.Model{Client: lc.NewClient(hs.URL), Name: lc.ModelMix}
	var streamed strings.Builder
	reply, err := llms.GenerateFromSinglePrompt(context.Background(), model, "乾卦的卦辞是什么？",
		llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			streamed.Write(chunk)
			return nil
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply)
	fmt.Println(streamed.String() == reply)
	// Output:
	// 乾卦的卦辞是：乾，元亨，利貞[1]（据知识库）。
	// true
}
