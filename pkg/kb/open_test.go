package kb

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// slowOpen is a catalog whose Open of one knowledge base blocks until
// release is closed.
type slowOpen struct {
	Catalog
	slow    string
	opening chan struct{} // closed when the slow Open starts
	release chan struct{}
}

func (c *slowOpen) Open(ctx context.Context, name string) (*sql.DB, error) {
	if name == c.slow {
		close(c.opening)
		select {
		case <-c.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Catalog.Open(ctx, name)
}

// TestOpeningHoldsNoOtherKB: while one knowledge base is being opened
// (its indexes read, slowly), requests to another go on, and a second
// request for the one opening waits for that open rather than opening it
// again.
func TestOpeningHoldsNoOtherKB(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	first := newService(t, cfg, newFakeEmbedder(), nil)
	for _, name := range []string{"qian", "kun"} {
		if _, err := first.Create(ctx, name, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(t, first, "qian", FileData{Name: "qian.txt", Data: []byte(qianText)})
	mustAdd(t, first, "kun", FileData{Name: "kun.txt", Data: []byte(kunText)})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	cat, err := openCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	slow := &slowOpen{Catalog: cat, slow: "qian", opening: make(chan struct{}), release: make(chan struct{})}
	s, err := New(cfg, slow, newFakeEmbedder(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type searched struct {
		rs  []Result
		err error
	}
	qian := make(chan searched, 2)
	for range 2 {
		go func() {
			rs, err := s.Search(ctx, SearchRequest{Query: "潜龙勿用", KnowledgeBases: []string{"qian"}, TopK: 3})
			qian <- searched{rs, err}
		}()
	}
	<-slow.opening
	kun := make(chan error, 1)
	go func() {
		_, err := s.Search(ctx, SearchRequest{Query: "先迷后得主", KnowledgeBases: []string{"kun"}, TopK: 3})
		kun <- err
	}()
	select {
	case err := <-kun:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a search of another knowledge base waits while one is being opened")
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Info(cctx, "qian"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request for the knowledge base being opened, with its context ending: %v", err)
	}
	close(slow.release)
	for range 2 {
		r := <-qian
		if r.err != nil || len(r.rs) == 0 {
			t.Errorf("search of the knowledge base opened meanwhile: %v, %v", r.rs, r.err)
		}
	}
}
