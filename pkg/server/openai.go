package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/turn"
)

// The OpenAI-compatible API: any OpenAI SDK or chat front end can use
// mixchat as its model. The models are the fused reply and each answerer
// alone.
const (
	modelMix    = "mixchat-mix"
	modelPrefix = "mixchat-"
)

// fusionModels are model names that choose the fusion mode of the fused
// reply: mixchat-mix-context answers with one call over the retrieved
// evidence, streaming from the model's first token;
// mixchat-mix-answers fuses the answerers' answers. mixchat-mix uses
// the configured mode (mix.fusion) or the request's "fusion" option.
// They are accepted, not listed by /v1/models.
var fusionModels = map[string]string{
	modelMix + "-" + mix.FusionContext: mix.FusionContext,
	modelMix + "-" + mix.FusionAnswers: mix.FusionAnswers,
}

// knownModel reports whether id is a model the server answers as.
func (s *Server) knownModel(id string) bool {
	_, alias := fusionModels[id]
	return slices.Contains(s.openaiModels(), id) || (alias && s.mixer != nil)
}

// oaiModel is one entry of GET /v1/models.
type oaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// oaiModelList is the body of GET /v1/models (fields in the order clients
// have always seen them).
type oaiModelList struct {
	Data   []oaiModel `json:"data"`
	Object string     `json:"object"`
}

// openaiModels lists the models this server offers: mixchat-mix and one per
// enabled answerer.
func (s *Server) openaiModels() []string {
	if s.mixer == nil {
		return nil
	}
	ids := []string{modelMix}
	for _, a := range s.mixer.Answerers() {
		ids = append(ids, modelPrefix+a)
	}
	return ids
}

func (s *Server) handleOpenAIModels(c *gin.Context) {
	data := []oaiModel{}
	for _, id := range s.openaiModels() {
		data = append(data, oaiModel{ID: id, Object: "model", OwnedBy: "mixchat"})
	}
	c.JSON(http.StatusOK, oaiModelList{Object: "list", Data: data})
}

func (s *Server) handleOpenAIModel(c *gin.Context) {
	id := c.Param("id")
	if !s.knownModel(id) {
		writeOpenAIError(c, &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("model %q not found (available: %s)", id, strings.Join(s.openaiModels(), ", "))}, "model", "model_not_found")
		return
	}
	c.JSON(http.StatusOK, oaiModel{ID: id, Object: "model", OwnedBy: "mixchat"})
}

