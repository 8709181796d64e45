package lin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pmlin/pmlin/model"
)

// Recoverable mode orders an operation cut off by a crash before the next
// operation of its process that takes effect (processOrder): an order
// between synchronisations, which the matching (sync.go) does not place.
// Such a history goes instead to the generic search in two-step form
// (Lawrence and Lowe, Section 4.1-4.4, Proposition 14): each operation of
// a synchronisation object becomes a first step and, if it returned, a
// second one; the first steps of a pair come one right after the other,
// one offering and one accepting (the synchronisation point), and a second
// step collects. The search knows nothing of synchronisation, and process
// order holds between the steps as between any operations.
//
// An optional operation only accepts: an offer of its own could be
// accepted outside its window, or after the next operation of its process
// on another object, since no second step of its own closes it. A pair
// with one optional operation can always be made with the other one
// offering, so the search is sound; but two optional operations then
// never pair, and in recoverable mode such a pair can matter: an optional
// operation that takes effect ends a process-order chain. So a violation
// found while some two optional operations of a synchronisation object
// could have paired is no proof (twoStepUnsure), and the relaxed form
// below decides it, or it is undecided, never a guess.

// EngineTwoStep is ObjectResult.Engine of a synchronisation object
// decided in two-step form.
const EngineTwoStep = "twostep"

// twoStepModel is the prefix of a two-step object's model name in the
// two-step form, before the object's index.
const twoStepModel = "\x00twostep "

// In the relaxed two-step form an optional operation may offer too. Then
// every synchronisation linearisation has a two-step one (a pair of two
// optional operations included), so a violation of the relaxed form is a
// proof; but not every linearisation of it is one of the history (an
// optional operation's offer may be taken too late), so only the strict
// form proves a history linearizable. checkTwoStep runs the relaxed form
// where the strict one finds a violation that is not a proof
// (twoStepUnsure): both violations, a violation; else undecided.

// twoStepState is the state of a synchronisation object in two-step
// form: the operation whose offer waits for its partner (-1: none), and
// those that synchronised and still have to collect (sorted).
type twoStepState struct {
	offer   int
	collect string // indexes in History.Ops, as decimal text separated by commas
}

// twoStepOp is what a step is: the operation's index in h.Ops, and which
// step ('1' first, '2' second, 't' a timeout, a step of its own).
func twoStepOp(op *model.Op) (int, byte) {
	return int(op.Args[0].N), op.Name[len(op.Name)-1]
}

// twoStepMaker is the two-step specification of synchronisation object m
// of h.
func twoStepMaker(h *model.History, m *model.Model, relaxed bool, opt *Options) model.Maker {
	return func([]model.Param) (*model.Model, error) {
		has := func(list string, i int) bool {
			return slices.Contains(strings.Split(list, ","), strconv.Itoa(i))
		}
		add := func(list string, i int) string {
			var ids []int
			for _, f := range strings.Split(list, ",") {
				if n, err := strconv.Atoi(f); err == nil {
					ids = append(ids, n)
				}
			}
			ids = append(ids, i)
			slices.Sort(ids)
			fs := make([]string, len(ids))
			for k, n := range ids {
				fs[k] = strconv.Itoa(n)
			}
			return strings.Join(fs, ",")
		}
		remove := func(list string, i int) string {
			fs := slices.DeleteFunc(strings.Split(list, ","), func(f string) bool { return f == strconv.Itoa(i) })
			return strings.Join(fs, ",")
		}
		return &model.Model{
			Init: func() []any { return []any{twoStepState{offer: -1}} },
			Key:  func(s any) string { st := s.(twoStepState); return strconv.Itoa(st.offer) + ";" + st.collect },
			Validate: func(op *model.Op) error {
				if len(op.Args) != 1 || op.Args[0].N >= uint64(len(h.Ops)) {
					return fmt.Errorf("a two-step operation names its operation")
				}
				return nil
			},
			Step: func(a any, op *model.Op) []any {
				s := a.(twoStepState)
				i, step := twoStepOp(op)
				orig := &h.Ops[i]
				switch {
				case step == 't':
					if s.offer >= 0 {
						return nil
					}
				case step == '2':
					if s.offer >= 0 || !has(s.collect, i) {
						return nil
					}
					s.collect = remove(s.collect, i)
				case s.offer < 0:
					if orig.Status != model.Returned && !relaxed {
						return nil // an optional operation only accepts
					}
					s.offer = i
				default:
					if !m.Sync(&h.Ops[s.offer], orig) {
						return nil
					}
					s.collect = add(s.collect, s.offer)
					if orig.Status == model.Returned {
						s.collect = add(s.collect, i)
					}
					s.offer = -1
				}
				return []any{s}
			},
			Describe: func(a any) string {
				s := a.(twoStepState)
				var parts []string
				if s.offer >= 0 {
					parts = append(parts, fmt.Sprintf("the offer of %s waiting for a partner", opt.at(h, s.offer)))
				}
				if s.collect != "" {
					var ws []string
					for _, f := range strings.Split(s.collect, ",") {
						n, _ := strconv.Atoi(f)
						ws = append(ws, opt.at(h, n))
					}
					parts = append(parts, "synchronised, to return: "+strings.Join(ws, ", "))
				}
				if len(parts) == 0 {
					return "no synchronisation under way"
				}
				return strings.Join(parts, "; ")
			},
		}, nil
	}
}

