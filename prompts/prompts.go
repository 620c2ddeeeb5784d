// Package prompts embeds mixchat's prompt templates and renders them.
//
// Each template is a file named GROUP.NAME.tmpl in this folder, written in Go's
// text/template syntax (fields such as {{.Question}}). GROUP is the answerer
// or task ("llm_chat", "knowledge_base_chat", "search_engine_chat",
// "mix_chat", "memory_summary", ...); NAME is the variant a request selects
// with prompt_name, "default" when it names none.
package prompts

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

var templates = mustParse()

func mustParse() map[string]*template.Template {
	m := map[string]*template.Template{}
	entries, err := fs.Glob(files, "*.tmpl")
	if err != nil {
		panic(err)
	}
	for _, name := range entries {
		b, err := files.ReadFile(name)
		if err != nil {
			panic(err)
		}
		key := strings.TrimSuffix(name, ".tmpl")
		t, err := template.New(key).Option("missingkey=error").Parse(string(b))
		if err != nil {
			panic(fmt.Sprintf("prompt %s: %v", name, err))
		}
		m[key] = t
	}
	return m
}

// Render renders template GROUP.NAME with data; an empty name means
// "default". It fails when the template does not exist, naming the ones that
// do.
func Render(group, name string, data any) (string, error) {
	if name == "" {
		name = "default"
	}
	t, ok := templates[group+"."+name]
	if !ok {
		return "", fmt.Errorf("prompt %q of %s not found (have: %s)", name, group, strings.Join(Names(group), ", "))
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render prompt %s.%s: %w", group, name, err)
	}
	return b.String(), nil
}

// Has reports whether template GROUP.NAME exists.
func Has(group, name string) bool {
	if name == "" {
		name = "default"
	}
	_, ok := templates[group+"."+name]
	return ok
}

// Names lists the variants of group, sorted.
func Names(group string) []string {
	var out []string
	for k := range templates {
		if g, n, ok := strings.Cut(k, "."); ok && g == group {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
