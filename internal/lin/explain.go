package lin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/model"
)

// Explanation is the witness of a violation, as data: a set of operations
// of one object that no order explains, where the longest order that does
// explain a part of them stops, and a sentence in the model's terms.
// Renderings (Text, JSON) take it as it is.
type Explanation struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	// Ops are the operations, in order of invocation: minimal when
	// Minimal (leaving any one of them out, the others keeping their
	// places in real time, leaves operations that some order explains, or
	// one that returned a value only the left-out one gave: shrink).
	Ops     []OpRef `json:"ops"`
	Minimal bool    `json:"minimal"`
	// Prefix is the end (at most PrefixShown operations) of the longest
	// sequence of the object's operations (of its failing partition) that
	// the search replayed correctly, PrefixLen operations in all, in
	// order; State is the model's state after it (Describe). They come
	// from the whole history, not from Ops, whose own longest order may
	// tell a shorter and less telling story (without its enq, a deq's
	// value comes from nowhere).
	Prefix    []OpRef `json:"prefix"`
	PrefixLen int     `json:"prefix_len"`
	State     string  `json:"state"`
	// Failing is the operation whose window closed before it could take
	// effect after Prefix; Impossible says that its results are
	// impossible in State (else they are possible there, but no order of
	// what is left then works).
	Failing    OpRef `json:"failing"`
	Impossible bool  `json:"impossible"`
	// Expected is what Failing would return in State, when the model
	// says (Model.Expect), and Origins the operations of the longest
	// order that put those values there (the last one holding each value
	// among its arguments).
	Expected string  `json:"expected,omitempty"`
	Origins  []OpRef `json:"origins,omitempty"`
	Sentence string  `json:"sentence"`
	// Sync: the object is a synchronisation object (sync.go): Ops are
	// operations that no pairing explains, and there is no order (Prefix
	// empty).
	Sync bool `json:"sync,omitempty"`
}

// OpRef names one operation of the history.
type OpRef struct {
	Index int    `json:"index"` // in History.Ops
	Line  int64  `json:"line,omitempty"`
	Proc  int64  `json:"proc"`
	Op    string `json:"op"` // "deq -> 0x100002", "enq 7 -> ?", "put 1 2 (cut off)"
	// LeftOut, in a Prefix, marks an optional operation left out.
	LeftOut bool `json:"left_out,omitempty"`
	// name, when set, is where the operation is through a Namer
	// (Options.ref): "operation 3".
	name string
}

func ref(h *model.History, i int) OpRef {
	op := &h.Ops[i]
	var b strings.Builder
	b.WriteString(op.Name)
	for _, a := range op.Args {
		b.WriteString(" ")
		b.WriteString(a.String())
	}
	switch op.Status {
	case model.Returned:
		b.WriteString(" ->")
		for _, r := range op.Results {
			b.WriteString(" ")
			b.WriteString(r.String())
		}
	case model.Unknown:
		b.WriteString(" -> ?")
	default:
		b.WriteString(" (cut off)")
	}
	return OpRef{Index: i, Line: op.Line, Proc: op.Proc, Op: b.String()}
}

// Ref names operation i of h, as explanations do.
func Ref(h *model.History, i int) OpRef { return ref(h, i) }

// At says where an operation is: "line 14" or "operation 3".
func (r OpRef) At() string { return r.at() }

// at says where an operation is: "line 14" or "operation 3".
func (r OpRef) at() string {
	if r.name != "" {
		return r.name
	}
	if r.Line > 0 {
		return fmt.Sprintf("line %d", r.Line)
	}
	return fmt.Sprintf("operation %d", r.Index)
}

// WitnessTitle says what an explanation's operations are, minimal or
// not, of a synchronisation object (sync) or not: written here once for
// every rendering (text, HTML).
func WitnessTitle(minimal, sync bool) string {
	switch {
	case sync && minimal:
		return "a minimal set of operations that no pairing explains (leaving out any one of them, the rest pair off, or one of them that returned loses its only partner)"
	case sync:
		return "operations that no pairing explains"
	case minimal:
		return "a minimal set of operations that no order explains (leaving out any one of them, the rest can be ordered, or return a value none of them gave)"
	}
	return "operations that no order explains"
}

// Text renders the explanation for a person: the sentence, then the
// operations.
func (e *Explanation) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", e.Sentence)
	fmt.Fprintf(&b, "  %s (object %s, model %s):\n", WitnessTitle(e.Minimal, e.Sync), e.Object, e.Model)
	for _, r := range e.Ops {
		fmt.Fprintf(&b, "    %-10s process %d: %s\n", r.at(), r.Proc, r.Op)
	}
	return b.String()
}

// PrefixShown is the most operations of the longest order an
// explanation lists.
const PrefixShown = 16