// twoStepHistory is h in two-step form for the synchronisation objects
// whose models are in syncs (nil for the others), without the operations
// in drop: positions doubled, so that a second step is invoked just after
// its first and both end at the operation's response. back maps each
// operation of the form to its operation in h.
func twoStepHistory(h *model.History, syncs []*model.Model, drop map[int]bool) (t *model.History, back []int) {
	t = &model.History{Name: h.Name, Objects: slices.Clone(h.Objects), Events: 2 * h.Events}
	for k, m := range syncs {
		if m != nil {
			t.Objects[k].Model = twoStepModel + strconv.Itoa(k)
			t.Objects[k].Params = nil
		}
	}
	for _, c := range h.Crashes {
		t.Crashes = append(t.Crashes, model.Crash{Pos: 2 * c.Pos, Line: c.Line})
	}
	for i := range h.Ops {
		if drop[i] {
			continue
		}
		op := h.Ops[i]
		op.Call *= 2
		if op.Return >= 0 {
			op.Return *= 2
		}
		m := syncs[op.Object]
		if m == nil {
			t.Ops = append(t.Ops, op)
			back = append(back, i)
			continue
		}
		op.Args = []model.Value{model.Number(uint64(i))}
		first := op
		first.Name = op.Name + ".1"
		switch {
		case op.Status != model.Returned:
			t.Ops = append(t.Ops, first)
			back = append(back, i)
		case m.Step(m.Init()[0], &h.Ops[i]) != nil:
			first.Name = op.Name + ".t"
			t.Ops = append(t.Ops, first)
			back = append(back, i)
		default:
			second := op
			second.Name, second.Call = op.Name+".2", op.Call+1
			t.Ops = append(t.Ops, first, second)
			back = append(back, i, i)
		}
	}
	return t, back
}

