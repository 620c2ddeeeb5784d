package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mixchat/mixchat/internal/evalcanard"
)

// runEvalCanard is `mixchat-eval canard`: the offline follow-up rewrite
// scored on CANARD (internal/evalcanard).
func runEvalCanard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("canard", "", stderr)
	data := fs.String("data", "", "path of CANARD's dev.json (required)")
	limit := fs.Int("limit", 0, "evaluate only the first N items (0 = all)")
	asJSON := fs.Bool("json", false, "print one JSON object with a row per item")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := canardData.check(*data); err != nil {
		return fmt.Errorf("canard: %w", err)
	}
	rep, err := evalcanard.Run(ctx, evalcanard.Options{Data: *data, Limit: *limit, Items: *asJSON}, stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "CANARD: %d questions; BLEU-4 %.2f (copy %.2f; halves %.2f / %.2f); rewritten %.0f%%\n",
		rep.Items, rep.BLEU, rep.CopyBLEU, rep.HalfBLEU[0], rep.HalfBLEU[1], 100*rep.Rewritten)
	return nil
}
