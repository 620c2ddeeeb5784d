package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/mixchat/mixchat/demo"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/internal/evalqa"
	"github.com/mixchat/mixchat/pkg/kb"
)

const evalFollowUpUsage = `mixchat-eval followup --zhouyi DIR [flags]

Follow-up questions as a person asks them, end to end: two-turn
conversations about the Zhouyi through the app as mixchat serve wires it
(offline defaults: hashed n-gram embedder, offline extractive model, the
offline follow-up rewrite; conversations in SQLite in a temporary folder,
the Zhouyi texts as the knowledge base "zhouyi"). Turn 1 asks a hexagram's
judgement (or a line); turn 2 is a follow-up that names nothing:

  pronoun_line   它的六二爻辞是什么？     gold: that line of the hexagram
  ellipsis_line  (turn 1 a line) 那九四呢？ gold: the other line
  pronoun_part   它的彖传怎么说？ / 它的大象是什么？
                 gold: the Tuan's first sentence / the Great Image
  swap_hexagram  坤卦呢？                 gold: that hexagram's judgement

--variants adds five wordings per hexagram: 那坤呢？ and 那九五呢？ after the
judgement, 这卦的九二爻辞是什么？, 它的大象呢？ after a line, 坤卦呢？ after
a line (gold: 坤's line at that place).

Each is asked through /chat/knowledge_base_chat and /chat/mix_chat with a
conversation_id. Reported per endpoint and type: standalone_ok (the
question the turn stored as standalone names the hexagram and the part),
answer_contains_gold (the second reply holds the gold, evalqa.ContainsGold),
refused (evalqa.IsRefusal), and for reading them turn1_gold (the first
reply holds its gold) and alone_gold (answer_contains_gold of the second
question asked without the conversation).
`

// Kinds of follow-up the eval asks.
const (
	fuPronounLine = "pronoun_line"
	fuEllipsis    = "ellipsis_line"
	fuPronounPart = "pronoun_part"
	fuSwap        = "swap_hexagram"
	// The variants (--variants): other wordings a person uses.
	fuSwapBare       = "swap_bare"            // 那坤呢？ after the judgement
	fuLineAfterJudge = "line_after_judgement" // 那九五呢？ after the judgement
	fuZheGua         = "zhe_gua_line"         // 这卦的九二爻辞是什么？
	fuPartAfterLine  = "part_after_line"      // 它的大象呢？ after a line
	fuSwapLine       = "swap_line"            // 坤卦呢？ after a line of 乾
)

// fuTypes are the types in the order the table lists them.
var fuTypes = []string{fuPronounLine, fuEllipsis, fuPronounPart, fuSwap, fuSwapBare, fuLineAfterJudge, fuZheGua, fuPartAfterLine, fuSwapLine}

// fuEndpoints are the chat endpoints a follow-up can be asked through.
var fuEndpoints = map[string]string{"kb": "/chat/knowledge_base_chat", "mix": "/chat/mix_chat"}

// fuKB is the knowledge base the Zhouyi texts go into (the demo's name).
const fuKB = "zhouyi"

// fuItem is one two-turn conversation.
type fuItem struct {
	ID, Type, Hexagram string
	Turn1, Turn2       string
	Gold1, Gold        []string
	// Names is the hexagram and Part what the standalone question must
	// hold (Part: any of them); Not, when set, what it must not (the
	// hexagram of turn 1 when turn 2 asks about another).
	Names string
	Part  []string
	Not   string
}

// fuRow is one conversation's outcome through one endpoint.
type fuRow struct {
	ID           string   `json:"id"`
	Endpoint     string   `json:"endpoint"`
	Type         string   `json:"type"`
	Hexagram     string   `json:"hexagram"`
	Turn1        string   `json:"turn1"`
	Answer1      string   `json:"answer1"`
	Turn1Gold    bool     `json:"turn1_gold"`
	Turn2        string   `json:"turn2"`
	Standalone   string   `json:"standalone"`
	Gold         []string `json:"gold"`
	Answer       string   `json:"answer"`
	StandaloneOK bool     `json:"standalone_ok"`
	Correct      bool     `json:"answer_contains_gold"`
	Refused      bool     `json:"refused"`
	// AloneAnswer is the reply to turn 2 asked without the conversation.
	AloneAnswer string `json:"alone_answer"`
	AloneGold   bool   `json:"alone_gold"`
}

