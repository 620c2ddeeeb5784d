package config

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The deployment files configure mixchat through a mounted YAML file and
// MIXCHAT_* variables; these tests load both as serve does, so a misspelt
// setting or variable there fails here (deploy/'s own tests check the files
// against the Compose and Kubernetes schemas).

// composeVar is a ${VAR}, ${VAR:-default} or ${VAR:?message} in a Compose
// file.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?([-?])([^}]*))?\}`)

// checkDeployConfig loads the configuration from file content cfgYAML and
// the environment env, as serve does, and validates it.
func checkDeployConfig(t *testing.T, cfgYAML []byte, env map[string]string) Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mixchat.yaml")
	if err := os.WriteFile(path, cfgYAML, 0o600); err != nil {
		t.Fatal(err)
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	cfg, err := LoadConfig(path, environ)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.DataDir = t.TempDir()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestComposeConfig(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	svc, ok := compose.Services["mixchat"]
	if !ok {
		t.Fatal("no mixchat service")
	}
	env := map[string]string{}
	for k, v := range svc.Environment {
		env[k] = composeVar.ReplaceAllStringFunc(v, func(ref string) string {
			m := composeVar.FindStringSubmatch(ref)
			if m[2] == "-" {
				return m[3]
			}
			return "x"
		})
	}
	file, err := os.ReadFile("../../deploy/compose/mixchat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := checkDeployConfig(t, file, env)
	if cfg.Store.Driver != "postgres" || cfg.KB.VectorStore != "qdrant" || cfg.Search.Default != "searx" {
		t.Errorf("store %q, kb.vector_store %q, search.default %q; want postgres, qdrant, searx", cfg.Store.Driver, cfg.KB.VectorStore, cfg.Search.Default)
	}
	if got := strings.Join(svc.Command, " "); got != "serve --config /etc/mixchat/mixchat.yaml" {
		t.Errorf("command %q, want serve with the mounted file", got)
	}
}

func TestKubernetesConfig(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/kubernetes/mixchat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type envVar struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom any    `yaml:"valueFrom"`
	}
	var file []byte
	env := map[string]string{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc struct {
			Kind     string                `yaml:"kind"`
			Metadata struct{ Name string } `yaml:"metadata"`
			Data     map[string]string     `yaml:"data"`
			Spec     struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name string   `yaml:"name"`
							Env  []envVar `yaml:"env"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch {
		case doc.Kind == "ConfigMap" && doc.Metadata.Name == "mixchat-config":
			file = []byte(doc.Data["mixchat.yaml"])
		case doc.Kind == "Deployment" && doc.Metadata.Name == "mixchat":
			for _, c := range doc.Spec.Template.Spec.Containers {
				for _, e := range c.Env {
					v := e.Value
					if e.ValueFrom != nil {
						v = "from-a-secret" // the name must still be a setting
					}
					env[e.Name] = v
				}
			}
		}
	}
	if file == nil || len(env) == 0 {
		t.Fatal("no ConfigMap mixchat-config or Deployment mixchat in deploy/kubernetes/mixchat.yaml")
	}
	cfg := checkDeployConfig(t, file, env)
	if cfg.Store.Driver != "postgres" || cfg.Server.Addr != "0.0.0.0:7861" {
		t.Errorf("store %q, addr %q", cfg.Store.Driver, cfg.Server.Addr)
	}
	// Replicas share their knowledge bases: PostgreSQL with Qdrant vectors.
	if cfg.KB.Store != "postgres" || cfg.KB.VectorStore != "qdrant" || cfg.KB.DSN != cfg.Store.DSN || cfg.KB.Qdrant.Addr != "qdrant:6334" {
		t.Errorf("kb.store %q, kb.vector_store %q, kb.dsn %q (store dsn %q), kb.qdrant.addr %q; want postgres, qdrant, the store's DSN, qdrant:6334",
			cfg.KB.Store, cfg.KB.VectorStore, cfg.KB.DSN, cfg.Store.DSN, cfg.KB.Qdrant.Addr)
	}
}
