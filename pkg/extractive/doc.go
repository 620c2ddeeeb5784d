// Package extractive holds the offline stand-ins for what a model does,
// each behind the interface a model's implementation fills: the follow-up
// rewriter, the summarizer and the fact and triple extractor of
// conversation memory (memory.Rewriter, memory.Summarizer,
// memory.Extractor). They read structured input (the question, the
// transcript as lines with their speakers), never prompt text, and quote
// or recombine what was said rather than write anything new.
//
// Only the wiring (internal/app) and the evals import this package: the
// packages of the request path declare the interfaces and never know
// which implementation runs.
package extractive
