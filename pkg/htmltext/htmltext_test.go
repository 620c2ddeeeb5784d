package htmltext

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func parse(t *testing.T, s string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"heading and paragraphs", "<h2> 乾 卦 </h2><p>元亨，\n  利贞。</p><p>潜龙勿用</p>", "## 乾 卦\n\n元亨， 利贞。\n\n潜龙勿用"},
		{"table rows keep their cells on one line", "<table><tr><th>爻</th><th>辞</th></tr><tr><td>初九</td><td>潜龙勿用</td></tr></table>", "爻 | 辞\n\n初九 | 潜龙勿用"},
		{"pre verbatim", "<pre>a  b\n  c</pre>", "a  b\nc"},
		{"no text from scripts, styles, head, buttons, menus", "<head><title>T</title><style>p{}</style></head><body><script>x()</script><p>text</p><button>OK</button><select><option>1</option></select></body>", "text"},
		{"inline elements run on", "<p>天行<b>健</b>，<a href=x>君子</a></p>", "天行健，君子"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(parse(t, tc.in)); got != tc.want {
				t.Errorf("Text = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTitle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<html><head><title> 周易 \n 系辞 </title></head><body><h1>H</h1></body></html>", "周易 系辞"},
		{"<body><svg><title>icon</title></svg><h1>乾 <i>卦</i></h1><h1>坤</h1></body>", "乾 卦"},
		{"<body><p>none</p></body>", ""},
	} {
		if got := Title(parse(t, tc.in)); got != tc.want {
			t.Errorf("Title(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFragment(t *testing.T) {
	if got := strings.TrimSpace(Fragment("<div>天行健</div><script>x</script>")); got != "天行健" {
		t.Errorf("Fragment = %q", got)
	}
}