// checkTwoStep decides h in two-step form (every object: the others as
// they are), for recoverable mode.
func checkTwoStep(ctx context.Context, h *model.History, opt Options) (*Result, error) {
	find := opt.Models
	if find == nil {
		find = model.Builtin
	}
	syncs := make([]*model.Model, len(h.Objects))
	for k, obj := range h.Objects {
		m, err := find(obj.Model)(obj.Params)
		if err != nil {
			return nil, err
		}
		if m.Sync != nil {
			syncs[k] = m
		}
	}
	run := func(drop map[int]bool, relaxed bool) (*Result, []int, *model.History, error) {
		topt := opt
		// The shrink removes steps, which can leave an operation half in
		// the form: the explanation names every operation of the failing
		// part.
		topt.NoShrink = true
		topt.Models = func(name string) model.Maker {
			if k, ok := strings.CutPrefix(name, twoStepModel); ok {
				n, _ := strconv.Atoi(k)
				return twoStepMaker(h, syncs[n], relaxed, &opt)
			}
			return find(name)
		}
		t, back := twoStepHistory(h, syncs, drop)
		res, err := Check(ctx, t, topt)
		return res, back, t, err
	}
	res, back, t, err := run(nil, false)
	if err != nil {
		return nil, err
	}
	unsure := twoStepUnsure(h, syncs, nil, &opt)
	var relaxed *Result
	for k := range res.Objects {
		o := &res.Objects[k]
		o.Model = h.Objects[k].Model
		if o.Verdict == Violation && unsure != "" {
			if relaxed == nil {
				// The same history in two-step form (back and t hold), with
				// the relaxed model.
				if relaxed, _, _, err = run(nil, true); err != nil {
					return nil, err
				}
			}
			if r := relaxed.Objects[k]; r.Verdict == Violation {
				o.Explanation = r.Explanation
			} else {
				o.Verdict, o.Reason, o.Explanation = Undecided, unsure, nil
			}
		}
		if syncs[k] == nil {
			if o.Explanation != nil {
				twoStepBack(h, t, back, &opt, o.Explanation)
			}
			continue
		}
		o.Engine = EngineTwoStep
		o.Ops = 0
		for i := range h.Ops {
			if h.Ops[i].Object == k {
				o.Ops++
			}
		}
		if x := o.Explanation; x != nil {
			twoStepBack(h, t, back, &opt, x)
			x.Sync, x.Model = true, o.Model
			x.Sentence = strings.ReplaceAll(x.Sentence, t.Objects[k].Model, o.Model)
			x.Sentence = "No synchronisation linearisation (searched in two-step form: offer, accept, collect) respects recoverable process order. " + x.Sentence
		}
		if o.Verdict == Linearizable {
			var sure bool
			if o.Stuck, sure = twoStepStuck(h, k, syncs[k], run, &opt); !sure {
				o.Verdict, o.Reason, o.Stuck = Undecided, "progressibility: "+unsure, nil
			}
		}
	}
	res.Verdict = Linearizable
	for _, o := range res.Objects {
		if o.Verdict == Violation || (o.Verdict == Undecided && res.Verdict == Linearizable) {
			res.Verdict = o.Verdict
		}
	}
	return res, nil
}

// ok1 is the first of two results.
func ok1(yes, _ bool) bool { return yes }

// twoStepUnsure says why a violation of the two-step form is not a
// proof: two optional operations of a synchronisation object that could
// have paired ("" if there are none). In recoverable mode every optional
// operation's window is unbounded, so any two that fit could pair.
func twoStepUnsure(h *model.History, syncs []*model.Model, drop map[int]bool, opt *Options) string {
	for i := range h.Ops {
		m := syncs[h.Ops[i].Object]
		if m == nil || h.Ops[i].Status == model.Returned || drop[i] {
			continue
		}
		for j := i + 1; j < len(h.Ops); j++ {
			if !drop[j] && h.Ops[j].Object == h.Ops[i].Object && h.Ops[j].Status != model.Returned && m.Sync(&h.Ops[i], &h.Ops[j]) {
				return fmt.Sprintf("recoverable mode through a synchronisation object: the two-step search finds no order, but operations that may not have taken effect could have paired (such as those at %s and %s), which it does not try; with their offers allowed it finds one, which may take an offer too late to be a synchronisation linearisation",
					opt.where(h, i), opt.where(h, j))
			}
		}
	}
	return ""
}

