package kb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// QdrantIndex is an Index in one Qdrant collection (cosine distance),
// created on the first upsert with the vectors' dimension. Each point's id
// is the chunk id (a UUID) and its payload holds "file", "seq", "text" and
// "metadata" (the chunk's metadata object), so filters address
// "file" and "metadata.KEY".
type QdrantIndex struct {
	c          *qdrant.Client
	collection string
	// Timeout bounds each call to Qdrant (0: DefaultQdrantTimeout); set
	// it before the index is used.
	Timeout time.Duration

	mu      sync.Mutex
	created bool // the collection is known to exist
}

// NewQdrantIndex returns the index for collection (a name is made safe for
// Qdrant: characters other than letters, digits, '-' and '_' are replaced
// and a hash of the original keeps names distinct).
func NewQdrantIndex(c *qdrant.Client, collection string) *QdrantIndex {
	return &QdrantIndex{c: c, collection: CollectionName(collection)}
}

var unsafeCollection = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// CollectionName makes name usable as a Qdrant collection name.
func CollectionName(name string) string {
	safe := unsafeCollection.ReplaceAllString(name, "_")
	if safe == name && len(name) <= 200 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	if len(safe) > 180 {
		safe = safe[:180]
	}
	return safe + "_" + hex.EncodeToString(sum[:6])
}

// call bounds one call to Qdrant by the index's timeout.
func (q *QdrantIndex) call(ctx context.Context) (context.Context, context.CancelFunc) {
	d := q.Timeout
	if d <= 0 {
		d = DefaultQdrantTimeout
	}
	return context.WithTimeout(ctx, d)
}

// Collection returns the collection name.
func (q *QdrantIndex) Collection() string { return q.collection }

// grpcCode is the gRPC status code anywhere in err's chain.
func grpcCode(err error) codes.Code {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if st, ok := status.FromError(e); ok && st.Code() != codes.Unknown {
			return st.Code()
		}
	}
	return status.Code(err)
}

func notFound(err error) bool { return err != nil && grpcCode(err) == codes.NotFound }

// ensure creates the collection for vectors of dimension dim if needed.
func (q *QdrantIndex) ensure(ctx context.Context, dim int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.created {
		return nil
	}
	cctx, cancel := q.call(ctx)
	defer cancel()
	ok, err := q.c.CollectionExists(cctx, q.collection)
	if err != nil {
		return fmt.Errorf("qdrant: %w", err)
	}
	if !ok {
		cctx, cancel := q.call(ctx)
		defer cancel()
		err = q.c.CreateCollection(cctx, &qdrant.CreateCollection{
			CollectionName: q.collection,
			VectorsConfig:  qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: uint64(dim), Distance: qdrant.Distance_Cosine}),
		})
		if err != nil && grpcCode(err) != codes.AlreadyExists {
			return fmt.Errorf("qdrant: create collection %s: %w", q.collection, err)
		}
		wait := true
		fctx, cancel := q.call(ctx)
		defer cancel()
		if _, err := q.c.CreateFieldIndex(fctx, &qdrant.CreateFieldIndexCollection{
			CollectionName: q.collection, Wait: &wait, FieldName: "file", FieldType: qdrant.FieldType_FieldTypeKeyword.Enum(),
		}); err != nil {
			return fmt.Errorf("qdrant: index payload field file of %s: %w", q.collection, err)
		}
	}
	q.created = true
	return nil
}

// Upsert implements Index.
func (q *QdrantIndex) Upsert(ctx context.Context, chunks []Chunk) error {
	if len(chunks) == 0 {
		return nil
	}
	if err := q.ensure(ctx, len(chunks[0].Vector)); err != nil {
		return err
	}
	wait := true
	for start := 0; start < len(chunks); start += 256 {
		part := chunks[start:min(start+256, len(chunks))]
		points := make([]*qdrant.PointStruct, len(part))
		for i, c := range part {
			pay := map[string]any{"file": c.File, "seq": c.Seq, "text": c.Text}
			if len(c.Metadata) > 0 {
				pay["metadata"] = c.Metadata
			}
			payload, err := qdrant.TryValueMap(pay)
			if err != nil {
				return fmt.Errorf("qdrant: payload of %s: %w", c.ID, err)
			}
			points[i] = &qdrant.PointStruct{Id: qdrant.NewID(c.ID), Vectors: qdrant.NewVectorsDense(c.Vector), Payload: payload}
		}
		upsert := func() error {
			cctx, cancel := q.call(ctx)
			defer cancel()
			_, err := q.c.Upsert(cctx, &qdrant.UpsertPoints{CollectionName: q.collection, Wait: &wait, Points: points})
			return err
		}
		err := upsert()
		if notFound(err) {
			// The collection went since it was created or seen here
			// (dropped by another replica that deleted or emptied the
			// knowledge base, or lost by Qdrant): create it again, once.
			q.mu.Lock()
			q.created = false
			q.mu.Unlock()
			if err = q.ensure(ctx, len(part[0].Vector)); err == nil {
				err = upsert()
			}
		}
		if err != nil {
			return fmt.Errorf("qdrant: upsert into %s: %w", q.collection, err)
		}
	}
	return nil
}

