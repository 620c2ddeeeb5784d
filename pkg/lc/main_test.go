package lc_test

import (
	"fmt"
	"os"
	"testing"
)

// shared is the demo server the examples and tests use.
var shared *demoServer

func TestMain(m *testing.M) {
	var err error
	shared, err = newDemoServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lc: demo server:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := shared.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "lc: close:", err)
		code = 1
	}
	os.Exit(code)
}
