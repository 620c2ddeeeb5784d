// Command mixchat is the mixchat server and its tools: serve runs the HTTP
// server, chat is a terminal chat, kb manages knowledge bases, keys manages
// API keys, eval runs the benchmarks, healthcheck probes a running server
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

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `mixchat: domain-expert question answering that fuses LLM chat, knowledge bases and search.

Usage:
  mixchat serve   [--addr HOST:PORT] [--data DIR] [--config FILE]   run the HTTP server
  mixchat chat    [--server URL] [--conversation ID] [--model NAME]  chat in the terminal
  mixchat kb      [--data DIR] create|add|ls|rm|search ...            manage knowledge bases
  mixchat keys    [--config FILE] create|ls|revoke ...               manage API keys (auth.enabled)
  mixchat eval    NAME [flags]                                       run a benchmark (beir, cmrc, qa, locomo, latency, crash, faults, load)
  mixchat healthcheck [--addr HOST:PORT]                             exit 0 if the local server answers /healthz
  mixchat version                                                    print the version

Run "mixchat COMMAND -h" for a command's flags. Configuration: configs/mixchat.yaml documents
every setting; MIXCHAT_* environment variables override the file.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mixchat:", err)
		os.Exit(1)
	}
}

// run dispatches a command line.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "chat":
		return runChat(ctx, rest, stdin, stdout, stderr)
	case "kb":
		return runKBCommand(ctx, rest, stdout, stderr)
	case "keys":
		return runKeys(ctx, rest, stdout, stderr)
	case "eval":
		return runEval(ctx, rest, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, rest, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "mixchat", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// runEval dispatches the benchmarks.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("eval: name a benchmark: beir, cmrc, qa, locomo, latency, crash, faults, load")
	}
	switch args[0] {
	case "beir":
		return runEvalBEIR(ctx, args[1:], stdout, stderr)
	case "cmrc":
		return runEvalCMRC(ctx, args[1:], stdout, stderr)
	case "locomo":
		return runEvalLoCoMo(ctx, args[1:], stdout, stderr)
	case "latency":
		return runEvalLatency(ctx, args[1:], stdout, stderr)
	case "crash":
		return runEvalCrash(ctx, args[1:], stdout, stderr)
	case "faults":
		return runEvalFaults(ctx, args[1:], stdout, stderr)
	case "load":
		return runEvalLoad(ctx, args[1:], stdout, stderr)
	case "qa":
		return runEvalQA(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("eval: unknown benchmark %q; available: beir, cmrc, qa, locomo, latency, crash, faults, load", args[0])
}
