package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/auth"
)

// TestReplicasShareLimits: two servers on one PostgreSQL database let a key
// limited to 10 requests a minute through 10 times in all, not 10 times
// each; the rest get 429 with Retry-After. Requests are counted exactly
// across replicas (docs/operations.md, "Rate limits").
func TestReplicasShareLimits(t *testing.T) {
	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.Demo = false
	cfg.Store.Driver, cfg.Store.DSN = "postgres", pgtest.Schema(t, "limits")
	cfg.Auth.Enabled = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	keys, err := OpenKeyStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const rpm = 10
	token, _, err := keys.CreateKey(ctx, auth.KeySpec{UserID: "busy", Role: auth.RoleUser, RequestsPerMinute: rpm})
	keys.Close()
	if err != nil {
		t.Fatal(err)
	}
	var replicas []*httptest.Server
	for range 2 {
		c := cfg
		c.Server.DataDir = t.TempDir()
		a, err := New(ctx, c, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(a.Server.Handler())
		t.Cleanup(func() { hs.Close(); a.Close() })
		replicas = append(replicas, hs)
	}
	passed, limited := 0, 0
	start := time.Now()
	for i := range 3 * rpm {
		hs := replicas[i%2]
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/access/whoami", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			passed++
		case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
			limited++
		default:
			t.Fatalf("request %d: %s %s", i, resp.Status, body)
		}
	}
	// The bucket refills while the requests run: on a slow machine a
	// request more may pass for every 6 s.
	most := rpm + int(time.Since(start).Minutes()*rpm)
	if passed < rpm || passed > most {
		t.Errorf("%d of %d requests through two replicas passed a limit of %d a minute (%d refused); want %d to %d",
			passed, 3*rpm, rpm, limited, rpm, most)
	}
}