// fuMetrics are the figures of a set of rows.
type fuMetrics struct {
	N                  int     `json:"n"`
	StandaloneOK       float64 `json:"standalone_ok"`
	AnswerContainsGold float64 `json:"answer_contains_gold"`
	Refused            float64 `json:"refused"`
	Turn1Gold          float64 `json:"turn1_gold"`
	// AloneGold is answer_contains_gold of turn 2 asked without the
	// conversation: what the follow-up gets without its context.
	AloneGold      float64 `json:"alone_gold"`
	AvgAnswerChars float64 `json:"avg_answer_chars"`
}

// fuEndpointReport is one endpoint's figures, in all and per type.
type fuEndpointReport struct {
	fuMetrics
	ByType map[string]fuMetrics `json:"by_type"`
}

// fuReport is the result of the eval.
type fuReport struct {
	Hexagrams  int                         `json:"hexagrams"`
	Files      int                         `json:"files"`
	Chunks     int                         `json:"chunks"`
	Model      string                      `json:"model"`
	Seconds    float64                     `json:"seconds"`
	ByEndpoint map[string]fuEndpointReport `json:"by_endpoint"`
	Rows       []fuRow                     `json:"rows,omitempty"`
}

// fuOptions are the eval's settings.
type fuOptions struct {
	zhouyi    string
	limit     int // hexagrams, spread over the 64 (0: all)
	endpoints []string
	rows      bool // keep the rows in the report
	variants  bool // ask the variants too
}

func runEvalFollowUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval followup", evalFollowUpUsage, stderr)
	var o fuOptions
	fs.StringVar(&o.zhouyi, "zhouyi", "", "folder of the Zhouyi texts (zhouyi-traditional.txt, yizhuan-simplified/)")
	fs.IntVar(&o.limit, "limit", 0, "ask about N hexagrams spread over the 64 (0 = all)")
	endpoints := fs.String("endpoints", "kb,mix", "endpoints to ask through: kb (/chat/knowledge_base_chat), mix (/chat/mix_chat)")
	fs.BoolVar(&o.variants, "variants", false, "ask five more wordings per hexagram: 那坤呢？, 那九五呢？ after the judgement, 这卦的九二爻辞是什么？, 它的大象呢？ after a line, 坤卦呢？ after a line")
	jsonOut := fs.Bool("json", false, "print one JSON object with a row per conversation and endpoint")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.zhouyi == "" {
		return errors.New("eval followup: --zhouyi DIR is required (the folder of the Zhouyi texts)")
	}
	for _, e := range strings.Split(*endpoints, ",") {
		if _, ok := fuEndpoints[strings.TrimSpace(e)]; !ok {
			return fmt.Errorf("eval followup: unknown endpoint %q (kb, mix)", e)
		}
		o.endpoints = append(o.endpoints, strings.TrimSpace(e))
	}
	o.rows = *jsonOut
	rep, err := evalFollowUps(ctx, o, stderr)
	if err != nil {
		return err
	}
	if *jsonOut {
		return printJSON(stdout, rep)
	}
	return printFollowUps(stdout, rep)
}

