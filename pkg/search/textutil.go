package search

import (
	"context"
	"strconv"
	"strings"

	"golang.org/x/net/html"

	"github.com/mixchat/mixchat/pkg/htmltext"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file holds the small text handling search needs: plain text from an
// HTML tree (pkg/htmltext's walker, shared with the knowledge bases'
// loaders), splitting a text into passages, and ranking passages against a
// question. Both are the knowledge bases' own: passages come from
// text.Splitter, the splitter pkg/kb chunks documents with, and are ranked
// with pkg/retrieve's BM25 over lexTerms (pkg/text's terms of the text with
// traditional Chinese folded to simplified).

// lexTerms are the BM25 terms of a text or query, made as the knowledge
// bases make theirs: CJK bigrams and stemmed English words of the text
// with traditional Chinese folded to simplified, so a question in either
// script finds pages in the other (繫辭 finds 系辞).
func lexTerms(s string) []string { return text.Terms(text.Fold(s)) }

// htmlText returns the readable text of n (htmltext.Text: headings as "#"
// lines, table rows with their cells on one line), one line per block, with
// runs of white space collapsed and no empty lines.
func htmlText(n *html.Node) string { return tidyText(htmltext.Text(n)) }

// tidyText collapses white space within lines and drops empty lines.
func tidyText(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// splitPassages cuts s into passages of at most size characters (400 when
// size <= 0) with text.Splitter, as the knowledge bases chunk documents:
// at sentence ends (。！？；. ! ?), preferring paragraph ends, a new passage
// at every heading, a sentence longer than size cut at clause punctuation.
// Page text has one block per line (htmlText, tidyText), so every line is
// a paragraph. Passages do not overlap: the kept ones are shown side by
// side.
func splitPassages(s string, size int) []string {
	out, _ := splitPassagesContext(context.Background(), s, size)
	return out
}

// splitPassagesContext is splitPassages that stops once ctx is done.
func splitPassagesContext(ctx context.Context, s string, size int) ([]string, error) {
	if size <= 0 {
		size = 400
	}
	cs, err := text.Splitter{Size: size, LineParagraphs: true}.SplitContext(ctx, s)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Text
	}
	return out, nil
}

// rankedPassage is a passage with its BM25 score for a question.
type rankedPassage struct {
	Doc   int // index of the document it came from
	Text  string
	Score float64
	Pos   int // position within its document
}

// rankPassages scores every passage of docs against question with BM25 over
// lexTerms and returns the best k (all when k <= 0), best first. Passages
// that share no term with the question score 0 and come last, in document
// order.
func rankPassages(question string, docs [][]string, k int) []rankedPassage {
	idx := retrieve.NewBM25(retrieve.BM25Params{})
	var all []rankedPassage
	ids := map[string]int{}
	for d, ps := range docs {
		for p, t := range ps {
			id := passageID(d, p)
			ids[id] = len(all)
			all = append(all, rankedPassage{Doc: d, Text: t, Pos: p})
			idx.Add(id, lexTerms(t))
		}
	}
	if len(all) == 0 {
		return nil
	}
	q := lexTerms(question)
	hits := idx.Search(q, len(all), nil)
	out := make([]rankedPassage, 0, len(all))
	used := make([]bool, len(all))
	for _, h := range hits {
		i, ok := ids[h.ID]
		if !ok || h.Score <= 0 {
			continue
		}
		p := all[i]
		p.Score = h.Score
		out = append(out, p)
		used[i] = true
	}
	for i, p := range all {
		if !used[i] {
			out = append(out, p)
		}
	}
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out
}

func passageID(d, p int) string { return strconv.Itoa(d) + ":" + strconv.Itoa(p) }
