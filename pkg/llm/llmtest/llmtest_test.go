package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestChunks(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Hello, world!", []string{"Hello", ", ", "world", "!"}},
		{"I'm fine  now", []string{"I'm ", "fine  ", "now"}},
		{"乾为天。", []string{"乾", "为", "天", "。"}},
		{"GPT-4 模型", []string{"GPT", "-", "4 ", "模", "型"}},
		{"  lead", []string{"  lead"}},
		{"", nil},
	}
	for _, tt := range tests {
		got := llmtest.Chunks(tt.in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Chunks(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("Chunks(%q) does not join back", tt.in)
		}
	}
}

// TestStreamWireFormat checks the stream byte by byte against OpenAI's
// format: chunk objects, a null usage in each when usage was asked for, the
// usage chunk with no choices, then [DONE].
func TestStreamWireFormat(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Text: "Hi 你", Usage: &openai.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}})
	resp := post(t, srv.URL()+"/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hey"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		if done {
			t.Fatalf("data after [DONE]: %s", data)
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		events = append(events, ev)
	}
	if !done {
		t.Fatal("no [DONE]")
	}
	// role chunk, "Hi ", "你", finish chunk, usage chunk.
	if len(events) != 5 {
		t.Fatalf("%d events, want 5: %v", len(events), events)
	}
	var text strings.Builder
	for i, ev := range events {
		if ev["object"] != "chat.completion.chunk" || ev["model"] != "m" || ev["id"] != events[0]["id"] {
			t.Errorf("event %d: %v", i, ev)
		}
		u, has := ev["usage"]
		if !has {
			t.Errorf("event %d has no usage field", i)
		}
		choices := ev["choices"].([]any)
		if i == len(events)-1 {
			if len(choices) != 0 || u == nil {
				t.Errorf("last event %v, want no choices and the usage", ev)
			}
			if u.(map[string]any)["total_tokens"] != 7.0 {
				t.Errorf("usage %v", u)
			}
			continue
		}
		if u != nil || len(choices) != 1 {
			t.Errorf("event %d: %v", i, ev)
			continue
		}
		c := choices[0].(map[string]any)
		delta := c["delta"].(map[string]any)
		if s, ok := delta["content"].(string); ok {
			text.WriteString(s)
		}
		fin, has := c["finish_reason"]
		switch {
		case !has:
			t.Errorf("event %d lacks finish_reason", i)
		case i == len(events)-2 && fin != "stop":
			t.Errorf("finish event %v", c)
		case i < len(events)-2 && fin != nil:
			t.Errorf("event %d finish_reason %v, want null", i, fin)
		}
		if i == 0 && delta["role"] != "assistant" {
			t.Errorf("first delta %v, want the role", delta)
		}
	}
	if text.String() != "Hi 你" {
		t.Errorf("streamed text %q", text.String())
	}
}

func TestCompletionWireFormat(t *testing.T) {
	srv := llmtest.NewServer(t)
	resp := post(t, srv.URL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"echo me"}]}`)
	var got openai.ChatCompletionResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || len(got.Choices) != 1 || got.Choices[0].Message.Content != "echo me" ||
		got.Choices[0].FinishReason != "stop" || got.Usage.TotalTokens == 0 {
		t.Errorf("default reply %+v, want the last user message echoed with usage", got)
	}
}

func TestHandlerScriptAndRecording(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.WithHandler(func(req openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: "handled " + req.Model}
	}), llmtest.WithLatency(time.Millisecond))
	srv.Script(llmtest.Reply{Text: "scripted"})
	var texts []string
	for _, model := range []string{"a", "b"} {
		resp := post(t, srv.URL()+"/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"q"}]}`)
		var got openai.ChatCompletionResponse
		json.NewDecoder(resp.Body).Decode(&got)
		texts = append(texts, got.Choices[0].Message.Content)
	}
	if !slices.Equal(texts, []string{"scripted", "handled b"}) {
		t.Errorf("replies %q", texts)
	}
	reqs := srv.Requests()
	if srv.Calls() != 2 || len(reqs) != 2 || reqs[0].Model != "a" || reqs[1].Messages[0].Content != "q" {
		t.Errorf("recorded %d calls: %+v", srv.Calls(), reqs)
	}
}

