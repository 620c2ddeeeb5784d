package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// accessServer is a server with authentication on: a real SQLite
// conversation store and key store, the offline model, a memory manager, a
// knowledge-base service and a Mixer with the LLM-chat answerer.
type accessServer struct {
	url   string
	keys  *auth.Store
	store memory.Store
	kb    *kb.Service
	admin string // an admin key's token
}

func newAccessServer(t *testing.T, edit func(*Access)) *accessServer {
	t.Helper()
	return newAccessServerWith(t, edit, nil)
}

// newAccessServerWith is newAccessServer whose models addModels may add to
// (or wrap) before the answerers are made.
func newAccessServerWith(t *testing.T, edit func(*Access), addModels func(*llm.Registry)) *accessServer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store := openSQLite(t)
	keys, err := sqlite.OpenKeys(ctx, filepath.Join(dir, "mixchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	models, _ := offlineModels()
	if addModels != nil {
		addModels(models)
	}
	mgr, err := memory.NewManager(store, memory.DefaultConfig(), offlineMemory())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	kcfg := kb.DefaultConfig()
	kcfg.Dir = filepath.Join(dir, "kb")
	svc := newHashKB(t, kcfg, 256, models)
	answerer := chat.New(models, chat.Options{})
	mixer, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: models, Answerers: map[string]rag.Answerer{rag.LLM: answerer}})
	if err != nil {
		t.Fatal(err)
	}
	access := Access{Keys: keys}
	if edit != nil {
		edit(&access)
	}
	s := New(Options{Store: store, Models: models, Chat: answerer, Memory: mgr, KB: svc, Mixer: mixer, Access: access, MaxBodyBytes: 64 << 10})
	as := &accessServer{url: serveTest(t, s).URL, keys: keys, store: store, kb: svc}
	as.admin = as.key(t, "root", auth.RoleAdmin, 0, 0)
	return as
}

// key creates a key for user and returns its token.
func (as *accessServer) key(t *testing.T, user string, role auth.Role, rpm, tpm int) string {
	t.Helper()
	tok, _, err := as.keys.CreateKey(context.Background(), auth.KeySpec{UserID: user, Role: role, RequestsPerMinute: rpm, TokensPerMinute: tpm})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// do sends a request with token (none when empty) and a JSON body (none
// when nil); it returns the status, the raw reply and the response headers.
func (as *accessServer) do(t *testing.T, token, method, path string, body any) (int, string, http.Header) {
	t.Helper()
	var r io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		r = strings.NewReader(string(j))
	}
	req, _ := http.NewRequest(method, as.url+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), resp.Header
}

