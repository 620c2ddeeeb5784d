package extractive_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
)

const (
	nothingZH = "（离线抽取式模型）在已知内容中没有找到与问题相关的信息。"
	nothingEN = "(offline extractive model) Nothing in the given context is relevant to the question."
)

func readShared(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(shareddata.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ask has m answer from g, in one piece.
func ask(t testing.TB, m *extractive.Model, g llm.Grounding) llm.Response {
	t.Helper()
	resp, err := m.Generate(context.Background(), llm.Request{}, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// chunk is a knowledge base's passage: "path\ntext", cited as id.
func chunk(id int, pathAndText string) llm.Evidence {
	path, text, _ := strings.Cut(pathAndText, "\n")
	return llm.Evidence{ID: id, Path: path, Text: text, From: "kb"}
}

// document is one uncited document with a title.
func document(text string) llm.Evidence {
	return llm.Evidence{Title: "doc", Path: "doc", Text: text}
}

// passages are uncited passages without sections, one per text.
func passages(texts ...string) []llm.Evidence {
	out := make([]llm.Evidence, len(texts))
	for i, t := range texts {
		out[i] = llm.Evidence{Text: t}
	}
	return out
}

// dialog alternates user and assistant messages, the user first.
func dialog(texts ...string) []llm.Message {
	out := make([]llm.Message, len(texts))
	for i, t := range texts {
		out[i] = llm.Message{Role: llm.RoleUser, Content: t}
		if i%2 == 1 {
			out[i].Role = llm.RoleAssistant
		}
	}
	return out
}

// withDemoProfile is the model given the demo's profile, which names the
// parts of the Zhouyi that questions ask for.
func withDemoProfile(t testing.TB, o extractive.Options) *extractive.Model {
	t.Helper()
	f, err := os.Open("../../demo/zhouyi/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := docstruct.LoadProfile(f)
	if err != nil {
		t.Fatal(err)
	}
	o.Profiles = append(o.Profiles, p)
	return extractive.New(o)
}
