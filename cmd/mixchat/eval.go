package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The benchmarks and the crash, fault and load harnesses are a command of
// their own, mixchat-eval (cmd/mixchat-eval), so that this binary and its
// image hold no test upstreams and no pg_ctl harness. `mixchat eval ...`
// runs it with the same arguments.

// evalCommand is the name of the benchmarks' command.
const evalCommand = "mixchat-eval"

const evalMissing = `mixchat eval NAME [flags] runs the benchmarks, which live in their own command,
mixchat-eval, looked for next to this program and then on PATH. Install it with
  go install ./cmd/mixchat-eval          (from a clone of the repository; puts it in $(go env GOPATH)/bin)
or build both commands into one folder
  go build -o bin/ ./cmd/mixchat ./cmd/mixchat-eval
or run a benchmark without installing anything
  go run ./cmd/mixchat-eval NAME [flags]
`

// exitStatus is the exit status of a command this one ran, which reported
// its own error.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// runEval runs mixchat-eval with args, passing stdin, stdout, stderr and the
// exit status through.
func runEval(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	bin, err := findEval()
	if err != nil {
		if len(args) == 0 || args[0] == "help" || wantsHelp(args) {
			fmt.Fprint(stdout, evalMissing)
			return nil
		}
		fmt.Fprint(stderr, evalMissing)
		return fmt.Errorf("eval: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	// On an interrupt the benchmark gets to clean up (temporary folders,
	// its own PostgreSQL), as when it is run directly.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return exitStatus(ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("eval: %s: %w", bin, err)
	}
	return nil
}

// findEval returns mixchat-eval: next to this program, else on PATH.
func findEval() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), evalCommand)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(evalCommand)
	if err != nil {
		return "", fmt.Errorf("%s is not installed: no %s next to this program or on PATH", evalCommand, evalCommand)
	}
	return p, nil
}
