package main

import (
	"context"
	"flag"
	"io"

	"github.com/mixchat/mixchat/internal/evalqa"
)

// runEvalQA is "mixchat-eval qa": end-to-end answer quality (internal/evalqa).
func runEvalQA(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("qa", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o evalqa.Options
	fs.StringVar(&o.Data, "data", "", "CMRC 2018 (SQuAD-format) JSON: all paragraphs in one knowledge base, every question asked")
	fs.StringVar(&o.Zhouyi, "zhouyi", "", "folder of the Zhouyi texts: questions generated from the text's structure")
	fs.BoolVar(&o.Absent, "absent", false, "questions whose answer is absent, which should be refused: the --data questions against the --zhouyi base, or without --zhouyi those of every other paragraph against a base of the rest")
	fs.IntVar(&o.Limit, "limit", 0, "ask only N questions, spread over the set (0 = all)")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object (per-question rows under \"questions\")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Progress = stderr
	_, err := evalqa.Run(ctx, o, stdout)
	return err
}
