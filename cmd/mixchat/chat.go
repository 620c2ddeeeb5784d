package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/internal/sseclient"
)

const chatUsage = `Usage:
  mixchat chat [--server URL] [--conversation ID] [--model NAME] [--data DIR] [--config FILE]

Chats in the terminal through /chat/chat: with --server, with a running
server; without, with one this command runs in its own process on the
configured data. Questions come from stdin, one a line. The exit status is
not 0 when the server cannot be reached or a question failed.

Flags:
`

const chatHelp = `Type a question and press Enter. Commands:
  /new            start a new conversation
  /model NAME     use another configured model ("" for the default)
  /id             print the conversation id
  /exit           quit (Ctrl-D also quits)
`

func runChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, f := appFlags("chat", chatUsage, stderr)
	serverURL := fs.String("server", "", "URL of a running mixchat server (default: run one in this process)")
	conv := fs.String("conversation", "", "conversation id to continue (default: a new one)")
	model := fs.String("model", "", "model name (default: the configured default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("chat: unexpected argument %q", fs.Arg(0))
	}
	base := strings.TrimRight(*serverURL, "/")
	if base == "" {
		cfg, err := f.Load()
		if err != nil {
			return err
		}
		a, err := app.New(ctx, cfg, app.Options{Log: app.NewLogger(config.LogConfig{Level: "warn", Format: "text"}, stderr), Version: version})
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
		a.Log = slog.New(slog.DiscardHandler)
		done := make(chan error, 1)
		go func() { done <- a.Serve(sctx, ln) }()
		defer func() { cancel(); <-done }()
		base = "http://" + ln.Addr().String()
	}
	c := &chatClient{base: base, hc: &http.Client{}, conversation: *conv, model: *model}
	if c.conversation == "" {
		c.conversation = uuid.NewString()
	}
	if err := c.ping(ctx); err != nil {
		return err
	}
	return c.repl(ctx, stdin, stdout)
}

// chatClient talks to /chat/chat and prints the streamed reply.
type chatClient struct {
	base, conversation, model string
	hc                        *http.Client
}

// ping checks that the server answers before the first question.
func (c *chatClient) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("chat: --server %s: %w", c.base, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("chat: no mixchat server at %s: %w", c.base, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("chat: %s/healthz answered %s", c.base, resp.Status)
	}
	return nil
}

// repl asks every question of stdin; it fails when any question failed.
func (c *chatClient) repl(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	fmt.Fprintf(stdout, "mixchat chat — conversation %s (/help for commands)\n", c.conversation)
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	asked, failed := 0, 0
	for {
		fmt.Fprint(stdout, "> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			if err := in.Err(); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("chat: %d of %d questions failed", failed, asked)
			}
			return nil
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
		asked++
		if err := c.ask(ctx, line, stdout); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failed++
			fmt.Fprintln(stdout, "error:", err)
		}
	}
}

// chatEvent is the part of a /chat/chat stream event the terminal shows.
type chatEvent struct {
	Text       string `json:"text"`
	Done       bool   `json:"done"`
	Error      string `json:"error"`
	Extractive bool   `json:"extractive"`
	// NothingFound: the extractive model found nothing to quote.
	NothingFound bool   `json:"nothing_found"`
	Model        string `json:"model"`
}

// ask sends one question and prints the reply as it streams.
func (c *chatClient) ask(ctx context.Context, query string, stdout io.Writer) error {
	stream, err := sseclient.Open(ctx, c.hc, c.base+"/chat/chat",
		map[string]any{"query": query, "conversation_id": c.conversation, "stream": true, "model_name": c.model, "history_len": -1})
	if err != nil {
		return err
	}
	defer stream.Close()
	var reply strings.Builder
	var last chatEvent
	err = sseclient.Decode(stream, func(ev chatEvent) (bool, error) {
		fmt.Fprint(stdout, ev.Text)
		reply.WriteString(ev.Text)
		if ev.Error != "" {
			return true, errors.New(ev.Error)
		}
		last = ev
		return ev.Done, nil
	})
	fmt.Fprintln(stdout, replyNote(last))
	return err
}

// replyNote is what follows a reply: an extractive model's reply says that
// it quotes the conversation, unless it found nothing to quote.
func replyNote(last chatEvent) string {
	if !last.Done || !last.Extractive || last.NothingFound {
		return ""
	}
	return "  [" + last.Model + ": extractive, quoted from the conversation]"
}
