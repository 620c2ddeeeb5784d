package lc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client is a mixchat server: its address and the HTTP client to reach it.
type Client struct {
	// BaseURL is the server's address, such as http://127.0.0.1:7861.
	BaseURL string
	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
	// APIKey, when set, is sent as "Authorization: Bearer KEY" (auth.enabled).
	APIKey string
}

// NewClient returns a Client for the server at baseURL.
func NewClient(baseURL string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/")}
}

// inProcessURL is the address in-process requests carry; nothing resolves
// it. The host is localhost, which the server's Host allow-list always
// serves.
const inProcessURL = "http://localhost"

// NewHandlerClient returns a Client that calls h (a mixchat server's
// handler) in this process: no socket, no port, the same wire API.
func NewHandlerClient(h http.Handler) *Client {
	return &Client{BaseURL: inProcessURL, HTTP: &http.Client{Transport: HandlerTransport(h)}}
}

// Error is an error reply from the server.
type Error struct {
	Status  int    // HTTP status
	Code    int    // Chatchat's body code, when the reply carried one
	Message string // the server's message
}

func (e *Error) Error() string {
	if e.Code != 0 && e.Code != e.Status {
		return fmt.Sprintf("mixchat: HTTP %d, code %d: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("mixchat: HTTP %d: %s", e.Status, e.Message)
}

// do posts body as JSON to path and returns the response, or an *Error for
// a non-2xx status.
func (c *Client) do(ctx context.Context, path string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("mixchat: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+path, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("mixchat: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("mixchat: %w", err)
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		return nil, readError(res)
	}
	return res, nil
}

// readError reads an error reply: OpenAI's {"error":{"message"}},
// Chatchat's {"code","msg"} or mixchat's {"detail"}.
func readError(res *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Code   int    `json:"code"`
		Msg    string `json:"msg"`
		Detail string `json:"detail"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil {
		switch {
		case e.Error != nil:
			msg = e.Error.Message
		case e.Msg != "":
			msg = e.Msg
		case e.Detail != "":
			msg = e.Detail
		}
	}
	return &Error{Status: res.StatusCode, Code: e.Code, Message: msg}
}