// evalFollowUps builds the app with the Zhouyi as its knowledge base and
// asks every conversation through every endpoint of o.
func evalFollowUps(ctx context.Context, o fuOptions, progress io.Writer) (fuReport, error) {
	start := time.Now()
	files, err := evalqa.ZhouyiFiles(o.zhouyi)
	if err != nil {
		return fuReport{}, fmt.Errorf("eval followup: %w", err)
	}
	hexes, err := evalqa.ZhouyiHexagrams(files[0].Data)
	if err != nil {
		return fuReport{}, err
	}
	items := followUpItems(hexes, o.limit, o.variants)
	_, dir, cleanup, err := evalTemp("followup")
	if err != nil {
		return fuReport{}, err
	}
	defer cleanup()
	// The offline defaults, as mixchat serve runs without a model
	// endpoint, without the demo (the knowledge base is the whole text).
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = dir, false
	a, err := startEvalLoopback(ctx, cfg, app.Options{}, &http.Client{})
	if err != nil {
		return fuReport{}, err
	}
	defer a.close()
	// The Zhouyi is read through its profile, as the demo's knowledge
	// base is.
	prof, err := demo.StructureProfile()
	if err != nil {
		return fuReport{}, err
	}
	if _, err := a.KB.Create(ctx, fuKB, kb.CreateOptions{Profile: prof.Name}); err != nil {
		return fuReport{}, err
	}
	res, err := a.KB.AddFiles(ctx, fuKB, files, kb.AddOptions{}, nil)
	if err != nil {
		return fuReport{}, fmt.Errorf("index: %w", err)
	}
	for f, err := range res.Failed {
		return fuReport{}, fmt.Errorf("index %s: %w", f, err)
	}
	// The follow-up rewrite's names are built in the background: the
	// questions start once they know the new documents.
	if err := a.WaitVocabulary(ctx); err != nil {
		return fuReport{}, err
	}
	info, err := a.KB.Info(ctx, fuKB)
	if err != nil {
		return fuReport{}, err
	}
	hexNames := map[string]bool{}
	for _, it := range items {
		hexNames[it.Hexagram] = true
	}
	rep := fuReport{Hexagrams: len(hexNames), Files: info.Files, Chunks: info.Chunks, Model: "offline",
		ByEndpoint: map[string]fuEndpointReport{}}
	for _, ep := range o.endpoints {
		var rows []fuRow
		for i, it := range items {
			row, err := a.askFollowUp(ctx, ep, it)
			if err != nil {
				return rep, fmt.Errorf("%s %s: %w", ep, it.ID, err)
			}
			rows = append(rows, row)
			if progress != nil && (i+1)%64 == 0 {
				fmt.Fprintf(progress, "%s: %d/%d conversations\n", ep, i+1, len(items))
			}
		}
		er := fuEndpointReport{fuMetrics: followUpMetrics(rows), ByType: map[string]fuMetrics{}}
		byType := map[string][]fuRow{}
		for _, r := range rows {
			byType[r.Type] = append(byType[r.Type], r)
		}
		for t, rs := range byType {
			er.ByType[t] = followUpMetrics(rs)
		}
		rep.ByEndpoint[ep] = er
		if o.rows {
			rep.Rows = append(rep.Rows, rows...)
		}
	}
	rep.Seconds = float64(time.Since(start).Milliseconds()) / 1000
	return rep, nil
}

// followUpItems are the conversations about n hexagrams spread over the
// 64 (n <= 0: all), four per hexagram, one of each type (nine with the
// variants); which line, part and other hexagram each asks follows from
// the hexagram's place.
func followUpItems(hexes []evalqa.Hexagram, n int, variants bool) []fuItem {
	if n <= 0 || n > len(hexes) {
		n = len(hexes)
	}
	var items []fuItem
	for k := 0; k < n; k++ {
		i := k * len(hexes) / n
		h := hexes[i]
		lines := sixPlaces(h)
		judgement := h.Name + "卦的卦辞是什么？"
		id := func(typ string) string { return fmt.Sprintf("%02d-%s", i+1, typ) }
		if len(lines) > 0 {
			l := lines[i%len(lines)]
			items = append(items, fuItem{ID: id(fuPronounLine), Type: fuPronounLine, Hexagram: h.Name,
				Turn1: judgement, Gold1: []string{h.Judgement}, Turn2: "它的" + l.Position + "爻辞是什么？",
				Gold: []string{l.Text}, Names: h.Name, Part: []string{l.Position}})
			l1, l2 := lines[(i+2)%len(lines)], lines[(i+3)%len(lines)]
			items = append(items, fuItem{ID: id(fuEllipsis), Type: fuEllipsis, Hexagram: h.Name,
				Turn1: h.Name + "卦的" + l1.Position + "爻辞是什么？", Gold1: []string{l1.Text}, Turn2: "那" + l2.Position + "呢？",
				Gold: []string{l2.Text}, Names: h.Name, Part: []string{l2.Position}})
		}
		part := fuItem{ID: id(fuPronounPart), Type: fuPronounPart, Hexagram: h.Name, Turn1: judgement,
			Gold1: []string{h.Judgement}, Names: h.Name}
		if tuan, _, _ := strings.Cut(h.Tuan, "。"); i%2 == 0 && tuan != "" {
			part.Turn2, part.Gold, part.Part = "它的彖传怎么说？", []string{tuan}, []string{"彖"}
		} else {
			part.Turn2, part.Gold, part.Part = "它的大象是什么？", []string{h.Image}, []string{"象"}
		}
		items = append(items, part)
		// The other hexagram of its pair in the received order (乾 → 坤,
		// 坤 → 乾, 屯 → 蒙).
		h2 := hexes[i^1]
		items = append(items, fuItem{ID: id(fuSwap), Type: fuSwap, Hexagram: h.Name, Turn1: judgement,
			Gold1: []string{h.Judgement}, Turn2: h2.Name + "卦呢？", Gold: []string{h2.Judgement},
			Names: h2.Name, Part: []string{"卦辞"}, Not: h.Name})
		if variants && len(lines) > 0 {
			items = append(items, variantItems(i, h, h2, lines, id)...)
		}
	}
	return items
}

