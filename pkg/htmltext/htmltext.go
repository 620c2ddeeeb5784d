// Package htmltext extracts readable text from parsed HTML: the one walker
// that the knowledge-base loaders and search's page reading share.
//
// The text keeps the structure a reader (and a text splitter) needs:
// headings as Markdown "#" lines, block elements on lines of their own,
// paragraphs apart, table cells separated by " | ", <pre> verbatim, and
// nothing from elements that hold no readable text (scripts, styles, the
// head, forms' buttons and menus).
package htmltext

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skip hold no readable text.
var skip = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true,
	atom.Iframe: true, atom.Head: true, atom.Object: true, atom.Canvas: true, atom.Button: true,
	atom.Select: true,
}

// block break lines.
var block = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true, atom.Header: true,
	atom.Footer: true, atom.Li: true, atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Dt: true, atom.Dd: true,
	atom.Tr: true, atom.Table: true, atom.Blockquote: true, atom.Pre: true, atom.Br: true, atom.Hr: true,
	atom.Figure: true, atom.Figcaption: true, atom.Address: true, atom.Aside: true, atom.Form: true,
	atom.Fieldset: true, atom.Details: true, atom.Summary: true, atom.Tbody: true, atom.Thead: true,
	atom.Tfoot: true, atom.Caption: true, atom.Nav: true,
}

// headingLevel is 1 to 6 for <h1> to <h6>, else 0.
func headingLevel(n *html.Node) int {
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return int(n.Data[1] - '0')
	}
	return 0
}

// Write writes the readable text under n to b, untidied: white space within
// text collapsed as a browser renders it, but blank lines and the spaces
// around line breaks left for Text (or the caller) to tidy.
func Write(b *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		b.WriteString(collapseSpace(n.Data))
		return
	case html.CommentNode:
		return
	case html.ElementNode:
		if skip[n.DataAtom] {
			return
		}
		if lvl := headingLevel(n); lvl > 0 {
			var h strings.Builder
			writeChildren(&h, n)
			if t := strings.Join(strings.Fields(h.String()), " "); t != "" {
				b.WriteString("\n\n" + strings.Repeat("#", lvl) + " " + t + "\n\n")
			}
			return
		}
		switch n.DataAtom {
		case atom.Td, atom.Th:
			b.WriteString(" | ")
		case atom.Pre:
			b.WriteString("\n" + rawText(n) + "\n")
			return
		}
		if block[n.DataAtom] {
			b.WriteString("\n")
			if n.DataAtom == atom.P {
				b.WriteString("\n")
			}
		}
		writeChildren(b, n)
		if block[n.DataAtom] {
			b.WriteString("\n")
		}
		return
	}
	writeChildren(b, n)
}

func writeChildren(b *strings.Builder, n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		Write(b, c)
	}
}

// Text returns the readable text of nodes (see Write), tidied: lines
// trimmed, a row's leading cell separator dropped, runs of blank lines
// collapsed to one.
func Text(nodes ...*html.Node) string {
	var b strings.Builder
	for _, n := range nodes {
		Write(&b, n)
	}
	return tidyLines(b.String())
}

// Fragment returns the readable text of an HTML fragment (as in a Markdown
// HTML block); "" when it does not parse.
func Fragment(s string) string {
	nodes, err := html.ParseFragment(strings.NewReader(s), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, n := range nodes {
		Write(&b, n)
	}
	return b.String()
}

// Title returns the document's <title>, or its first <h1>, on one line.
func Title(doc *html.Node) string {
	var title, h1 string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch {
			case n.DataAtom == atom.Title && title == "":
				title = strings.Join(strings.Fields(rawText(n)), " ")
			case n.DataAtom == atom.H1 && h1 == "":
				var b strings.Builder
				writeChildren(&b, n)
				h1 = strings.Join(strings.Fields(b.String()), " ")
			case n.DataAtom == atom.Svg:
				return // its <title> is not the page's
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if title != "" {
		return title
	}
	return h1
}

// rawText is the text under n as it stands.
func rawText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// collapseSpace collapses runs of white space (HTML rendering rules) to one
// space.
func collapseSpace(s string) string {
	if strings.TrimSpace(s) == "" {
		if s == "" {
			return ""
		}
		return " "
	}
	lead := unicode.IsSpace(rune(s[0]))
	trail := unicode.IsSpace(rune(s[len(s)-1]))
	out := strings.Join(strings.Fields(s), " ")
	if lead {
		out = " " + out
	}
	if trail {
		out += " "
	}
	return out
}

// tidyLines trims every line and collapses runs of blank lines to one.
func tidyLines(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "| ")
		if l == "" || l == "|" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
