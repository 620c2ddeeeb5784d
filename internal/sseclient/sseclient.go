// Package sseclient reads server-sent event streams as mixchat's chat
// endpoints write them: the terminal chat (`mixchat chat`) and the
// benchmarks (`mixchat-eval`) read replies with it.
package sseclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// maxEvent is the longest event line the reader accepts.
const maxEvent = 4 << 20

// Read calls fn with the data of each event of the stream r, in order,
// until the stream ends or fn returns an error, which Read returns. An
// event's data is its "data:" lines joined by newlines (one space after the
// colon dropped); an event ends at a blank line or at the end of the
// stream. Comments, other fields and events without data are skipped.
func Read(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	// The buffer starts small (a stream of short events is the common
	// one) and grows with the longest line, up to maxEvent.
	sc.Buffer(make([]byte, 4<<10), maxEvent)
	var data []byte
	have := false
	flush := func() error {
		if !have {
			return nil
		}
		d := data
		data, have = nil, false
		return fn(d)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v, _ = bytes.CutPrefix(v, []byte(" "))
		if have {
			data = append(data, '\n')
		}
		data, have = append(data, v...), true
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read event stream: %w", err)
	}
	return flush()
}

// Decode reads the stream r as Read does and decodes each event's data as
// JSON into a fresh T for fn, until fn says stop or fails, or the stream
// ends. The OpenAI end marker "[DONE]" ends the stream.
func Decode[T any](r io.Reader, fn func(ev T) (stop bool, err error)) error {
	err := Read(r, func(data []byte) error {
		if string(data) == "[DONE]" {
			return errStop
		}
		var ev T
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("bad event %q: %w", data, err)
		}
		stop, err := fn(ev)
		if err == nil && stop {
			return errStop
		}
		return err
	})
	if err == errStop {
		return nil
	}
	return err
}

// errStop ends Decode's reading without an error.
var errStop = stopError{}

type stopError struct{}

func (stopError) Error() string { return "stop" }

// Open posts body as JSON to url with hc and returns the reply's body, an
// event stream for Read or Decode, which the caller closes. A reply other
// than 200 is a *StatusError.
func Open(ctx context.Context, hc *http.Client, url string, body any) (io.ReadCloser, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: raw}
	}
	return resp.Body, nil
}

// StatusError is a reply other than 200 to Open: its status and (the first
// MiB of) its body.
type StatusError struct {
	Code   int
	Status string // "400 Bad Request"
	Body   []byte
}

// Error is the status and the body's "msg" when it is a JSON error with
// one, else the body.
func (e *StatusError) Error() string {
	var m struct {
		Msg string `json:"msg"`
	}
	if json.Unmarshal(e.Body, &m) == nil && m.Msg != "" {
		return e.Status + ": " + m.Msg
	}
	return e.Status + ": " + string(bytes.TrimSpace(e.Body))
}