// filter translates f to a Qdrant filter (nil for the zero Filter).
func qdrantFilter(f Filter) (*qdrant.Filter, error) {
	if f.Empty() {
		return nil, nil
	}
	var must []*qdrant.Condition
	if len(f.IDs) > 0 {
		ids := make([]*qdrant.PointId, len(f.IDs))
		for i, id := range f.IDs {
			ids[i] = qdrant.NewID(id)
		}
		must = append(must, qdrant.NewHasID(ids...))
	}
	if len(f.Files) > 0 {
		must = append(must, qdrant.NewMatchKeywords("file", f.Files...))
	}
	for k, v := range f.Metadata {
		field := "metadata." + k
		switch x := v.(type) {
		case string:
			must = append(must, qdrant.NewMatchKeyword(field, x))
		case bool:
			must = append(must, qdrant.NewMatchBool(field, x))
		case int:
			must = append(must, qdrant.NewMatchInt(field, int64(x)))
		case int64:
			must = append(must, qdrant.NewMatchInt(field, x))
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				must = append(must, qdrant.NewMatchInt(field, int64(x)))
			} else {
				must = append(must, qdrant.NewRange(field, &qdrant.Range{Gte: &x, Lte: &x}))
			}
		default:
			return nil, fmt.Errorf("%w: metadata filter %q: only strings, numbers and booleans can be matched", ErrBadRequest, k)
		}
	}
	return &qdrant.Filter{Must: must}, nil
}

// Search implements Index.
func (q *QdrantIndex) Search(ctx context.Context, vec []float32, k int, f Filter) ([]Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	flt, err := qdrantFilter(f)
	if err != nil {
		return nil, err
	}
	limit := uint64(k)
	ctx, cancel := q.call(ctx)
	defer cancel()
	res, err := q.c.Query(ctx, &qdrant.QueryPoints{
		CollectionName: q.collection,
		Query:          qdrant.NewQueryDense(vec),
		Filter:         flt,
		Limit:          &limit,
		WithPayload:    qdrant.NewWithPayload(false),
	})
	if err != nil {
		if notFound(err) {
			return nil, nil // nothing was ever stored
		}
		return nil, fmt.Errorf("qdrant: query %s: %w", q.collection, err)
	}
	hits := make([]Hit, 0, len(res))
	for _, p := range res {
		hits = append(hits, Hit{ID: p.GetId().GetUuid(), Score: retrieve.CosineToRelevance(float64(p.GetScore()))})
	}
	return hits, nil
}

// Delete implements Index. The zero Filter drops the collection (it is
// created again by the next upsert).
func (q *QdrantIndex) Delete(ctx context.Context, f Filter) error {
	if f.Empty() {
		return q.Drop(ctx)
	}
	var sel *qdrant.PointsSelector
	if len(f.IDs) > 0 && len(f.Files) == 0 && len(f.Metadata) == 0 {
		ids := make([]*qdrant.PointId, len(f.IDs))
		for i, id := range f.IDs {
			ids[i] = qdrant.NewID(id)
		}
		sel = qdrant.NewPointsSelectorIDs(ids)
	} else {
		flt, err := qdrantFilter(f)
		if err != nil {
			return err
		}
		sel = qdrant.NewPointsSelectorFilter(flt)
	}
	wait := true
	ctx, cancel := q.call(ctx)
	defer cancel()
	if _, err := q.c.Delete(ctx, &qdrant.DeletePoints{CollectionName: q.collection, Wait: &wait, Points: sel}); err != nil {
		if notFound(err) {
			return nil
		}
		return fmt.Errorf("qdrant: delete from %s: %w", q.collection, err)
	}
	return nil
}

