package lc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/textsplitter"

	"github.com/mixchat/mixchat/pkg/text"
)

// splitStats measures how chunks of the Zhouyi keep its units whole.
type splitStats struct {
	chunks, meanRunes, maxRunes int
	endsAtSentence              float64 // share of chunks ending with 。！？」 or a line end
	startsAtSentence            float64 // share of chunks starting after one of those, or at a line start
	wholeJudgements             int     // of 64 hexagrams: a chunk holds the judgement line whole
	withHeading                 int     // ... and the hexagram's heading line too
}

func (s splitStats) String() string {
	return fmt.Sprintf("%4d chunks, mean %3d / max %3d chars, %5.1f%% end / %5.1f%% start at a sentence boundary, judgement whole %2d/64, with its heading %2d/64",
		s.chunks, s.meanRunes, s.maxRunes, 100*s.endsAtSentence, 100*s.startsAtSentence, s.wholeJudgements, s.withHeading)
}

// sentenceEnd reports whether r ends a sentence.
func sentenceEnd(r rune) bool { return strings.ContainsRune("。！？」』\n", r) }

// normLines trims every line and drops the blank ones, so chunks of a
// splitter that tidies white space are found in the source.
func normLines(s string) string {
	var out []string
	for _, ln := range strings.Split(s, "\n") {
		if ln = strings.TrimSpace(ln); ln != "" {
			out = append(out, ln)
		}
	}
	return strings.Join(out, "\n")
}

// measureSplit measures the chunks of each document (chunks[i] are the
// chunks of srcs[i]); the judgement figures read the first document.
func measureSplit(chunks [][]string, srcs []string) splitStats {
	var st splitStats
	total, ends, starts := 0, 0, 0
	for d, cs := range chunks {
		src := normLines(srcs[d])
		from := 0
		for _, c := range cs {
			st.chunks++
			n := utf8.RuneCountInString(c)
			total += n
			st.maxRunes = max(st.maxRunes, n)
			c = normLines(c)
			i := strings.Index(src[from:], c)
			if i < 0 {
				i = strings.Index(src, c)
			} else {
				i += from
			}
			last, _ := utf8.DecodeLastRuneInString(c)
			if sentenceEnd(last) || (i >= 0 && (i+len(c) == len(src) || sentenceEnd(rune(src[i+len(c)])))) {
				ends++
			}
			if i >= 0 {
				prev, _ := utf8.DecodeLastRuneInString(strings.TrimRight(src[:i], " \t"))
				if i == 0 || strings.TrimSpace(src[:i]) == "" || sentenceEnd(prev) {
					starts++
				}
				from = i
			}
		}
	}
	if st.chunks > 0 {
		st.meanRunes = total / st.chunks
		st.endsAtSentence, st.startsAtSentence = float64(ends)/float64(st.chunks), float64(starts)/float64(st.chunks)
	}
	src := srcs[0]
	lines := strings.Split(src, "\n")
	for i, ln := range lines {
		if !strings.HasPrefix(ln, "《易經》第") {
			continue
		}
		j := i + 1
		for j < len(lines)-1 && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		judgement := strings.TrimSpace(lines[j])
		whole, head := false, false
		for _, c := range chunks[0] {
			if strings.Contains(c, judgement) {
				whole = true
				head = head || strings.Contains(c, strings.TrimSpace(ln))
			}
		}
		if whole {
			st.wholeJudgements++
		}
		if head {
			st.withHeading++
		}
	}
	return st
}

// TestSplittersOnZhouyi compares langchaingo's recursive character
// splitter with mixchat's (pkg/text) on the Zhouyi at the knowledge bases'
// settings (250 characters, overlap 50): docs/architecture.md reports these
// figures (go test -run SplittersOnZhouyi -v ./pkg/lc/).
func TestSplittersOnZhouyi(t *testing.T) {
	b, err := os.ReadFile("../../demo/zhouyi/zhouyi-traditional.txt")
	if err != nil {
		t.Fatal(err)
	}
	wings, err := filepath.Glob("../../demo/zhouyi/yizhuan-simplified/*.txt")
	if err != nil || len(wings) == 0 {
		t.Fatalf("Ten Wings texts: %v", err)
	}
	var yz []string
	for _, w := range wings {
		wb, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		yz = append(yz, strings.ReplaceAll(string(wb), "\r\n", "\n"))
	}
	runes := textsplitter.WithLenFunc(utf8.RuneCountInString)
	size, overlap := textsplitter.WithChunkSize(250), textsplitter.WithChunkOverlap(50)
	splitters := []struct {
		name  string
		split func(string) []string
	}{
		{"langchaingo default separators", lcSplitter(t, textsplitter.NewRecursiveCharacter(size, overlap, runes))},
		{"langchaingo Chinese separators", lcSplitter(t, textsplitter.NewRecursiveCharacter(size, overlap, runes,
			textsplitter.WithSeparators([]string{"\n\n", "\n", "。", "！", "？", "；", "，", ""}), textsplitter.WithKeepSeparator(true)))},
		{"mixchat pkg/text", func(src string) []string {
			var out []string
			for _, c := range (text.Splitter{Size: 250, Overlap: 50}).Split(src) {
				out = append(out, c.Text)
			}
			return out
		}},
	}
	results := map[string][2]splitStats{}
	for _, corpus := range []struct {
		name string
		docs []string
	}{
		{"zhouyi-traditional.txt", []string{strings.ReplaceAll(string(b), "\r\n", "\n")}},
		{"yizhuan-simplified (168 files)", yz},
	} {
		for _, s := range splitters {
			var chunks [][]string
			for _, d := range corpus.docs {
				chunks = append(chunks, s.split(d))
			}
			st := measureSplit(chunks, corpus.docs)
			r := results[s.name]
			if len(corpus.docs) == 1 {
				r[0] = st
			} else {
				r[1] = st
			}
			results[s.name] = r
			t.Logf("%-30s %-31s %v", corpus.name, s.name, st)
		}
	}
	// The decision rests on the knowledge base's main document: there
	// pkg/text must keep at least as many chunks on sentence boundaries.
	mine, theirs := results["mixchat pkg/text"][0], results["langchaingo Chinese separators"][0]
	if mine.endsAtSentence+mine.startsAtSentence < theirs.endsAtSentence+theirs.startsAtSentence || mine.withHeading < theirs.withHeading {
		t.Errorf("on the Zhouyi pkg/text keeps fewer chunks on sentence boundaries than langchaingo's splitter: reconsider the choice in docs/architecture.md")
	}
}

func lcSplitter(t *testing.T, s textsplitter.RecursiveCharacter) func(string) []string {
	return func(src string) []string {
		out, err := s.SplitText(src)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}
