package auth

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestNewTokenUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok, TokenPrefix) || len(tok) != len(TokenPrefix)+43 || seen[tok] {
			t.Fatalf("token %q", tok)
		}
		seen[tok] = true
	}
	if h := HashToken("mx-a"); len(h) != 64 || h == HashToken("mx-b") {
		t.Fatalf("hash %q", h)
	}
}

func TestBearerToken(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer mx-abc":   "mx-abc",
		"bearer  mx-abc ": "mx-abc",
		"Basic dXNlcg==":  "",
		"mx-abc":          "",
		"":                "",
	} {
		if got := BearerToken(in); got != want {
			t.Errorf("BearerToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContext(t *testing.T) {
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("empty context has a principal")
	}
	p := Principal{UserID: "u", Role: RoleUser}
	got, ok := FromContext(NewContext(context.Background(), p))
	if !ok || got != p {
		t.Fatalf("FromContext = %+v, %v", got, ok)
	}
	AddTokens(context.Background(), 5) // no meter: no effect, no panic
	ctx, m := WithChargingMeter(context.Background(), nil)
	AddTokens(ctx, 5)
	AddTokens(ctx, 7)
	AddTokens(ctx, -3)
	if m.Tokens() != 12 {
		t.Fatalf("meter = %d, want 12", m.Tokens())
	}
}

func TestKBAccessCanRead(t *testing.T) {
	private := KBAccess{KB: "k", Owner: "alice", Private: true, Grants: []string{"bob"}}
	tests := []struct {
		a    KBAccess
		p    Principal
		want bool
	}{
		{KBAccess{KB: "k"}, Principal{UserID: "eve", Role: RoleUser}, true},
		{private, Principal{UserID: "alice", Role: RoleUser}, true},
		{private, Principal{UserID: "bob", Role: RoleUser}, true},
		{private, Principal{UserID: "eve", Role: RoleUser}, false},
		{private, Principal{UserID: "root", Role: RoleAdmin}, true},
	}
	for _, tt := range tests {
		if got := tt.a.CanRead(tt.p); got != tt.want {
			t.Errorf("%+v.CanRead(%+v) = %v, want %v", tt.a, tt.p, got, tt.want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	tests := []struct {
		cfg     Config
		addr    string
		wantErr bool
		warn    bool
	}{
		{Config{}, "127.0.0.1:7861", false, false},
		{Config{}, "localhost:7861", false, false},
		{Config{}, "[::1]:7861", false, false},
		{Config{}, "0.0.0.0:7861", true, false},
		{Config{}, ":7861", true, false},
		{Config{}, "192.168.1.5:7861", true, false},
		{Config{AllowAnonymousRemote: true}, ":7861", false, true},
		{Config{Enabled: true}, ":7861", false, false},
	}
	for _, tt := range tests {
		warn, err := tt.cfg.CheckListen(tt.addr)
		if (err != nil) != tt.wantErr || (warn != "") != tt.warn {
			t.Errorf("%+v.CheckListen(%q) = %q, %v", tt.cfg, tt.addr, warn, err)
		}
		if err != nil && !strings.Contains(err.Error(), "auth.allow_anonymous_remote") {
			t.Errorf("error does not say how to fix it: %v", err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Config{RequestsPerMinute: -1, TokensPerMinute: -1, CORS: CORSConfig{AllowedOrigins: []string{"example.com"}, MaxAge: -time.Second}}
	err := bad.Validate()
	for _, field := range []string{"auth.requests_per_minute", "auth.tokens_per_minute", "auth.cors.allowed_origins", "auth.cors.max_age"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("error %v does not name %s", err, field)
		}
	}
}

func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter()
	l.now = func() time.Time { return now }

	t.Run("requests", func(t *testing.T) {
		for i := range 3 {
			if ok, _, _ := l.Allow(context.Background(), "a", 3, 0); !ok {
				t.Fatalf("request %d refused", i)
			}
		}
		ok, wait, _ := l.Allow(context.Background(), "a", 3, 0)
		if ok || wait != 20*time.Second {
			t.Fatalf("4th request: %v, wait %s; want refused, 20s", ok, wait)
		}
		if ok, _, _ := l.Allow(context.Background(), "b", 3, 0); !ok {
			t.Fatal("another key is limited by a's use")
		}
		now = now.Add(20 * time.Second)
		if ok, _, _ := l.Allow(context.Background(), "a", 3, 0); !ok {
			t.Fatal("refused after waiting Retry-After")
		}
	})
	t.Run("tokens go into debt", func(t *testing.T) {
		if ok, _, _ := l.Allow(context.Background(), "t", 0, 600); !ok {
			t.Fatal("first request refused")
		}
		l.Charge("t", 0, 600, 1200) // 600 over budget: 1 minute and a bit
		ok, wait, _ := l.Allow(context.Background(), "t", 0, 600)
		if ok || wait < 60*time.Second || wait > 61*time.Second {
			t.Fatalf("after debt: %v, wait %s; want refused, ~60s", ok, wait)
		}
		now = now.Add(wait)
		if ok, _, _ := l.Allow(context.Background(), "t", 0, 600); !ok {
			t.Fatal("refused after paying the debt")
		}
	})
	t.Run("unlimited", func(t *testing.T) {
		for range 1000 {
			if ok, _, _ := l.Allow(context.Background(), "u", 0, 0); !ok {
				t.Fatal("unlimited key refused")
			}
		}
	})
}
