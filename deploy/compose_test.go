package deploy

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
)

const composeFile = "compose/compose.yaml"

// loadCompose loads the Compose project as `docker compose config` does:
// the Compose specification's schema, interpolation of ${VAR} from env,
// relative paths resolved.
func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Dir(composeFile))
	if err != nil {
		t.Fatal(err)
	}
	raw := readFile(t, composeFile)
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml"), Content: raw}},
		Environment: env,
	})
}

func mustLoadCompose(t *testing.T) *types.Project {
	t.Helper()
	p, err := loadCompose(t, map[string]string{"POSTGRES_PASSWORD": "secret"})
	if err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return p
}

// composeImage is the mixchat image the Compose file builds and runs.
func composeImage(t *testing.T) string {
	t.Helper()
	svc, ok := mustLoadCompose(t).Services["mixchat"]
	if !ok {
		t.Fatal("no mixchat service in " + composeFile)
	}
	return svc.Image
}

func TestComposeLoads(t *testing.T) {
	p := mustLoadCompose(t)
	if p.Name != "mixchat" {
		t.Errorf("project name = %q, want mixchat", p.Name)
	}
	// Each service keeps its state in a declared named volume.
	for name, path := range map[string]string{
		"mixchat":  "/var/lib/mixchat",
		"postgres": "/var/lib/postgresql/data",
		"qdrant":   "/qdrant/storage",
	} {
		svc, ok := p.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		found := false
		for _, v := range svc.Volumes {
			if v.Target == path {
				found = true
				if v.Type != types.VolumeTypeVolume {
					t.Errorf("%s: %s is a %s mount, want a named volume", name, path, v.Type)
				} else if _, ok := p.Volumes[v.Source]; !ok {
					t.Errorf("%s: volume %s is not declared", name, v.Source)
				}
			}
		}
		if !found {
			t.Errorf("%s: nothing mounted at %s", name, path)
		}
	}
	if _, ok := p.Services["searxng"]; !ok {
		t.Error("no service searxng")
	}
	// Bind-mounted files exist.
	for name, svc := range p.Services {
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("%s: bind mount source: %v", name, err)
				}
			}
		}
	}
}

func TestComposeMixchat(t *testing.T) {
	p := mustLoadCompose(t)
	svc := p.Services["mixchat"]
	if svc.Build == nil || svc.Build.Dockerfile != "deploy/Dockerfile" {
		t.Errorf("mixchat build = %+v, want deploy/Dockerfile", svc.Build)
	} else if _, err := os.Stat(filepath.Join(svc.Build.Context, "go.mod")); err != nil {
		t.Errorf("build context %s is not the repository root: %v", svc.Build.Context, err)
	}
	if svc.Build != nil {
		_, tag, _ := strings.Cut(svc.Image[strings.LastIndex(svc.Image, "/")+1:], ":")
		if v := svc.Build.Args["VERSION"]; v == nil || *v != tag {
			t.Errorf("build arg VERSION %v differs from the image tag %q", v, tag)
		}
	}
	env := map[string]string{}
	for k, v := range svc.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	for k, want := range map[string]string{
		"MIXCHAT_SERVER_ADDR": "0.0.0.0:7861", "MIXCHAT_STORE_DRIVER": "postgres",
		"MIXCHAT_KB_VECTOR_STORE": "qdrant", "MIXCHAT_KB_QDRANT_ADDR": "qdrant:6334",
		// Listening on every interface: authentication on (the server refuses to start otherwise).
		"MIXCHAT_AUTH_ENABLED": "true",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	// One mixchat on one machine: its knowledge bases stay in the files
	// store, in the data volume, which must outlive the container.
	if st := env["MIXCHAT_KB_STORE"]; st != "" && st != "files" {
		t.Errorf("MIXCHAT_KB_STORE = %q: the single-machine Compose file keeps the files store", st)
	}
	persistent := false
	for _, v := range svc.Volumes {
		if v.Type == "volume" && v.Target == env["MIXCHAT_SERVER_DATA_DIR"] && v.Source != "" {
			persistent = true
		}
	}
	if !persistent {
		t.Errorf("the data directory %s (and the knowledge bases in it) is not on a named volume", env["MIXCHAT_SERVER_DATA_DIR"])
	}
	dsn, err := url.Parse(env["MIXCHAT_STORE_DSN"])
	if err != nil || dsn.Host != "postgres:5432" {
		t.Errorf("MIXCHAT_STORE_DSN %q: want a URL to postgres:5432 (%v)", env["MIXCHAT_STORE_DSN"], err)
	} else if pw, _ := dsn.User.Password(); pw != "secret" {
		t.Errorf("MIXCHAT_STORE_DSN password = %q, want POSTGRES_PASSWORD interpolated", pw)
	}
	if dep, ok := svc.DependsOn["postgres"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Errorf("mixchat must wait for postgres to be healthy: %+v", svc.DependsOn)
	}
	if hc := svc.HealthCheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), "mixchat healthcheck") {
		t.Errorf("healthcheck = %+v, want the binary's own probe", svc.HealthCheck)
	}
	if g := svc.StopGracePeriod; g == nil || time.Duration(*g) < 30*time.Second {
		t.Errorf("stop_grace_period %v is shorter than server.shutdown_timeout (30s)", g)
	}

	// The password is required: without it Compose refuses to start.
	if _, err := loadCompose(t, nil); err == nil || !strings.Contains(err.Error(), "POSTGRES_PASSWORD") {
		t.Errorf("loading without POSTGRES_PASSWORD: %v, want an error naming it", err)
	}
}