func TestAuthentication(t *testing.T) {
	as := newAccessServer(t, nil)
	alice := as.key(t, "alice", auth.RoleUser, 0, 0)
	revoked, revokedKey, err := as.keys.CreateKey(context.Background(), auth.KeySpec{UserID: "alice", Role: auth.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.keys.RevokeKey(context.Background(), revokedKey.ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token, path string
		want              int
	}{
		{"no key", "", "/conversations", http.StatusUnauthorized},
		{"unknown key", "mx-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "/conversations", http.StatusUnauthorized},
		{"not a key", "hello", "/conversations", http.StatusUnauthorized},
		{"revoked key", revoked, "/conversations", http.StatusUnauthorized},
		{"unknown route needs a key too", "", "/nope", http.StatusUnauthorized},
		{"valid key", alice, "/conversations", http.StatusOK},
		{"health is public", "", "/healthz", http.StatusOK},
		{"web app is public", "", "/", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, h := as.do(t, tt.token, http.MethodGet, tt.path, nil)
			if status != tt.want {
				t.Fatalf("GET %s = %d %s, want %d", tt.path, status, body, tt.want)
			}
			if status == http.StatusUnauthorized && !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: Bearer")
			}
		})
	}
	status, body, _ := as.do(t, alice, http.MethodGet, "/access/whoami", nil)
	var who whoAmI
	json.Unmarshal([]byte(body), &who)
	if status != http.StatusOK || !who.Auth || who.UserID != "alice" || who.Role != auth.RoleUser {
		t.Fatalf("whoami = %d %s", status, body)
	}
}

// TestIsolation is the tenancy promise: another user's conversation,
// messages, memory and feedback answer 404, never their content, and a
// conversation id taken by another user cannot be written to.
func TestIsolation(t *testing.T) {
	as := newAccessServer(t, nil)
	alice := as.key(t, "alice", auth.RoleUser, 0, 0)
	bob := as.key(t, "bob", auth.RoleUser, 0, 0)
	const secret = "alice secret: the hexagram is 乾"

	status, body, _ := as.do(t, alice, http.MethodPost, "/chat/chat", map[string]any{"query": secret, "conversation_id": "c-alice"})
	if status != http.StatusOK {
		t.Fatalf("alice chat = %d %s", status, body)
	}
	var reply chatReply
	json.Unmarshal([]byte(body), &reply)
	if reply.MessageID == "" {
		t.Fatalf("no message id: %s", body)
	}
	conv, err := as.store.Conversation(context.Background(), "c-alice")
	if err != nil || conv.UserID != "alice" {
		t.Fatalf("conversation made through /chat/chat = %+v, %v; want user alice", conv, err)
	}
	if status, body, _ := as.do(t, alice, http.MethodPost, "/conversations", map[string]any{"id": "c-alice-2", "name": "mine"}); status != http.StatusCreated || !strings.Contains(body, `"user_id":"alice"`) {
		t.Fatalf("alice create conversation = %d %s", status, body)
	}

	denied := []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/conversations/c-alice", nil},
		{http.MethodGet, "/conversations/c-alice/messages", nil},
		{http.MethodGet, "/conversations/c-alice/memory", nil},
		{http.MethodPatch, "/conversations/c-alice", map[string]any{"name": "bob's now"}},
		{http.MethodDelete, "/conversations/c-alice", nil},
		{http.MethodPost, "/conversations/c-alice/close", nil},
		{http.MethodGet, "/conversations/c-alice/system", nil},
		{http.MethodGet, "/users/alice/memory", nil},
		{http.MethodDelete, "/users/alice/memory", nil},
		{http.MethodPost, "/chat/feedback", map[string]any{"message_id": reply.MessageID, "score": 0}},
		{http.MethodPost, "/chat/chat", map[string]any{"query": "what did alice ask?", "conversation_id": "c-alice"}},
		{http.MethodPost, "/chat/chat", map[string]any{"query": "what did alice ask?", "conversation_id": "c-alice", "stream": true}},
		{http.MethodPost, "/chat/mix_chat", map[string]any{"query": "what did alice ask?", "conversation_id": "c-alice"}},
		{http.MethodPost, "/chat/mix_chat", map[string]any{"query": "what did alice ask?", "conversation_id": "c-alice", "stream": true}},
		{http.MethodPost, "/v1/chat/completions", map[string]any{"model": "mixchat-mix", "messages": []map[string]any{{"role": "user", "content": "what did alice ask?"}},
			"mixchat": map[string]any{"conversation_id": "c-alice"}}},
		{http.MethodPost, "/debug/condense", map[string]any{"query": "what did alice ask?", "conversation_id": "c-alice"}},
	}
	for _, d := range denied {
		t.Run(d.method+" "+d.path, func(t *testing.T) {
			status, body, _ := as.do(t, bob, d.method, d.path, d.body)
			if status != http.StatusNotFound {
				t.Errorf("bob %s %s = %d %s, want 404", d.method, d.path, status, body)
			}
			if strings.Contains(body, "alice secret") || strings.Contains(body, "乾") {
				t.Errorf("bob sees alice's content: %s", body)
			}
		})
	}
	// Nothing bob did reached alice's conversation.
	turns, err := as.store.Turns(context.Background(), "c-alice", 0)
	if err != nil || len(turns) != 1 || turns[0].Answer.Metadata.Feedback != nil {
		t.Fatalf("alice's conversation after bob: %d turns, %v; want 1 turn without feedback", len(turns), err)
	}
	if conv, _ := as.store.Conversation(context.Background(), "c-alice"); conv.Name == "bob's now" {
		t.Fatal("bob renamed alice's conversation")
	}

	// Listing shows each user their own conversations only.
	status, body, _ = as.do(t, bob, http.MethodGet, "/conversations", nil)
	if status != http.StatusOK || strings.Contains(body, "c-alice") {
		t.Fatalf("bob's list = %d %s", status, body)
	}
	if status, body, _ := as.do(t, bob, http.MethodGet, "/conversations?user_id=alice", nil); status != http.StatusForbidden {
		t.Fatalf("bob lists alice's = %d %s, want 403", status, body)
	}
	if status, body, _ := as.do(t, bob, http.MethodPost, "/conversations", map[string]any{"id": "planted", "user_id": "alice"}); status != http.StatusForbidden {
		t.Fatalf("bob creates a conversation for alice = %d %s, want 403", status, body)
	}
	status, body, _ = as.do(t, alice, http.MethodGet, "/conversations", nil)
	if status != http.StatusOK || !strings.Contains(body, "c-alice") || !strings.Contains(body, "c-alice-2") {
		t.Fatalf("alice's list = %d %s", status, body)
	}

	// Alice still reads and writes her own.
	for _, p := range []string{"/conversations/c-alice", "/conversations/c-alice/messages", "/conversations/c-alice/memory", "/users/alice/memory"} {
		if status, body, _ := as.do(t, alice, http.MethodGet, p, nil); status != http.StatusOK {
			t.Errorf("alice GET %s = %d %s", p, status, body)
		}
	}
	if status, body, _ := as.do(t, alice, http.MethodPost, "/chat/feedback", map[string]any{"message_id": reply.MessageID, "score": 90}); status != http.StatusOK {
		t.Errorf("alice feedback = %d %s", status, body)
	}
	if status, body, _ := as.do(t, alice, http.MethodPost, "/chat/mix_chat", map[string]any{"query": "再说一遍", "conversation_id": "c-alice"}); status != http.StatusOK {
		t.Errorf("alice mix_chat = %d %s", status, body)
	}
	// A conversation bob starts is his, whatever the endpoint.
	if status, body, _ := as.do(t, bob, http.MethodPost, "/chat/mix_chat", map[string]any{"query": "乾卦", "conversation_id": "c-bob"}); status != http.StatusOK {
		t.Fatalf("bob mix_chat = %d %s", status, body)
	}
	if conv, err := as.store.Conversation(context.Background(), "c-bob"); err != nil || conv.UserID != "bob" {
		t.Fatalf("c-bob = %+v, %v", conv, err)
	}
	if status, _, _ := as.do(t, alice, http.MethodGet, "/conversations/c-bob/messages", nil); status != http.StatusNotFound {
		t.Fatalf("alice reads bob's = %d, want 404", status)
	}
}