// Count returns the number of points in the collection (0 when it does not
// exist).
func (q *QdrantIndex) Count(ctx context.Context) (int, error) {
	exact := true
	ctx, cancel := q.call(ctx)
	defer cancel()
	n, err := q.c.Count(ctx, &qdrant.CountPoints{CollectionName: q.collection, Exact: &exact})
	if err != nil {
		if notFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("qdrant: count %s: %w", q.collection, err)
	}
	return int(n), nil
}

// Drop implements store: it deletes the collection.
func (q *QdrantIndex) Drop(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.created = false
	ctx, cancel := q.call(ctx)
	defer cancel()
	if err := q.c.DeleteCollection(ctx, q.collection); err != nil && !notFound(err) {
		return fmt.Errorf("qdrant: delete collection %s: %w", q.collection, err)
	}
	return nil
}

// Close implements store; the client is the Service's.
func (q *QdrantIndex) Close() error { return nil }

// syncRemote makes sure a Qdrant-backed KB's collection holds every chunk
// the SQLite file has (after Qdrant lost its data, or a KB moved to another
// server), pushing the stored vectors again when points are missing.
func (s *Service) syncRemote(ctx context.Context, b *base) error {
	q, ok := b.vec.(*QdrantIndex)
	if !ok {
		return nil
	}
	var want int
	if err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&want); err != nil {
		return err
	}
	if want == 0 {
		return nil
	}
	have, err := q.Count(ctx)
	if err != nil {
		return err
	}
	if have >= want {
		return nil
	}
	var batch []Chunk
	err = eachChunk(ctx, b.db, `SELECT id, file, seq, text, metadata, terms, vector FROM chunks`, nil, func(c storedChunk) error {
		batch = append(batch, c.Chunk)
		if len(batch) < 256 {
			return nil
		}
		err := q.Upsert(ctx, batch)
		batch = batch[:0]
		return err
	})
	if err != nil {
		return err
	}
	return q.Upsert(ctx, batch)
}

// vectorStores makes the vector stores of knowledge bases: embedded
// indexes, or Qdrant collections through one client, dialled on first use
// (or given by WithQdrantClient).
type vectorStores struct {
	cfg QdrantConfig

	mu        sync.Mutex
	qdrant    *qdrant.Client
	ownQdrant bool // dialled here, closed by close
}

// newStore makes the vector store a KB's info asks for.
func (v *vectorStores) newStore(info Info) (store, error) {
	switch info.VectorStore {
	case StoreEmbedded, "":
		return NewMemIndex(info.Dim), nil
	case StoreQdrant:
		c, err := v.client()
		if err != nil {
			return nil, err
		}
		x := NewQdrantIndex(c, v.cfg.CollectionPrefix+info.Name)
		x.Timeout = v.cfg.Timeout
		return x, nil
	}
	return nil, fmt.Errorf("%w: vector store %q (use %s or %s)", ErrBadRequest, info.VectorStore, StoreEmbedded, StoreQdrant)
}

// client returns the Qdrant client, dialling it on first use.
func (v *vectorStores) client() (*qdrant.Client, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.qdrant != nil {
		return v.qdrant, nil
	}
	host, portStr, err := splitHostPort(v.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("kb.qdrant.addr %q: %w", v.cfg.Addr, err)
	}
	port, _ := strconv.Atoi(portStr)
	c, err := qdrant.NewClient(&qdrant.Config{Host: host, Port: port, APIKey: v.cfg.APIKey, UseTLS: v.cfg.TLS, SkipCompatibilityCheck: true})
	if err != nil {
		return nil, fmt.Errorf("connect to qdrant at %s: %w", v.cfg.Addr, err)
	}
	v.qdrant = c
	return c, nil
}

// close closes the client when it was dialled here.
func (v *vectorStores) close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.qdrant != nil && v.ownQdrant {
		return v.qdrant.Close()
	}
	return nil
}

func splitHostPort(addr string) (string, string, error) {
	i := strings.LastIndex(addr, ":")
	if i <= 0 || i == len(addr)-1 {
		return "", "", errors.New("want host:port")
	}
	if _, err := strconv.Atoi(addr[i+1:]); err != nil {
		return "", "", errors.New("want host:port with a numeric port")
	}
	return strings.Trim(addr[:i], "[]"), addr[i+1:], nil
}
