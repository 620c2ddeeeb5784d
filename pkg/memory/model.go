package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/prompts"
)

// The model implementations of the Rewriter, the Summarizer and the
// Extractor: the memory_* prompts, one model call each, at temperature 0.

// prompter asks a model one rendered prompt.
type prompter struct {
	model llm.Model
	name  string // llm.Request.Model
}

// complete renders prompt group with data and asks the model, returning
// the reply.
func (p prompter) complete(ctx context.Context, group string, data any, maxTokens int) (llm.Response, error) {
	text, err := prompts.Render(group, "default", data)
	if err != nil {
		return llm.Response{}, err
	}
	zero := float32(0)
	resp, err := p.model.Complete(ctx, llm.Request{
		Model:       p.name,
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: text}},
		Temperature: &zero,
		MaxTokens:   maxTokens,
	})
	if err != nil {
		return llm.Response{}, fmt.Errorf("%s: %w", group, err)
	}
	return resp, nil
}

// ModelRewriter rewrites follow-ups with a model (prompt
// memory_condense): the model reads the recent exchanges and writes the
// standalone question and the facts needed to answer it. It asks the
// model whenever it is called, whatever the question looks like: the
// model decides whether and how the question changes.
type ModelRewriter struct{ p prompter }

// NewModelRewriter returns the rewriter asking model (name is put in the
// requests, llm.Request.Model).
func NewModelRewriter(model llm.Model, name string) *ModelRewriter {
	return &ModelRewriter{prompter{model, name}}
}

// Rewrite asks the model. A reply not in the asked format, or whose
// question is not a plausible rewrite (several lines, another script, far
// longer than the question), is discarded: the question is used as asked
// (Reason ReasonMalformed), with the call's usage.
func (r *ModelRewriter) Rewrite(ctx context.Context, f FollowUp) (Condensed, error) {
	q := strings.TrimSpace(f.Question)
	lines := make([]string, len(f.Recent))
	for i, l := range f.Recent {
		lines[i] = l.String()
	}
	resp, err := r.p.complete(ctx, condenseGroup, condenseData{Lines: lines, Question: q}, 600)
	if err != nil {
		return Condensed{Standalone: q}, err
	}
	facts, standalone, ok := parseCondensed(resp.Text)
	if !ok || !plausibleRewrite(q, standalone) {
		return Condensed{Standalone: q, Usage: resp.Usage, Reason: ReasonMalformed}, nil
	}
	return Condensed{Standalone: standalone, Context: facts, Usage: resp.Usage}, nil
}

// ModelSummarizer writes summaries with a model (prompt memory_summary).
type ModelSummarizer struct{ p prompter }

// NewModelSummarizer returns the summarizer asking model.
func NewModelSummarizer(model llm.Model, name string) *ModelSummarizer {
	return &ModelSummarizer{prompter{model, name}}
}

// Summarize asks the model for the new summary; an empty reply is an
// error.
func (s *ModelSummarizer) Summarize(ctx context.Context, prev string, lines []Line, maxTokens int) (string, error) {
	data := summaryData{Summary: prev, Lines: lineTexts(lines), MaxWords: max(20, maxTokens*3/4)}
	resp, err := s.p.complete(ctx, summaryGroup, data, maxTokens*2)
	if err != nil {
		return "", err
	}
	out := strings.TrimSpace(resp.Text)
	if out == "" {
		return "", fmt.Errorf("%s: empty reply", summaryGroup)
	}
	return out, nil
}

// ModelExtractor extracts entity facts, triples and user facts with a
// model (prompts memory_entity, memory_triples, memory_facts). A row the
// conversation does not ground (the prompt's example, a guess) is
// dropped.
type ModelExtractor struct{ p prompter }

// NewModelExtractor returns the extractor asking model.
func NewModelExtractor(model llm.Model, name string) *ModelExtractor {
	return &ModelExtractor{prompter{model, name}}
}

// Entities asks memory_entity for "name | fact" rows.
func (e *ModelExtractor) Entities(ctx context.Context, lines []Line, known []string) ([]EntityFact, error) {
	data := linesData{Lines: lineTexts(lines), Known: known}
	return extractRows(ctx, e.p, entityGroup, data, lines, 2, func(row []string, said string) (EntityFact, bool) {
		return EntityFact{Name: row[0], Fact: row[1]}, grounded(row[0], said) && groundedTerms(row[1], said)
	})
}

// Triples asks memory_triples for "subject | relation | object" rows.
func (e *ModelExtractor) Triples(ctx context.Context, lines []Line) ([]Triple, error) {
	data := linesData{Lines: lineTexts(lines)}
	return extractRows(ctx, e.p, triplesGroup, data, lines, 3, func(row []string, said string) (Triple, bool) {
		return Triple{Subject: row[0], Relation: row[1], Object: row[2]}, grounded(row[0], said) && grounded(row[2], said)
	})
}

// UserFacts asks memory_facts for one fact a line.
func (e *ModelExtractor) UserFacts(ctx context.Context, lines []Line, known []string) ([]string, error) {
	data := linesData{Lines: lineTexts(lines), Known: known}
	resp, err := e.p.complete(ctx, factsGroup, data, 600)
	if err != nil {
		return nil, err
	}
	var facts []string
	for _, l := range strings.Split(resp.Text, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "-*•"))
		if l != "" && !strings.EqualFold(l, "none") && !strings.HasSuffix(l, ":") {
			facts = append(facts, l)
		}
	}
	return facts, nil
}

// extractRows asks group's prompt with data about lines and returns what
// keep makes of each row of n fields of its reply, dropping the rows keep
// finds not grounded in what the lines said.
func extractRows[T any](ctx context.Context, p prompter, group string, data linesData, lines []Line, n int, keep func(row []string, said string) (T, bool)) ([]T, error) {
	resp, err := p.complete(ctx, group, data, 800)
	if err != nil {
		return nil, err
	}
	var res []T
	said := linesText(lines)
	for _, row := range splitRows(strings.TrimSpace(resp.Text), n) {
		if v, ok := keep(row, said); ok {
			res = append(res, v)
		}
	}
	return res, nil
}

// lineTexts renders lines as the prompts show them.
func lineTexts(ls []Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}