// searchEngineHosts returns the hosts of the searxng engines in a mixchat
// configuration file.
func searchEngineHosts(t *testing.T, name string, raw []byte) []string {
	t.Helper()
	var cfg struct {
		Search struct {
			Default string `yaml:"default"`
			Engines []struct {
				Name     string `yaml:"name"`
				Provider string `yaml:"provider"`
				BaseURL  string `yaml:"base_url"`
			} `yaml:"engines"`
		} `yaml:"search"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var hosts []string
	for _, e := range cfg.Search.Engines {
		if e.Provider == "searxng" {
			u, err := url.Parse(e.BaseURL)
			if err != nil {
				t.Fatalf("%s: engine %s: %v", name, e.Name, err)
			}
			hosts = append(hosts, u.Host)
		}
	}
	if len(hosts) == 0 {
		t.Fatalf("%s: no searxng engine", name)
	}
	return hosts
}

// The search engine in each mixchat configuration points at the SearxNG
// service of the same deployment.
func TestSearxngWiring(t *testing.T) {
	p := mustLoadCompose(t)
	raw := readFile(t, "compose/mixchat.yaml")
	for _, host := range searchEngineHosts(t, "compose/mixchat.yaml", raw) {
		name, port, _ := strings.Cut(host, ":")
		if _, ok := p.Services[name]; !ok || port != "8080" {
			t.Errorf("compose/mixchat.yaml: engine host %s is not the searxng service on 8080", host)
		}
	}
	checkSearxngSettings(t, "compose/searxng/settings.yml", readFile(t, "compose/searxng/settings.yml"))

	c := newCluster(t)
	cm, ok := get[*corev1.ConfigMap](c, "ConfigMap", "mixchat-config")
	if !ok {
		t.Fatal("no ConfigMap mixchat-config")
	}
	for _, host := range searchEngineHosts(t, "ConfigMap mixchat-config", []byte(cm.Data["mixchat.yaml"])) {
		name, port, _ := strings.Cut(host, ":")
		svc, ok := get[*corev1.Service](c, "Service", name)
		if !ok || len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].Port != 8080 || port != "8080" {
			t.Errorf("ConfigMap mixchat-config: engine host %s is not a Service on 8080", host)
		}
	}
	scm, ok := get[*corev1.ConfigMap](c, "ConfigMap", "searxng-config")
	if !ok {
		t.Fatal("no ConfigMap searxng-config")
	}
	checkSearxngSettings(t, "ConfigMap searxng-config", []byte(scm.Data["settings.yml"]))
}

// checkSearxngSettings checks SearxNG answers JSON (mixchat's format) and
// does not rate-limit mixchat.
func checkSearxngSettings(t *testing.T, name string, raw []byte) {
	t.Helper()
	var s struct {
		Server struct {
			Limiter bool `yaml:"limiter"`
		} `yaml:"server"`
		Search struct {
			Formats []string `yaml:"formats"`
		} `yaml:"search"`
	}
	if err := yaml.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !strings.Contains(strings.Join(s.Search.Formats, ","), "json") {
		t.Errorf("%s: search.formats %v lacks json: SearxNG would answer 403", name, s.Search.Formats)
	}
	if s.Server.Limiter {
		t.Errorf("%s: the limiter would answer mixchat 429", name)
	}
}

// TestComposePinned: every image of the Compose file names a version
// (the one mixchat builds included): a pull next month runs what was
// tested.
func TestComposePinned(t *testing.T) {
	for name, svc := range mustLoadCompose(t).Services {
		_, tag, ok := strings.Cut(svc.Image[strings.LastIndex(svc.Image, "/")+1:], ":")
		if !ok || tag == "" || tag == "latest" {
			t.Errorf("service %s runs %q: pin a version", name, svc.Image)
		}
	}
}

// TestComposeEmbedder: the embedding endpoint is set from .env like the
// model, and left empty it stays the offline embedder.
func TestComposeEmbedder(t *testing.T) {
	p, err := loadCompose(t, map[string]string{"POSTGRES_PASSWORD": "secret", "EMBED_BASE_URL": "http://tei:80/v1", "EMBED_MODEL": "bge-m3"})
	if err != nil {
		t.Fatal(err)
	}
	env := p.Services["mixchat"].Environment
	for k, want := range map[string]string{"MIXCHAT_EMBED_BASE_URL": "http://tei:80/v1", "MIXCHAT_EMBED_MODEL": "bge-m3", "MIXCHAT_EMBED_API_KEY": ""} {
		if v, ok := env[k]; !ok || v == nil || *v != want {
			t.Errorf("%s = %v, want %q", k, v, want)
		}
	}
	example := string(readFile(t, "compose/env.example"))
	for _, k := range []string{"EMBED_BASE_URL=", "EMBED_API_KEY=", "EMBED_MODEL="} {
		if !strings.Contains(example, k) {
			t.Errorf("compose/env.example does not mention %s", k)
		}
	}
}
