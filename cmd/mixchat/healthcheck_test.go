package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestProbeURL(t *testing.T) {
	tests := []struct {
		addr, path, want string
		wantErr          bool
	}{
		{addr: "0.0.0.0:7861", path: "/healthz", want: "http://127.0.0.1:7861/healthz"},
		{addr: ":7861", path: "readyz", want: "http://127.0.0.1:7861/readyz"},
		{addr: "[::]:7861", path: "/healthz", want: "http://127.0.0.1:7861/healthz"},
		{addr: "10.0.0.5:80", path: "/healthz", want: "http://10.0.0.5:80/healthz"},
		{addr: "[::1]:7861", path: "/healthz", want: "http://[::1]:7861/healthz"},
		{addr: "localhost", wantErr: true},
		{addr: "127.0.0.1:0", wantErr: true},
	}
	for _, tt := range tests {
		got, err := probeURL(tt.addr, tt.path)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("probeURL(%q, %q) = %q, %v; want %q, error %v", tt.addr, tt.path, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestHealthcheck(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/readyz" {
			http.Error(w, `{"status":"draining"}`, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer hs.Close()
	addr := strings.TrimPrefix(hs.URL, "http://")

	var out, errw bytes.Buffer
	if err := runHealthcheck(context.Background(), []string{"--addr", addr}, nil, &out, &errw); err != nil {
		t.Fatalf("healthcheck of a healthy server: %v", err)
	}
	err := runHealthcheck(context.Background(), []string{"--addr", addr, "--path", "/readyz"}, nil, &out, &errw)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("healthcheck of a draining server: %v, want an error naming 503", err)
	}
	mu.Lock()
	got := strings.Join(paths, ",")
	mu.Unlock()
	if got != "/healthz,/readyz" {
		t.Errorf("probed %s, want /healthz,/readyz", got)
	}

	// From the environment, as in the container: server.addr.
	t.Setenv("MIXCHAT_SERVER_ADDR", addr)
	if err := runHealthcheck(context.Background(), nil, nil, &out, &errw); err != nil {
		t.Fatalf("healthcheck with MIXCHAT_SERVER_ADDR: %v", err)
	}

	hs.Close()
	if err := runHealthcheck(context.Background(), []string{"--addr", addr, "--timeout", "1s"}, nil, &out, &errw); err == nil {
		t.Fatal("healthcheck of a stopped server succeeded")
	}
}
