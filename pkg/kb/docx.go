package kb

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// This file is the .docx loader: word/document.xml read from the archive,
// no more than MaxDecompressedBytes of it.

// MaxDecompressedBytes bounds what one document may decompress to (a
// .docx's word/document.xml): a zip bomb, a few kilobytes that inflate to
// gigabytes, is refused with ErrTooLarge instead of filling memory and
// keeping a core busy.
const MaxDecompressedBytes = 64 << 20

// LoadDOCX loads a Word document's paragraphs and tables. Paragraphs with a
// heading style (Heading1.., Title, 标题) become "#" lines.
//
// It reads word/document.xml with encoding/xml rather than a DOCX library:
// the maintained Go DOCX readers are AGPL-licensed (fumiama/go-docx) or expose
// only raw XML for find-and-replace (nguyenthenguyen/docx), and text
// extraction needs only the w:p, w:t and w:tbl elements.
func LoadDOCX(data []byte) ([]Document, error) { return loadDOCX(context.Background(), data) }

func loadDOCX(ctx context.Context, data []byte) ([]Document, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: docx is not a zip archive: %v", ErrCorrupt, err)
	}
	var doc *zip.File
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			doc = f
			break
		}
	}
	if doc == nil {
		return nil, fmt.Errorf("%w: docx has no word/document.xml", ErrCorrupt)
	}
	tooLarge := fmt.Errorf("%w: docx: word/document.xml decompresses to more than %d MB (the limit per document)", ErrTooLarge, MaxDecompressedBytes>>20)
	if doc.UncompressedSize64 > MaxDecompressedBytes {
		return nil, tooLarge
	}
	rc, err := doc.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: docx: %v", ErrCorrupt, err)
	}
	defer rc.Close()
	// The size in the archive's directory may lie: count what comes out.
	lr := &capReader{ctx: ctx, r: rc, left: MaxDecompressedBytes}
	text, err := docxText(lr)
	switch {
	case lr.over:
		return nil, tooLarge
	case context.Cause(ctx) != nil:
		return nil, context.Cause(ctx)
	case err != nil:
		return nil, fmt.Errorf("%w: docx: %v", ErrCorrupt, err)
	}
	return []Document{{Text: text}}, nil
}

// capReader reads at most left bytes of r (over is set when r holds more)
// and stops when ctx is done.
type capReader struct {
	ctx  context.Context
	r    io.Reader
	left int64
	over bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	if c.left <= 0 {
		// One byte more than allowed tells a full file from a larger one.
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			c.over = true
			return 0, errors.New("decompressed size over the limit")
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// docxText walks WordprocessingML and returns its text.
func docxText(r io.Reader) (string, error) {
	dec := xml.NewDecoder(r)
	dec.Strict = false
	var (
		out     strings.Builder
		para    strings.Builder
		heading int  // heading level of the current paragraph
		inText  bool // inside w:t
		cells   []string
		depth   int // table nesting
		inCell  bool
		cell    strings.Builder
	)
	endPara := func() {
		t := strings.TrimSpace(para.String())
		para.Reset()
		if inCell {
			if cell.Len() > 0 && t != "" {
				cell.WriteByte(' ')
			}
			cell.WriteString(t)
			return
		}
		if t == "" {
			heading = 0
			return
		}
		if heading > 0 {
			out.WriteString("\n" + strings.Repeat("#", min(heading, 6)) + " " + t + "\n\n")
		} else {
			out.WriteString(t + "\n\n")
		}
		heading = 0
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				para.WriteByte('\t')
			case "br", "cr":
				para.WriteByte('\n')
			case "pStyle":
				for _, a := range t.Attr {
					if a.Name.Local == "val" {
						heading = headingLevel(a.Value)
					}
				}
			case "outlineLvl":
				for _, a := range t.Attr {
					if a.Name.Local == "val" {
						if n, err := strconv.Atoi(a.Value); err == nil && n >= 0 && n < 9 && heading == 0 {
							heading = n + 1
						}
					}
				}
			case "tbl":
				depth++
			case "tr":
				cells = cells[:0]
			case "tc":
				inCell = true
				cell.Reset()
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				endPara()
			case "tc":
				inCell = false
				cells = append(cells, strings.TrimSpace(cell.String()))
			case "tr":
				if row := strings.TrimSpace(strings.Join(cells, " | ")); strings.Trim(row, "| ") != "" {
					out.WriteString(row + "\n")
				}
			case "tbl":
				depth--
				out.WriteString("\n")
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		}
	}
	return out.String(), nil
}

// headingLevel maps a paragraph style id to a heading level (0: none).
func headingLevel(style string) int {
	s := strings.ToLower(strings.ReplaceAll(style, " ", ""))
	switch {
	case s == "title" || s == "标题":
		return 1
	case strings.HasPrefix(s, "heading"):
		s = strings.TrimPrefix(s, "heading")
	case strings.HasPrefix(s, "标题"):
		s = strings.TrimPrefix(s, "标题")
	default:
		return 0
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= 9 {
		return n
	}
	return 0
}