// explain makes the explanation of a part's violation: the longest order
// of the search that found it, and its operations shrunk (unless
// opt.NoShrink).
func explain(ctx context.Context, h *model.History, p *part, bounds []int, opt *Options, out *outcome) *Explanation {
	obj := &h.Objects[h.Ops[out.failing].Object]
	e := &Explanation{Object: obj.Name, Model: obj.Model}
	ops := p.ops
	if !opt.NoShrink {
		ops, e.Minimal = shrink(ctx, h, p, bounds, opt, out)
	}
	for _, i := range ops {
		e.Ops = append(e.Ops, opt.ref(h, i))
	}
	e.PrefixLen = len(out.deepest)
	for k := max(0, len(out.deepest)-PrefixShown); k < len(out.deepest); k++ {
		r := opt.ref(h, out.deepest[k])
		r.LeftOut = out.left[k]
		e.Prefix = append(e.Prefix, r)
	}
	e.Failing = opt.ref(h, out.failing)
	e.State = describe(p.m, out.state)
	e.Impossible = len(p.m.Step(out.state, &h.Ops[out.failing])) == 0
	if e.Impossible && p.m.Expect != nil {
		exp := p.m.Expect(out.state, &h.Ops[out.failing])
		var vs []string
		for _, v := range exp {
			vs = append(vs, v.String())
			if v.Sym != model.Num {
				continue
			}
		origin:
			for k := len(out.deepest) - 1; k >= 0; k-- {
				if out.left[k] {
					continue
				}
				for _, a := range h.Ops[out.deepest[k]].Args {
					if a == v {
						e.Origins = append(e.Origins, opt.ref(h, out.deepest[k]))
						break origin
					}
				}
			}
		}
		e.Expected = strings.Join(vs, " ")
	}
	e.Sentence = e.sentence()
	return e
}

func describe(m *model.Model, s any) string {
	if m.Describe != nil {
		return m.Describe(s)
	}
	return fmt.Sprintf("state %q", m.Key(s))
}

// sentence says the explanation in one paragraph.
func (e *Explanation) sentence() string {
	var b strings.Builder
	fmt.Fprintf(&b, "No order of the operations of %s (%s) explains them. ", e.Object, e.Model)
	var took, left []string
	for _, r := range e.Prefix {
		if r.LeftOut {
			left = append(left, fmt.Sprintf("%s at %s", r.Op, r.at()))
		} else {
			took = append(took, fmt.Sprintf("%s at %s", r.Op, r.at()))
		}
	}
	if len(took) == 0 {
		fmt.Fprintf(&b, "From the initial state, %s", e.State)
	} else {
		more := ""
		if e.PrefixLen > len(e.Prefix) {
			more = fmt.Sprintf("%d operations, ending ", e.PrefixLen)
		}
		fmt.Fprintf(&b, "The longest order that replays correctly, %s%s, leaves %s", more, strings.Join(took, ", "), e.State)
	}
	if len(left) > 0 {
		fmt.Fprintf(&b, " (leaving out %s)", strings.Join(left, ", "))
	}
	f := e.Failing
	switch {
	case e.Impossible && e.Expected != "":
		fmt.Fprintf(&b, "; then %s at %s must take effect, and it cannot: there it returns %s", f.Op, f.at(), e.Expected)
		var from []string
		for _, r := range e.Origins {
			from = append(from, fmt.Sprintf("%s at %s", r.Op, r.at()))
		}
		if len(from) > 0 {
			fmt.Fprintf(&b, " (from %s)", strings.Join(from, ", "))
		}
		b.WriteString(".")
	case e.Impossible:
		fmt.Fprintf(&b, "; then %s at %s must take effect, and it cannot return that there.", f.Op, f.at())
	default:
		fmt.Fprintf(&b, "; %s at %s must take effect next, and it can, but then no order of the rest works.", f.Op, f.at())
	}
	return b.String()
}

func (o *Options) memory() int64 {
	if o.MaxMemory == 0 {
		return DefaultMaxMemory
	}
	return o.MaxMemory
}

