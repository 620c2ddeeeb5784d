package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/evalqa"
	"github.com/mixchat/mixchat/internal/shareddata"
)

// TestEvalFollowUp asks the follow-ups about three hexagrams (乾, 贲, 夬)
// through both endpoints: every figure is computed over the rows, and the
// ellipsis on 乾 (九三, then 那九四呢？) is rewritten and answered.
func TestEvalFollowUp(t *testing.T) {
	dir := shareddata.Path(t, "zhouyi")
	rep, err := evalFollowUps(context.Background(), fuOptions{zhouyi: dir, limit: 3, endpoints: []string{"kb", "mix"}, rows: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Hexagrams != 3 || rep.Chunks == 0 || len(rep.Rows) != 2*3*4 {
		t.Fatalf("report: %d hexagrams, %d chunks, %d rows; want 3 hexagrams, chunks, 24 rows", rep.Hexagrams, rep.Chunks, len(rep.Rows))
	}
	for _, ep := range []string{"kb", "mix"} {
		er, ok := rep.ByEndpoint[ep]
		if !ok || er.N != 12 || len(er.ByType) != 4 {
			t.Fatalf("%s: %+v; want 12 conversations of 4 types", ep, er)
		}
		// The figures are the rows' shares.
		var ok2, gold, alone int
		for _, r := range rep.Rows {
			if r.Endpoint == ep {
				ok2 += b2i(r.StandaloneOK)
				gold += b2i(r.Correct)
				alone += b2i(r.AloneGold)
			}
		}
		if want := float64(ok2) / 12; er.StandaloneOK < want-0.001 || er.StandaloneOK > want+0.001 {
			t.Errorf("%s: standalone_ok %.4f, rows say %.4f", ep, er.StandaloneOK, want)
		}
		if want := float64(gold) / 12; er.AnswerContainsGold < want-0.001 || er.AnswerContainsGold > want+0.001 {
			t.Errorf("%s: answer_contains_gold %.4f, rows say %.4f", ep, er.AnswerContainsGold, want)
		}
		if want := float64(alone) / 12; er.AloneGold < want-0.001 || er.AloneGold > want+0.001 {
			t.Errorf("%s: alone_gold %.4f, rows say %.4f", ep, er.AloneGold, want)
		}
	}
	found := 0
	for _, r := range rep.Rows {
		if r.ID != "01-"+fuEllipsis {
			continue
		}
		found++
		if r.Turn2 != "那九四呢？" || !r.StandaloneOK || !r.Correct || r.Refused || !strings.Contains(r.Standalone, "九四") {
			t.Errorf("%s 乾 ellipsis: %+v; want 那九四呢？ rewritten to 乾卦's 九四 and answered with 或跃在渊", r.Endpoint, r)
		}
	}
	if found != 2 {
		t.Errorf("乾 ellipsis rows: %d, want one per endpoint", found)
	}

	// The command prints the table.
	var out bytes.Buffer
	if err := run(context.Background(), []string{"followup", "--zhouyi", dir, "--limit", "1", "--endpoints", "kb"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"standalone_ok", "alone_gold", fuPronounLine, fuEllipsis, fuPronounPart, fuSwap, "all"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestStandaloneOK: the standalone question must name the hexagram as a
// word, hold the part, and not keep the hexagram of turn 1.
func TestStandaloneOK(t *testing.T) {
	for _, tt := range []struct {
		it   fuItem
		s    string
		want bool
	}{
		{fuItem{Names: "坤", Part: []string{"卦辞"}, Not: "乾"}, "坤卦的卦辞是什么？", true},
		{fuItem{Names: "坤", Part: []string{"卦辞"}, Not: "乾"}, "乾卦的卦辞是什么？坤卦呢？", false},
		{fuItem{Names: "履", Part: []string{"卦辞"}, Not: "小畜"}, "小履卦的卦辞是什么？", false},
		{fuItem{Names: "小畜", Part: []string{"卦辞"}, Not: "履"}, "履小畜卦辞是什么？", false},
		{fuItem{Names: "乾", Part: []string{"九四"}}, "周易乾卦的九四爻辞是什么？", true},
		{fuItem{Names: "乾", Part: []string{"九四"}}, "乾卦的九三爻辞是什么？", false},
		{fuItem{Names: "乾", Part: []string{"彖"}}, "它的彖传怎么说？", false},
		{fuItem{Names: "遁", Part: []string{"象"}}, "遯卦的大象是什么？", true}, // traditional folded
		{fuItem{Names: "坤", Part: []string{"卦辞"}, Not: "乾"}, "坤的卦辞是什么？", true},
		{fuItem{Names: "乾", Part: []string{"九四"}}, "乾乾的九四", false},
	} {
		if got := tt.it.standaloneOK(tt.s); got != tt.want {
			t.Errorf("%+v standaloneOK(%q) = %v, want %v", tt.it, tt.s, got, tt.want)
		}
	}
}

// TestFollowUpVariants: the variants about 乾 ask what they say, with the
// gold of the right line (坤's 六二 where 乾 has 九二; the text writes 见龙再田).
func TestFollowUpVariants(t *testing.T) {
	files, err := evalqa.ZhouyiFiles(shareddata.Path(t, "zhouyi"))
	if err != nil {
		t.Fatal(err)
	}
	hexes, err := evalqa.ZhouyiHexagrams(files[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	if items := followUpItems(hexes, 2, false); len(items) != 8 || items[4].Hexagram != hexes[32].Name {
		t.Fatalf("2 hexagrams without variants: %d items, the fifth about %q; want 8, the fifth about %s", len(items), items[4].Hexagram, hexes[32].Name)
	}
	items := followUpItems(hexes, 1, true)
	want := map[string][2]string{ // type → turn 2, gold (folded)
		fuSwapBare:       {"那坤呢？", "坤，元亨，利牝马之贞"},
		fuLineAfterJudge: {"那九五呢？", "飞龙在天，利见大人"},
		fuZheGua:         {"这卦的九二爻辞是什么？", "见龙再田，利见大人"},
		fuPartAfterLine:  {"它的大象呢？", "天行健，君子以自强不息"},
		fuSwapLine:       {"坤卦呢？", "直，方，大，不习无不利"},
	}
	if len(items) != 4+len(want) {
		t.Fatalf("乾 with variants: %d items, want %d", len(items), 4+len(want))
	}
	for _, it := range items[4:] {
		w, ok := want[it.Type]
		if !ok || it.Turn2 != w[0] || len(it.Gold) != 1 || !strings.Contains(evalqa.Normalize(it.Gold[0]), evalqa.Normalize(w[1])) {
			t.Errorf("%s: turn 2 %q, gold %q; want %q, %q", it.Type, it.Turn2, it.Gold, w[0], w[1])
		}
	}
}
