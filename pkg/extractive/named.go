package extractive

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file holds what profiles (docstruct.Profile, data shipped with a
// domain's documents) tell the reader about parts named rather than
// numbered: the classifiers that follow a part's name ("NAME" + classifier),
// the kinds of sub-parts a question asks for by name, with their other
// names, and the named positions of numbered lines. The code names no
// domain; without a profile none of this reading happens.

// vocab is the reading vocabulary of the profiles a model is given.
type vocab struct {
	profiles    []*docstruct.Profile
	classifiers []string
	kinds       map[string]string // a kind's name or alias (folded) → its name
	kindAliases map[string][]string
	positions   map[string]docstruct.Position // a position's name (folded) → it
	// part reads "NAME<classifier>的<kind or position>"; whole
	// "NAME<classifier>是什么？"; line a line labelled with a position;
	// asksIn "哪一<classifier>".
	part, whole, line, asksIn *regexp.Regexp
}

// newVocab reads profiles into a vocabulary; nil when they give no
// classifier (nothing is then named that way).
func newVocab(ps []*docstruct.Profile) *vocab {
	nm := &vocab{kinds: map[string]string{}, kindAliases: map[string][]string{}, positions: map[string]docstruct.Position{}}
	var kindAlt, posAlt []string
	for _, p := range ps {
		if p == nil {
			continue
		}
		p.MatchFileName("") // compiles its forms now: later reads only read them
		nm.profiles = append(nm.profiles, p)
		nm.classifiers = append(nm.classifiers, p.Classifiers...)
		for _, k := range p.Kinds {
			for _, a := range append([]string{k.Name}, k.Aliases...) {
				nm.kinds[text.Fold(a)] = k.Name
				nm.kindAliases[k.Name] = append(nm.kindAliases[k.Name], a)
				kindAlt = append(kindAlt, regexp.QuoteMeta(text.Fold(a)))
			}
		}
		for _, pos := range p.Positions {
			for _, n := range pos.Names {
				nm.positions[text.Fold(n)] = pos
				posAlt = append(posAlt, regexp.QuoteMeta(text.Fold(n)))
			}
		}
	}
	if len(nm.classifiers) == 0 || len(kindAlt)+len(posAlt) == 0 {
		return nil
	}
	longestFirst := func(a, b string) int { return cmp.Compare(len(b), len(a)) }
	slices.SortFunc(kindAlt, longestFirst)
	slices.SortFunc(posAlt, longestFirst)
	var cls []string
	for _, c := range nm.classifiers {
		cls = append(cls, regexp.QuoteMeta(text.Fold(c)))
	}
	c := "(?:" + strings.Join(cls, "|") + ")"
	alt := strings.Join(append(append([]string{}, kindAlt...), posAlt...), "|")
	nm.part = regexp.MustCompile(c + `(?:的|之)?(` + alt + `)`)
	nm.whole = regexp.MustCompile(`^(?:什么是|何为|何谓|请问|介绍一下|介绍)?\p{Han}{1,2}(` + c + `)(?:是什么` + c + `|是什么|是啥|讲什么|说什么|指什么|的意思|是什么意思)?[？?。！!]*$`)
	if len(posAlt) > 0 {
		nm.line = regexp.MustCompile(`^(` + strings.Join(posAlt, "|") + `)[：:，]`)
	}
	nm.asksIn = regexp.MustCompile(`(?:哪一|哪个|哪|何|什么)` + c)
	return nm
}

// classifier is the first classifier of the profiles, the one a reply
// names a part with ("乾" + classifier).
func (nm *vocab) classifier() string { return nm.classifiers[0] }

// lineLabelled is the position a line starts with, "" for none.
func (nm *vocab) lineLabelled(l string) string {
	if nm.line == nil {
		return ""
	}
	if m := nm.line.FindStringSubmatch(text.Fold(l)); m != nil {
		return m[1]
	}
	return ""
}

// partName is the name of the part a section path is in, by a classifier
// (simplified): a heading labelled with a classifier and a name, or a
// file name one of the profiles' file-name forms reads. heading reports
// the former.
func (nm *vocab) partName(path string) (name string, heading bool) {
	segs := strings.Split(path, " > ")
	for i := len(segs) - 1; i >= 0; i-- {
		seg := strings.TrimSpace(text.Fold(segs[i]))
		if lb, ok := headingLabel(seg); ok && slices.ContainsFunc(nm.classifiers, func(c string) bool { return text.Fold(c) == lb.Kind }) {
			if n := shortName(lb.Name); n != "" && utf8.RuneCountInString(n) <= 2 {
				return n, true
			}
			continue
		}
		for _, p := range nm.profiles {
			if n, _, ok := p.MatchFileName(seg); ok && n != "" {
				return text.Fold(n), false
			}
		}
	}
	return "", false
}

// askedPart reads a (folded) question asking for a named sub-part of a
// named part ("NAME<classifier>的<kind or position>"): the sub-part as
// asked, and what the question says before it, the part's name at its end.
func (nm *vocab) askedPart(fq string) (part string, before []rune, ok bool) {
	fq = strings.NewReplacer("《", "", "》", "", " ", "").Replace(fq)
	m := nm.part.FindStringSubmatchIndex(fq)
	if m == nil {
		return "", nil, false
	}
	return fq[m[2]:m[3]], []rune(fq[:m[0]]), true
}

// readNamed answers "NAME<classifier>的<kind>/<position>是什么？" and
// "NAME<classifier>是什么？" from the lines of the part so named: a
// position is its labelled line; a kind is the line labelled 《kind》 that
// follows the part's opening (or another kind's line) directly, else the
// first line of a file named for that kind, else, for a kind no line is
// labelled with, the part's opening (the line that starts with its name).
func (nm *vocab) readNamed(fq string, lines []ctxLine) (string, bool) {
	part, before, ok := nm.askedPart(fq)
	if !ok {
		fq = strings.NewReplacer("《", "", "》", "", " ", "").Replace(fq)
		m := nm.whole.FindStringSubmatchIndex(fq)
		if m == nil {
			return "", false
		}
		part, before = "", []rune(fq[:m[2]])
	}
	var name string
	for n := min(2, len(before)); n >= 1 && name == ""; n-- {
		cand := string(before[len(before)-n:])
		for _, l := range lines {
			if pn, _ := nm.partName(l.path); pn == cand {
				name = cand
				break
			}
		}
	}
	if name == "" {
		return "", false
	}
	in := func(l ctxLine) bool { pn, _ := nm.partName(l.path); return pn == name }
	reply := func(l ctxLine) (string, bool) { return withCite(l.text, l.cite), true }
	opening := func(l ctxLine) bool {
		return in(l) && strings.HasPrefix(text.Fold(l.text), name) && !strings.HasPrefix(l.text, "《")
	}
	if part == "" {
		for _, l := range lines {
			if _, h := nm.partName(l.path); h && opening(l) {
				return lastSegment(l.path) + "\n" + withCite(l.text, l.cite), true
			}
		}
		for _, l := range lines { // the opening was not found: the heading says what it is
			if _, h := nm.partName(l.path); h && in(l) {
				return withCite(lastSegment(l.path), l.cite), true
			}
		}
		return "", false
	}
	if pos, isPos := nm.positions[part]; isPos {
		return nm.readPosition(name, part, pos, lines, in)
	}
	kind := nm.kinds[part]
	aliases := nm.kindAliases[kind]
	labelled := func(l string) bool {
		for _, a := range aliases {
			if strings.HasPrefix(text.Fold(l), "《"+text.Fold(a)+"》") {
				return true
			}
		}
		return false
	}
	anyLabelled := false
	for i, l := range lines {
		if !labelled(l.text) {
			continue
		}
		anyLabelled = true
		if !in(l) || i == 0 || lines[i-1].entry != l.entry {
			continue
		}
		if prev := lines[i-1]; opening(prev) || (strings.HasPrefix(prev.text, "《") && nm.lineLabelled(prev.text) == "") {
			return reply(l)
		}
	}
	file := func(l ctxLine) bool {
		seg := text.Fold(lastSegment(l.path))
		for _, a := range aliases {
			if strings.HasPrefix(seg, text.Fold(a)) {
				return true
			}
		}
		return false
	}
	for i, l := range lines {
		if in(l) && file(l) && (i == 0 || lines[i-1].entry != l.entry) {
			return reply(l)
		}
	}
	for i, l := range lines { // a chunk that starts with it
		if in(l) && labelled(l.text) && (i == 0 || lines[i-1].entry != l.entry || nm.lineLabelled(lines[i-1].text) == "") {
			return reply(l)
		}
	}
	if !anyLabelled {
		for _, l := range lines {
			if opening(l) {
				return reply(l)
			}
		}
	}
	return "", false
}

// readPosition answers for the line at a named position of the part name:
// the line labelled so (the longest, as a chunk may cut it), else the line
// at that position labelled otherwise, saying the part has no line of the
// name asked when that name labels lines elsewhere; never another part's
// line. Empty with true when the part is here and that line is not.
func (nm *vocab) readPosition(name, part string, pos docstruct.Position, lines []ctxLine, in func(ctxLine) bool) (string, bool) {
	best, at, labelsElsewhere := -1, -1, false
	for i, l := range lines {
		lp := nm.lineLabelled(l.text)
		if lp == "" {
			continue
		}
		if lp == part {
			labelsElsewhere = true
		}
		if !in(l) {
			continue
		}
		if lp == part && (best < 0 || len(l.text) > len(lines[best].text)) {
			best = i
		}
		if p := nm.positions[lp]; at < 0 && p.Kind == pos.Kind && p.Number == pos.Number {
			at = i
		}
	}
	switch {
	case best >= 0:
		return withCite(lines[best].text, lines[best].cite), true
	case at >= 0 && labelsElsewhere:
		return name + nm.classifier() + "没有" + part + "，这一" + pos.Kind + "是" + withCite(lines[at].text, lines[at].cite), true
	case at >= 0:
		return withCite(lines[at].text, lines[at].cite), true
	}
	for _, l := range lines {
		if in(l) {
			return "", true // the part is here, that line is not
		}
	}
	return "", false
}

// partHolder returns, for a question asking for a named sub-part of a
// named part, whether a sentence (its text, and the section path it is
// under) can be that sub-part: it names the part, in its text or path,
// and names the kind asked (or starts with the part's name, as an opening
// does), or its position. Text without the parts' layout (web pages, the
// conversation) is read sentence by sentence, and a sentence that only
// names the part does not answer. It returns nil for other questions.
func (nm *vocab) partHolder(q string) func(text, path string) bool {
	if nm == nil {
		return nil
	}
	part, before, ok := nm.askedPart(text.Fold(q))
	if !ok || len(before) == 0 {
		return nil
	}
	last := string(before[len(before)-1:])
	nms := []string{last}
	if len(before) >= 2 {
		nms = append(nms, string(before[len(before)-2:]))
	}
	var holds func(f string) bool
	if pos, isPos := nm.positions[part]; isPos {
		holds = func(f string) bool {
			if strings.Contains(f, part) || strings.Contains(f, pos.Kind) {
				return true
			}
			p, ok := nm.positions[nm.lineLabelled(f)]
			return ok && p.Kind == pos.Kind && p.Number == pos.Number
		}
	} else {
		kind := nm.kinds[part]
		holds = func(f string) bool {
			for _, a := range append([]string{kind}, nm.kindAliases[kind]...) {
				if strings.Contains(f, text.Fold(a)) {
					return true
				}
			}
			for _, n := range nms {
				if strings.HasPrefix(f, n+"，") || strings.HasPrefix(f, n+"：") {
					return true
				}
			}
			return false
		}
	}
	return func(s, path string) bool {
		f := text.Fold(s)
		return holds(f) && (strings.Contains(f, last) || strings.Contains(text.Fold(path), last))
	}
}