func TestAdminRoutes(t *testing.T) {
	as := newAccessServer(t, nil)
	user := as.key(t, "alice", auth.RoleUser, 0, 0)
	create := map[string]any{"knowledge_base_name": "k1"}
	if status, body, _ := as.do(t, user, http.MethodPost, "/knowledge_base/create_knowledge_base", create); status != http.StatusForbidden {
		t.Fatalf("user creates a KB = %d %s, want 403", status, body)
	}
	if status, body, _ := as.do(t, as.admin, http.MethodPost, "/knowledge_base/create_knowledge_base", create); status != http.StatusOK || !strings.Contains(body, `"code":200`) {
		t.Fatalf("admin creates a KB = %d %s", status, body)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/access/keys"},
		{http.MethodPost, "/access/keys"},
		{http.MethodDelete, "/access/keys/x"},
		{http.MethodPut, "/access/kbs/k1"},
		{http.MethodPost, "/knowledge_base/delete_knowledge_base"},
		{http.MethodPost, "/knowledge_base/upload_docs"},
	} {
		if status, body, _ := as.do(t, user, r.method, r.path, map[string]any{}); status != http.StatusForbidden {
			t.Errorf("user %s %s = %d %s, want 403", r.method, r.path, status, body)
		}
	}
	// Keys through the API: the token once, then it works and can be revoked.
	status, body, _ := as.do(t, as.admin, http.MethodPost, "/access/keys", map[string]any{"user_id": "carol", "name": "ci"})
	var created struct {
		Token string   `json:"token"`
		Key   auth.Key `json:"key"`
	}
	json.Unmarshal([]byte(body), &created)
	if status != http.StatusCreated || created.Key.Role != auth.RoleUser || created.Token == "" {
		t.Fatalf("create key = %d %s", status, body)
	}
	if status, _, _ := as.do(t, created.Token, http.MethodGet, "/conversations", nil); status != http.StatusOK {
		t.Fatalf("new key = %d", status)
	}
	if status, body, _ := as.do(t, as.admin, http.MethodGet, "/access/keys?user_id=carol", nil); status != http.StatusOK || strings.Contains(body, created.Token) || !strings.Contains(body, created.Key.ID) {
		t.Fatalf("list keys = %d %s", status, body)
	}
	if status, body, _ := as.do(t, as.admin, http.MethodDelete, "/access/keys/"+created.Key.ID, nil); status != http.StatusOK {
		t.Fatalf("revoke = %d %s", status, body)
	}
	if status, _, _ := as.do(t, created.Token, http.MethodGet, "/conversations", nil); status != http.StatusUnauthorized {
		t.Fatalf("revoked key = %d, want 401", status)
	}
	if status, _, _ := as.do(t, as.admin, http.MethodDelete, "/access/keys/key_nope", nil); status != http.StatusNotFound {
		t.Fatalf("revoke unknown = %d, want 404", status)
	}
}

