package retrieve_test

import (
	"context"
	"fmt"

	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// Hybrid search as a knowledge base does it: BM25 and vectors searched to
// the same depth, fused with the query's BM25 MaxScore as lexical scale.
func ExampleHybrid() {
	docs := map[string]string{
		"qian":    "乾卦：元亨利贞。初九：潜龙勿用。",
		"kun":     "坤卦：元亨，利牝马之贞。",
		"weather": "今天北京天气晴朗。",
	}
	ctx := context.Background()
	emb := retrieve.NewHashEmbedder(0)
	lex := retrieve.NewBM25(retrieve.BM25Params{})
	vec := retrieve.NewHNSW(emb.Dim(), retrieve.HNSWParams{})
	for id, d := range docs {
		lex.Add(id, text.Terms(d))
		v, _ := emb.Embed(ctx, []string{d})
		vec.Add(id, v[0])
	}

	query := "潜龙勿用是哪一卦？"
	terms := text.Terms(query)
	qv, _ := emb.Embed(ctx, []string{query})
	const depth = 10
	hits := retrieve.Hybrid(lex.Search(terms, depth, nil), vec.Search(qv[0], depth, nil), retrieve.HybridParams{
		VectorWeight: emb.VectorWeight(),
		LexicalMax:   lex.MaxScore(terms),
		Depth:        depth,
	})
	fmt.Println(hits[0].ID, hits[0].Score > 0.3)
	// Output: qian true
}
