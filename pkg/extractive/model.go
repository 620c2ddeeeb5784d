package extractive

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/llm"
)

// Name is the extractive model's name when none is configured.
const Name = "offline-extractive"

// Replies of the model when nothing in its grounding is relevant.
const (
	nothingZH = "（离线抽取式模型）在已知内容中没有找到与问题相关的信息。"
	nothingEN = "(offline extractive model) Nothing in the given context is relevant to the question."
)

// Options configures the model. The zero value is usable.
type Options struct {
	// Name is reported in Response.Model; empty means Name.
	Name string
	// MaxSentences caps the sentences of a reply; 0 means 3.
	MaxSentences int
	// MinScore is the relevance in [0,1] a sentence needs to be used: the
	// share of the question's content (its characters and words, weighted
	// by rarity in the material) that the sentence contains. 0 means 0.25.
	MinScore float64
	// Profiles name the parts of their domains' documents that questions
	// ask for by name (docstruct.Profile: classifiers, kinds, named
	// positions, file-name forms): "NAME<classifier>的<kind>" is read from
	// the lines of the part so named. A reply reads with the profiles its
	// evidence names (llm.Evidence.Profile: a knowledge base's), and with
	// all of them when its evidence names none (web pages, a knowledge
	// base without a profile). The model only reads them.
	Profiles []*docstruct.Profile
}

// Model is the chat model that needs no network and no weights: it
// composes its reply from the sentences of its grounding (llm.Grounding)
// and never reads the prompt.
//
// Given answers to fuse (Grounding.Answers) it fuses them (see fuse.go).
// Otherwise it answers Grounding.Question from what the grounding holds,
// the evidence and then the conversation (Grounding.History): it ranks the
// sentences by lexical similarity to the question (CJK characters and
// bigrams, English stems, weighted by their rarity in the material), drops
// near duplicates (maximal marginal relevance), keeps the best few in their
// original order and says plainly when nothing is relevant (the response is
// then marked NothingFound). A question whose form the evidence's structure
// settles (the source of a quoted phrase, a named part of a text laid out
// by a profile: Options.Profiles) is read from that structure first (see read.go). It
// never invents text: every sentence of a reply is a sentence of the
// material, except the fixed phrases that say who said it, where it comes
// from, or that nothing was found. Evidence with a section path is read as
// a document's section (a heading line sets the path of the lines below it;
// a run of its sentences ends with its citation, "…利贞[1]。"); evidence
// without one, such as a web page's excerpt, sentence by sentence, each
// cited. A sentence the user said is reported as such ("你之前说过：“...”" /
// "You said earlier: ...").
//
// As an llm.Model (Complete, Stream: a request without a grounding) it
// reads the messages as a conversation: the last user message is the
// question, the messages before it the history.
//
// Replies are deterministic and valid UTF-8 (the material's invalid bytes
// become U+FFFD). Model is safe for concurrent use.
type Model struct {
	name     string
	maxSent  int
	minScore float64
	tok      *llm.Tokenizer
	profiles map[string]*docstruct.Profile
	all      *vocab   // of every profile
	vocabs   sync.Map // the profiles' names joined by "\n" → *vocab
}

var (
	_ llm.Model     = (*Model)(nil)
	_ llm.Generator = (*Model)(nil)
)

// New returns the extractive model.
func New(opts Options) *Model {
	m := &Model{name: opts.Name, maxSent: opts.MaxSentences, minScore: opts.MinScore}
	if m.name == "" {
		m.name = Name
	}
	if m.maxSent <= 0 {
		m.maxSent = 3
	}
	if m.minScore <= 0 {
		m.minScore = 0.25
	}
	m.tok = llm.NewTokenizer(m.name)
	m.profiles = map[string]*docstruct.Profile{}
	for _, p := range opts.Profiles {
		if p != nil {
			m.profiles[p.Name] = p
		}
	}
	m.all = newVocab(opts.Profiles)
	return m
}

// vocabOf returns the reading vocabulary of the profiles the evidence
// names, built once per set; of every profile when it names none the
// model has.
func (m *Model) vocabOf(ev []llm.Evidence) *vocab {
	var names []string
	for _, e := range ev {
		if _, ok := m.profiles[e.Profile]; ok && !slices.Contains(names, e.Profile) {
			names = append(names, e.Profile)
		}
	}
	if len(names) == 0 {
		return m.all
	}
	slices.Sort(names)
	key := strings.Join(names, "\n")
	if v, ok := m.vocabs.Load(key); ok {
		return v.(*vocab)
	}
	ps := make([]*docstruct.Profile, len(names))
	for i, n := range names {
		ps[i] = m.profiles[n]
	}
	v, _ := m.vocabs.LoadOrStore(key, newVocab(ps))
	return v.(*vocab)
}

