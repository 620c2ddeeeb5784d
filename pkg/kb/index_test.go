package kb_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/kb/indextest"
)

func TestMemIndexConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T) kb.Index { return kb.NewMemIndex(0) })
}

// TestQdrantIndexConformance runs the suite against a real Qdrant when
// QDRANT_ADDR (host:port of its gRPC API, e.g. localhost:6334) is set; see
// docs/qdrant.md for starting one.
func TestQdrantIndexConformance(t *testing.T) {
	addr := os.Getenv("QDRANT_ADDR")
	if addr == "" {
		t.Skip("QDRANT_ADDR not set: start Qdrant (docs/qdrant.md) and set QDRANT_ADDR=host:6334 to run the Qdrant conformance suite")
	}
	host, portStr, ok := strings.Cut(addr, ":")
	port, err := strconv.Atoi(portStr)
	if !ok || err != nil {
		t.Fatalf("QDRANT_ADDR %q: want host:port", addr)
	}
	c, err := qdrant.NewClient(&qdrant.Config{Host: host, Port: port, APIKey: os.Getenv("QDRANT_API_KEY")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n := 0
	indextest.Run(t, func(t *testing.T) kb.Index {
		n++
		x := kb.NewQdrantIndex(c, "mixchat_indextest_"+strconv.FormatInt(time.Now().UnixNano(), 36)+"_"+strconv.Itoa(n))
		t.Cleanup(func() { _ = x.Drop(context.Background()) })
		return x
	})
}
