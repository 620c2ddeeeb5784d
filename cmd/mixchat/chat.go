package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/google/uuid"
)

const chatHelp = `Type a question and press Enter. Commands:
  /new            start a new conversation
  /model NAME     use another configured model ("" for the default)
  /id             print the conversation id
  /exit           quit (Ctrl-D also quits)
`

func runChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serveFlags
	f.register(fs)
	serverURL := fs.String("server", "", "URL of a running mixchat server (default: run one in this process)")
	conv := fs.String("conversation", "", "conversation id to continue (default: a new one)")
	model := fs.String("model", "", "model name (default: the configured default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	base := strings.TrimRight(*serverURL, "/")
	if base == "" {
		cfg, err := f.load()
		if err != nil {
			return err
		}
		a, err := newApp(ctx, cfg, newLogger(LogConfig{Level: "warn", Format: "text"}, stderr))
		if err != nil {
			return err
		}
		defer a.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		a.log = slog.New(slog.DiscardHandler)
		done := make(chan error, 1)
		go func() { done <- a.serve(sctx, ln) }()
		defer func() { cancel(); <-done }()
		base = "http://" + ln.Addr().String()
	}
	c := &chatClient{base: base, hc: &http.Client{}, conversation: *conv, model: *model}
	if c.conversation == "" {
		c.conversation = uuid.NewString()
	}
	return c.repl(ctx, stdin, stdout)
}

// chatClient talks to /chat/chat and prints the streamed reply.
type chatClient struct {
	base, conversation, model string
	hc                        *http.Client
}

func (c *chatClient) repl(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	fmt.Fprintf(stdout, "mixchat chat — conversation %s (/help for commands)\n", c.conversation)
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(stdout, "> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		switch {
		case line == "":
			continue
		case line == "/exit" || line == "/quit":
			return nil
		case line == "/help":
			fmt.Fprint(stdout, chatHelp)
			continue
		case line == "/new":
			c.conversation = uuid.NewString()
			fmt.Fprintln(stdout, "new conversation", c.conversation)
			continue
		case line == "/id":
			fmt.Fprintln(stdout, c.conversation)
			continue
		case strings.HasPrefix(line, "/model"):
			c.model = strings.TrimSpace(strings.TrimPrefix(line, "/model"))
			fmt.Fprintf(stdout, "model: %q\n", c.model)
			continue
		}
		if err := c.ask(ctx, line, stdout); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintln(stdout, "error:", err)
		}
	}
}

// ask sends one question and prints the reply as it streams.
func (c *chatClient) ask(ctx context.Context, query string, stdout io.Writer) error {
	body, _ := json.Marshal(map[string]any{"query": query, "conversation_id": c.conversation, "stream": true, "model_name": c.model, "history_len": -1})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/chat/chat", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Msg string `json:"msg"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &e) == nil && e.Msg != "" {
			return fmt.Errorf("%s: %s", resp.Status, e.Msg)
		}
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var note string
	err = readSSE(resp.Body, func(data []byte) error {
		var ev struct {
			Text       string `json:"text"`
			Done       bool   `json:"done"`
			Error      string `json:"error"`
			Extractive bool   `json:"extractive"`
			Model      string `json:"model"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("bad event %q: %w", data, err)
		}
		fmt.Fprint(stdout, ev.Text)
		if ev.Error != "" {
			return errors.New(ev.Error)
		}
		if ev.Done && ev.Extractive {
			note = "  [" + ev.Model + ": extractive, quoted from the conversation]"
		}
		return nil
	})
	fmt.Fprintln(stdout, note)
	return err
}

// readSSE calls fn with the data of each event in r.
func readSSE(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if err := fn(bytes.TrimSpace(data)); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}