// Name returns the configured name.
func (m *Model) Name() string { return m.name }

// Extractive reports true: replies are assembled from the grounding
// (llm.IsExtractive).
func (m *Model) Extractive() bool { return true }

// Generate answers from g, ignoring req's messages (req.MaxTokens caps the
// reply). With fn it sends the reply in pieces of a few characters (a
// Latin word is never split), stopping when ctx is done or fn fails.
func (m *Model) Generate(ctx context.Context, req llm.Request, g llm.Grounding, fn func(delta string) error) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	resp := m.answer(g, req.MaxTokens)
	if fn == nil {
		return resp, nil
	}
	for _, p := range pieces(resp.Text, 8) {
		if err := ctx.Err(); err != nil {
			return llm.Response{}, err
		}
		if err := fn(p); err != nil {
			return llm.Response{}, err
		}
	}
	return resp, nil
}

// Complete answers req's messages read as a conversation.
func (m *Model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return m.Generate(ctx, req, conversation(req.Messages), nil)
}

// Stream answers req's messages read as a conversation, in pieces.
func (m *Model) Stream(ctx context.Context, req llm.Request, fn func(delta string) error) (llm.Response, error) {
	return m.Generate(ctx, req, conversation(req.Messages), fn)
}

// conversation is the grounding of a conversation given as messages: the
// last user message is the question, the messages before it the history.
func conversation(msgs []llm.Message) llm.Grounding {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return llm.Grounding{Question: msgs[i].Content, History: slices.Clip(msgs[:i])}
		}
	}
	return llm.Grounding{History: msgs}
}

func (m *Model) answer(g llm.Grounding, maxTokens int) llm.Response {
	if len(g.Answers) > 0 {
		reply, nothing := fuse(g)
		return m.respond(g, reply, nothing)
	}
	q, sents, lines := material(g)
	zh := isChinese(q, sents)
	if s, ok := absentStatement(g.Evidence); ok {
		// What the question addresses does not exist, and saying so
		// answers it: not NothingFound, which would make the answer a
		// refusal that fusion drops (llm.Draft.Refusal) in favour of
		// another answerer's neighbour or namesake of the absent part.
		return m.respond(g, endSentence(s), false)
	}
	vocab := m.vocabOf(g.Evidence)
	reply, ok := readStructured(q, lines, vocab)
	if reply == "" {
		if e, found := addressedPart(g.Evidence); found {
			reply, ok = readPart(q, e, zh), true
		}
	}
	if !ok {
		if asksWhereFrom(q) {
			sents = slices.DeleteFunc(slices.Clone(sents), func(s sentence) bool { return s.speaker == speakerHuman })
		}
		if holds := vocab.partHolder(q); holds != nil {
			sents = slices.DeleteFunc(slices.Clone(sents), func(s sentence) bool { return !holds(s.text, s.scope) })
		}
		picked := m.pick(q, sents, maxTokens, g.Weights)
		reply = render(picked, zh)
	}
	if reply == "" {
		return m.respond(g, nothingText(zh), true)
	}
	return m.respond(g, endSentence(reply), false)
}

func nothingText(zh bool) string {
	if zh {
		return nothingZH
	}
	return nothingEN
}

// respond wraps a reply with its usage, estimated: the prompt is the
// material read.
func (m *Model) respond(g llm.Grounding, reply string, nothingFound bool) llm.Response {
	reply = strings.ToValidUTF8(reply, "\uFFFD") // the material's invalid bytes
	prompt := m.tok.Count(g.Question)
	for _, e := range g.Evidence {
		prompt += m.tok.Count(e.Text)
	}
	prompt += m.tok.CountMessages(g.History)
	for _, a := range g.Answers {
		prompt += m.tok.Count(a.Text)
	}
	completion := m.tok.Count(reply)
	return llm.Response{
		Text:         reply,
		Model:        m.name,
		FinishReason: "stop",
		Extractive:   true,
		NothingFound: nothingFound,
		Usage:        llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion, Estimated: true},
	}
}
