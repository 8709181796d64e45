package lin_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// Two-step linearisation (Lawrence and Lowe, Sections 4.1-4.4, Figures
// 3-5; Section 6 runs it on a linearisability tester): an operation of a
// synchronisation object becomes two operations of an ordinary object,
// the first steps of a pair consecutive (one offers, the other accepts:
// the synchronisation point), and a second step that collects the
// result. Proposition 14: a history is synchronisation-linearisable
// exactly when its two-step form is linearizable. Here the two-step form
// goes to the generic exact search (with no knowledge of
// synchronisation), a second decision procedure beside the matching, for
// histories too long for the brute force.
//
// An optional operation (cut off, or answered "?") has no second step to
// close its window, so it only ever accepts: an offer it made could be
// accepted outside its window. That loses nothing, since a pair with an
// optional operation can always be made with the other one offering, and
// two optional operations never need to pair. The channel lets either
// side offer (the general construction of Section 4.4 with both orders in
// the domain of the abstraction function), so that an optional send can
// pair too.

// twoStepState is the two-step specification object's state: the offer
// waiting for its partner (offer -1: none; its operation's name and
// argument) and the results stored for second steps, by operation.
type twoStepState struct {
	offer int
	name  string
	x     model.Value
	ret   []twoStepRet // sorted by id
}

type twoStepRet struct {
	id int
	v  model.Value
}

func (s twoStepState) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:%s:%v;", s.offer, s.name, s.x)
	for _, r := range s.ret {
		fmt.Fprintf(&b, "%d=%v,", r.id, r.v)
	}
	return b.String()
}

func (s twoStepState) with(id int, v model.Value) twoStepState {
	s.ret = append(slices.Clip(s.ret), twoStepRet{id, v})
	slices.SortFunc(s.ret, func(a, b twoStepRet) int { return a.id - b.id })
	return s
}

// twoStepModel is the two-step specification of an exchanger or a
// channel, with timeouts as single steps taken between pairs. Operation
// names: "<op>.1" the first step (arguments: its id, then the
// operation's), "<op>.2" the second (the operation's results), "<op>.t" a
// timeout.
func twoStepModel(kind string) model.Maker {
	return func([]model.Param) (*model.Model, error) {
		return &model.Model{
			Init: func() []any { return []any{twoStepState{offer: -1}} },
			Key:  func(s any) string { return s.(twoStepState).key() },
			Validate: func(op *model.Op) error {
				if len(op.Args) == 0 {
					return fmt.Errorf("no id")
				}
				return nil
			},
			Step: func(a any, op *model.Op) []any {
				s := a.(twoStepState)
				id := int(op.Args[0].N)
				known := op.Status == model.Returned
				name, step, _ := strings.Cut(op.Name, ".")
				var x model.Value
				if len(op.Args) > 1 {
					x = op.Args[1]
				}
				switch {
				case step == "t":
					if s.offer >= 0 {
						return nil
					}
					return []any{s}
				case step == "2":
					k := slices.IndexFunc(s.ret, func(r twoStepRet) bool { return r.id == id })
					if s.offer >= 0 || k < 0 || s.ret[k].v != op.Results[0] {
						return nil
					}
					s.ret = slices.Delete(slices.Clone(s.ret), k, k+1)
					return []any{s}
				case s.offer < 0: // offer: only an operation that returned
					if !known {
						return nil
					}
					s.offer, s.name, s.x = id, name, x
					return []any{s}
				case kind == "channel" && name == s.name:
					return nil // a channel pairs a send with a recv
				}
				// Accept the offer: the synchronisation.
				mine, theirs := s.x, x // exchanger: each gets the other's value
				if kind == "channel" {
					mine, theirs = model.Sym(model.OK), x // they recv, I send
					if name == "recv" {
						mine, theirs = s.x, model.Sym(model.OK)
					}
				}
				n := s.with(s.offer, theirs)
				if known {
					n = n.with(id, mine)
				}
				n.offer, n.name, n.x = -1, "", model.Value{}
				return []any{n}
			},
		}, nil
	}
}

// twoStepForm is h (one synchronisation object) in two-step form:
// positions doubled, so that a second step is invoked just after its
// first and both end at the operation's response.
func twoStepForm(h *model.History) *model.History {
	t := &model.History{Objects: []model.Object{{Name: "x", Model: "twostep"}}, Events: 2 * h.Events}
	for _, c := range h.Crashes {
		t.Crashes = append(t.Crashes, model.Crash{Pos: 2 * c.Pos, Line: c.Line})
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		args := append([]model.Value{model.Number(uint64(i))}, op.Args...)
		ret := -1
		if op.Return >= 0 {
			ret = 2 * op.Return
		}
		first := model.Op{Proc: op.Proc, Name: op.Name + ".1", Args: args, Status: op.Status, Call: 2 * op.Call, Return: ret,
			Crash: op.Crash, Line: op.Line, RetLine: op.RetLine}
		switch {
		case op.Status != model.Returned:
			t.Ops = append(t.Ops, first)
		case op.Results[0].Sym == model.Fail:
			first.Name, first.Results = op.Name+".t", op.Results
			t.Ops = append(t.Ops, first)
		default:
			first.Results = []model.Value{model.Sym(model.OK)}
			second := first
			second.Name, second.Call, second.Results = op.Name+".2", 2*op.Call+1, op.Results
			t.Ops = append(t.Ops, first, second)
		}
	}
	return t
}

// TestSyncAgreesWithTwoStep compares the matching with the generic exact
// search on the two-step form, strict and durable, on histories of 8 to
// 24 operations: 500 per object by default, 20,000 with PMLIN_LONG=1.
// (A first two-step form that let optional operations offer disagreed on
// a crashed exchange whose offer was taken after the crash: the check
// that caught it is this one.)
func TestSyncAgreesWithTwoStep(t *testing.T) {
	n := testenv.Count(0, 500, 20000)
	for _, kind := range []string{"exchanger", "channel"} {
		models := func(name string) model.Maker {
			if name == "twostep" {
				return twoStepModel(kind)
			}
			return model.Builtin(name)
		}
		var counts [2]int
		for i := range n {
			h := genSync(kind, uint64(i)+1<<20, 8, 24)
			ts := twoStepForm(h)
			for _, mode := range []history.Mode{history.Strict, history.Durable} {
				res, err := lin.Check(context.Background(), h, lin.Options{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				two, err := lin.Check(context.Background(), ts, lin.Options{Mode: mode, Models: models})
				if err != nil {
					t.Fatal(err)
				}
				if two.Verdict == lin.Undecided || (res.Verdict == lin.Linearizable) != (two.Verdict == lin.Linearizable) {
					t.Fatalf("%s seed %d, %v: matching says %v, two-step search %v\n%s", kind, i, mode, res.Verdict, two.Verdict, renderV2(h))
				}
				if res.Verdict == lin.Linearizable {
					counts[0]++
				} else {
					counts[1]++
				}
			}
		}
		t.Logf("%s: %d histories of 8 to 24 operations x 2 modes: matching and two-step search agree, %d linearizable, %d not", kind, n, counts[0], counts[1])
		if counts[0] == 0 || counts[1] == 0 {
			t.Errorf("%s: one verdict never came", kind)
		}
	}
}
