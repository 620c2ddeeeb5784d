package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlags: flags override the file, which overrides the defaults, and the
// result is validated.
func TestFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("server:\n  addr: 127.0.0.1:9000\n  data_dir: /from/file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args             []string
		wantAddr, wantDD string
		wantErr          string
	}{
		{nil, "127.0.0.1:7861", "./data", ""},
		{[]string{"--config", path}, "127.0.0.1:9000", "/from/file", ""},
		{[]string{"--config", path, "--addr", "127.0.0.1:1", "--data", "/from/flag"}, "127.0.0.1:1", "/from/flag", ""},
		{[]string{"--addr", "nonsense"}, "", "", "server.addr"},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}, "", "", "open config"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f Flags
		f.Register(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.Load()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want it to name %s", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if cfg.Server.Addr != tt.wantAddr || cfg.Server.DataDir != tt.wantDD {
			t.Errorf("%q: addr %q data %q, want %q %q", tt.args, cfg.Server.Addr, cfg.Server.DataDir, tt.wantAddr, tt.wantDD)
		}
	}
}
