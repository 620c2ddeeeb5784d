package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
)

// errorText is the message of a Chatchat-style or OpenAI-style error body.
func errorText(out map[string]any) string {
	if msg, ok := out["msg"].(string); ok {
		return msg
	}
	if e, ok := out["error"].(map[string]any); ok {
		msg, _ := e["message"].(string)
		return msg
	}
	return ""
}

// TestMemorySettingsValidated: every chat endpoint that takes history_len,
// memory and window_k settles them with memory.ResolveRequest: a
// contradiction is a 400 naming the fields, before any model is called;
// valid settings keep working as before.
func TestMemorySettingsValidated(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, func(s *mixSetup, _ llm.Models) { s.memory = true })
	bad := []struct {
		name   string
		fields map[string]any
		want   []string // words the message must hold
	}{
		{"history_len overrides memory", map[string]any{"history_len": 3, "memory": "combined"}, []string{"history_len", "memory", "contradict"}},
		{"window_k with another strategy", map[string]any{"window_k": 2, "memory": "summary_buffer"}, []string{"window_k", "memory"}},
		{"two window sizes", map[string]any{"history_len": 3, "window_k": 4}, []string{"history_len", "window_k"}},
		{"window_k out of range", map[string]any{"window_k": 5000}, []string{"window_k"}},
		{"window_k 0", map[string]any{"window_k": 0}, []string{"window_k"}},
		{"history_len below -1", map[string]any{"history_len": -100}, []string{"history_len", "-1", "1000", "-100"}},
		{"unknown strategy", map[string]any{"memory": "nope"}, []string{`memory "nope" unknown`}},
	}
	endpoints := []struct {
		path string
		body func(fields map[string]any) map[string]any
	}{
		{"/chat/chat", func(f map[string]any) map[string]any {
			return merge(map[string]any{"query": "乾卦是什么？", "conversation_id": "v1", "model_name": "test"}, f)
		}},
		{"/chat/mix_chat", func(f map[string]any) map[string]any {
			return merge(map[string]any{"query": "乾卦是什么？", "conversation_id": "v1"}, f)
		}},
		{"/debug/condense", func(f map[string]any) map[string]any {
			return merge(map[string]any{"query": "它呢？", "conversation_id": "v1"}, f)
		}},
		{"/v1/chat/completions", func(f map[string]any) map[string]any {
			return map[string]any{"model": modelMix, "messages": []map[string]string{{"role": "user", "content": "乾卦是什么？"}},
				"mixchat": merge(map[string]any{"conversation_id": "v1"}, f)}
		}},
		{"/v1/chat/completions", func(f map[string]any) map[string]any {
			md := map[string]string{"conversation_id": "v1"}
			for k, v := range f {
				md[k] = fmt.Sprint(v)
			}
			return map[string]any{"model": modelMix, "messages": []map[string]string{{"role": "user", "content": "乾卦是什么？"}}, "metadata": md}
		}},
	}
	for _, ep := range endpoints {
		for _, tt := range bad {
			code, out := ts.post(t, ep.path, ep.body(tt.fields))
			msg := errorText(out)
			if code != http.StatusBadRequest {
				t.Errorf("%s, %s: %d %v, want 400", ep.path, tt.name, code, out)
				continue
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s, %s: message %q does not name %q", ep.path, tt.name, msg, w)
				}
			}
		}
	}
	if n := up.Calls(); n != 0 {
		t.Errorf("rejected requests made %d model calls", n)
	}
	// Valid settings, as Chatchat clients and mixchat's own send them.
	for _, f := range []map[string]any{{"history_len": -1}, {"history_len": 3, "memory": "window"}, {"window_k": 2}, {"memory": "combined"}, {"history_len": 0}} {
		for _, ep := range endpoints {
			if code, out := ts.post(t, ep.path, ep.body(f)); code != http.StatusOK {
				t.Errorf("%s with %v: %d %v", ep.path, f, code, out)
			}
		}
	}
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// TestKBEndpointsValidateMemorySettings: knowledge_base_chat and
// search_docs take the same memory fields (they choose what is recalled
// for the follow-up rewrite) and refuse the same contradictions.
func TestKBEndpointsValidateMemorySettings(t *testing.T) {
	ts := newKBTestServer(t, nil)
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "yi"}, &env)
	for _, path := range []string{"/chat/knowledge_base_chat", "/knowledge_base/search_docs"} {
		var out map[string]any
		code := ts.postJSON(t, path, map[string]any{"query": "它呢？", "knowledge_base_name": "yi", "conversation_id": "k1", "history_len": 2, "window_k": 3}, &out)
		if code != http.StatusBadRequest || !strings.Contains(errorText(out), "history_len") || !strings.Contains(errorText(out), "window_k") {
			t.Errorf("%s: %d %v, want 400 naming history_len and window_k", path, code, out)
		}
	}
}