// variantItems are the variants' conversations about h (the i-th
// hexagram, lines its six places, h2 the other of its pair).
func variantItems(i int, h, h2 evalqa.Hexagram, lines []evalqa.Line, id func(string) string) []fuItem {
	judgement := h.Name + "卦的卦辞是什么？"
	item := func(typ, turn1, gold1, turn2, gold string) fuItem {
		return fuItem{ID: id(typ), Type: typ, Hexagram: h.Name, Turn1: turn1, Gold1: []string{gold1}, Turn2: turn2,
			Gold: []string{gold}, Names: h.Name}
	}
	k := (i + 1) % len(lines)
	l, l4 := lines[k], lines[(i+4)%len(lines)]
	bare := item(fuSwapBare, judgement, h.Judgement, "那"+h2.Name+"呢？", h2.Judgement)
	bare.Names, bare.Part, bare.Not = h2.Name, []string{"卦辞"}, h.Name
	after := item(fuLineAfterJudge, judgement, h.Judgement, "那"+l4.Position+"呢？", l4.Text)
	after.Part = []string{l4.Position}
	zhe := item(fuZheGua, judgement, h.Judgement, "这卦的"+l.Position+"爻辞是什么？", l.Text)
	zhe.Part = []string{l.Position}
	part := item(fuPartAfterLine, h.Name+"卦的"+l.Position+"爻辞是什么？", l.Text, "它的大象呢？", h.Image)
	part.Part = []string{"象"}
	// The same place of h2, whose line may be 六 where h's is 九.
	var l2 evalqa.Line
	if places := sixPlaces(h2); k < len(places) {
		l2 = places[k]
	}
	swap := item(fuSwapLine, h.Name+"卦的"+l.Position+"爻辞是什么？", l.Text, h2.Name+"卦呢？", l2.Text)
	swap.Names, swap.Part, swap.Not = h2.Name, []string{l.Position, l2.Position}, h.Name
	return []fuItem{bare, after, zhe, part, swap}
}

// sixPlaces returns h's lines at its six places, bottom to top, without
// 用九/用六: a line's index is its place whatever its number.
func sixPlaces(h evalqa.Hexagram) []evalqa.Line {
	var lines []evalqa.Line
	for _, l := range h.Lines {
		if !strings.HasPrefix(l.Position, "用") {
			lines = append(lines, l)
		}
	}
	return lines
}

// fuChatReply is what the eval reads of a non-streamed reply of either
// endpoint (knowledge_base_chat's answer, mix_chat's text).
type fuChatReply struct {
	Answer string `json:"answer"`
	Text   string `json:"text"`
	Empty  bool   `json:"empty"`
}

// askFollowUp asks the item's two turns through the endpoint ep in a
// conversation of their own and scores the second.
func (a *evalApp) askFollowUp(ctx context.Context, ep string, it fuItem) (fuRow, error) {
	conv := "fu-" + ep + "-" + it.ID
	var replies [2]fuChatReply
	for t, q := range []string{it.Turn1, it.Turn2} {
		body := map[string]any{"query": q, "knowledge_base_name": fuKB, "conversation_id": conv, "stream": false}
		if err := a.postFor(ctx, fuEndpoints[ep], body, &replies[t]); err != nil {
			return fuRow{}, fmt.Errorf("turn %d: %w", t+1, err)
		}
		// The turn's background memory work is done before the next.
		if err := a.Memory.Flush(ctx); err != nil {
			return fuRow{}, err
		}
	}
	turns, err := a.Store.Turns(ctx, conv, 0)
	if err != nil {
		return fuRow{}, err
	}
	if len(turns) != 2 {
		return fuRow{}, fmt.Errorf("conversation %s holds %d turns, want 2", conv, len(turns))
	}
	standalone, _ := turns[1].Answer.Metadata.Extra["standalone"].(string)
	if standalone == "" {
		standalone = it.Turn2 // not rewritten: retrieved as asked
	}
	text := func(r fuChatReply) string { return r.Answer + r.Text }
	row := fuRow{ID: it.ID, Endpoint: ep, Type: it.Type, Hexagram: it.Hexagram, Turn1: it.Turn1, Answer1: text(replies[0]),
		Turn2: it.Turn2, Standalone: standalone, Gold: it.Gold, Answer: text(replies[1])}
	row.Turn1Gold = !evalqa.IsRefusal(row.Answer1) && evalqa.ContainsGold(row.Answer1, it.Gold1)
	row.Refused = replies[1].Empty || evalqa.IsRefusal(row.Answer)
	row.Correct = !row.Refused && evalqa.ContainsGold(row.Answer, it.Gold)
	row.StandaloneOK = it.standaloneOK(standalone)
	var alone fuChatReply
	body := map[string]any{"query": it.Turn2, "knowledge_base_name": fuKB, "stream": false}
	if err := a.postFor(ctx, fuEndpoints[ep], body, &alone); err != nil {
		return fuRow{}, fmt.Errorf("turn 2 alone: %w", err)
	}
	row.AloneAnswer = text(alone)
	row.AloneGold = !alone.Empty && !evalqa.IsRefusal(row.AloneAnswer) && evalqa.ContainsGold(row.AloneAnswer, it.Gold)
	return row, nil
}

