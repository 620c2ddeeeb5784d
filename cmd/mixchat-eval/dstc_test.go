package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/evalqa"
)

// TestLoadDSTC reads the fixture (testdata/dstc: two hotels, a restaurant,
// four dialogues of which three need knowledge).
func TestLoadDSTC(t *testing.T) {
	files, items, questions, err := loadDSTC("testdata/dstc", false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if want := []string{"MAPLE INN.md", "HARBOUR VIEW HOTEL.md", "LEMON TREE KITCHEN.md"}; !reflect.DeepEqual(names, want) {
		t.Errorf("documents %q, want %q", names, want)
	}
	doc := string(files[0].Data)
	for _, want := range []string{"# MAPLE INN\n", "MAPLE INN is a hotel.", "Q: Is there free parking at Maple Inn?\nA: Yes, parking at Maple Inn is free for guests.",
		"### Review 1 (Couples)\n\nWe loved our stay at Maple Inn. The garden behind the inn was quiet and full of roses."} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
	if len(questions) != 4 {
		t.Errorf("%d FAQ questions, want 4", len(questions))
	}
	if len(items) != 3 {
		t.Fatalf("%d dialogues, want the 3 that need knowledge", len(items))
	}
	want := []dstcItem{
		{ID: 0, History: []string{"I need a hotel with free parking.", "Maple Inn has free parking."}, Question: "Can I bring my dog there?",
			Files: []string{"MAPLE INN.md"}, FAQs: []string{"No, pets are not allowed at Maple Inn."}},
		{ID: 2, History: []string{"Tell me about Harbour View Hotel.", "It is a hotel by the water."}, Question: "Is the view of the harbour nice?",
			Files: []string{"HARBOUR VIEW HOTEL.md"}, Reviews: []string{"The windows look straight over the boats in the harbour."}},
		{ID: 3, Question: "Any vegan food at Lemon Tree Kitchen?", Files: []string{"LEMON TREE KITCHEN.md"},
			FAQs: []string{"Lemon Tree Kitchen offers several vegan dishes every day."}, Reviews: []string{"The lentil soup at Lemon Tree Kitchen was rich and spicy."}},
	}
	if !reflect.DeepEqual(items, want) {
		t.Errorf("dialogues:\n%+v\nwant\n%+v", items, want)
	}
	if _, faq, _, err := loadDSTC("testdata/dstc", true); err != nil || len(faq) != 2 {
		t.Errorf("--faq: %d dialogues (%v), want 2", len(faq), err)
	}
}

func TestDSTCScores(t *testing.T) {
	for _, tt := range []struct {
		reply, gold string
		want        bool
	}{
		{"No, pets are not allowed at Maple Inn [1].", "No, pets are not allowed at Maple Inn.", true},
		{"Pets are not allowed.", "No, pets are not allowed at Maple Inn.", false}, // 2 of 4: pets, allowed, maple, inn
		{"Pets allowed at Maple.", "No, pets are not allowed at Maple Inn.", true}, // 3 of 4
		{"Yes.", "Yes.", false}, // no content words
	} {
		if got := covered(tt.reply, tt.gold); got != tt.want {
			t.Errorf("covered(%q, %q) = %v, want %v", tt.reply, tt.gold, got, tt.want)
		}
	}
	it := dstcItem{Files: []string{"MAPLE INN.md"}, FAQs: []string{"No, pets are not allowed at Maple Inn."},
		Reviews: []string{"The garden behind the inn was quiet and full of roses."}}
	normQ := []string{evalqa.Normalize("Do you allow pets?")}
	for _, tt := range []struct {
		name  string
		reply string
		top1  string
		empty bool
		want  dstcRow
	}{
		{"faq answer", "No, pets are not allowed at Maple Inn [1].", "MAPLE INN.md", false,
			dstcRow{Gold: true, FAQ: true, HasFAQ: true, Entity: true}},
		{"review", "The garden was quiet and full of roses [2].", "MAPLE INN.md", false,
			dstcRow{Gold: true, HasFAQ: true, Entity: true}},
		{"a question quoted", "Q: Do you allow pets [1]?", "HARBOUR VIEW HOTEL.md", false,
			dstcRow{QuotesFAQ: true, HasFAQ: true}},
		{"refused", "(offline extractive model) Nothing in the given context is relevant to the question.", "MAPLE INN.md", false,
			dstcRow{Refused: true, HasFAQ: true, Entity: true}},
		{"nothing found", "The knowledge base has nothing relevant to the question.", "", true,
			dstcRow{Refused: true, HasFAQ: true}},
	} {
		row := dstcRow{Answer: tt.reply, Top1: tt.top1}
		scoreDSTC(&row, it, tt.empty, normQ)
		got := dstcRow{Gold: row.Gold, FAQ: row.FAQ, HasFAQ: row.HasFAQ, Entity: row.Entity, Refused: row.Refused, QuotesFAQ: row.QuotesFAQ}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	m := dstcScore([]dstcRow{{Gold: true, FAQ: true, HasFAQ: true, Entity: true}, {HasFAQ: true, Refused: true}, {Gold: true, QuotesFAQ: true}, {}})
	want := dstcMetrics{Dialogues: 4, GoldInReply: 0.5, FAQAnswer: 0.25, NFAQ: 2, FAQAnswerOfFAQ: 0.5, EntityTop1: 0.25, Refused: 0.25, QuotesAQuestion: 0.25}
	if m != want {
		t.Errorf("dstcScore: %+v, want %+v", m, want)
	}
}

// TestEvalDSTCSmoke runs the eval end to end on the fixture and prints
// its JSON and its table.
func TestEvalDSTCSmoke(t *testing.T) {
	rep, err := evalDSTC(context.Background(), "testdata/dstc", 0, false, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Places != 3 || rep.Dialogues != 3 || len(rep.Rows) != 3 || rep.Chunks == 0 {
		t.Fatalf("report: %d places, %d dialogues, %d rows, %d chunks", rep.Places, rep.Dialogues, len(rep.Rows), rep.Chunks)
	}
	for _, r := range rep.Rows {
		if r.Answer == "" {
			t.Errorf("dialogue %d: no answer", r.ID)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"dstc", "--data", "testdata/dstc", "--json", "--limit", "2"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil || decoded["dialogues"] != 2.0 {
		t.Errorf("--json --limit 2: %v, dialogues %v", err, decoded["dialogues"])
	}
	for _, k := range []string{"gold_knowledge_in_reply", "faq_answer_in_reply", "entity_top1", "refused", "quotes_a_question"} {
		if _, ok := decoded[k]; !ok {
			t.Errorf("JSON lacks %s", k)
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"dstc", "--data", "testdata/dstc"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "gold_knowledge_in_reply") || !strings.Contains(out.String(), "3 dialogues") {
		t.Errorf("table:\n%s", out.String())
	}
}
