package kb_test

import (
	"cmp"
	"context"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/kb/indextest"
)

// memQdrant is a working Qdrant in memory behind Qdrant's own gRPC service
// definitions: collections of points with dense vectors and payloads,
// exact cosine search, and the filters QdrantIndex sends (ids, keyword
// and number matches, ranges). Unlike fakeQdrant, which records request
// shapes, it stores what it is sent, so several Services (replicas) can
// share one Qdrant in a test without a server. It passes the index
// conformance suite (TestMemQdrantConformance), as a real Qdrant does.
type memQdrant struct {
	mu      sync.Mutex
	colls   map[string]map[string]memPoint // collection → point id → point
	dims    map[string]int                 // collection → vector size
	queries int                            // Query calls, all collections
}

type memPoint struct {
	vec []float32
	pay map[string]*qdrant.Value
}

type memCollections struct {
	qdrant.UnimplementedCollectionsServer
	*memQdrant
}

type memPoints struct {
	qdrant.UnimplementedPointsServer
	*memQdrant
}

func missing(name string) error {
	return status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
}

// inColl runs f on the points of collection name under m's lock, or
// answers Qdrant's not-found error when there is no such collection.
func inColl[R any](m *memQdrant, name string, f func(c map[string]memPoint) (R, error)) (R, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.colls[name]
	if !ok {
		var zero R
		return zero, missing(name)
	}
	return f(c)
}

func (m memCollections) CollectionExists(ctx context.Context, r *qdrant.CollectionExistsRequest) (*qdrant.CollectionExistsResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.colls[r.GetCollectionName()]
	return &qdrant.CollectionExistsResponse{Result: &qdrant.CollectionExists{Exists: ok}}, nil
}

func (m memCollections) Create(ctx context.Context, r *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.colls[r.GetCollectionName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Collection `%s` already exists!", r.GetCollectionName())
	}
	if r.GetVectorsConfig().GetParams().GetDistance() != qdrant.Distance_Cosine {
		return nil, status.Error(codes.InvalidArgument, "memQdrant does cosine only")
	}
	m.colls[r.GetCollectionName()] = map[string]memPoint{}
	m.dims[r.GetCollectionName()] = int(r.GetVectorsConfig().GetParams().GetSize())
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (m memCollections) Delete(ctx context.Context, r *qdrant.DeleteCollection) (*qdrant.CollectionOperationResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.colls[r.GetCollectionName()]
	delete(m.colls, r.GetCollectionName())
	return &qdrant.CollectionOperationResponse{Result: ok}, nil
}

func (m memPoints) CreateFieldIndex(ctx context.Context, r *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	return inColl(m.memQdrant, r.GetCollectionName(), func(map[string]memPoint) (*qdrant.PointsOperationResponse, error) {
		return completed, nil
	})
}

func (m memPoints) Upsert(ctx context.Context, r *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	return inColl(m.memQdrant, r.GetCollectionName(), func(c map[string]memPoint) (*qdrant.PointsOperationResponse, error) {
		for _, p := range r.GetPoints() {
			if n, dim := len(p.GetVectors().GetVector().GetDense().GetData()), m.dims[r.GetCollectionName()]; n != dim {
				return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", dim, n)
			}
		}
		for _, p := range r.GetPoints() {
			c[p.GetId().GetUuid()] = memPoint{vec: p.GetVectors().GetVector().GetDense().GetData(), pay: p.GetPayload()}
		}
		return completed, nil
	})
}

func (m memPoints) Delete(ctx context.Context, r *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	return inColl(m.memQdrant, r.GetCollectionName(), func(c map[string]memPoint) (*qdrant.PointsOperationResponse, error) {
		if ids := r.GetPoints().GetPoints(); ids != nil {
			for _, id := range ids.GetIds() {
				delete(c, id.GetUuid())
			}
		} else {
			for id, p := range c {
				if matches(id, p, r.GetPoints().GetFilter()) {
					delete(c, id)
				}
			}
		}
		return completed, nil
	})
}

func (m memPoints) Count(ctx context.Context, r *qdrant.CountPoints) (*qdrant.CountResponse, error) {
	return inColl(m.memQdrant, r.GetCollectionName(), func(c map[string]memPoint) (*qdrant.CountResponse, error) {
		n := 0
		for id, p := range c {
			if matches(id, p, r.GetFilter()) {
				n++
			}
		}
		return &qdrant.CountResponse{Result: &qdrant.CountResult{Count: uint64(n)}}, nil
	})
}

func (m memPoints) Query(ctx context.Context, r *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queries++
	c, ok := m.colls[r.GetCollectionName()]
	if !ok {
		return nil, missing(r.GetCollectionName())
	}
	q := r.GetQuery().GetNearest().GetDense().GetData()
	if len(q) == 0 {
		return nil, status.Error(codes.InvalidArgument, "memQdrant answers nearest dense queries only")
	}
	if dim := m.dims[r.GetCollectionName()]; len(q) != dim {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", dim, len(q))
	}
	var res []*qdrant.ScoredPoint
	for id, p := range c {
		if matches(id, p, r.GetFilter()) {
			res = append(res, &qdrant.ScoredPoint{Id: qdrant.NewID(id), Score: cosine(q, p.vec)})
		}
	}
	slices.SortFunc(res, func(a, b *qdrant.ScoredPoint) int {
		return cmp.Or(cmp.Compare(b.GetScore(), a.GetScore()), cmp.Compare(a.GetId().GetUuid(), b.GetId().GetUuid()))
	})
	if n := int(r.GetLimit()); n > 0 && len(res) > n {
		res = res[:n]
	}
	return &qdrant.QueryResponse{Result: res}, nil
}

func cosine(a, b []float32) float32 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(na*nb))
}

