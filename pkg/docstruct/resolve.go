package docstruct

import (
	"slices"
	"strings"

	"github.com/mixchat/mixchat/pkg/text"
)

// Result is what an address resolves to: the part, or what is absent.
type Result struct {
	// Part is the part addressed, nil when it is absent.
	Part *Part
	// Absent says what the document lacks and what it has instead; nil
	// when Part is set.
	Absent *Absent
	// Renamed is the name the question gave the part when the part is
	// labelled with another name and the question's labels other parts of
	// its kind (a profile's position has both names: asked for as 九二,
	// the part found is labelled 六二), "" otherwise.
	Renamed string
}

// Absent is a part a document does not have: the document, the part
// searched within, the part asked for, and the range of parts of that
// kind the document has there ("its articles run from I to VII").
type Absent struct {
	// Doc is the document's title.
	Doc string
	// Scope is the path of the part searched within below the document
	// (["学而篇第一"]), empty for the whole document.
	Scope []string
	// Want is the part asked for.
	Want Label
	// First and Last are the first and last parts of that kind there,
	// numbered as the document numbers them; Count how many there are (0:
	// none of that kind, First and Last zero).
	First, Last Label
	Count       int
}

// Resolve finds the part an address names in d, going down its steps:
// each step is matched among the parts under the one the step before
// found, the shallowest first. A step of a kind the scope does not use
// (chapters asked for where 1.1, 1.2 … number them) matches the numbered
// parts without a kind. An address with no steps resolves to the root.
func Resolve(d *Doc, a Address) Result {
	scope := d.Root
	for _, step := range a.Steps {
		p, layer := find(scope, step)
		if p == ambiguous {
			// Parts of that number under several parents ("第三章" of
			// every 篇, "Section 8" of every article) and no parent
			// named: no one of them is the part asked for.
			return Result{}
		}
		if p == nil && step.soft {
			continue
		}
		if p == nil {
			return Result{Absent: absent(d, scope, step, layer)}
		}
		scope = p
	}
	res := Result{Part: scope}
	if n := len(a.Steps); n > 0 {
		asked, has := text.Fold(a.Steps[n-1].Name), text.Fold(scope.Label.Name)
		if asked != "" && has != "" && a.Steps[n-1].HasNumber() && asked != has {
			// Only a name that labels parts elsewhere is another
			// part's name (a profile's position name that labels the
			// second item of other parts; "第二项" labels none).
			d.Root.Walk(func(p *Part) bool {
				if SameKind(p.Label.Kind, scope.Label.Kind) && text.Fold(p.Label.Name) == asked {
					res.Renamed = a.Steps[n-1].Name
					return false
				}
				return true
			})
		}
	}
	return res
}

// ResolveRelative resolves a relative address ("下一条", "the next one")
// from the part from: the part Relative places away among the parts of
// from's kind (or of RelativeKind, when a says one) in document order.
// Past the first or the last it is absent.
func ResolveRelative(d *Doc, from *Part, a Address) Result {
	if from == nil {
		return Result{}
	}
	if a.Relative == 0 {
		return Result{Part: from}
	}
	match := func(p *Part) bool { return p != d.Root && p.style == from.style }
	if a.RelativeKind != "" && !SameKind(a.RelativeKind, from.Label.Kind) {
		// 下一章 from an article: the next part of that kind after it.
		var kinds []*Part
		d.Root.Walk(func(p *Part) bool {
			if SameKind(p.Label.Kind, a.RelativeKind) {
				kinds = append(kinds, p)
			}
			return true
		})
		if len(kinds) > 0 {
			i := -1
			for j, p := range kinds {
				if p.Start <= from.Start {
					i = j
				}
			}
			if a.Relative > 0 && i+1 < len(kinds) {
				return Result{Part: kinds[i+1]}
			}
			if a.Relative < 0 && i-1 >= 0 {
				return Result{Part: kinds[i-1]}
			}
			want := Label{Kind: a.RelativeKind}
			if i >= 0 {
				want = kinds[i].Label
				want.Num += a.Relative
				want.Path, want.Name = nil, ""
			}
			return Result{Absent: absent(d, d.Root, want, kinds)}
		}
	}
	var same []*Part
	d.Root.Walk(func(p *Part) bool {
		if match(p) {
			same = append(same, p)
		}
		return true
	})
	i := slices.Index(same, from)
	j := i + a.Relative
	if i < 0 || j < 0 || j >= len(same) {
		want := from.Label
		want.Num += a.Relative
		want.Path = nil
		return Result{Absent: absent(d, from.Parent, want, same)}
	}
	return Result{Part: same[j]}
}

