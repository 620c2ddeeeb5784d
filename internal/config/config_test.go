package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigValid(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if c.Server.Addr != "127.0.0.1:7861" || c.Server.DataDir != "./data" || c.Store.Driver != "sqlite" {
		t.Errorf("defaults = %+v", c.Server)
	}
}

// The documented configuration file parses into exactly the defaults, so
// what it says is true.
func TestDocumentedConfigIsDefaults(t *testing.T) {
	c, err := LoadConfig(filepath.Join("..", "..", "configs", "mixchat.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	if got, w := yamlOf(t, c), yamlOf(t, want); got != w {
		t.Errorf("configs/mixchat.yaml differs from DefaultConfig:\nfile:\n%s\ndefaults:\n%s", got, w)
	}
}

// yamlOf lists every scalar setting as key=value lines.
func yamlOf(t *testing.T, c Config) string {
	t.Helper()
	var b strings.Builder
	walkFields(reflect.ValueOf(&c).Elem(), "", func(key string, v reflect.Value) {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				fmt.Fprintf(&b, "%s=<nil>\n", key)
				return
			}
			v = v.Elem()
		}
		fmt.Fprintf(&b, "%s=%v\n", key, v.Interface())
	})
	return b.String()
}

func TestConfigFileEnvAndExpansion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte(`
server:
  addr: 0.0.0.0:9000
llm:
  base_url: https://api.example.com/v1
  api_key: ${TEST_KEY}
  model: deepseek-chat
  models:
    - name: qwen
      base_url: https://dashscope.example.com/v1
      model: qwen-plus
`), 0o644)
	t.Setenv("TEST_KEY", "sk-secret")
	c, err := LoadConfig(path, []string{"MIXCHAT_SERVER_ADDR=127.0.0.1:8000", "MIXCHAT_LLM_TIMEOUT=5s", "MIXCHAT_LLM_MAX_RETRIES=1", "OTHER=1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Server.Addr != "127.0.0.1:8000" || c.LLM.APIKey != "sk-secret" || c.LLM.Timeout != 5*time.Second || c.LLM.MaxRetries != 1 || len(c.LLM.Models) != 1 {
		t.Errorf("config = %+v", c)
	}
}

// TestAnswererTimeouts: mix.timeouts keeps its keys (llm, kb, search beside
// condense and fusion) now that the answerers' are a map, in the file and
// in the environment.
func TestAnswererTimeouts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("mix:\n  timeouts:\n    kb: 5s\n    condense: 3s\n"), 0o644)
	c, err := LoadConfig(path, []string{"MIXCHAT_MIX_TIMEOUTS_SEARCH=7s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"llm": 60 * time.Second, "kb": 5 * time.Second, "search": 7 * time.Second}
	if got := c.Mix.Timeouts.Answerers; !maps.Equal(got, want) || c.Mix.Timeouts.Condense != 3*time.Second {
		t.Errorf("timeouts = %v, condense %v; want %v, 3s", got, c.Mix.Timeouts.Condense, want)
	}
	if d := DefaultConfig().Mix.Timeouts.Answerers["kb"]; d != 60*time.Second {
		t.Errorf("the defaults changed with a loaded file: kb %v", d)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  []string
		want []string
	}{
		{"driver", "store:\n  driver: mysql\n", nil, []string{"store.driver", "sqlite, postgres"}},
		{"postgres dsn", "store:\n  driver: postgres\n", nil, []string{"store.dsn"}},
		{"addr", "", []string{"MIXCHAT_SERVER_ADDR=localhost"}, []string{"server.addr", "HOST:PORT"}},
		{"level", "log:\n  level: loud\n", nil, []string{"log.level", "debug, info, warn, error"}},
		{"llm model", "llm:\n  base_url: http://x/v1\n", nil, []string{"llm.model", "MIXCHAT_LLM_MODEL"}},
		{"llm url", "llm:\n  base_url: ftp://x\n  model: m\n", nil, []string{"llm.base_url", "http"}},
		{"default", "llm:\n  default: gpt-9\n", nil, []string{"llm.default", "offline"}},
		{"dup model", "llm:\n  models:\n    - {name: offline, base_url: http://x, model: m}\n", nil, []string{"llm.models[0].name", "unique"}},
		{"embed", "embed:\n  base_url: http://x/v1\n", nil, []string{"embed.model", "MIXCHAT_EMBED_MODEL"}},
		{"unknown key", "server:\n  adr: x\n", nil, []string{"field adr not found"}},
		{"env type", "", []string{"MIXCHAT_LLM_MAX_RETRIES=many"}, []string{"MIXCHAT_LLM_MAX_RETRIES", "integer"}},
		{"env duration", "", []string{"MIXCHAT_LLM_TIMEOUT=soon"}, []string{"MIXCHAT_LLM_TIMEOUT", "duration"}},
		{"env unknown", "", []string{"MIXCHAT_SERVR_ADDR=x"}, []string{"MIXCHAT_SERVR_ADDR names no setting"}},
		{"unset var", "llm:\n  api_key: ${NOT_SET_ANYWHERE_42}\n", nil, []string{"NOT_SET_ANYWHERE_42"}},
		{"timeout of no answerer", "mix:\n  timeouts:\n    kbb: 5s\n", nil, []string{"mix.timeouts.kbb", "llm, kb, search"}},
		{"env answerer timeout", "", []string{"MIXCHAT_MIX_TIMEOUTS_KB=soon"}, []string{"MIXCHAT_MIX_TIMEOUTS_KB", "duration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = filepath.Join(t.TempDir(), "c.yaml")
				os.WriteFile(path, []byte(tt.yaml), 0o644)
			}
			c, err := LoadConfig(path, tt.env)
			if err == nil {
				err = c.Validate()
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
