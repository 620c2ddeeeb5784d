// Package extractive holds mixchat's offline stand-ins: the parts that
// work with no network and no model weights, each implementing the same
// contract a real model's implementation fills, so the wiring (internal/app
// and the evals) chooses one or the other and nothing else knows which
// runs. Only the wiring imports this package.
//
// Every stand-in reads structured input, never prompt text: the question
// (as asked and standing alone), the evidence with its section path, title
// and citation number, the conversation with its speakers, the answers to
// fuse. Its output is composed of that input's own sentences and names,
// never invented.
//
// The answering half is Model, the extractive chat model: an llm.Model and
// an llm.Generator that reads the llm.Grounding an answerer builds beside
// its prompt. It answers the question from the sentences of the evidence and
// the conversation (model.go, material.go, pick.go), reads questions whose
// form the evidence's structure settles (read.go), reads the shape of the
// evidence — FAQ pairs, table rows, list items (shape.go) — and the
// question's own — a condition, a quantity (condition.go), a yes or a no
// (polar.go) — and fuses the answers of several answerers into one reply
// (fuse.go). Its only added words are fixed phrases: who said a sentence,
// that nothing was found, a yes or a no.
//
// The memory half stands in for the conversation memory's model calls
// behind the interfaces memory declares (memory.Rewriter, memory.Summarizer,
// memory.Extractor): rewriting a follow-up into a standalone question,
// summarising a conversation, and extracting facts and triples from it, from
// the transcript as lines with their speakers: they quote or recombine what
// was said rather than write anything new.
package extractive
