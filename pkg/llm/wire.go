package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// The chat calls (Complete and Stream) speak the chat completions wire
// format here rather than through go-openai, which the client keeps for
// embeddings and for its types. Under load (mixchat-eval load: five model
// calls a mix_chat turn, a streamed reply of one chunk per token) go-openai
// cost some 6% of the server's CPU that a plain request does not: it
// encodes every request twice (ChatCompletionMessage.MarshalJSON
// re-marshals each message inside the request's own Marshal), and reads
// each line of a stream with three regular expressions and a fresh
// allocation. The wire shapes are a handful of fields, and the errors are
// kept exactly as the client reported them through go-openai (the same
// StatusError, status and body), which the client's tests check.

// chatCompletionsPath is the chat endpoint under the base URL.
const chatCompletionsPath = "/chat/completions"

// maxEmptyStreamLines bounds the lines without data a stream may send in a
// row (go-openai's default): an upstream that sends nothing else is broken.
const maxEmptyStreamLines = 300

var errTooManyEmptyLines = fmt.Errorf("stream sent more than %d lines without data in a row", maxEmptyStreamLines)

// wireRequest is the body of a chat completion request.
type wireRequest struct {
	Model               string             `json:"model"`
	Messages            []wireMessage      `json:"messages"`
	MaxTokens           int                `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                `json:"max_completion_tokens,omitempty"`
	Temperature         *float32           `json:"temperature,omitempty"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *wireStreamOptions `json:"stream_options,omitempty"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireResponse is what Complete reads of a chat completion.
type wireResponse struct {
	Choices []struct {
		Message struct {
			Content wireContent `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage openai.Usage `json:"usage"`
}

// wireContent is a message's content: a string, null, or (from some
// OpenAI-compatible servers) an array of parts, whose text parts are
// joined.
type wireContent string

func (c *wireContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var sb strings.Builder
		for _, p := range parts {
			if p.Type == "" || p.Type == "text" {
				sb.WriteString(p.Text)
			}
		}
		*c = wireContent(sb.String())
		return nil
	case string(b) == "null":
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*c = wireContent(s)
	return nil
}

// wireRequest returns req as the body the upstream is sent: the client's
// model (req.Model is ignored), and for reasoning models (o1, o3, o4,
// gpt-5) max_completion_tokens and no temperature, which they refuse.
func (c *Client) wireRequest(req Request) wireRequest {
	msgs := make([]wireMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = wireMessage{Role: m.Role, Content: m.Content}
	}
	w := wireRequest{Model: c.cfg.Model, Messages: msgs}
	reasoning := isReasoningModel(c.cfg.Model)
	if req.Temperature != nil && !reasoning {
		t := *req.Temperature
		w.Temperature = &t // 0 included: it is sent, not left to the upstream's default
	}
	if req.MaxTokens > 0 {
		if reasoning {
			w.MaxCompletionTokens = req.MaxTokens
		} else {
			w.MaxTokens = req.MaxTokens
		}
	}
	return w
}

// post sends body to the chat endpoint through the recording client, so
// that at learns the status, headers and body. A response whose status is
// not 2xx is read and returned as a *StatusError carrying its body.
func (c *Client) post(ctx context.Context, at *attempt, body []byte, stream bool) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+chatCompletionsPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := hr.Header
	h["Content-Type"] = []string{"application/json"}
	if stream {
		h["Accept"] = []string{"text/event-stream"}
		h["Cache-Control"] = []string{"no-cache"}
	} else {
		h["Accept"] = []string{"application/json"}
	}
	if c.authorization != "" {
		h["Authorization"] = []string{c.authorization}
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return nil, fmt.Errorf("read error body: %w", err)
		}
		return nil, &StatusError{StatusCode: resp.StatusCode, Body: string(at.body.Bytes())}
	}
	return resp, nil
}

// complete makes one non-streamed call.
func (c *Client) complete(ctx context.Context, at *attempt, body []byte) (wireResponse, error) {
	at.keepBody = true
	resp, err := c.post(ctx, at, body, false)
	if err != nil {
		return wireResponse{}, err
	}
	defer resp.Body.Close()
	var r wireResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return wireResponse{}, err
	}
	return r, nil
}

// streamLines reads the events of a streamed reply: the data of each
// "data:" line, until "data: [DONE]" or the end of the body.
type streamLines struct {
	r    *bufio.Reader
	long []byte // a line longer than r's buffer, put together
	// other holds the lines that are not data (an upstream may send its
	// error as a bare JSON object), kept to report at the end.
	other bytes.Buffer
	done  bool
}

func newStreamLines(body io.Reader) *streamLines {
	return &streamLines{r: bufio.NewReaderSize(body, 4096)}
}

// next returns the data of the next event, valid until the next call;
// io.EOF after [DONE] or at the end of the body. An error event ("data:
// {"error": ...}") is returned as *openai.APIError, as are lines without
// data that together make an error object when the body ends.
func (s *streamLines) next() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	for empty := 0; ; empty++ {
		line, err := s.line()
		if err != nil {
			if apiErr := s.otherError(); apiErr != nil {
				return nil, fmt.Errorf("error, %w", apiErr)
			}
			return nil, err
		}
		line = bytes.TrimSpace(line)
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			if s.other.Len() < maxErrorBody {
				s.other.Write(line)
			}
			if empty >= maxEmptyStreamLines {
				return nil, errTooManyEmptyLines
			}
			continue
		}
		data = bytes.TrimLeft(data, " \t\r\n\f")
		if bytes.HasPrefix(data, []byte(`{"error":`)) {
			var er openai.ErrorResponse
			if json.Unmarshal(data, &er) == nil && er.Error != nil {
				return nil, fmt.Errorf("error, %w", er.Error)
			}
			return data, nil // not an error object after all: malformed
		}
		if string(data) == "[DONE]" {
			s.done = true
			return nil, io.EOF
		}
		return data, nil
	}
}

// line returns the next line, its newline included.
func (s *streamLines) line() ([]byte, error) {
	b, err := s.r.ReadSlice('\n')
	if err == nil || (err == io.EOF && len(b) > 0) {
		return b, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	s.long = append(s.long[:0], b...)
	for {
		b, err = s.r.ReadSlice('\n')
		s.long = append(s.long, b...)
		switch {
		case err == nil, err == io.EOF:
			return s.long, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

// otherError returns the error object the lines without data make, if
// they make one.
func (s *streamLines) otherError() *openai.APIError {
	if s.other.Len() == 0 {
		return nil
	}
	var er openai.ErrorResponse
	if json.Unmarshal(s.other.Bytes(), &er) != nil {
		return nil
	}
	return er.Error
}