// twoStepBack rewrites an explanation of the two-step form t in h's
// terms: each step names its operation (and which step it is).
func twoStepBack(h, t *model.History, back []int, opt *Options, x *Explanation) {
	step := map[byte]string{'1': " (first step)", '2': " (second step)", 't': ""}
	var olds, news []string
	fix := func(r *OpRef) {
		j := r.Index
		top := &t.Ops[j]
		nr := opt.ref(h, back[j])
		if syncStep := strings.LastIndexByte(top.Name, '.'); syncStep >= 0 && top.Name[:syncStep] == h.Ops[back[j]].Name {
			nr.Op += step[top.Name[syncStep+1]]
			olds, news = append(olds, r.Op), append(news, nr.Op)
		}
		nr.LeftOut = r.LeftOut
		*r = nr
	}
	for _, refs := range [][]OpRef{x.Ops, x.Prefix, x.Origins} {
		for k := range refs {
			fix(&refs[k])
		}
	}
	fix(&x.Failing)
	// The witness names each operation once, without its steps.
	seen := map[int]bool{}
	x.Ops = slices.DeleteFunc(x.Ops, func(r OpRef) bool {
		dup := seen[r.Index]
		seen[r.Index] = true
		return dup
	})
	for k := range x.Ops {
		x.Ops[k] = opt.ref(h, x.Ops[k].Index)
	}
	// The sentence names steps as the form writes them: longest first, so
	// that no name is replaced inside a longer one.
	idx := make([]int, len(olds))
	for k := range idx {
		idx[k] = k
	}
	slices.SortFunc(idx, func(a, b int) int { return len(olds[b]) - len(olds[a]) })
	for _, k := range idx {
		x.Sentence = strings.ReplaceAll(x.Sentence, olds[k], news[k])
	}
}

// twoStepStuck is progressibility (syncer.stuck) for object k in two-step
// form: pending operations that could pair with each other; and, when
// the operations that returned need pending ones, those that the search
// cannot do without, each named with a partner that fits it and
// returned. sure is false when the strict form finds no order without
// the pending operations and the relaxed form one: then no answer. The
// pending operations it names are those that surely cannot be left out
// one by one (an operation kept when unsure).
func twoStepStuck(h *model.History, k int, m *model.Model, run func(map[int]bool, bool) (*Result, []int, *model.History, error), opt *Options) (stuck []Stuck, sure bool) {
	var ops, pend []int
	for i := range h.Ops {
		if h.Ops[i].Object != k {
			continue
		}
		ops = append(ops, i)
		if op := &h.Ops[i]; op.Status == model.CutOff && op.Crash < 0 {
			pend = append(pend, i)
		}
	}
	if len(pend) == 0 {
		return nil, true
	}
	syncs := make([]*model.Model, len(h.Objects))
	syncs[k] = m
	// ok says whether the operations that returned, without those in
	// drop, have a synchronisation linearisation: sure false when the
	// strict form finds none and the relaxed form one.
	ok := func(drop map[int]bool) (yes, sure bool) {
		res, _, _, err := run(drop, false)
		if err == nil && res.Objects[k].Verdict == Linearizable {
			return true, true
		}
		if twoStepUnsure(h, syncs, drop, opt) == "" {
			return false, true
		}
		res, _, _, err = run(drop, true)
		return false, err == nil && res.Objects[k].Verdict == Violation
	}
	s := &syncer{h: h, opt: opt, m: m, init: m.Init()[0]}
	var out []Stuck
	drop := map[int]bool{}
	for _, i := range pend {
		drop[i] = true
	}
	if yes, sure := ok(drop); !sure {
		return nil, false
	} else if !yes {
		clear(drop)
		for _, i := range pend {
			// Left in unless it surely can go.
			if drop[i] = true; !ok1(ok(drop)) {
				delete(drop, i)
			}
		}
		for _, i := range pend {
			if drop[i] {
				continue
			}
			for _, j := range ops {
				// j returned, i is pending (its window unbounded): they
				// overlap when i was invoked before j returned.
				if j != i && h.Ops[j].Status == model.Returned && h.Ops[i].Call < h.Ops[j].Return && m.Step(s.init, &h.Ops[j]) == nil && m.Sync(&h.Ops[i], &h.Ops[j]) {
					st := Stuck{Op: opt.ref(h, i), Partner: opt.ref(h, j), Synchronised: true}
					st.Sentence = fmt.Sprintf("%s (%s, process %d) never returned, though it must have synchronised: no synchronisation linearisation in recoverable mode gives every operation that returned a partner without it; %s (%s) fits it",
						st.Op.Op, st.Op.at(), st.Op.Proc, st.Partner.Op, st.Partner.at())
					out = append(out, st)
					break
				}
			}
		}
	}
	out = append(out, s.pendingPairs(pend)...)
	slices.SortStableFunc(out, func(a, b Stuck) int { return a.Op.Index - b.Op.Index })
	return out, true
}