// TestWindowKPerRequest: window_k sizes the recalled window for one
// request, history_len 0 recalls nothing, and without them the configured
// strategy decides.
func TestWindowKPerRequest(t *testing.T) {
	ts, _ := newMemoryServer(t)
	for _, q := range []string{"乾卦是什么？", "坤卦是什么？", "屯卦是什么？"} {
		ts.ask(t, "w1", q, "")
	}
	for _, tt := range []struct {
		fields map[string]any
		want   int // messages recalled
	}{
		{map[string]any{"window_k": 1}, 2},
		{map[string]any{"window_k": 2, "memory": "window"}, 4},
		{map[string]any{"history_len": 2}, 4},
		{map[string]any{"history_len": 0}, 0},
		{map[string]any{}, 6},
	} {
		code, out := ts.post(t, "/debug/condense", merge(map[string]any{"query": "它呢？", "conversation_id": "w1"}, tt.fields))
		h, _ := out["history"].([]any)
		if code != http.StatusOK || len(h) != tt.want {
			t.Errorf("%v: %d, %d messages recalled, want %d (%v)", tt.fields, code, len(h), tt.want, out)
		}
	}
}

// TestMixFusionKeepsLongTermMemory: after the follow-up is rewritten the
// fusion prompt shows the rewrite's context instead of the conversation;
// the user's long-term memory must still be in it.
func TestMixFusionKeepsLongTermMemory(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, func(s *mixSetup, _ llm.Models) { s.memory = true })
	if code, out := ts.post(t, "/conversations", map[string]any{"id": "lt1", "user_id": "alice"}); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, out)
	}
	const fact = "用户对花生过敏。"
	if code, out := ts.send(t, http.MethodPut, "/users/alice/memory", map[string]any{"summary": "用户在学周易。", "facts": []string{fact}}); code != http.StatusOK {
		t.Fatalf("put memory: %d %v", code, out)
	}
	if code, out := ts.post(t, "/chat/mix_chat", map[string]any{"query": "乾卦是什么？", "conversation_id": "lt1"}); code != http.StatusOK {
		t.Fatalf("first turn: %d %v", code, out)
	}
	before := len(up.Requests())
	code, out := ts.post(t, "/chat/mix_chat", map[string]any{"query": "它的卦辞呢？", "conversation_id": "lt1"})
	standalone, _ := out["standalone"].(string)
	if code != http.StatusOK || standalone == "" || !strings.Contains(standalone, "乾卦") {
		t.Fatalf("follow-up: %d %v; want it rewritten", code, out)
	}
	var fusion string
	for _, r := range up.Requests()[before:] {
		if c := r.Messages[len(r.Messages)-1].Content; strings.Contains(c, "【写作要求】") {
			fusion = c
		}
	}
	if fusion == "" {
		t.Fatal("no fusion request after the rewrite")
	}
	for _, want := range []string{fact, "用户在学周易", standalone} {
		if !strings.Contains(fusion, want) {
			t.Errorf("fusion prompt lacks %q:\n%s", want, fusion)
		}
	}
}
