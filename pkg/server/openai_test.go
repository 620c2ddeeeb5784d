package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func mixOpenAIClient(ts *testServer) *openai.Client {
	cfg := openai.DefaultConfig("unused")
	cfg.BaseURL = ts.http.URL + "/v1"
	cfg.HTTPClient = mixHTTP
	return openai.NewClientWithConfig(cfg)
}

// TestOpenAIModels lists the models with the OpenAI client.
func TestOpenAIModels(t *testing.T) {
	ts := newMixServer(t, newMixUpstream(t), nil)
	list, err := mixOpenAIClient(ts).ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Models {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy != "mixchat" {
			t.Errorf("model %+v", m)
		}
	}
	if !slices.Equal(ids, []string{"mixchat-mix", "mixchat-llm", "mixchat-kb", "mixchat-search"}) {
		t.Errorf("models = %v", ids)
	}
	if m, err := mixOpenAIClient(ts).GetModel(context.Background(), "mixchat-kb"); err != nil || m.ID != "mixchat-kb" {
		t.Errorf("GetModel = %+v, %v", m, err)
	}
}

// TestOpenAIChat uses mixchat as a model through the OpenAI client, with and
// without streaming.
func TestOpenAIChat(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	client := mixOpenAIClient(ts)
	ctx := context.Background()

	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:    "mixchat-mix",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "乾卦是什么意思？"}},
		Metadata: map[string]string{"conversation_id": "o1", "knowledge_base_name": "zhouyi", "top_k": "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || resp.Model != "mixchat-mix" || !strings.HasPrefix(resp.ID, "chatcmpl-") || len(resp.Choices) != 1 {
		t.Fatalf("completion = %+v", resp)
	}
	if c := resp.Choices[0]; c.Message.Role != "assistant" || c.Message.Content != replyFused || c.FinishReason != "stop" {
		t.Errorf("choice = %+v", c)
	}
	if resp.Usage.TotalTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if q := up.queries("kb")[0]; q.TopK != 2 || len(q.KnowledgeBases) != 1 {
		t.Errorf("metadata options did not reach the kb answerer: %+v", q)
	}

	// Streamed, with the conversation's memory: the second question sends
	// no history, the server recalls it.
	stream, err := client.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model:         "mixchat-mix",
		Messages:      []openai.ChatCompletionMessage{{Role: "user", Content: "它的卦辞呢？"}},
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Metadata:      map[string]string{"conversation_id": "o1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text strings.Builder
	var chunks int
	var finish openai.FinishReason
	var usage *openai.Usage
	for _, chunk := range recvAll(t, stream) {
		chunks++
		if chunk.Object != "chat.completion.chunk" || chunk.Model != "mixchat-mix" {
			t.Errorf("chunk = %+v", chunk)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if text.String() != replyFused || chunks < 4 || finish != "stop" {
		t.Errorf("streamed %q in %d chunks, finish %q", text.String(), chunks, finish)
	}
	if usage == nil || usage.TotalTokens == 0 {
		t.Errorf("usage chunk = %+v", usage)
	}
	turns, err := ts.store.Turns(ctx, "o1", 0)
	if err != nil || len(turns) != 2 || turns[1].Question.Content != "它的卦辞呢？" || turns[1].Answer.Content != replyFused {
		t.Fatalf("stored turns = %+v, %v", turns, err)
	}
	// The LLM-chat answerer saw the first turn, recalled by the server.
	var recalled bool
	for _, r := range up.Requests() {
		if c := r.Messages[len(r.Messages)-1].Content; strings.Contains(c, "Human: 乾卦是什么意思？") && strings.Contains(c, "它的卦辞呢？") {
			recalled = true
		}
	}
	if !recalled {
		t.Error("the conversation's history was not recalled")
	}
}

// TestOpenAISingleAnswerer asks mixchat-kb, which streams the knowledge-base
// answerer's reply as it comes.
func TestOpenAISingleAnswerer(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	stream, err := mixOpenAIClient(ts).CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
		Model: "mixchat-kb", Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: "system", Content: "简洁作答"}, {Role: "user", Content: "乾卦是什么意思？"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text strings.Builder
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	if text.String() != replyKB || up.Calls() != 1 {
		t.Errorf("mixchat-kb streamed %q with %d mixUpstream calls, want the kb answer from one call", text.String(), up.Calls())
	}
}

// TestOpenAIExtraField sends mixchat's options in the "mixchat" field and the
// content as parts, as the Python SDK's extra_body and vision-style clients
// do.
func TestOpenAIExtraField(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	body := `{"model":"mixchat-mix","messages":[{"role":"user","content":[{"type":"text","text":"乾卦是什么意思？"}]}],
		"top_p":0.9,"user":"u1","mixchat":{"conversation_id":"e1","answerers":["llm","kb"],"knowledge_base_names":["zhouyi"]}}`
	resp, err := mixHTTP.Post(ts.http.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Mixchat struct {
			ConversationID string `json:"conversation_id"`
			TurnID         int64  `json:"turn_id"`
			Answers        []struct {
				From string `json:"from"`
			} `json:"answers"`
			Fused bool `json:"fused"`
		} `json:"mixchat"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	if len(out.Choices) != 1 || out.Choices[0].Message.Content != replyFused || out.Mixchat.ConversationID != "e1" || out.Mixchat.TurnID != 1 || len(out.Mixchat.Answers) != 2 || !out.Mixchat.Fused {
		t.Errorf("reply = %+v", out)
	}
	if len(up.queries("search")) != 0 {
		t.Error("search ran although the request switched it off")
	}
}

func TestOpenAIErrors(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	client := mixOpenAIClient(ts)
	for _, tc := range []struct {
		name   string
		req    openai.ChatCompletionRequest
		status int
		want   string
	}{
		{"unknown model", openai.ChatCompletionRequest{Model: "gpt-4o", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}, 404, `model "gpt-4o" not found`},
		{"no messages", openai.ChatCompletionRequest{Model: "mixchat-mix"}, 400, "messages must not be empty"},
		{"last not user", openai.ChatCompletionRequest{Model: "mixchat-mix", Messages: []openai.ChatCompletionMessage{{Role: "assistant", Content: "hi"}}}, 400, "last message must be the user's"},
		{"bad option", openai.ChatCompletionRequest{Model: "mixchat-mix", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}, Metadata: map[string]string{"fusion": "vote"}}, 400, "fusion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.CreateChatCompletion(context.Background(), tc.req)
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tc.status || !strings.Contains(apiErr.Message, tc.want) {
				t.Errorf("err = %v, want an API error %d with %q", err, tc.status, tc.want)
			}
		})
	}
	// Every answerer failing, streamed: an HTTP error before any chunk.
	up.Script(mixFailures(3)...)
	_, err := client.CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
		Model: "mixchat-mix", Stream: true, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadGateway || !strings.Contains(apiErr.Message, "every answerer failed") {
		t.Errorf("all failing, streamed: %v", err)
	}
}

// TestOpenAIStreamWire reads a streamed completion as raw SSE: the role
// opens the stream, every chunk is a chat.completion.chunk of one id, the
// last chunk carries finish_reason and mixchat's record, and the stream
// ends with data: [DONE] (which OpenAI clients wait for).
func TestOpenAIStreamWire(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	body := `{"model":"mixchat-mix","stream":true,"messages":[{"role":"user","content":"乾卦是什么意思？"}],"mixchat":{"conversation_id":"w1"}}`
	resp, err := mixHTTP.Post(ts.http.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var data []string
	for _, line := range strings.Split(string(raw), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) < 3 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream does not end with data: [DONE]:\n%s", raw)
	}
	type chunk struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Mixchat *struct {
			ConversationID string `json:"conversation_id"`
			TurnID         int64  `json:"turn_id"`
			Fused          bool   `json:"fused"`
			Answers        []any  `json:"answers"`
		} `json:"mixchat"`
	}
	chunks := make([]chunk, len(data)-1)
	var text strings.Builder
	for i, d := range data[:len(data)-1] {
		if err := json.Unmarshal([]byte(d), &chunks[i]); err != nil {
			t.Fatalf("chunk %d %q: %v", i, d, err)
		}
		c := chunks[i]
		if c.Object != "chat.completion.chunk" || c.ID != chunks[0].ID || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != "mixchat-mix" || len(c.Choices) != 1 {
			t.Errorf("chunk %d = %s", i, d)
			continue
		}
		if c.Choices[0].Delta.Content != nil {
			text.WriteString(*c.Choices[0].Delta.Content)
		}
		if fin := c.Choices[0].FinishReason; fin != nil && i != len(chunks)-1 {
			t.Errorf("chunk %d has finish_reason %q before the end", i, *fin)
		}
	}
	if chunks[0].Choices[0].Delta.Role != "assistant" {
		t.Errorf("first chunk %s does not open with the assistant role", data[0])
	}
	last := chunks[len(chunks)-1]
	if fin := last.Choices[0].FinishReason; fin == nil || *fin != "stop" || last.Mixchat == nil ||
		last.Mixchat.ConversationID != "w1" || last.Mixchat.TurnID != 1 || !last.Mixchat.Fused || len(last.Mixchat.Answers) != 3 {
		t.Errorf("last chunk = %s", data[len(data)-2])
	}
	if text.String() != replyFused {
		t.Errorf("streamed %q, want %q", text.String(), replyFused)
	}
	turns, err := ts.store.Turns(context.Background(), "w1", 0)
	if err != nil || len(turns) != 1 || turns[0].Answer.Content != replyFused {
		t.Errorf("stored turns = %+v, %v", turns, err)
	}
}
