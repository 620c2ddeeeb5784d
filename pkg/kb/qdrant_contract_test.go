package kb_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/mixchat/mixchat/pkg/kb"
)

// fakeQdrant records the requests a QdrantIndex sends. It is a contract
// test of request shapes against the client package's own service
// definitions, not a stand-in for the engine (that is
// TestQdrantIndexConformance with QDRANT_ADDR).
type fakeQdrant struct {
	mu      sync.Mutex
	exists  bool
	created []*qdrant.CreateCollection
	fields  []*qdrant.CreateFieldIndexCollection
	upserts []*qdrant.UpsertPoints
	queries []*qdrant.QueryPoints
	deletes []*qdrant.DeletePoints
	dropped []string
}

// record keeps a copy of the request r in *list.
func record[T proto.Message](f *fakeQdrant, list *[]T, r T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*list = append(*list, proto.Clone(r).(T))
}

// completed is the reply to a points operation that succeeded.
var completed = &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}

func (f fakeCollections) CollectionExists(ctx context.Context, r *qdrant.CollectionExistsRequest) (*qdrant.CollectionExistsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &qdrant.CollectionExistsResponse{Result: &qdrant.CollectionExists{Exists: f.exists}}, nil
}

func (f fakeCollections) Create(ctx context.Context, r *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, proto.Clone(r).(*qdrant.CreateCollection))
	f.exists = true
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (f fakeCollections) Delete(ctx context.Context, r *qdrant.DeleteCollection) (*qdrant.CollectionOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped = append(f.dropped, r.GetCollectionName())
	f.exists = false
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

type fakeCollections struct {
	qdrant.UnimplementedCollectionsServer
	*fakeQdrant
}

type fakePoints struct {
	qdrant.UnimplementedPointsServer
	*fakeQdrant
}

func (f fakePoints) CreateFieldIndex(ctx context.Context, r *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	record(f.fakeQdrant, &f.fields, r)
	return completed, nil
}

func (f fakePoints) Upsert(ctx context.Context, r *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	record(f.fakeQdrant, &f.upserts, r)
	return completed, nil
}

func (f fakePoints) Delete(ctx context.Context, r *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	record(f.fakeQdrant, &f.deletes, r)
	return completed, nil
}

func (f fakePoints) Query(ctx context.Context, r *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	record(f.fakeQdrant, &f.queries, r)
	return &qdrant.QueryResponse{Result: []*qdrant.ScoredPoint{
		{Id: qdrant.NewID("6f1c2a52-8d0e-4c57-9a51-000000000001"), Score: 0.9},
		{Id: qdrant.NewID("6f1c2a52-8d0e-4c57-9a51-000000000002"), Score: -0.2},
	}}, nil
}

func startFakeQdrant(t *testing.T) (*fakeQdrant, *qdrant.Client) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeQdrant{}
	srv := grpc.NewServer()
	qdrant.RegisterCollectionsServer(srv, fakeCollections{fakeQdrant: f})
	qdrant.RegisterPointsServer(srv, fakePoints{fakeQdrant: f})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	port := lis.Addr().(*net.TCPAddr).Port
	c, err := qdrant.NewClient(&qdrant.Config{Host: "127.0.0.1", Port: port, SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return f, c
}

func TestQdrantContract(t *testing.T) {
	ctx := context.Background()
	f, c := startFakeQdrant(t)
	x := kb.NewQdrantIndex(c, "mixchat_周易 kb")
	if x.Collection() == "mixchat_周易 kb" || x.Collection() != kb.CollectionName("mixchat_周易 kb") {
		t.Fatalf("collection name %q must be made safe", x.Collection())
	}
	chunks := []kb.Chunk{
		{ID: "6f1c2a52-8d0e-4c57-9a51-000000000001", File: "a.txt", Seq: 0, Text: "乾，元亨，利贞。",
			Metadata: map[string]any{"page": 2, "lang": "zh"}, Vector: []float32{1, 0, 0, 0}},
		{ID: "6f1c2a52-8d0e-4c57-9a51-000000000002", File: "b.txt", Seq: 3, Text: "坤", Vector: []float32{0, 1, 0, 0}},
	}
	if err := x.Upsert(ctx, chunks); err != nil {
		t.Fatal(err)
	}

	// Collection creation: the vectors' size, cosine distance.
	if len(f.created) != 1 {
		t.Fatalf("want one CreateCollection, got %d", len(f.created))
	}
	params := f.created[0].GetVectorsConfig().GetParams()
	if f.created[0].GetCollectionName() != x.Collection() || params.GetSize() != 4 || params.GetDistance() != qdrant.Distance_Cosine {
		t.Errorf("create collection: %v", f.created[0])
	}
	if len(f.fields) != 1 || f.fields[0].GetFieldName() != "file" || f.fields[0].GetFieldType() != qdrant.FieldType_FieldTypeKeyword {
		t.Errorf("a keyword index on file is created: %v", f.fields)
	}

	// Upsert: UUID ids, dense vectors, payload with file, seq, text, metadata.
	if len(f.upserts) != 1 || len(f.upserts[0].GetPoints()) != 2 || !f.upserts[0].GetWait() {
		t.Fatalf("upsert: %v", f.upserts)
	}
	p := f.upserts[0].GetPoints()[0]
	if p.GetId().GetUuid() != chunks[0].ID {
		t.Errorf("point id %v", p.GetId())
	}
	if got := p.GetVectors().GetVector().GetDense().GetData(); len(got) != 4 || got[0] != 1 {
		t.Errorf("point vector %v", got)
	}
	pay := p.GetPayload()
	if pay["file"].GetStringValue() != "a.txt" || pay["seq"].GetIntegerValue() != 0 || pay["text"].GetStringValue() != "乾，元亨，利贞。" {
		t.Errorf("payload %v", pay)
	}
	meta := pay["metadata"].GetStructValue().GetFields()
	if meta["page"].GetIntegerValue() != 2 || meta["lang"].GetStringValue() != "zh" {
		t.Errorf("payload metadata %v", meta)
	}

	// Filtered search: nearest dense query, limit, and the conditions.
	hits, err := x.Search(ctx, []float32{1, 0, 0, 0}, 5, kb.Filter{Files: []string{"a.txt"}, Metadata: map[string]any{"lang": "zh", "page": float64(2)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Score != float64(float32(0.9)) || hits[1].Score != 0 {
		t.Errorf("hits %v: cosine 0.9 stays 0.9, a negative cosine becomes 0", hits)
	}
	q := f.queries[0]
	if q.GetLimit() != 5 || len(q.GetQuery().GetNearest().GetDense().GetData()) != 4 {
		t.Errorf("query %v", q)
	}
	conds := map[string]*qdrant.Match{}
	for _, c := range q.GetFilter().GetMust() {
		conds[c.GetField().GetKey()] = c.GetField().GetMatch()
	}
	if kw := conds["file"].GetKeywords().GetStrings(); len(kw) != 1 || kw[0] != "a.txt" {
		t.Errorf("file condition %v", conds["file"])
	}
	if conds["metadata.lang"].GetKeyword() != "zh" || conds["metadata.page"].GetInteger() != 2 {
		t.Errorf("metadata conditions %v", conds)
	}

	// Deletes: by ids with a points list, by file with a filter.
	if err := x.Delete(ctx, kb.Filter{IDs: []string{chunks[1].ID}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Delete(ctx, kb.Filter{Files: []string{"a.txt"}}); err != nil {
		t.Fatal(err)
	}
	if ids := f.deletes[0].GetPoints().GetPoints().GetIds(); len(ids) != 1 || ids[0].GetUuid() != chunks[1].ID {
		t.Errorf("delete by id: %v", f.deletes[0])
	}
	if fc := f.deletes[1].GetPoints().GetFilter().GetMust(); len(fc) != 1 || fc[0].GetField().GetKey() != "file" {
		t.Errorf("delete by file: %v", f.deletes[1])
	}
	if err := x.Drop(ctx); err != nil || len(f.dropped) != 1 || f.dropped[0] != x.Collection() {
		t.Errorf("drop: %v %v", err, f.dropped)
	}
}

func TestCollectionName(t *testing.T) {
	for _, n := range []string{"mixchat_zhouyi", "mixchat_周易", "a b", "x/y"} {
		c := kb.CollectionName(n)
		for _, r := range c {
			if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				t.Errorf("CollectionName(%q) = %q has %q", n, c, strconv.QuoteRune(r))
			}
		}
	}
	if kb.CollectionName("mixchat_周易") == kb.CollectionName("mixchat_周书") {
		t.Error("different names must give different collections")
	}
}
