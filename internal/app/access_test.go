package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/auth"
)

func TestNewAccess(t *testing.T) {
	tests := []struct {
		name     string
		addr     string
		ac       auth.Config
		wantErr  bool
		wantKeys bool
		wantWarn bool
	}{
		{"local run without auth", "127.0.0.1:7861", auth.Config{}, false, false, false},
		{"remote without auth fails", "0.0.0.0:7861", auth.Config{}, true, false, false},
		{"all interfaces without auth fails", ":7861", auth.Config{}, true, false, false},
		{"remote anonymous on purpose warns", "0.0.0.0:7861", auth.Config{AllowAnonymousRemote: true}, false, false, true},
		{"remote with auth", "0.0.0.0:7861", auth.Config{Enabled: true, RequestsPerMinute: 60}, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.DefaultConfig()
			cfg.Server.Addr = tt.addr
			cfg.Server.DataDir = t.TempDir()
			var logs bytes.Buffer
			access, closer, err := newAccess(context.Background(), cfg, tt.ac, slog.New(slog.NewTextHandler(&logs, nil)))
			if closer != nil {
				defer closer.Close()
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, auth.ErrAnonymousRemote) || !strings.Contains(err.Error(), "auth.enabled")) {
				t.Fatalf("error does not explain itself: %v", err)
			}
			if (access.Keys != nil) != tt.wantKeys {
				t.Fatalf("key store = %v, want one: %v", access.Keys, tt.wantKeys)
			}
			if strings.Contains(logs.String(), "level=WARN") != tt.wantWarn {
				t.Fatalf("logs %q, want warning: %v", logs.String(), tt.wantWarn)
			}
			if tt.wantKeys && access.RequestsPerMinute != 60 {
				t.Fatalf("limits not passed: %+v", access)
			}
		})
	}
}

func TestNewModels(t *testing.T) {
	c := config.DefaultConfig()
	c.LLM.BaseURL, c.LLM.Model = "https://api.example.com/v1", "deepseek-chat"
	c.LLM.Models = []config.ModelConfig{{Name: "qwen", BaseURL: "https://dashscope.example.com/v1", Model: "qwen-plus"}}
	models := NewModels(c.LLM)
	if models.Default() != "deepseek-chat" || len(models.Names()) != 3 {
		t.Errorf("models default %q names %v", models.Default(), models.Names())
	}
	c.LLM.BaseURL, c.LLM.Models = "", nil
	if models := NewModels(c.LLM); models.Default() != "offline" {
		t.Errorf("without an endpoint the default is %q, want offline", models.Default())
	}
}
