package lc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/mixchat/mixchat/pkg/lc"
)

// clients are the two ways to reach the shared server.
func clients(t *testing.T) map[string]*lc.Client {
	hs := httptest.NewServer(shared.Handler())
	t.Cleanup(hs.Close)
	return map[string]*lc.Client{"http": lc.NewClient(hs.URL), "in-process": lc.NewHandlerClient(shared.Handler())}
}

func TestModels(t *testing.T) {
	tests := []struct {
		model  string
		kbs    []string
		stream bool
		want   string // in the reply
		from   string // the answer that must be in the record
		q      string // the question, when not 乾卦的卦辞是什么？
	}{
		{model: lc.ModelKB, want: "元亨", from: "kb"},
		{model: lc.ModelKB, kbs: []string{"zhouyi"}, stream: true, want: "元亨", from: "kb"},
		// The demo's search pages are the Ten Wings: no judgement in them.
		{model: lc.ModelSearch, q: "天行健是什么意思？", want: "天行健", from: "search"},
		{model: lc.ModelLLM, stream: true, from: "llm"},
		{model: lc.ModelMix, want: "元亨", from: "kb"},
	}
	for name, c := range clients(t) {
		for _, tt := range tests {
			t.Run(name+" "+tt.model, func(t *testing.T) {
				m := &lc.Model{Client: c, Name: tt.model, KnowledgeBases: tt.kbs}
				var opts []llms.CallOption
				pieces := 0
				if tt.stream {
					opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error { pieces++; return nil }))
				}
				q := tt.q
				if q == "" {
					q = "乾卦的卦辞是什么？"
				}
				resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{
					llms.TextParts(llms.ChatMessageTypeSystem, "你是易学专家"),
					llms.TextParts(llms.ChatMessageTypeHuman, q),
				}, opts...)
				if err != nil {
					t.Fatal(err)
				}
				got := resp.Choices[0].Content
				if !strings.Contains(got, tt.want) {
					t.Errorf("reply %q lacks %q", got, tt.want)
				}
				if tt.stream && pieces == 0 {
					t.Error("streamed no piece")
				}
				x := lc.ExtraOf(resp)
				if x == nil {
					t.Fatal("no mixchat record in GenerationInfo")
				}
				found := false
				for _, a := range x.Answers {
					found = found || a.From == tt.from
				}
				if !found {
					t.Errorf("record %+v has no %s answer", x, tt.from)
				}
				if resp.Choices[0].StopReason != "stop" {
					t.Errorf("stop reason %q", resp.Choices[0].StopReason)
				}
			})
		}
	}
}

func TestModelErrors(t *testing.T) {
	ctx := context.Background()
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			// An unknown model: the server's 404 with its message.
			_, err := (&lc.Model{Client: c, Name: "mixchat-nope"}).Call(ctx, "hi")
			var e *lc.Error
			if !errors.As(err, &e) || e.Status != http.StatusNotFound || !strings.Contains(e.Message, "mixchat-kb") {
				t.Errorf("unknown model: %v, want a 404 naming the models", err)
			}
			// An image part is refused before sending.
			_, err = (&lc.Model{Client: c, Name: lc.ModelKB}).GenerateContent(ctx, []llms.MessageContent{
				{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{llms.ImageURLPart("http://x/y.png")}},
			})
			if err == nil || !strings.Contains(err.Error(), "only text parts") {
				t.Errorf("image part: %v", err)
			}
			// A streaming callback's error stops the reply and is returned.
			stop := errors.New("enough")
			_, err = llms.GenerateFromSinglePrompt(ctx, &lc.Model{Client: c, Name: lc.ModelKB}, "乾卦的卦辞是什么？",
				llms.WithStreamingFunc(func(context.Context, []byte) error { return stop }))
			if !errors.Is(err, stop) {
				t.Errorf("callback error: %v, want it returned", err)
			}
			// An unknown knowledge base: Chatchat's HTTP 200 with code 404.
			_, err = (&lc.Retriever{Client: c, KnowledgeBases: []string{"nope"}}).GetRelevantDocuments(ctx, "乾")
			if !errors.As(err, &e) || e.Code != 404 {
				t.Errorf("unknown knowledge base: %v, want code 404", err)
			}
		})
	}
}

func TestRetrieversAgree(t *testing.T) {
	ctx := context.Background()
	in := &lc.KBRetriever{KB: shared.KB, KnowledgeBases: []string{"zhouyi"}, TopK: 3, MinRelevance: 0.3}
	want, err := in.GetRelevantDocuments(ctx, "潜龙勿用是什么意思")
	if err != nil || len(want) == 0 {
		t.Fatalf("in process: %v, %d documents", err, len(want))
	}
	for name, c := range clients(t) {
		r := &lc.Retriever{Client: c, KnowledgeBases: []string{"zhouyi"}, TopK: 3, MinRelevance: 0.3}
		got, err := r.GetRelevantDocuments(ctx, "潜龙勿用是什么意思")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d documents, in process %d", name, len(got), len(want))
		}
		for i := range got {
			if got[i].PageContent != want[i].PageContent || got[i].Metadata["id"] != want[i].Metadata["id"] || got[i].Score != want[i].Score {
				t.Errorf("%s: document %d differs: %v / %v", name, i, got[i].Metadata, want[i].Metadata)
			}
		}
	}
}

// TestDefaultKnowledgeBasesListed checks the server names its default
// knowledge bases where the web app reads them.
func TestDefaultKnowledgeBasesListed(t *testing.T) {
	c := lc.NewHandlerClient(shared.Handler())
	res, err := c.HTTP.Get(c.BaseURL + "/knowledge_base/list_knowledge_bases")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Data    []string `json:"data"`
		Default []string `json:"default"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Default) != 1 || body.Default[0] != "zhouyi" {
		t.Errorf("list_knowledge_bases: %+v, want default [zhouyi]", body)
	}
}

func TestHandlerTransport(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("boom")
		case "/empty":
			return
		case "/slow":
			<-r.Context().Done() // answers nothing until the caller gives up
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusAccepted)
		close(started)
		for {
			if _, err := io.WriteString(w, "data: x\n\n"); err != nil {
				stopped <- err
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
	})
	hc := &http.Client{Transport: lc.HandlerTransport(h)}

	res, err := hc.Get("http://in-process/stream")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if res.StatusCode != http.StatusAccepted || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("status %d, header %v", res.StatusCode, res.Header)
	}
	buf := make([]byte, 9)
	if _, err := io.ReadFull(res.Body, buf); err != nil || string(buf) != "data: x\n\n" {
		t.Errorf("read %q, %v", buf, err)
	}
	res.Body.Close()
	select {
	case <-stopped: // closing the body stopped the handler's writes
	case <-time.After(5 * time.Second):
		t.Fatal("the handler kept writing after the body was closed")
	}

	res, err = hc.Get("http://in-process/empty")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("empty handler: %v %v", res, err)
	}
	res.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://in-process/slow", nil)
	if _, err := hc.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request whose context ends before the header: %v, want the deadline", err)
	}

	res, err = hc.Get("http://in-process/panic")
	if err != nil || res.StatusCode != http.StatusInternalServerError {
		t.Fatalf("panicking handler: %v %v", res, err)
	}
	if _, err := io.ReadAll(res.Body); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panicking handler's body: %v", err)
	}
	res.Body.Close()
}
