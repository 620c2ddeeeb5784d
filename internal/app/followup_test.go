package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// newFollowUpApp is the app as served (offline model, the memory manager
// rewriting follow-ups, the knowledge bases as its vocabulary) with a
// knowledge base of files.
func newFollowUpApp(t *testing.T, kbName string, files map[string]string) (*App, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = t.TempDir(), false
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := New(ctx, cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if _, err := a.KB.Create(ctx, kbName, kb.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var fs []kb.FileData
	for name, body := range files {
		fs = append(fs, kb.FileData{Name: name, Data: []byte(body)})
	}
	res, err := a.KB.AddFiles(ctx, kbName, fs, kb.AddOptions{}, nil)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("add files: %+v, %v", res, err)
	}
	if err := a.WaitVocabulary(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(a.Server.Handler())
	t.Cleanup(hs.Close)
	return a, hs
}

// kbChatTop asks /chat/knowledge_base_chat and returns the file of the
// first source.
func kbChatTop(t *testing.T, hs *httptest.Server, body map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := hs.Client().Post(hs.URL+"/chat/knowledge_base_chat", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Sources []struct {
			File string `json:"file"`
		} `json:"sources"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil || len(out.Sources) == 0 {
		t.Fatalf("knowledge_base_chat %v: %d %s", body, resp.StatusCode, raw)
	}
	return out.Sources[0].File
}

// TestKBChatFollowUpNamedByAssistant: a follow-up whose entity only the
// assistant named ("that's the La Margherita", "第一卦是乾卦") is rewritten
// before retrieval, with the conversation's history or the history sent,
// and retrieves that entity's chunk; asked without history the same
// question retrieves the distractor, which is worded like it.
func TestKBChatFollowUpNamedByAssistant(t *testing.T) {
	for _, tt := range []struct {
		name, kb string
		files    map[string]string
		user     string // the first question, which does not name the entity
		answer   string // the assistant's reply, which does
		followUp string
		want     string // the file the follow-up is about
		naive    string // the file the question as asked retrieves
	}{
		{
			name: "en", kb: "restaurants",
			files: map[string]string{
				"La Margherita.txt": "La Margherita is an Italian restaurant in the west of town. It has a large outdoor dining space in its garden.",
				"Golden Wok.txt":    "Golden Wok is a Cantonese restaurant in the centre. It has a nice outdoor dining space by the river.",
				"Pizza Hut.txt":     "Pizza Hut delivers pizza across the city until midnight.",
			},
			user:     "Okay, pick one for me please. It should be in the west.",
			answer:   "Okay, that leaves one option, and that's the La Margherita.",
			followUp: "Does it have a nice outdoor dining space?",
			want:     "La Margherita.txt", naive: "Golden Wok.txt",
		},
		{
			name: "en-no-pronoun", kb: "hotels",
			files: map[string]string{
				"Acorn Guest House.txt": "Acorn Guest House is a moderate guesthouse in the north. Phone: 01223353888.",
				"Cityroomz.txt":         "Cityroomz is a moderate hotel in the centre. Phone: 01223304050.",
				"Allenbell.txt":         "Allenbell is a cheap guesthouse in the east. Phone: 01223210353.",
			},
			user:     "Which one would you suggest?",
			answer:   "How about Acorn Guest House?",
			followUp: "Can I get the phone number?",
			want:     "Acorn Guest House.txt", naive: "Cityroomz.txt",
		},
		{
			name: "zh", kb: "yi",
			files: map[string]string{
				"乾卦.txt": "乾卦：乾，元亨，利贞。初九，潜龙勿用。",
				"坤卦.txt": "它的卦辞是什么？坤卦的卦辞是：坤，元亨，利牝马之贞。",
				"屯卦.txt": "屯卦：元亨利贞，勿用有攸往，利建侯。",
			},
			user:     "周易的第一卦是哪一卦？",
			answer:   "第一卦是乾卦，象征天。",
			followUp: "它的卦辞是什么？",
			want:     "乾卦.txt", naive: "坤卦.txt",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, hs := newFollowUpApp(t, tt.kb, tt.files)
			ask := map[string]any{"query": tt.followUp, "knowledge_base_name": tt.kb, "top_k": 1, "score_threshold": 2, "stream": false}
			if got := kbChatTop(t, hs, ask); got != tt.naive {
				t.Fatalf("without history the follow-up retrieved %q; the test wants the distractor %q", got, tt.naive)
			}
			ctx := context.Background()
			if _, err := a.Store.AppendTurn(ctx, "c-"+tt.name, memory.Message{Role: llm.RoleUser, Content: tt.user},
				memory.Message{Role: llm.RoleAssistant, Content: tt.answer}); err != nil {
				t.Fatal(err)
			}
			ask["conversation_id"] = "c-" + tt.name
			if got := kbChatTop(t, hs, ask); got != tt.want {
				t.Errorf("with conversation_id: retrieved %q, want %q", got, tt.want)
			}
			turns, err := a.Store.Turns(ctx, "c-"+tt.name, 0)
			if err != nil || len(turns) != 2 || turns[1].Answer.Metadata.Extra["standalone"] == nil {
				t.Fatalf("stored turns %+v, %v; want the follow-up stored with its standalone question", turns, err)
			}
			standalone := turns[1].Answer.Metadata.Extra["standalone"]
			t.Logf("%q → %q", tt.followUp, standalone)
			// search_docs with the same history makes the same rewrite.
			b, _ := json.Marshal(map[string]any{"query": tt.followUp, "knowledge_base_name": tt.kb, "top_k": 1, "score_threshold": 2,
				"history": []map[string]string{{"role": "user", "content": tt.user}, {"role": "assistant", "content": tt.answer}}})
			resp, err := hs.Client().Post(hs.URL+"/knowledge_base/search_docs", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var docs struct {
				Standalone string `json:"standalone"`
				Docs       []struct {
					Metadata map[string]any `json:"metadata"`
				} `json:"docs"`
			}
			err = json.NewDecoder(resp.Body).Decode(&docs)
			resp.Body.Close()
			if err != nil || docs.Standalone != standalone || len(docs.Docs) != 1 || docs.Docs[0].Metadata["source"] != tt.want {
				t.Errorf("search_docs: %+v, %v; want the rewrite %q and %s", docs, err, standalone, tt.want)
			}
			delete(ask, "conversation_id")
			ask["history"] = []map[string]string{{"role": "user", "content": tt.user}, {"role": "assistant", "content": tt.answer}}
			if got := kbChatTop(t, hs, ask); got != tt.want {
				t.Errorf("with history: retrieved %q, want %q", got, tt.want)
			}
		})
	}
}
