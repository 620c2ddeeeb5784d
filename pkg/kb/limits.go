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