// oaiRequest is the body of POST /v1/chat/completions. Fields of OpenAI's
// API that mixchat has no use for (top_p, tools, ...) are accepted and
// ignored.
type oaiRequest struct {
	Model         string       `json:"model"`
	Messages      []oaiMessage `json:"messages"`
	Stream        bool         `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature         *float32 `json:"temperature"`
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens *int     `json:"max_completion_tokens"`
	N                   *int     `json:"n"`
	User                string   `json:"user"`
	// Mixchat carries mixchat's options (conversation, knowledge bases,
	// answerers, fusion...): {"mixchat": {"conversation_id": "..."}}; from
	// the Python SDK: extra_body={"mixchat": {...}}.
	Mixchat *oaiOptions `json:"mixchat"`
	// Metadata may carry the same options as strings, for SDKs that can
	// add no field of their own: lists comma-separated, numbers as text.
	Metadata map[string]string `json:"metadata"`
}

// oaiOptions are mixchat's options on the OpenAI-compatible API.
type oaiOptions struct {
	ConversationID string `json:"conversation_id"`
	// HistoryLen applies when the messages hold no history and a
	// conversation is named: -1 (default) lets the memory strategy decide.
	HistoryLen *int `json:"history_len"`
	mixOptions
}

// fromMetadata reads options from OpenAI's string-valued metadata.
func fromMetadata(md map[string]string) (*oaiOptions, error) {
	o := &oaiOptions{}
	list := func(v string) []string {
		var out []string
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	strs := map[string]*string{"conversation_id": &o.ConversationID, "knowledge_base_name": &o.KnowledgeBaseName,
		"search_engine_name": &o.SearchEngineName, "model_name": &o.ModelName, "prompt_name": &o.PromptName,
		"fusion": &o.Fusion, "memory": &o.Memory}
	lists := map[string]*[]string{"knowledge_base_names": &o.KnowledgeBaseNames, "answerers": &o.Answerers}
	ints := map[string]**int{"history_len": &o.HistoryLen, "top_k": &o.TopK, "window_k": &o.WindowK}
	for k, v := range md {
		if p, ok := strs[k]; ok {
			*p = v
		} else if p, ok := lists[k]; ok {
			*p = list(v)
		} else if p, ok := ints[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, errBadRequest("metadata.%s must be an integer, got %q", k, v)
			}
			*p = &n
		} else if k == "score_threshold" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, errBadRequest("metadata.score_threshold must be a number, got %q", v)
			}
			o.ScoreThreshold = &f
		}
	}
	return o, nil
}

// oaiMessage is a chat message; content is a string or a list of parts of
// which the text parts are used.
type oaiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (m oaiMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", errors.New("content must be a string or a list of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// oaiUsage is OpenAI's usage object.
type oaiUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func toOAIUsage(u llm.Usage) *oaiUsage {
	return &oaiUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

type oaiChoiceMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type oaiChoice struct {
	Index        int              `json:"index"`
	Message      oaiChoiceMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
}

// oaiExtra is mixchat's record of a reply, in the "mixchat" field of a
// completion (and of the last chunk of a stream).
type oaiExtra struct {
	MessageID      string             `json:"message_id,omitempty"`
	ConversationID string             `json:"conversation_id,omitempty"`
	TurnID         int64              `json:"turn_id,omitempty"`
	Standalone     string             `json:"standalone,omitempty"`
	Answers        []mixAnswer        `json:"answers,omitempty"`
	Docs           []rag.Doc          `json:"docs,omitempty"`
	Model          string             `json:"model,omitempty"` // the model that wrote the reply
	Extractive     bool               `json:"extractive,omitempty"`
	Fusion         string             `json:"fusion,omitempty"`
	Fused          bool               `json:"fused"`
	Failed         []string           `json:"failed,omitempty"`
	Timings        map[string]float64 `json:"timings,omitempty"`
	// Usage is the reply's usage with its latency and price (the
	// OpenAI usage object has tokens only).
	Usage *obs.Usage `json:"usage,omitempty"`
}

func newOAIExtra(t turn.Result) *oaiExtra {
	res := t.Mix
	return &oaiExtra{MessageID: t.MessageID(), ConversationID: t.ConversationID, TurnID: t.TurnID, Standalone: res.Standalone,
		Answers: wireAnswers(res.Answers), Docs: res.Docs, Model: res.Response.Model, Extractive: res.Response.Extractive,
		Fusion: res.Mode, Fused: res.Fused, Failed: failedAnswerers(res), Timings: res.Timings.Millis(), Usage: &t.Usage}
}

// oaiCompletion is a chat.completion object.
type oaiCompletion struct {
	ID                string      `json:"id"`
	Object            string      `json:"object"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	Choices           []oaiChoice `json:"choices"`
	Usage             *oaiUsage   `json:"usage"`
	SystemFingerprint *string     `json:"system_fingerprint"`
	Mixchat           *oaiExtra   `json:"mixchat,omitempty"`
}

type oaiDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type oaiChunkChoice struct {
	Index        int      `json:"index"`
	Delta        oaiDelta `json:"delta"`
	FinishReason *string  `json:"finish_reason"`
}

// oaiChunk is a chat.completion.chunk object.
type oaiChunk struct {
	ID                string           `json:"id"`
	Object            string           `json:"object"`
	Created           int64            `json:"created"`
	Model             string           `json:"model"`
	SystemFingerprint *string          `json:"system_fingerprint"`
	Choices           []oaiChunkChoice `json:"choices"`
	Usage             *oaiUsage        `json:"usage,omitempty"`
	Mixchat           *oaiExtra        `json:"mixchat,omitempty"`
}