// find matches step among the parts under scope: the shallowest matches
// first, the first in document order. layer is the parts the step was
// looked for among, for an absent part's range.
// ambiguous is what find returns for a number that labels parts under
// several parents at the layer it searches.
var ambiguous = &Part{}

func find(scope *Part, step Label) (*Part, []*Part) {
	if len(step.Path) > 0 {
		// 1.3: a part labelled 1.3 (of the step's kind, if the scope
		// uses it), else the parts numbered 1 then 3.
		var hit, anyKind *Part
		scope.Walk(func(p *Part) bool {
			if p != scope && slices.Equal(p.Label.Path, step.Path) {
				if anyKind == nil {
					anyKind = p
				}
				if step.Kind == "" || SameKind(p.Label.Kind, step.Kind) {
					hit = p
					return false
				}
			}
			return true
		})
		if hit == nil {
			hit = anyKind
		}
		if hit != nil {
			return hit, nil
		}
		cur := scope
		for _, n := range step.Path {
			p, layer := find(cur, Label{Num: n, Notation: step.Notation})
			if p == nil || p == ambiguous {
				return p, layer
			}
			cur = p
		}
		return cur, nil
	}
	kindUsed := step.Kind == ""
	if !kindUsed {
		scope.Walk(func(p *Part) bool {
			if p != scope && SameKind(p.Label.Kind, step.Kind) {
				kindUsed = true
				return false
			}
			return true
		})
	}
	ofKind := func(p *Part) bool {
		switch {
		case step.Kind == "":
			return p.Label.HasNumber() || p.Label.Name != ""
		case kindUsed:
			return SameKind(p.Label.Kind, step.Kind)
		default:
			return p.Label.Kind == "" && p.Label.HasNumber()
		}
	}
	// Breadth first: the shallowest layer holding parts of the kind.
	level := scope.Children
	var layer []*Part
	for len(level) > 0 {
		var next []*Part
		for _, p := range level {
			if ofKind(p) {
				layer = append(layer, p)
			}
			next = append(next, p.Children...)
		}
		for _, loose := range []bool{false, true} {
			var hit *Part
			for _, p := range level {
				if !ofKind(p) || !matches(p, step, loose) {
					continue
				}
				if hit == nil {
					hit = p
				} else if hit.Parent != p.Parent && step.HasNumber() {
					return ambiguous, layer
				}
			}
			if hit != nil {
				return hit, layer
			}
		}
		if len(layer) > 0 {
			// The shallowest layer of the kind answers: deeper parts of
			// the kind are numbered within other parts.
			return nil, layer
		}
		level = next
	}
	return nil, layer
}