// standaloneOK reports whether a standalone question names the item's
// hexagram and part (compared after evalqa.Normalize, which folds
// traditional characters): the name as a word (at the start or after a
// character that is not Han or is 的 or 易, and followed by 卦 or 的, so
// that neither 小履卦 nor 履小畜卦辞 names 履), the part anywhere, and not
// Not.
func (it fuItem) standaloneOK(s string) bool {
	n := evalqa.Normalize(s)
	if it.Not != "" && strings.Contains(n, evalqa.Normalize(it.Not)) {
		return false
	}
	name := evalqa.Normalize(it.Names)
	named := false
	for at := 0; !named; {
		i := strings.Index(n[at:], name)
		if i < 0 {
			return false
		}
		start, end := at+i, at+i+len(name)
		before, _ := utf8.DecodeLastRuneInString(n[:start])
		after, _ := utf8.DecodeRuneInString(n[end:])
		named = (start == 0 || !unicode.Is(unicode.Han, before) || before == '的' || before == '易') &&
			(after == '卦' || after == '的')
		at = end
	}
	for _, p := range it.Part {
		if strings.Contains(n, evalqa.Normalize(p)) {
			return true
		}
	}
	return false
}

func followUpMetrics(rows []fuRow) fuMetrics {
	m := fuMetrics{N: len(rows)}
	if len(rows) == 0 {
		return m
	}
	var ok, gold, refused, gold1, alone, chars int
	for _, r := range rows {
		ok += b2i(r.StandaloneOK)
		gold += b2i(r.Correct)
		refused += b2i(r.Refused)
		gold1 += b2i(r.Turn1Gold)
		alone += b2i(r.AloneGold)
		chars += utf8.RuneCountInString(r.Answer)
	}
	n := float64(len(rows))
	r4 := func(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }
	m.StandaloneOK, m.AnswerContainsGold, m.Refused = r4(float64(ok)/n), r4(float64(gold)/n), r4(float64(refused)/n)
	m.Turn1Gold, m.AloneGold, m.AvgAnswerChars = r4(float64(gold1)/n), r4(float64(alone)/n), r4(float64(chars)/n)
	return m
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func printFollowUps(w io.Writer, rep fuReport) error {
	fmt.Fprintf(w, "follow-ups on the Zhouyi: %d hexagrams, %d files, %d chunks, %s model, %.1fs\n\n",
		rep.Hexagrams, rep.Files, rep.Chunks, rep.Model, rep.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "endpoint\ttype\tn\tstandalone_ok\tanswer_contains_gold\trefused\tturn1_gold\talone_gold\tchars\t")
	eps := make([]string, 0, len(rep.ByEndpoint))
	for ep := range rep.ByEndpoint {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	line := func(ep, typ string, m fuMetrics) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t\n", ep, typ, m.N, m.StandaloneOK,
			m.AnswerContainsGold, m.Refused, m.Turn1Gold, m.AloneGold, m.AvgAnswerChars)
	}
	for _, ep := range eps {
		er := rep.ByEndpoint[ep]
		for _, t := range fuTypes {
			if m, ok := er.ByType[t]; ok {
				line(ep, t, m)
			}
		}
		line(ep, "all", er.fuMetrics)
	}
	return tw.Flush()
}
