package search

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestDefaultConfigValidates(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Default != "local" || c.TopK != 3 || c.Fetch.Enabled || c.Fetch.UserAgent == "" {
		t.Errorf("defaults %+v", c)
	}
}

func TestConfigYAML(t *testing.T) {
	src := `
default: web
top_k: 5
local:
  dir: /srv/docs
  refresh: 10s
engines:
  - name: searx
    provider: searxng
    base_url: http://127.0.0.1:8888
    language: zh-CN
    categories: [general]
    timeout: 3s
  - name: bing
    provider: bing
    api_key: k
  - name: web
    provider: combined
    engines: [searx, bing, local]
fetch:
  enabled: true
  timeout: 5s
  max_bytes: 1048576
  cache_ttl: 1m
  allow_networks: [10.1.0.0/16]
`
	c := DefaultConfig()
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Local.Refresh != 10*time.Second || c.Engines[0].Timeout != 3*time.Second || c.Fetch.CacheTTL != time.Minute ||
		c.Fetch.Concurrency != 4 || c.Engines[2].Engines[2] != "local" || c.Engines[0].Categories[0] != "general" {
		t.Errorf("decoded %+v", c)
	}
}

func TestConfigValidateNamesFields(t *testing.T) {
	c := DefaultConfig()
	c.TopK = 99
	c.Default = "nope"
	c.Engines = []EngineConfig{
		{Name: "a", Provider: "searxng"},
		{Name: "b", Provider: "yahoo"},
		{Name: "a", Provider: "bing", BaseURL: "ftp://x"},
		{Name: "local", Provider: "brave"},
		{Name: "g", Provider: "google", APIKey: "k"},
		{Name: "mix", Provider: "combined", Engines: []string{"a", "zzz"}},
		{Name: "mix2", Provider: "combined", Engines: []string{"mix", "a"}},
		{Name: "l", Provider: "local"},
	}
	c.Fetch.Timeout = -1
	c.Fetch.AllowNetworks = []string{"10.0.0.0/33"}
	err := c.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{
		"search.top_k",
		"search.default: \"nope\"",
		"search.engines[0].base_url: is required for provider searxng",
		"search.engines[1].provider: \"yahoo\" is not one of searxng, bing, brave, tavily, google, bocha, duckduckgo, local, combined",
		"search.engines[2].name: \"a\" is already used by engines[0]",
		"search.engines[2].base_url",
		"search.engines[3].name: \"local\" is already used by the built-in local engine",
		"search.engines[4].cx",
		"search.engines[5].engines[1]: \"zzz\" is not a configured engine",
		"search.engines[6].engines[0]: \"mix\" is itself combined",
		"search.engines[7].dir",
		"search.fetch.timeout",
		"search.fetch.allow_networks[0]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestServiceEngines(t *testing.T) {
	c := DefaultConfig()
	c.Engines = []EngineConfig{
		{Name: "searx", Provider: "searxng", BaseURL: "http://127.0.0.1:1"},
		{Name: "bing", Provider: "bing"},
		{Name: "ddg", Provider: "duckduckgo"},
		{Name: "web", Provider: "combined", Engines: []string{"searx", "bing"}},
		{Name: "keyed", Provider: "combined", Engines: []string{"bing", "local"}},
	}
	s, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]EngineInfo{}
	var names []string
	for _, e := range s.Engines() {
		got[e.Name] = e
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "local,searx,bing,ddg,web,keyed" {
		t.Errorf("order %v", names)
	}
	if e := got["local"]; e.Available || !e.Default || !strings.Contains(e.Reason, "MIXCHAT_SEARCH_LOCAL_DIR") {
		t.Errorf("local %+v", e)
	}
	if e := got["bing"]; e.Available || !strings.Contains(e.Reason, "api_key") {
		t.Errorf("bing %+v", e)
	}
	if e := got["web"]; !e.Available || !strings.Contains(e.Reason, "bing") {
		t.Errorf("web %+v", e)
	}
	if e := got["keyed"]; e.Available {
		t.Errorf("combined engine of unavailable members available: %+v", e)
	}
	if !got["searx"].Available || !got["ddg"].Available {
		t.Errorf("searx/ddg %+v %+v", got["searx"], got["ddg"])
	}
	if _, err := s.Searcher(""); err == nil || !strings.Contains(err.Error(), "local") {
		t.Errorf("default local without folder: %v", err)
	}

	c.Local.Dir = "/definitely/not/here"
	s, err = New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := s.Engines()[0]; e.Available || !strings.Contains(e.Reason, "/definitely/not/here") {
		t.Errorf("missing folder %+v", e)
	}

	c.TopK = -1
	if _, err := New(c, Options{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New accepted an invalid config: %v", err)
	}
}
