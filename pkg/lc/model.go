package lc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/mixchat/mixchat/pkg/rag"
)

// The models a mixchat server offers on /v1 (GET /v1/models lists those
// its configuration enables).
const (
	ModelMix    = "mixchat-mix"    // the three answerers, fused
	ModelLLM    = "mixchat-llm"    // the language model with the conversation's memory
	ModelKB     = "mixchat-kb"     // the knowledge bases alone
	ModelSearch = "mixchat-search" // the search engines alone
)

// Model is one mixchat model as an llms.Model: each call is a POST
// /v1/chat/completions, streamed when the call passes
// llms.WithStreamingFunc.
type Model struct {
	Client *Client
	// Name is the model: ModelMix, ModelLLM, ModelKB or ModelSearch.
	Name string
	// KnowledgeBases for mixchat-kb and mixchat-mix; none means the
	// server's default (kb.default_knowledge_bases, or the demo's zhouyi).
	KnowledgeBases []string
	// SearchEngine for mixchat-search and mixchat-mix; "" means the
	// server's default (search.default).
	SearchEngine string
	// ConversationID, when set, stores each exchange in that conversation
	// and lets the server's memory supply the history.
	ConversationID string
}

var _ llms.Model = (*Model)(nil)

// Extra is mixchat's record of a reply: what each answerer said and the
// sources, in the choice's GenerationInfo["mixchat"].
type Extra struct {
	ConversationID string   `json:"conversation_id,omitempty"`
	TurnID         int64    `json:"turn_id,omitempty"`
	Standalone     string   `json:"standalone,omitempty"`
	Answers        []Answer `json:"answers,omitempty"`
	Fused          bool     `json:"fused"`
	Failed         []string `json:"failed,omitempty"`
	Extractive     bool     `json:"extractive,omitempty"`
}

// Answer is one answerer's reply within a mixchat reply.
type Answer struct {
	From     string       `json:"from"` // llm, kb or search
	Text     string       `json:"text"`
	Sources  []rag.Source `json:"sources,omitempty"`
	Empty    bool         `json:"empty,omitempty"` // retrieval found nothing
	Model    string       `json:"model,omitempty"`
	Error    string       `json:"error,omitempty"`
	TimedOut bool         `json:"timed_out,omitempty"`
}

// Sources are the sources of every answer, in order.
func (e *Extra) Sources() []rag.Source {
	var out []rag.Source
	for _, a := range e.Answers {
		out = append(out, a.Sources...)
	}
	return out
}

