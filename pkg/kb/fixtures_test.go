package kb

import (
	"archive/zip"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// updateFixtures regenerates the binary fixtures (sample.pdf, sample.docx)
// in testdata: go test ./pkg/kb -run TestFixtures -update-fixtures
var updateFixtures = flag.Bool("update-fixtures", false, "rewrite testdata/sample.pdf and sample.docx")

// makePDF writes a minimal valid PDF (1.4, Helvetica, no compression) with
// one page per entry of pages, each line shown on its own text line.
func makePDF(pages [][]string) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	n := len(pages)
	// 1 catalog, 2 pages, 3 font, then page and content pairs.
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, lines := range pages {
		var cs strings.Builder
		cs.WriteString("BT /F1 12 Tf 14 TL 72 720 Td\n")
		for _, l := range lines {
			l = strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(l)
			fmt.Fprintf(&cs, "(%s) Tj T*\n", l)
		}
		cs.WriteString("ET")
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 3 0 R >> >> >>", 5+2*i))
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", cs.Len(), cs.String()))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// makeDOCX writes a minimal Word document: paragraphs (with a style when
// the entry starts with "STYLE:") and one table.
func makeDOCX(paras []string, table [][]string) []byte {
	var body strings.Builder
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	for _, p := range paras {
		style := ""
		if s, rest, ok := strings.Cut(p, ":"); ok && strings.HasPrefix(s, "Heading") {
			style, p = s, rest
		}
		body.WriteString("<w:p>")
		if style != "" {
			body.WriteString(`<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`)
		}
		body.WriteString(`<w:r><w:t xml:space="preserve">` + esc.Replace(p) + "</w:t></w:r></w:p>")
	}
	if len(table) > 0 {
		body.WriteString("<w:tbl>")
		for _, row := range table {
			body.WriteString("<w:tr>")
			for _, cell := range row {
				body.WriteString("<w:tc><w:p><w:r><w:t>" + esc.Replace(cell) + "</w:t></w:r></w:p></w:tc>")
			}
			body.WriteString("</w:tr>")
		}
		body.WriteString("</w:tbl>")
	}
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"_rels/.rels": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
		"word/document.xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `<w:sectPr/></w:body></w:document>`,
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "_rels/.rels", "word/document.xml"} {
		w, _ := zw.Create(name)
		w.Write([]byte(files[name]))
	}
	zw.Close()
	return b.Bytes()
}

func samplePDF() []byte {
	return makePDF([][]string{
		{"The Book of Changes", "The Creative works sublime success.", "Perseverance furthers."},
		{"Second page: the Receptive brings about sublime success."},
	})
}

func sampleDOCX() []byte {
	return makeDOCX([]string{
		"Heading1:周易概述",
		"《周易》是中国最古老的经典之一。它由卦、爻和辞组成。",
		"The Zhouyi is one of the oldest Chinese classics.",
		"Heading2:乾卦",
		"乾，元亨，利贞。",
	}, [][]string{{"卦名", "卦辞"}, {"乾", "元亨利贞"}, {"坤", "元亨，利牝马之贞"}})
}

func TestFixtures(t *testing.T) {
	fixtures := map[string][]byte{"sample.pdf": samplePDF(), "sample.docx": sampleDOCX()}
	for name, want := range fixtures {
		p := filepath.Join("testdata", name)
		if *updateFixtures {
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run with -update-fixtures to create it)", err)
		}
		if name == "sample.pdf" && !bytes.Equal(got, want) {
			t.Errorf("testdata/%s is stale: run go test -run TestFixtures -update-fixtures", name)
		}
	}
}
