package kb

import (
	"context"
	"fmt"
	"time"
)

// parseContext is ctx with the parse deadline d (kb.parse_timeout) for
// loading and splitting one document: past it the loaders stop with a
// LimitError naming the setting. d ≤ 0 sets none.
func parseContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, &LimitError{
		Msg:     fmt.Sprintf("reading the document took longer than %s", d),
		Setting: "kb.parse_timeout",
	})
}

// checkChunks refuses a document that splits into more than max chunks
// (kb.max_chunks_per_file); max ≤ 0 is no limit.
func checkChunks(n, max int) error {
	if max > 0 && n > max {
		return &LimitError{
			Msg:     fmt.Sprintf("the document splits into %d chunks, more than the %d allowed per document", n, max),
			Setting: "kb.max_chunks_per_file",
		}
	}
	return nil
}
