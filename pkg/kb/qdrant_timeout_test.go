package kb_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/retrieve"
)

// hungPoints is the in-memory Qdrant whose searches and deletes stop
// answering while hang is set: they return only when the caller gives up.
type hungPoints struct {
	memPoints
	hang *atomic.Bool
}

func (h hungPoints) Query(ctx context.Context, r *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	if h.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.memPoints.Query(ctx, r)
}

func (h hungPoints) Delete(ctx context.Context, r *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	if h.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.memPoints.Delete(ctx, r)
}

// startHungQdrant starts the in-memory Qdrant with hungPoints; hang
// switches the hanging on.
func startHungQdrant(t *testing.T) (c *qdrant.Client, hang *atomic.Bool) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &memQdrant{colls: map[string]map[string]memPoint{}, dims: map[string]int{}}
	hang = new(atomic.Bool)
	srv := grpc.NewServer()
	qdrant.RegisterCollectionsServer(srv, memCollections{memQdrant: m})
	qdrant.RegisterPointsServer(srv, hungPoints{memPoints: memPoints{memQdrant: m}, hang: hang})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return dialQdrant(t, lis.Addr().String(), ""), hang
}

// TestQdrantHungCallTimesOut: a Qdrant that stops answering fails each
// call after kb.qdrant.timeout, on the request path (a search) and on the
// write path (the delete of replaced chunks after a commit, which runs
// under the knowledge base's write lock and is not cancelled with the
// request), instead of holding them forever.
func TestQdrantHungCallTimesOut(t *testing.T) {
	const timeout = 200 * time.Millisecond
	const slack = 5 * time.Second // far below "forever", far above a busy machine's jitter
	ctx := context.Background()
	c, hang := startHungQdrant(t)

	x := kb.NewQdrantIndex(c, "mixchat_hung")
	x.Timeout = timeout
	if err := x.Upsert(ctx, []kb.Chunk{{ID: "6f1c2a52-8d0e-4c57-9a51-000000000001", File: "a.md", Text: "乾", Vector: []float32{1, 0, 0}}}); err != nil {
		t.Fatal(err)
	}
	hang.Store(true)
	start := time.Now()
	if _, err := x.Search(ctx, []float32{1, 0, 0}, 3, kb.Filter{}); err == nil {
		t.Error("a search Qdrant never answers must fail")
	}
	if d := time.Since(start); d < timeout || d > timeout+slack {
		t.Errorf("the hung search returned after %s, want about %s", d, timeout)
	}
	hang.Store(false)

	// Through the Service: replacing a document commits, then deletes the
	// replaced chunks' points; a hung delete ends with the timeout and the
	// document is replaced.
	cfg := kb.DefaultConfig()
	cfg.Dir, cfg.EmbedModel = t.TempDir(), "hash-64"
	cfg.VectorStore = kb.StoreQdrant
	cfg.Qdrant.Timeout = timeout
	s, err := kb.NewWithStore(cfg, retrieve.NewHashEmbedder(64), nil, kb.WithQdrantClient(c))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, "hungkb", kb.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	add := func(body string) time.Duration {
		t.Helper()
		start := time.Now()
		res, err := s.AddFiles(ctx, "hungkb", []kb.FileData{{Name: "a.md", Data: []byte(body)}}, kb.AddOptions{Override: true}, nil)
		if err != nil || len(res.Failed) > 0 {
			t.Fatalf("add: %+v, %v", res, err)
		}
		return time.Since(start)
	}
	add("# 乾\n\n乾，元亨利貞。")
	hang.Store(true)
	if d := add("# 坤\n\n坤，元亨，利牝馬之貞。"); d > timeout+slack {
		t.Errorf("replacing a document with Qdrant hung took %s, want about %s", d, timeout)
	}
	hang.Store(false)
	if got, err := s.Search(ctx, kb.SearchRequest{Query: "坤", KnowledgeBases: []string{"hungkb"}}); err != nil || len(got) == 0 {
		t.Errorf("the replacement is not found: %v, %v", got, err)
	}
}
