package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
)

// evalFlags is a benchmark's flag set: errors and -h go to stderr, with
// usage (when there is one) before the flags.
func evalFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if usage != "" {
		fs.Usage = func() { fmt.Fprint(stderr, usage, "\nFlags:\n"); fs.PrintDefaults() }
	}
	return fs
}

// printJSON writes v as one indented JSON object (the --json reports).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