// matches reports whether p is the part step names: the same number and,
// when step names one, the same name (a name the step's ends with:
// "请问学而" names 学而) or the same heading. loose also takes a part's
// name that starts with the step's, for headings that run a name on into
// other words with no space ("未濟火水未濟…").
func matches(p *Part, step Label, loose bool) bool {
	if step.HasNumber() {
		if len(step.Path) > 0 {
			if !slices.Equal(p.Label.Path, step.Path) {
				return false
			}
		} else if p.Label.Num != step.Num {
			return false
		}
	}
	if step.Name != "" && !step.HasNumber() {
		name := strings.ToLower(text.Fold(step.Name))
		pn := strings.ToLower(text.Fold(p.Label.Name))
		ph := strings.ToLower(text.Fold(p.Heading))
		switch {
		case pn != "" && strings.HasSuffix(name, pn):
		case ph != "" && (ph == name || strings.Contains(ph, name+" "+strings.ToLower(step.Kind))):
		case loose && pn != "" && strings.HasPrefix(pn, name):
		default:
			return false
		}
	}
	return true
}

// absent builds the Absent for a step not found under scope.
func absent(d *Doc, scope *Part, want Label, layer []*Part) *Absent {
	a := &Absent{Doc: d.Title, Want: want}
	for q := scope; q != nil && q != d.Root; q = q.Parent {
		a.Scope = append([]string{q.Heading}, a.Scope...)
	}
	var nums []*Part
	for _, p := range layer {
		if p.Label.HasNumber() {
			nums = append(nums, p)
		}
	}
	if len(nums) > 0 {
		first, last := nums[0], nums[0]
		for _, p := range nums {
			if p.Label.Num < first.Label.Num {
				first = p
			}
			if p.Label.Num > last.Label.Num {
				last = p
			}
		}
		a.First, a.Last, a.Count = first.Label, last.Label, len(nums)
	}
	return a
}

// Lang is the language a reply to q is written in: "zh" when q has CJK
// characters, else "en".
func Lang(q string) string {
	if cjk, _ := text.CountLetters(q); cjk > 0 {
		return "zh"
	}
	return "en"
}

// Sentence says what is absent in lang ("zh" or "en"): "United States
// Constitution has no Article IX; its articles run from I to VII.",
// "《论语》学而篇第一没有第二十章；其章从第一章到第十六章。".
func (a *Absent) Sentence(lang string) string {
	kind := a.Want.Kind
	if kind == "" {
		kind = a.First.Kind
	}
	nt := a.First.Notation
	if a.Count == 0 {
		nt = a.Want.Notation
	}
	as := func(l Label) Label {
		out := Label{Kind: kind, Num: l.Num, Name: l.Name, Notation: nt}
		if kind == "" || len(a.Want.Path) > 0 {
			// Dotted numbers are written whole where the question
			// wrote one, or no kind names them.
			out.Path = l.Path
		}
		return out
	}
	want := as(a.Want)
	if a.Want.Name != "" && !a.Want.HasNumber() {
		want = a.Want
	}
	if lang == "zh" {
		subject := "《" + a.Doc + "》" + strings.Join(a.Scope, "")
		s := subject + "没有" + want.String()
		if a.Count > 0 {
			if a.Count == 1 {
				s += "；只有" + as(a.First).String()
			} else {
				s += "；其" + kind + "从" + as(a.First).String() + "到" + as(a.Last).String()
			}
		}
		return s + "。"
	}
	subject := a.Doc
	for i := len(a.Scope) - 1; i >= 0; i-- {
		subject = a.Scope[i] + " of " + subject
	}
	s := subject + " has no " + want.String()
	if a.Count > 0 {
		plural := strings.ToLower(kind) + "s"
		if kind == "" || isCJKKind(kind) {
			plural = "parts"
		}
		if a.Count == 1 {
			s += "; it has only " + as(a.First).String()
		} else {
			s += "; its " + plural + " run from " + numOnly(as(a.First)) + " to " + numOnly(as(a.Last))
		}
	}
	return s + "."
}

// numOnly writes a label's number the document's way, without its kind.
func numOnly(l Label) string {
	if len(l.Path) > 0 || l.Kind == "" || isCJKKind(l.Kind) {
		return l.String()
	}
	nt := l.Notation
	if nt == Chinese || nt == Letter {
		nt = Arabic
	}
	return FormatNumber(l.Num, nt)
}
