package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestMixChatAnswerDeltas checks that /chat/mix_chat streams each
// answerer's answer as answer_delta events, before its whole answer event
// and before the fused reply.
func TestMixChatAnswerDeltas(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	code, evs := ts.mixStream(t, map[string]any{"query": "乾卦是什么意思？", "knowledge_base_name": "zhouyi"})
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	grown := map[string]string{}
	firstFused := -1
	for i, e := range evs {
		switch e.Type {
		case "answer_delta":
			if firstFused >= 0 {
				t.Errorf("answer_delta of %s after the fused reply started", e.Answerer)
			}
			grown[e.Answerer] += e.Text
		case "answer":
			if grown[e.Answerer] != e.Text {
				t.Errorf("%s: answer %q, its deltas %q", e.Answerer, e.Text, grown[e.Answerer])
			}
		case "delta":
			if firstFused < 0 {
				firstFused = i
			}
		}
	}
	if grown["llm"] != replyLLM || grown["kb"] != replyKB || grown["search"] != replySearch {
		t.Errorf("answers grown from deltas: %v", grown)
	}
	if len(mixEventsOf(evs, "answer_delta")) < 6 {
		t.Errorf("%d answer_delta events: the answers came whole", len(mixEventsOf(evs, "answer_delta")))
	}
	if got := mixDeltaText(evs); got != replyFused {
		t.Errorf("reply %q, want %q", got, replyFused)
	}
	last := evs[len(evs)-1]
	if last.Type != "done" || last.Timings["first_text_ms"] <= 0 || last.Timings["first_text_ms"] > last.Timings["first_token_ms"] {
		t.Errorf("done event timings %v: first text must come before the first fused token", last.Timings)
	}
}

// recvAll reads a chat.completion stream to its end.
func recvAll(t *testing.T, stream *openai.ChatCompletionStream) []openai.ChatCompletionStreamResponse {
	t.Helper()
	var out []openai.ChatCompletionStreamResponse
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, chunk)
	}
}

// TestOpenAIMixContextModel checks that the model name mixchat-mix-context
// answers in the context fusion mode: one model call, streamed.
func TestOpenAIMixContextModel(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	client := mixOpenAIClient(ts)
	ctx := context.Background()
	if m, err := client.GetModel(ctx, "mixchat-mix-context"); err != nil || m.ID != "mixchat-mix-context" {
		t.Errorf("GetModel(mixchat-mix-context) = %+v, %v", m, err)
	}
	stream, err := client.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model:    "mixchat-mix-context",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "乾卦是什么意思？"}},
		Stream:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text strings.Builder
	chunks := 0
	for _, chunk := range recvAll(t, stream) {
		chunks++
		if chunk.Model != "mixchat-mix-context" {
			t.Errorf("chunk model %q", chunk.Model)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	if text.String() != replyFused || chunks < 4 {
		t.Errorf("streamed %q in %d chunks, want the context-mode reply in pieces", text.String(), chunks)
	}
	if n := up.Calls(); n != 1 {
		t.Errorf("%d model calls, want the one context-mode call", n)
	}
	if _, err := client.GetModel(ctx, "mixchat-mix-vote"); err == nil {
		t.Error("an unknown fusion model name was accepted")
	}
}