func TestKBVisibility(t *testing.T) {
	as := newAccessServer(t, nil)
	alice := as.key(t, "alice", auth.RoleUser, 0, 0)
	bob := as.key(t, "bob", auth.RoleUser, 0, 0)
	carol := as.key(t, "carol", auth.RoleUser, 0, 0)
	for _, name := range []string{"pub", "priv"} {
		if status, body, _ := as.do(t, as.admin, http.MethodPost, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": name}); !strings.Contains(body, `"code":200`) {
			t.Fatalf("create %s = %d %s", name, status, body)
		}
	}
	if status, body, _ := as.do(t, as.admin, http.MethodPut, "/access/kbs/priv", map[string]any{"owner": "alice", "private": true, "grants": []string{"carol"}}); status != http.StatusOK {
		t.Fatalf("set access = %d %s", status, body)
	}
	lists := map[string]string{alice: `["priv","pub"]`, carol: `["priv","pub"]`, bob: `["pub"]`, as.admin: `["priv","pub"]`}
	for tok, want := range lists {
		_, body, _ := as.do(t, tok, http.MethodGet, "/knowledge_base/list_knowledge_bases", nil)
		var env struct{ Data []string }
		json.Unmarshal([]byte(body), &env)
		got, _ := json.Marshal(sortedCopy(env.Data))
		if string(got) != want {
			p, _ := as.keys.Authenticate(context.Background(), tok)
			t.Errorf("%s lists %s, want %s", p.UserID, got, want)
		}
	}
	if _, body, _ := as.do(t, bob, http.MethodGet, "/knowledge_base/list_knowledge_bases?detail=true", nil); strings.Contains(body, "priv") || !strings.Contains(body, "pub") {
		t.Errorf("bob's detailed list: %s", body)
	}
	if _, body, _ := as.do(t, alice, http.MethodGet, "/knowledge_base/list_knowledge_bases?detail=true", nil); !strings.Contains(body, `"kb_name":"priv"`) {
		t.Errorf("alice's detailed list: %s", body)
	}
	// Bob cannot reach the private KB by any read endpoint, and cannot
	// tell it from one that does not exist: the same status and body for
	// "priv" as for "nope" (with the name swapped).
	for _, r := range []struct {
		method, path string
		body         func(kb string) any
	}{
		{http.MethodGet, "/knowledge_base/list_files?knowledge_base_name=%s", nil},
		{http.MethodGet, "/knowledge_base/download_doc?knowledge_base_name=%s&file_name=a.txt", nil},
		{http.MethodPost, "/knowledge_base/search_docs", func(kb string) any { return map[string]any{"query": "乾", "knowledge_base_name": kb} }},
		{http.MethodPost, "/knowledge_base/search_docs", func(kb string) any {
			return map[string]any{"query": "", "file_name": "a.txt", "knowledge_base_name": kb}
		}},
		{http.MethodPost, "/knowledge_base/search_docs", func(kb string) any {
			return map[string]any{"query": "乾", "knowledge_base_names": []string{"pub", kb}}
		}},
		{http.MethodPost, "/knowledge_base/search_docs", func(kb string) any {
			return map[string]any{"query": "乾", "knowledge_base_name": kb, "history": []map[string]string{{"role": "user", "content": "坤"}}}
		}},
		{http.MethodPost, "/chat/knowledge_base_chat", func(kb string) any { return map[string]any{"query": "乾", "knowledge_base_name": kb} }},
		{http.MethodPost, "/chat/mix_chat", func(kb string) any { return map[string]any{"query": "乾", "knowledge_base_names": []string{kb}} }},
	} {
		answer := func(kb string) (int, string) {
			path := strings.ReplaceAll(r.path, "%s", kb)
			var body any
			if r.body != nil {
				body = r.body(kb)
			}
			status, reply, _ := as.do(t, bob, r.method, path, body)
			return status, strings.ReplaceAll(reply, kb, "KB")
		}
		ps, pb := answer("priv")
		ms, mb := answer("nope")
		if ps != ms || pb != mb {
			t.Errorf("bob %s %s: private %d %s, missing %d %s; want the same", r.method, r.path, ps, pb, ms, mb)
		}
		if strings.Contains(pb, "乾，元亨") {
			t.Errorf("bob %s %s read the private KB: %s", r.method, r.path, pb)
		}
	}
	if status, body, _ := as.do(t, bob, http.MethodPost, "/chat/mix_chat", map[string]any{"query": "乾", "knowledge_base_names": []string{"priv"}}); status != http.StatusNotFound {
		t.Errorf("bob mix_chat over priv = %d %s, want 404", status, body)
	}
	// A knowledge-base chat cannot write into another user's conversation.
	if status, body, _ := as.do(t, alice, http.MethodPost, "/chat/chat", map[string]any{"query": "乾", "conversation_id": "c-a"}); status != http.StatusOK {
		t.Fatalf("alice chat = %d %s", status, body)
	}
	if status, body, _ := as.do(t, bob, http.MethodPost, "/chat/knowledge_base_chat", map[string]any{"query": "乾", "knowledge_base_name": "pub", "conversation_id": "c-a"}); status != http.StatusNotFound {
		t.Errorf("bob kb chat into alice's conversation = %d %s, want 404", status, body)
	}
	if status, body, _ := as.do(t, carol, http.MethodPost, "/knowledge_base/search_docs", map[string]any{"query": "乾", "knowledge_base_name": "priv"}); status != http.StatusOK || strings.Contains(body, `"code":404`) {
		t.Errorf("carol (granted) search_docs = %d %s", status, body)
	}
}

