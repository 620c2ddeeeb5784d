package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

func TestKeysCommand(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	keys := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runKeys(ctx, append([]string{"--data", data}, args...), nil, &out, &errOut)
		return out.String(), err
	}
	tok, err := keys("create", "--user", "alice", "--role", "admin", "--name", "laptop", "--rpm", "30")
	if err != nil {
		t.Fatal(err)
	}
	tok = strings.TrimSpace(tok)
	if !strings.HasPrefix(tok, auth.TokenPrefix) {
		t.Fatalf("create printed %q, want the token alone", tok)
	}
	st, err := sqlite.OpenKeys(ctx, filepath.Join(data, "mixchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.Authenticate(ctx, tok)
	if err != nil || p.UserID != "alice" || p.Role != auth.RoleAdmin || p.RequestsPerMinute != 30 {
		t.Fatalf("created key: %+v, %v", p, err)
	}

	ls, err := keys("ls")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ls, p.KeyID) || !strings.Contains(ls, "laptop") || !strings.Contains(ls, "active") || strings.Contains(ls, tok) {
		t.Fatalf("ls:\n%s", ls)
	}
	if out, err := keys("revoke", p.KeyID); err != nil || !strings.Contains(out, "revoked "+p.KeyID) {
		t.Fatalf("revoke: %q, %v", out, err)
	}
	if _, err := st.Authenticate(ctx, tok); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("revoked key authenticates: %v", err)
	}
	if ls, _ = keys("ls", "--user", "alice"); !strings.Contains(ls, "revoked") {
		t.Fatalf("ls after revoke:\n%s", ls)
	}

	for _, bad := range [][]string{
		{},
		{"nope"},
		{"create"},
		{"create", "--user", "bob", "--role", "root"},
		{"revoke"},
		{"revoke", "key_unknown"},
	} {
		if _, err := keys(bad...); err == nil {
			t.Errorf("keys %v succeeded", bad)
		}
	}
}