// matches applies a filter's must conditions (all QdrantIndex sends).
func matches(id string, p memPoint, f *qdrant.Filter) bool {
	for _, c := range f.GetMust() {
		if has := c.GetHasId(); has != nil {
			if !slices.ContainsFunc(has.GetHasId(), func(x *qdrant.PointId) bool { return x.GetUuid() == id }) {
				return false
			}
			continue
		}
		fc := c.GetField()
		v := payloadField(p.pay, fc.GetKey())
		if v == nil {
			return false
		}
		num, isNum := number(v)
		if rg := fc.GetRange(); rg != nil {
			if !isNum || (rg.Gte != nil && num < rg.GetGte()) || (rg.Lte != nil && num > rg.GetLte()) {
				return false
			}
			continue
		}
		switch mv := fc.GetMatch().GetMatchValue().(type) {
		case *qdrant.Match_Keyword:
			if v.GetStringValue() != mv.Keyword {
				return false
			}
		case *qdrant.Match_Keywords:
			if !slices.Contains(mv.Keywords.GetStrings(), v.GetStringValue()) {
				return false
			}
		case *qdrant.Match_Integer:
			if !isNum || num != float64(mv.Integer) {
				return false
			}
		case *qdrant.Match_Boolean:
			if _, ok := v.GetKind().(*qdrant.Value_BoolValue); !ok || v.GetBoolValue() != mv.Boolean {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// payloadField follows a dotted key ("metadata.page") into the payload.
func payloadField(pay map[string]*qdrant.Value, key string) *qdrant.Value {
	for {
		head, rest, nested := cut(key)
		v := pay[head]
		if !nested || v == nil {
			return v
		}
		pay, key = v.GetStructValue().GetFields(), rest
	}
}

func cut(key string) (string, string, bool) {
	for i := range len(key) {
		if key[i] == '.' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}

func number(v *qdrant.Value) (float64, bool) {
	switch k := v.GetKind().(type) {
	case *qdrant.Value_IntegerValue:
		return float64(k.IntegerValue), true
	case *qdrant.Value_DoubleValue:
		return k.DoubleValue, true
	}
	return 0, false
}

// startMemQdrant serves a memQdrant on a local port for t and returns a
// client of it; more clients (one per replica) can dial the address.
func startMemQdrant(t *testing.T) (*memQdrant, *qdrant.Client, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &memQdrant{colls: map[string]map[string]memPoint{}, dims: map[string]int{}}
	srv := grpc.NewServer()
	qdrant.RegisterCollectionsServer(srv, memCollections{memQdrant: m})
	qdrant.RegisterPointsServer(srv, memPoints{memQdrant: m})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return m, dialQdrant(t, lis.Addr().String(), ""), lis.Addr().String()
}

// dialQdrant returns a client of the Qdrant at addr (host:port), closed
// at the end of t.
func dialQdrant(t *testing.T, addr, apiKey string) *qdrant.Client {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("qdrant address %q: %v", addr, err)
	}
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		t.Fatal(err)
	}
	c, err := qdrant.NewClient(&qdrant.Config{Host: host, Port: p, APIKey: apiKey, SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMemQdrantConformance checks the in-memory Qdrant against the suite
// every index passes, so tests built on it test the real behaviour.
func TestMemQdrantConformance(t *testing.T) {
	_, c, _ := startMemQdrant(t)
	n := 0
	indextest.Run(t, func(t *testing.T) kb.Index {
		n++
		return kb.NewQdrantIndex(c, "conformance_"+strconv.Itoa(n))
	})
}

// TestQdrantUpsertRecreatesDroppedCollection: a QdrantIndex that created
// its collection writes again after another process (a replica deleting
// or emptying the knowledge base) dropped it.
func TestQdrantUpsertRecreatesDroppedCollection(t *testing.T) {
	ctx := context.Background()
	m, c, addr := startMemQdrant(t)
	x := kb.NewQdrantIndex(c, "mixchat_dropped")
	chunk := func(id string) kb.Chunk {
		return kb.Chunk{ID: id, File: "a.md", Text: "乾", Vector: []float32{1, 0, 0}}
	}
	if err := x.Upsert(ctx, []kb.Chunk{chunk("6f1c2a52-8d0e-4c57-9a51-000000000001")}); err != nil {
		t.Fatal(err)
	}
	other := kb.NewQdrantIndex(dialQdrant(t, addr, ""), "mixchat_dropped")
	if err := other.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := x.Upsert(ctx, []kb.Chunk{chunk("6f1c2a52-8d0e-4c57-9a51-000000000002")}); err != nil {
		t.Fatalf("upsert after another client dropped the collection: %v", err)
	}
	if n, err := other.Count(ctx); err != nil || n != 1 {
		t.Errorf("the collection holds %d points (%v), want the one upserted after the drop", n, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.colls[x.Collection()]; !ok {
		t.Error("the collection was not created again")
	}
}