func sortedCopy(xs []string) []string {
	out := append([]string(nil), xs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestRateLimits(t *testing.T) {
	t.Run("requests per minute", func(t *testing.T) {
		as := newAccessServer(t, func(a *Access) { a.RequestsPerMinute = 2 })
		tok := as.key(t, "alice", auth.RoleUser, 0, 0)
		other := as.key(t, "bob", auth.RoleUser, 0, 0)
		for i := range 2 {
			if status, body, _ := as.do(t, tok, http.MethodGet, "/conversations", nil); status != http.StatusOK {
				t.Fatalf("request %d = %d %s", i, status, body)
			}
		}
		status, body, h := as.do(t, tok, http.MethodGet, "/conversations", nil)
		if status != http.StatusTooManyRequests {
			t.Fatalf("3rd request = %d %s, want 429", status, body)
		}
		if s, err := strconv.Atoi(h.Get("Retry-After")); err != nil || s < 1 || s > 30 {
			t.Fatalf("Retry-After = %q, want 1..30 seconds", h.Get("Retry-After"))
		}
		if status, _, _ := as.do(t, other, http.MethodGet, "/conversations", nil); status != http.StatusOK {
			t.Fatalf("another key = %d, want 200", status)
		}
	})
	t.Run("key's own limit", func(t *testing.T) {
		as := newAccessServer(t, func(a *Access) { a.RequestsPerMinute = 100 })
		tok := as.key(t, "alice", auth.RoleUser, 1, 0)
		as.do(t, tok, http.MethodGet, "/conversations", nil)
		if status, _, _ := as.do(t, tok, http.MethodGet, "/conversations", nil); status != http.StatusTooManyRequests {
			t.Fatalf("2nd request with a 1 rpm key = %d, want 429", status)
		}
	})
	t.Run("tokens per minute", func(t *testing.T) {
		as := newAccessServer(t, func(a *Access) { a.TokensPerMinute = 5 })
		tok := as.key(t, "alice", auth.RoleUser, 0, 0)
		status, body, _ := as.do(t, tok, http.MethodPost, "/chat/chat", map[string]any{"query": "乾卦是什么意思？请详细解释"})
		if status != http.StatusOK || strings.Contains(body, `"total_tokens":0`) {
			t.Fatalf("first chat = %d %s", status, body)
		}
		status, body, h := as.do(t, tok, http.MethodPost, "/chat/chat", map[string]any{"query": "再说一遍"})
		if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
			t.Fatalf("chat over the token budget = %d %s (Retry-After %q), want 429", status, body, h.Get("Retry-After"))
		}
	})
}

func TestCORS(t *testing.T) {
	as := newAccessServer(t, func(a *Access) {
		a.CORS = auth.CORSConfig{AllowedOrigins: []string{"https://app.example.com"}, MaxAge: time.Minute}
	})
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, as.url+"/chat/chat", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight("https://app.example.com")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") || resp.Header.Get("Access-Control-Max-Age") != "60" {
		t.Fatalf("allowed preflight = %d %v", resp.StatusCode, resp.Header)
	}
	if resp := preflight("https://evil.example.com"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("other origin's preflight = %d %v", resp.StatusCode, resp.Header)
	}
	req, _ := http.NewRequest(http.MethodGet, as.url+"/conversations", nil)
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Authorization", "Bearer "+as.admin)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Fatalf("allowed request = %d %v", r.StatusCode, r.Header)
	}

	// Not configured: no CORS headers at all.
	plain := newAccessServer(t, nil)
	req, _ = http.NewRequest(http.MethodGet, plain.url+"/healthz", nil)
	req.Header.Set("Origin", "https://app.example.com")
	if r, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS header without configuration: %v", r.Header)
	}
}

// TestAuthOff: without a key store every request is the single local
// user's, as before authentication existed.
func TestAuthOff(t *testing.T) {
	ts := newTestServer(t, nil)
	status, body := ts.get(t, "/access/whoami")
	if status != http.StatusOK || body["auth"] != false || body["role"] != "admin" {
		t.Fatalf("whoami = %d %v", status, body)
	}
	if status, _ := ts.get(t, "/access/keys"); status != http.StatusServiceUnavailable {
		t.Fatalf("keys with auth off = %d, want 503", status)
	}
	ts.ask(t, "c1", "乾卦", "")
	if status, _ := ts.get(t, "/conversations/c1/messages"); status != http.StatusOK {
		t.Fatalf("messages = %d", status)
	}
}
