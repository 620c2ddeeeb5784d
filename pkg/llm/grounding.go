package llm

import "context"

// Grounding is the material a reply rests on, given beside the prompt: the
// question, the evidence, the conversation and the answers to fuse, as
// structured values. The caller renders its prompt (Request.Messages) from
// the same material.
//
// A model that generates text reads the prompt and ignores the grounding;
// a model that composes its reply from the material itself (the extractive
// model of package extractive) reads the grounding and ignores the prompt.
// Neither reads the other's input: nothing parses prompt text back into
// its parts.
//
// Every field may be empty. The fields a caller fills say what the reply
// may use: an answerer that retrieves gives its Evidence (and not the
// conversation its prompt may also carry), the plain chat answerer its
// History, fusion its Answers.
type Grounding struct {
	// Question is the question the reply answers, standing on its own:
	// the follow-up rewritten when the turn rewrote it, else as asked.
	Question string
	// Asked is the question as the user asked it; "" when it is Question.
	Asked string
	// Evidence is what retrieval found for the question, in the order the
	// prompt shows it.
	Evidence []Evidence
	// Weights are the weights of the question's terms in the collection
	// the evidence was retrieved from: each term of the folded question
	// (pkg/text's Terms of text.Fold(Question)) with its inverse document
	// frequency there. A reader that judges the question's words by the
	// few passages it reads learns from them which words are rare in the
	// whole collection. nil when unknown; a term left out has no weight
	// known.
	Weights map[string]float64
	// History is the conversation before the question, oldest first.
	History []Message
	// Answers are the answers of several answerers to fuse into one reply,
	// in the order the prompt shows them.
	Answers []Draft
}

// Evidence is one passage of retrieved text.
type Evidence struct {
	// ID is the passage's citation number, as the prompt shows it ("[ID]");
	// 0 when the prompt does not number it.
	ID int
	// Title is the document's or page's title.
	Title string
	// Path is the passage's section path, outermost first, " > " between
	// ("劳动法 > 第四章 > 第三十六条"): the document's title, then the headings the
	// passage is under. "" for a passage without sections (an excerpt of a
	// web page).
	Path string
	// Text is the passage.
	Text string
	// From names the answerer that found it ("kb", "search").
	From string
	// Match says how retrieval found it: "part" for the exact part the
	// question addresses by number or name, "absent" for the statement that
	// the addressed part or document does not exist (Text says so, in the
	// question's language), "" for similarity. rag.MatchPart and
	// rag.MatchAbsent name the values.
	Match string
	// Profile names the structure profile the passage's document is read
	// with (docs/structure.md), "" for none: a reader that knows profiles
	// reads the parts the profile names in this passage.
	Profile string
}

// Draft is one answerer's answer, to be fused with others.
type Draft struct {
	// From names the answerer: "kb" (a knowledge base), "search" (the
	// web), "llm" (the model's own knowledge), or another answerer's name.
	From string
	Text string
	// Refusal is true when the answer only says that nothing was found to
	// answer from (the answerer found no evidence, or the model said so:
	// Response.NothingFound).
	Refusal bool
}

// Generator writes the reply to a request grounded in g, streamed through
// fn when fn is not nil (an error from fn stops the reply and is
// returned), in one piece otherwise. It honours ctx.
//
// Implementations read either input: a generative model the prompt
// (req.Messages), the extractive model the grounding. AsGenerator makes one
// of any Model.
type Generator interface {
	Generate(ctx context.Context, req Request, g Grounding, fn func(delta string) error) (Response, error)
}

// AsGenerator returns m as a Generator: m itself when it is one (a model
// that reads groundings, or a wrapper passing them on), else ModelGenerator
// over m.
func AsGenerator(m Model) Generator {
	if g, ok := m.(Generator); ok {
		return g
	}
	return ModelGenerator{Model: m}
}

// ModelGenerator is the Generator of a model that generates text from the
// prompt: it sends req (its Messages) to Model, streamed when fn is not nil,
// and ignores the grounding.
type ModelGenerator struct{ Model Model }

// Generate calls Model.Stream with fn, or Model.Complete when fn is nil.
func (g ModelGenerator) Generate(ctx context.Context, req Request, _ Grounding, fn func(delta string) error) (Response, error) {
	return Generate(ctx, g.Model, req, fn)
}
