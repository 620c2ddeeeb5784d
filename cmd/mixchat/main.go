// Command mixchat is the mixchat server and its tools: serve runs the HTTP
// server, chat is a terminal chat, kb manages knowledge bases, keys manages
// API keys, eval runs the benchmarks (it runs the mixchat-eval command,
// which is kept out of this binary), healthcheck probes a running server
// (the container's health check), version prints the version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=..." (a
// release); without it the build information says (buildVersion).
var version = "dev"

const usage = `mixchat: domain-expert question answering that fuses LLM chat, knowledge bases and search.

Usage:
  mixchat serve   [--addr HOST:PORT] [--data DIR] [--config FILE]   run the HTTP server
  mixchat chat    [--server URL] [--conversation ID] [--model NAME]  chat in the terminal
  mixchat kb      [--data DIR] create|add|ls|rm|search ...            manage knowledge bases
  mixchat keys    [--config FILE] create|ls|revoke ...               manage API keys (auth.enabled)
  mixchat eval    NAME [flags]                                       run a benchmark with mixchat-eval (beir, cmrc, locomo, latency, ...)
  mixchat healthcheck [--addr HOST:PORT]                             exit 0 if the local server answers /healthz
  mixchat version                                                    print the version

Run "mixchat COMMAND -h" (or "mixchat help COMMAND") for a command's flags. Configuration: configs/mixchat.yaml documents
every setting; MIXCHAT_* environment variables override the file.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	var exit exitStatus
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.As(err, &exit):
		os.Exit(int(exit)) // the delegated command said why
	default:
		fmt.Fprintln(os.Stderr, "mixchat:", err)
		os.Exit(1)
	}
}

// command runs one of mixchat's commands with the arguments after its
// name.
type command func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// commands are mixchat's commands by name, but for version and help.
var commands = map[string]command{
	"serve":       runServe,
	"chat":        runChat,
	"kb":          runKBCommand,
	"keys":        runKeys,
	"eval":        runEval,
	"healthcheck": runHealthcheck,
}

// run dispatches a command line.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd, rest, err := splitCommand(args, usage, stderr, "no command given")
	if err != nil {
		return err
	}
	if c, ok := commands[cmd]; ok {
		return c(ctx, rest, stdin, stdout, stderr)
	}
	switch cmd {
	case "version", "--version", "-v":
		if wantsHelp(rest) {
			fmt.Fprintln(stdout, "Usage:\n  mixchat version    print the version")
			return nil
		}
		fmt.Fprintln(stdout, "mixchat", buildVersion())
		return nil
	case "help", "-h", "--help", "-help":
		if len(rest) > 0 && rest[0] != "help" {
			return run(ctx, []string{rest[0], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// splitCommand splits a command line into its (sub)command and the rest;
// when there is none it prints usage to stderr and fails with the message
// none.
func splitCommand(args []string, usage string, stderr io.Writer, none string) (cmd string, rest []string, err error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return "", nil, errors.New(none)
	}
	return args[0], args[1:], nil
}

// wantsHelp reports whether args ask for help (-h, -help, --help) before
// any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}
