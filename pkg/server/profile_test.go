package server

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/rag"
)

// TestKBProfileField: create_knowledge_base and update_info take a
// profile, refuse one the server does not know (400 naming the field and
// the profiles known), and list_knowledge_bases?detail=true shows it.
func TestKBProfileField(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "law.json"), []byte(`{"name": "law", "kinds": [{"name": "条", "aliases": ["条款"]}], "examples": ["第三十六条规定了什么？"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := newKBTestServer(t, func(c *kb.Config) { c.ProfilesDir = dir; c.DefaultKnowledgeBases = []string{"laws"} })
	var e struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	if st := ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "laws", "profile": "nope"}, &e); st != http.StatusBadRequest ||
		!strings.Contains(e.Msg, "profile") || !strings.Contains(e.Msg, "law") {
		t.Fatalf("unknown profile: HTTP %d %+v, want 400 naming the field and the known profiles", st, e)
	}
	if ok, _ := ts.kb.Exists(t.Context(), "laws"); ok {
		t.Fatal("a knowledge base was created with an unknown profile")
	}
	var env envelope
	if st := ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "laws", "profile": "law"}, &env); st != 200 || env.Code != 200 {
		t.Fatalf("create: HTTP %d %+v", st, env)
	}
	profileOf := func() string {
		t.Helper()
		var list struct {
			Data []struct {
				Name    string `json:"kb_name"`
				Profile string `json:"profile"`
			} `json:"data"`
		}
		ts.do(t, http.MethodGet, "/knowledge_base/list_knowledge_bases?detail=true", "", nil, &list)
		for _, d := range list.Data {
			if d.Name == "laws" {
				return d.Profile
			}
		}
		t.Fatal("laws not listed")
		return ""
	}
	if p := profileOf(); p != "law" {
		t.Fatalf("profile = %q, want law", p)
	}
	// The web app suggests the default knowledge base's profile's
	// examples, and lists the profiles a base may name.
	suggested := func() (questions, profiles []string) {
		t.Helper()
		var list struct {
			Questions []string `json:"questions"`
			Profiles  []string `json:"profiles"`
		}
		ts.do(t, http.MethodGet, "/knowledge_base/list_knowledge_bases", "", nil, &list)
		return list.Questions, list.Profiles
	}
	if q, ps := suggested(); !slices.Equal(q, []string{"第三十六条规定了什么？"}) || !slices.Contains(ps, "law") {
		t.Errorf("questions %q, profiles %q: want the law profile's example and the law profile", q, ps)
	}
	if st := ts.postJSON(t, "/knowledge_base/update_info", map[string]any{"knowledge_base_name": "laws", "profile": "zz"}, &e); st != http.StatusBadRequest || !strings.Contains(e.Msg, "profile") {
		t.Fatalf("update to an unknown profile: HTTP %d %+v", st, e)
	}
	if st := ts.postJSON(t, "/knowledge_base/update_info", map[string]any{"knowledge_base_name": "laws", "profile": ""}, &env); st != 200 || env.Code != 200 {
		t.Fatalf("update: HTTP %d %+v", st, env)
	}
	if p := profileOf(); p != "" {
		t.Fatalf("profile after update = %q, want none", p)
	}
	if q, _ := suggested(); len(q) != 0 {
		t.Errorf("questions %q of a base that names no profile, want none", q)
	}
}

// TestSearchDocsAddressedPart: search_docs gives the part a query
// addresses first, marked "match": "part", and for a part the document
// lacks one doc marked "match": "absent".
func TestSearchDocsAddressedPart(t *testing.T) {
	ts := newKBTestServer(t, nil)
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "laws"}, &env)
	law := "# 示范劳动法\n\n第一章 总则\n\n第一条 为了保护劳动者的合法权益，制定本法。\n\n第二条 本法适用于境内的企业。\n\n第二章 工作时间\n\n第三条 劳动者每日工作时间不超过八小时。依照本法第一条执行。\n"
	ts.upload(t, map[string]string{"knowledge_base_name": "laws"}, map[string][]byte{"law.md": []byte(law)})
	type doc struct {
		PageContent string         `json:"page_content"`
		Match       string         `json:"match"`
		Relevance   float64        `json:"relevance"`
		Metadata    map[string]any `json:"metadata"`
	}
	var docs []doc
	ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"knowledge_base_name": "laws", "query": "示范劳动法第三条规定了什么？"}, &docs)
	if len(docs) == 0 || docs[0].Match != rag.MatchPart || !strings.Contains(docs[0].PageContent, "每日工作时间不超过八小时") || docs[0].Relevance != 1 {
		t.Fatalf("addressed part: %+v", docs)
	}
	if p, _ := docs[0].Metadata["path"].(string); !strings.HasSuffix(p, "第二章 工作时间 > 第三条 劳动者每日工作时间不超过八小时。依照本法第一条执行。") {
		t.Errorf("path = %q", p)
	}
	docs = nil
	ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"knowledge_base_name": "laws", "query": "示范劳动法第九条规定了什么？"}, &docs)
	if len(docs) != 1 || docs[0].Match != rag.MatchAbsent || !strings.Contains(docs[0].PageContent, "没有第九条") {
		t.Fatalf("absent part: %+v", docs)
	}
}