func TestWithoutRecording(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.WithoutRecording())
	post(t, srv.URL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"q"}]}`).Body.Close()
	post(t, srv.URL()+"/embeddings", `{"model":"e","input":["x"]}`).Body.Close()
	if srv.Calls() != 1 || len(srv.Requests()) != 0 || len(srv.EmbedRequests()) != 0 {
		t.Errorf("calls %d, recorded %d chat and %d embeddings requests; want 1 call and nothing kept", srv.Calls(), len(srv.Requests()), len(srv.EmbedRequests()))
	}
}

func TestErrorsAndOtherRoutes(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.WithModels("x", "y"))
	srv.Script(llmtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"2"}}})
	resp := post(t, srv.URL()+"/chat/completions", `{"model":"m","messages":[]}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(string(body), `"rate_limit_exceeded"`) {
		t.Errorf("429 reply: %d %v %s", resp.StatusCode, resp.Header, body)
	}

	r, err := http.Get(srv.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var models openai.ModelsList
	json.NewDecoder(r.Body).Decode(&models)
	if len(models.Models) != 2 || models.Models[0].ID != "x" || models.Models[1].ID != "y" {
		t.Errorf("models %+v", models)
	}

	if r := post(t, srv.URL()+"/completions", `{}`); r.StatusCode != 404 {
		t.Errorf("unknown route: %d", r.StatusCode)
	}
	if r := post(t, srv.URL()+"/chat/completions", `{not json`); r.StatusCode != 400 {
		t.Errorf("malformed request: %d", r.StatusCode)
	}
}

func TestEmbeddings(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.WithEmbedDim(32))
	resp := post(t, srv.URL()+"/embeddings", `{"model":"e","input":["乾为天","乾为天","The creative"]}`)
	var got openai.EmbeddingResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 3 {
		t.Fatalf("%d embeddings", len(got.Data))
	}
	for i, d := range got.Data {
		if d.Index != i || len(d.Embedding) != 32 {
			t.Errorf("embedding %d: index %d dim %d", i, d.Index, len(d.Embedding))
		}
	}
	if !slices.Equal(got.Data[0].Embedding, got.Data[1].Embedding) || slices.Equal(got.Data[0].Embedding, got.Data[2].Embedding) {
		t.Error("vectors are not a function of the text")
	}
	if reqs := srv.EmbedRequests(); len(reqs) != 1 || reqs[0].Model != "e" || len(reqs[0].Input) != 3 {
		t.Errorf("recorded %+v", reqs)
	}
	// A single string input is accepted too.
	resp = post(t, srv.URL()+"/embeddings", `{"model":"e","input":"one"}`)
	json.NewDecoder(resp.Body).Decode(&got)
	if len(got.Data) != 1 {
		t.Errorf("string input: %d embeddings", len(got.Data))
	}
}

func TestVector(t *testing.T) {
	dot := func(a, b []float32) float64 {
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	for _, s := range []string{"乾为天", "The creative works sublime success", "", "，。"} {
		v := llmtest.Vector(s, 64)
		if n := dot(v, v); math.Abs(n-1) > 1e-5 {
			t.Errorf("|Vector(%q)|² = %v, want 1", s, n)
		}
	}
	a := llmtest.Vector("乾卦的卦辞是元亨利贞", 256)
	b := llmtest.Vector("乾卦卦辞：元亨利贞", 256)
	c := llmtest.Vector("The weather is nice today", 256)
	if dot(a, b) <= dot(a, c) {
		t.Errorf("similar texts not closer: %v vs %v", dot(a, b), dot(a, c))
	}
}

func TestInFlightAndCancelled(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Text: "slow", Delay: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL()+"/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"q"}]}`))
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for srv.InFlight() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if srv.InFlight() != 1 {
		t.Fatalf("InFlight = %d, want 1", srv.InFlight())
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled request succeeded")
	}
	if !srv.WaitIdle(5 * time.Second) {
		t.Fatal("handler did not stop after the client left")
	}
	if srv.Cancelled() != 1 {
		t.Errorf("Cancelled = %d, want 1", srv.Cancelled())
	}
}

// TestShutdownWithHangingCall: a call still waiting when the test ends must
// not hang the cleanup.
func TestShutdownWithHangingCall(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		srv.Script(llmtest.Reply{Text: "never", Delay: time.Hour})
		go func() {
			resp, err := http.Post(srv.URL()+"/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","messages":[]}`))
			if err == nil {
				resp.Body.Close()
			}
		}()
		for srv.InFlight() == 0 {
			time.Sleep(time.Millisecond)
		}
	})
}

func TestConfig(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Script(llmtest.Reply{Status: 500}, llmtest.Reply{Text: "hi"})
	c := llm.NewClient(srv.Config())
	resp, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}})
	if err != nil || resp.Text != "hi" || resp.Model != "test" || srv.Calls() != 2 {
		t.Errorf("Complete = %+v, %v after %d calls; want hi from test after a retry", resp, err, srv.Calls())
	}
}
