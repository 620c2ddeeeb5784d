package retrieve

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
)

var _ llm.Embedder = (*HashEmbedder)(nil)

func cosine(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d
}

func TestHashEmbedderBasics(t *testing.T) {
	e := NewHashEmbedder(0)
	if e.Dim() != DefaultEmbedDim {
		t.Fatalf("default dim %d", e.Dim())
	}
	long := strings.Repeat("Hashed features of a long text collide in many dimensions; 易经六十四卦，每卦六爻。", 40)
	texts := []string{"乾卦的卦辞是什么？", "The running dogs of Rome", long, "", "，。！"}
	a, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewHashEmbedder(DefaultEmbedDim).Embed(context.Background(), texts)
	for i := range texts {
		if len(a[i]) != DefaultEmbedDim {
			t.Fatalf("text %d: dim %d", i, len(a[i]))
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("text %d: not deterministic", i)
			}
		}
		norm := math.Sqrt(cosine(a[i], a[i]))
		if i < 3 && math.Abs(norm-1) > 1e-5 {
			t.Errorf("text %d: norm %v, want 1", i, norm)
		}
		if i >= 3 && norm != 0 {
			t.Errorf("featureless text %d: norm %v, want 0", i, norm)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if v, _ := NewHashEmbedder(64).Embed(context.Background(), texts[:1]); len(v[0]) != 64 {
		t.Errorf("dim 64: %d", len(v[0]))
	}
}

func TestHashEmbedderSimilarity(t *testing.T) {
	e := NewHashEmbedder(0)
	tests := []struct{ query, related, unrelated string }{
		{"乾卦的卦辞是什么", "乾卦：元亨利贞。这是乾卦的卦辞。", "今天北京的天气晴朗，适合出门散步。"},
		{"潜龙勿用是什么意思", "初九：潜龙勿用。阳气潜藏，不宜有所作为。", "我喜欢吃苹果和香蕉。"},
		{"見龍在田", "九二：见龙在田，利见大人。", "坤卦：元亨，利牝马之贞。"}, // traditional query, simplified text
		{"How do vaccines train the immune system?", "Vaccination trains immune cells to recognise a pathogen.", "The stock market closed higher on Friday."},
		{"running shoes", "The runner bought new shoes for running.", "A recipe for chocolate cake."},
		{"photosynthetic organisms", "Photosynthesis in plants and algae converts light into energy.", "Tax policy in the nineteenth century."},
	}
	for _, tt := range tests {
		v, _ := e.Embed(context.Background(), []string{tt.query, tt.related, tt.unrelated})
		rel, unrel := cosine(v[0], v[1]), cosine(v[0], v[2])
		if rel <= unrel+0.05 {
			t.Errorf("%q: related %.3f not clearly above unrelated %.3f", tt.query, rel, unrel)
		}
	}
}

func BenchmarkHashEmbedder(b *testing.B) {
	e := NewHashEmbedder(0)
	texts := []string{
		"Microstructural development of human newborn cerebral white matter assessed in vivo by diffusion tensor magnetic resonance imaging. Alterations of the architecture of cerebral white matter in the developing human brain can affect cortical development and result in functional disabilities.",
		"《周易》是中国最古老的文献之一，被儒家尊为“五经”之首。乾卦：元亨利贞。初九：潜龙勿用。九二：见龙在田，利见大人。九三：君子终日乾乾，夕惕若厉，无咎。",
	}
	var n int
	for i := 0; i < b.N; i++ {
		e.Embed(context.Background(), texts[i%2:i%2+1])
		n += len(texts[i%2])
	}
	b.SetBytes(int64(n / max(b.N, 1)))
}

func TestHashEmbedderModel(t *testing.T) {
	if got := NewHashEmbedder(384).Model(); got != "mixchat-hash-v1-384" {
		t.Errorf("Model() = %q", got)
	}
}