// writeOpenAIError writes err in OpenAI's error shape, which OpenAI clients
// parse, with the status classify gives.
func writeOpenAIError(c *gin.Context, err error, param, code string) {
	status := errorStatus(err)
	if status >= 500 {
		if v, ok := c.Get(serverKey); ok {
			v.(*Server).log.ErrorContext(c.Request.Context(), "request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "status", status, "err", err)
		}
	}
	c.AbortWithStatusJSON(status, oaiErrorBody(err, status, param, code))
}

// oaiError is OpenAI's error body; its fields in the order clients have
// always seen them.
type oaiError struct {
	Error oaiErrorObject `json:"error"`
}

type oaiErrorObject struct {
	Code    *string `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Type    string  `json:"type"`
}

func oaiErrorBody(err error, status int, param, code string) oaiError {
	typ := "invalid_request_error"
	switch ofStatus(status).kind {
	case kindRateLimited:
		typ = "rate_limit_exceeded"
	default:
		if status >= 500 {
			typ = "server_error"
		}
	}
	e := oaiErrorObject{Message: err.Error(), Type: typ}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return oaiError{Error: e}
}

func (s *Server) handleOpenAIChat(c *gin.Context) {
	var body oaiRequest
	if err := decodeJSON(c, &body); err != nil {
		writeOpenAIError(c, err, "", "")
		return
	}
	if s.mixer == nil {
		writeOpenAIError(c, errUnavailable("mix_chat is not configured on this server"), "", "")
		return
	}
	if !s.knownModel(body.Model) {
		writeOpenAIError(c, errNotFound("model %q not found (available: %s)", body.Model, strings.Join(s.openaiModels(), ", ")), "model", "model_not_found")
		return
	}
	if body.N != nil && *body.N != 1 {
		writeOpenAIError(c, errBadRequest("n must be 1, got %d", *body.N), "n", "")
		return
	}
	opts := body.Mixchat
	if opts == nil {
		var err error
		if opts, err = fromMetadata(body.Metadata); err != nil {
			writeOpenAIError(c, err, "metadata", "")
			return
		}
	}
	if fusion, ok := fusionModels[body.Model]; ok {
		opts.Fusion = fusion
	} else if body.Model != modelMix {
		// mixchat-kb and the like: that answerer alone.
		opts.Answerers = []string{strings.TrimPrefix(body.Model, modelPrefix)}
	}
	if len(body.Messages) == 0 {
		writeOpenAIError(c, errBadRequest("messages must not be empty"), "messages", "")
		return
	}
	var history []llm.Message
	var query string
	for i, m := range body.Messages {
		text, err := m.text()
		if err != nil {
			writeOpenAIError(c, errBadRequest("messages[%d]: %v", i, err), "messages", "")
			return
		}
		role := m.Role
		switch role {
		case "user", "assistant", "system":
		case "developer":
			role = llm.RoleSystem
		default:
			writeOpenAIError(c, errBadRequest("messages[%d].role %q must be one of system, developer, user, assistant", i, m.Role), "messages", "")
			return
		}
		if i == len(body.Messages)-1 {
			if role != llm.RoleUser {
				writeOpenAIError(c, errBadRequest("the last message must be the user's question, got role %q", m.Role), "messages", "")
				return
			}
			query = text
			break
		}
		history = append(history, llm.Message{Role: role, Content: text})
	}
	maxTokens := body.MaxTokens
	if body.MaxCompletionTokens != nil {
		maxTokens = body.MaxCompletionTokens
	}
	historyLen := -1
	if opts.HistoryLen != nil {
		historyLen = *opts.HistoryLen
	}
	if err := s.checkQuery(query); err != nil {
		writeOpenAIError(c, err, "messages", "")
		return
	}
	if body.Model == modelPrefix+rag.KB && opts.KnowledgeBaseName == "" && len(opts.KnowledgeBaseNames) == 0 &&
		s.kb != nil && len(s.kb.Config().DefaultKnowledgeBases) == 0 {
		writeOpenAIError(c, errBadRequest(`model %s needs a knowledge base: name it in the "mixchat" field `+
			`({"mixchat": {"knowledge_base_name": "NAME"}}, or "knowledge_base_names": [...]) or in metadata.knowledge_base_name`, body.Model),
			"mixchat.knowledge_base_name", "")
		return
	}
	req, err := s.buildMix(c.Request.Context(), query, opts.ConversationID, historyLen, history, opts.mixOptions, body.Temperature, maxTokens)
	if err != nil {
		writeOpenAIError(c, err, "", "")
		return
	}
	s.runTurn(c, req, &oaiWriter{reply: s.newReply(c, body.Stream), id: "chatcmpl-" + strings.ReplaceAll(uuid.NewString(), "-", ""),
		model: body.Model, created: time.Now().Unix(), usage: body.StreamOptions != nil && body.StreamOptions.IncludeUsage})
}

func finishReason(res mix.Result) string {
	if res.Response.FinishReason == "length" {
		return "length"
	}
	return "stop"
}

// oaiWriter writes a reply as a chat.completion, or streamed as
// chat.completion.chunk events ending in data: [DONE]. Only the reply's
// text is streamed; mixchat's record rides on the last chunk.
type oaiWriter struct {
	reply
	id      string
	model   string
	created int64
	usage   bool // stream_options.include_usage (streamed replies)
	opened  bool
}

func (w *oaiWriter) chunk(choices []oaiChunkChoice) oaiChunk {
	return oaiChunk{ID: w.id, Object: "chat.completion.chunk", Created: w.created, Model: w.model, Choices: choices}
}

// open sends the first chunk, the assistant role, once.
func (w *oaiWriter) open() error {
	if w.opened {
		return nil
	}
	w.opened = true
	empty := ""
	return w.out.Send(w.chunk([]oaiChunkChoice{{Delta: oaiDelta{Role: llm.RoleAssistant, Content: &empty}}}))
}

func (w *oaiWriter) event(ev turn.Event) error {
	if ev.Type != turn.EventDelta || ev.Text == "" {
		return nil
	}
	// The stream opens with the first piece of the reply, so a request
	// that fails before it gets a plain HTTP error.
	if err := w.open(); err != nil {
		return err
	}
	text := ev.Text
	return w.out.Send(w.chunk([]oaiChunkChoice{{Delta: oaiDelta{Content: &text}}}))
}

func (w *oaiWriter) done(t turn.Result, err error) {
	res := t.Mix
	if w.out == nil {
		if t.StoreErr != nil {
			writeOpenAIError(w.c, t.StoreErr, "", "")
			return
		}
		w.c.JSON(http.StatusOK, oaiCompletion{
			ID: w.id, Object: "chat.completion", Created: time.Now().Unix(), Model: w.model,
			Choices: []oaiChoice{{Message: oaiChoiceMessage{Role: llm.RoleAssistant, Content: res.Text}, FinishReason: finishReason(res)}},
			Usage:   toOAIUsage(res.Usage), Mixchat: newOAIExtra(t),
		})
		return
	}
	if err := w.open(); err != nil {
		return
	}
	problem := err
	if problem == nil {
		problem = t.StoreErr
	}
	if problem != nil {
		// The reply broke off after some of it was sent: say so the
		// OpenAI way, an error event in the stream.
		_ = w.out.Send(oaiErrorBody(problem, http.StatusBadGateway, "", ""))
		return
	}
	fin := finishReason(res)
	last := w.chunk([]oaiChunkChoice{{Delta: oaiDelta{}, FinishReason: &fin}})
	last.Mixchat = newOAIExtra(t)
	if err := w.out.Send(last); err != nil {
		return
	}
	if w.usage {
		u := w.chunk([]oaiChunkChoice{})
		u.Usage = toOAIUsage(res.Usage)
		if err := w.out.Send(u); err != nil {
			return
		}
	}
	_ = w.out.raw([]byte("[DONE]"))
}

func (w *oaiWriter) fail(_ turn.Result, err error) {
	if w.out == nil || !w.out.started {
		writeOpenAIError(w.c, err, "", "")
		return
	}
	_ = w.out.Send(oaiErrorBody(err, errorStatus(err), "", ""))
}