// shrink removes operations from a violating part while what is left
// still violates (removal: the operation is absent, the others keep their
// positions and windows), first the operations invoked after the failing
// operation's window closed, then halves, quarters, ..., single
// operations. It returns the operations left and whether they are
// minimal: not when a re-check was undecided or the shrink's own budget
// (see budget) ran out.
//
// A witness should keep the story: removing the second enq of "enq 1,
// enq 2, deq -> 2" leaves "deq returned a value never enqueued", minimal
// but beside the point, which is that 1 was enqueued first. So when the
// plain shrink ends with a result whose source (an operation that took
// that number as an argument) it removed, the shrink starts again from
// the witness with those sources, or from the whole part if that does not
// violate and the part is small, refusing every removal that orphans a
// result; Minimal is then among the sets that keep their sources.
func shrink(ctx context.Context, h *model.History, p *part, bounds []int, opt *Options, out *outcome) ([]int, bool) {
	// The shrink's own budget, spent across its re-checks (each given
	// what is left): 20 times the states the decision took, at least
	// 100,000 and at most a search's, so that explaining never costs much
	// more than deciding. (Deterministic: no clock.)
	budget := min(opt.maxStates(), max(100_000, 20*out.states))
	minimal := true
	violates := func(ops []int) bool {
		if budget <= 0 || ctx.Err() != nil {
			minimal = false
			return false
		}
		sub := *p
		sub.ops = ops
		o2 := *opt
		o2.MaxStates = budget
		o := decide(ctx, h, &sub, bounds, &o2, &shared{maxMemory: opt.memory()})
		budget -= o.states
		if o.verdict == Undecided {
			minimal = false
		}
		return o.verdict == Violation
	}
	// from shrinks start; with sources, a removal that orphans a result
	// of what is left is refused without a search.
	from := func(start []int, sources bool) []int {
		cur := start
		try := func(cand []int) bool {
			return !(sources && Orphans(h, cand, cur)) && violates(cand)
		}
		if b := bounds[out.failing]; b != unbounded {
			var before []int
			for _, i := range cur {
				if h.Ops[i].Call < b {
					before = append(before, i)
				}
			}
			if len(before) < len(cur) && try(before) {
				cur = before
			}
		}
		// Removing one operation can make another necessary or unnecessary
		// (histories are not monotone: without its enq, a deq is wrong), so
		// the passes of single removals repeat until one removes nothing.
		pass := func(n int) (removed bool) {
			for i := 0; i+n <= len(cur) && len(cur) > 1; {
				cand := append(append([]int(nil), cur[:i]...), cur[i+n:]...)
				if try(cand) {
					cur, removed = cand, true
				} else {
					i += n
				}
			}
			return removed
		}
		for n := max(1, len(cur)/2); minimal; n = max(1, n/2) {
			if !pass(n) && n == 1 {
				break
			}
		}
		return cur
	}
	// The plain shrink is fast (it removes large chunks at once) but may
	// end at a value from nowhere. Then the sources of the orphaned results
	// go back in, and what that violates is shrunk keeping sources; if
	// they do not violate, the whole part is, when it is small enough for
	// the slow way (single removals mostly: chunks orphan something).
	w := from(p.ops, false)
	if !Orphans(h, w, p.ops) {
		return w, minimal
	}
	if r := withSources(h, w, p.ops); len(r) <= storyOps && violates(r) {
		return from(r, true), minimal
	}
	if len(p.ops) <= storyOps {
		return from(p.ops, true), minimal
	}
	return w, minimal
}

// storyOps is the largest set of operations that a witness is shrunk
// from keeping the sources of its results (about a search per operation
// and pass, on sets that lack operations of the history, which the search
// may find hard to refute).
const storyOps = 100

// withSources adds to ops the operations of from whose arguments are the
// orphaned results of ops, in order of invocation.
func withSources(h *model.History, ops, from []int) []int {
	in := map[int]bool{}
	for _, i := range ops {
		in[i] = true
	}
	has := numArgs(h, ops)
	need := map[uint64]bool{}
	for _, i := range ops {
		for _, r := range h.Ops[i].Results {
			if r.Sym == model.Num && !has[r.N] {
				need[r.N] = true
			}
		}
	}
	out := append([]int(nil), ops...)
	for _, i := range from {
		if in[i] {
			continue
		}
		for _, a := range h.Ops[i].Args {
			if a.Sym == model.Num && need[a.N] {
				out = append(out, i)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// numArgs is the set of numbers the operations of set took as arguments:
// the results they can be the source of.
func numArgs(h *model.History, set []int) map[uint64]bool {
	m := map[uint64]bool{}
	for _, i := range set {
		for _, a := range h.Ops[i].Args {
			if a.Sym == model.Num {
				m[a.N] = true
			}
		}
	}
	return m
}

// Orphans says whether some operation of ops returned a number that an
// operation of from took as an argument and none of ops does: whether
// leaving out the operations of from that are not in ops leaves a result
// from nowhere (a deq of a value no enq of ops enqueued), a violation of
// its own beside the point. Witnesses (shrink) and shrunk histories
// (package shrink) refuse such removals: the one rule of both.
func Orphans(h *model.History, ops, from []int) bool {
	had, has := numArgs(h, from), numArgs(h, ops)
	for _, i := range ops {
		for _, r := range h.Ops[i].Results {
			if r.Sym == model.Num && had[r.N] && !has[r.N] {
				return true
			}
		}
	}
	return false
}