type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// completion is a chat.completion or a chat.completion.chunk.
type completion struct {
	Choices []struct {
		Message      wireMessage `json:"message"`
		Delta        wireMessage `json:"delta"`
		FinishReason *string     `json:"finish_reason"`
	} `json:"choices"`
	Usage   *wireUsage `json:"usage"`
	Mixchat *Extra     `json:"mixchat"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// roles maps langchaingo's message types to OpenAI's roles.
var roles = map[llms.ChatMessageType]string{
	llms.ChatMessageTypeSystem: "system", llms.ChatMessageTypeHuman: "user",
	llms.ChatMessageTypeGeneric: "user", llms.ChatMessageTypeAI: "assistant",
}

// GenerateContent sends messages (text parts only; the last one the
// user's question, the others its history) and returns one choice with the
// reply, its finish reason and, in GenerationInfo, the token counts
// (PromptTokens, CompletionTokens, TotalTokens) and "mixchat", an *Extra.
// Options used: WithStreamingFunc, WithMaxTokens, WithTemperature (0 means
// the server's), WithMetadata (string values, mixchat's metadata options).
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	body := map[string]any{"model": m.Name}
	msgs := make([]wireMessage, 0, len(messages))
	for i, mc := range messages {
		role, ok := roles[mc.Role]
		if !ok {
			return nil, fmt.Errorf("mixchat model: messages[%d]: role %q is not supported (system, human, ai, generic)", i, mc.Role)
		}
		var text strings.Builder
		for _, p := range mc.Parts {
			t, ok := p.(llms.TextContent)
			if !ok {
				return nil, fmt.Errorf("mixchat model: messages[%d]: only text parts are supported, got %T", i, p)
			}
			text.WriteString(t.Text)
		}
		msgs = append(msgs, wireMessage{Role: role, Content: text.String()})
	}
	body["messages"] = msgs
	opts := map[string]any{}
	if m.ConversationID != "" {
		opts["conversation_id"] = m.ConversationID
	}
	if len(m.KnowledgeBases) > 0 {
		opts["knowledge_base_names"] = m.KnowledgeBases
	}
	if m.SearchEngine != "" {
		opts["search_engine_name"] = m.SearchEngine
	}
	if len(opts) > 0 {
		body["mixchat"] = opts
	}
	if len(o.Metadata) > 0 {
		md := map[string]string{}
		for k, v := range o.Metadata {
			md[k] = fmt.Sprint(v)
		}
		body["metadata"] = md
	}
	if o.MaxTokens > 0 {
		body["max_tokens"] = o.MaxTokens
	}
	if o.Temperature > 0 {
		body["temperature"] = o.Temperature
	}
	stream := o.StreamingFunc != nil
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	res, err := m.Client.do(ctx, "/v1/chat/completions", body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var c completion
	if !stream {
		if err := json.NewDecoder(res.Body).Decode(&c); err != nil {
			return nil, fmt.Errorf("mixchat model: read reply: %w", err)
		}
		if len(c.Choices) == 0 {
			return nil, errors.New("mixchat model: the reply has no choice")
		}
		return response(c.Choices[0].Message.Content, c.Choices[0].FinishReason, c.Usage, c.Mixchat), nil
	}

	// Server-Sent Events: "data: {chunk}" lines, ending with "data: [DONE]".
	var text strings.Builder
	var finish *string
	var usage *wireUsage
	var extra *Extra
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return response(text.String(), finish, usage, extra), nil
		}
		var ch completion
		if err := json.Unmarshal(data, &ch); err != nil {
			return nil, fmt.Errorf("mixchat model: read stream: %w", err)
		}
		if ch.Error != nil {
			return nil, fmt.Errorf("mixchat model: the reply broke off: %s", ch.Error.Message)
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
		if ch.Mixchat != nil {
			extra = ch.Mixchat
		}
		for _, choice := range ch.Choices {
			if choice.FinishReason != nil {
				finish = choice.FinishReason
			}
			if choice.Delta.Content == "" {
				continue
			}
			text.WriteString(choice.Delta.Content)
			if err := o.StreamingFunc(ctx, []byte(choice.Delta.Content)); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mixchat model: read stream: %w", err)
	}
	return nil, errors.New("mixchat model: the stream ended before [DONE]")
}

func response(text string, finish *string, u *wireUsage, extra *Extra) *llms.ContentResponse {
	info := map[string]any{}
	if u != nil {
		info["PromptTokens"], info["CompletionTokens"], info["TotalTokens"] = u.PromptTokens, u.CompletionTokens, u.TotalTokens
	}
	if extra != nil {
		info["mixchat"] = extra
	}
	choice := &llms.ContentChoice{Content: text, GenerationInfo: info}
	if finish != nil {
		choice.StopReason = *finish
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}
}

// Call asks prompt as a single question.
//
// Deprecated: langchaingo's own deprecation; use GenerateContent or
// llms.GenerateFromSinglePrompt.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// ExtraOf returns mixchat's record of a reply from a GenerateContent
// response, nil when there is none.
func ExtraOf(resp *llms.ContentResponse) *Extra {
	if resp == nil || len(resp.Choices) == 0 {
		return nil
	}
	e, _ := resp.Choices[0].GenerationInfo["mixchat"].(*Extra)
	return e
}
