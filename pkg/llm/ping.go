package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// Ping checks cheaply that the model's API answers and takes the key: a
// GET of {base_url}/models, which OpenAI-compatible servers serve without
// running a model. A reply of any other status (a server without the
// route) counts as reachable. The error names neither the address nor the
// network error (which would): callers show it to clients.
func (c *Client) Ping(ctx context.Context) error {
	base := strings.TrimRight(c.cfg.BaseURL, "/")
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
	if err != nil {
		return fmt.Errorf("model %q: base_url is not a valid URL", c.name)
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	hc := c.cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("model %q did not answer in time", c.name)
		}
		return fmt.Errorf("model %q does not answer (is its endpoint up?)", c.name)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("model %q refuses the API key (HTTP %d)", c.name, resp.StatusCode)
	case resp.StatusCode >= 500:
		return fmt.Errorf("model %q answers HTTP %d", c.name, resp.StatusCode)
	}
	return nil
}
