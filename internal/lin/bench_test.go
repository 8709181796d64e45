package lin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pmlin/pmlin/model"
)

// simulate makes a legal history of n operations of one object by procs
// processes: each operation takes effect at its response on a real
// object (apply gives the results), and a fraction unknown of the
// responses are "?". gen gives an operation's name and arguments.
func simulate(r *rand.Rand, modelName string, n, procs int, unknown float64,
	gen func(r *rand.Rand) (string, []model.Value), apply func(name string, args []model.Value) []model.Value) *model.History {
	h := &model.History{Objects: []model.Object{{Name: "o", Model: modelName}}}
	pending := make([]int, procs)
	for p := range pending {
		pending[p] = -1
	}
	for started := 0; started < n || h.Events < 2*n; {
		p := r.IntN(procs)
		if i := pending[p]; i >= 0 {
			op := &h.Ops[i]
			op.Results = apply(op.Name, op.Args)
			op.Status, op.Return = model.Returned, h.Events
			if r.Float64() < unknown {
				op.Status, op.Results = model.Unknown, nil
			}
			pending[p] = -1
			h.Events++
			continue
		}
		if started == n {
			continue
		}
		name, args := gen(r)
		pending[p] = len(h.Ops)
		h.Ops = append(h.Ops, model.Op{Proc: int64(p), Name: name, Args: args, Call: h.Events, Return: -1, Crash: -1, Status: model.CutOff})
		h.Events++
		started++
	}
	return h
}

func num(n int) model.Value { return model.Number(uint64(n)) }

func mapHistory(r *rand.Rand, n int) *model.History {
	m := map[model.Value]model.Value{}
	return simulate(r, "map", n, 8, 0.05, func(r *rand.Rand) (string, []model.Value) {
		k := num(r.IntN(n / 20))
		switch r.IntN(3) {
		case 0:
			return "put", []model.Value{k, num(r.IntN(1 << 20))}
		case 1:
			return "remove", []model.Value{k}
		}
		return "get", []model.Value{k}
	}, func(name string, args []model.Value) []model.Value {
		old, ok := m[args[0]]
		if !ok {
			old = model.Sym(model.Nil)
		}
		switch name {
		case "put":
			m[args[0]] = args[1]
		case "remove":
			delete(m, args[0])
		}
		return []model.Value{old}
	})
}

func queueHistory(r *rand.Rand, n int) *model.History {
	var q []model.Value
	next := 0
	return simulate(r, "queue", n, 4, 0, func(r *rand.Rand) (string, []model.Value) {
		if r.IntN(5) < 2 { // more deqs than enqs: the queue stays short, see BenchmarkCheck
			next++
			return "enq", []model.Value{num(next)}
		}
		return "deq", nil
	}, func(name string, args []model.Value) []model.Value {
		if name == "enq" {
			q = append(q, args[0])
			return []model.Value{model.Sym(model.OK)}
		}
		if len(q) == 0 {
			return []model.Value{model.Sym(model.Empty)}
		}
		v := q[0]
		q = q[1:]
		return []model.Value{v}
	})
}

func registerHistory(r *rand.Rand, n int) *model.History {
	v := num(0)
	return simulate(r, "register", n, 6, 0.1, func(r *rand.Rand) (string, []model.Value) {
		switch r.IntN(3) {
		case 0:
			return "write", []model.Value{num(r.IntN(1 << 20))}
		case 1:
			return "cas", []model.Value{v, num(r.IntN(1 << 20))}
		}
		return "read", nil
	}, func(name string, args []model.Value) []model.Value {
		switch name {
		case "write":
			v = args[0]
			return []model.Value{model.Sym(model.OK)}
		case "cas":
			if v != args[0] {
				return []model.Value{model.Sym(model.Fail)}
			}
			v = args[1]
			return []model.Value{model.Sym(model.OK)}
		}
		return []model.Value{v}
	})
}

// TestGenerated: the benchmarks' histories are legal, and a changed
// result makes them illegal (the generator and the checker agree on what
// legal is, and the checker is not vacuous on them).
func TestGenerated(t *testing.T) {
	for name, gen := range map[string]func(*rand.Rand, int) *model.History{
		"map": mapHistory, "queue": queueHistory, "register": registerHistory} {
		h := gen(rand.New(rand.NewPCG(1, 2)), 400)
		res, err := Check(context.Background(), h, Options{})
		if err != nil || res.Verdict != Linearizable {
			t.Fatalf("%s: %v %v", name, res.Verdict, err)
		}
		for i := range h.Ops {
			op := &h.Ops[i]
			if op.Status == model.Returned && op.Results[0].Sym == model.Num && op.Name != "enq" {
				op.Results[0].N += 1 << 30 // a value nobody wrote or enqueued
				break
			}
		}
		res, err = Check(context.Background(), h, Options{})
		if err != nil || res.Verdict != Violation {
			t.Fatalf("%s with a wrong result: %v %v", name, res.Verdict, err)
		}
	}
}

// BenchmarkCheck: a few thousand operations of a map (split by key), a
// queue and a register with some "?". The queue is kept short (two enqs
// for three deqs): two concurrent enqs whose order the search guesses
// wrong are only refuted when their values are dequeued, and each element
// waiting in the queue doubles the states until then (Lowe, "Testing for
// linearizability", Section 5, on queues; his queue-oriented algorithm is
// the remedy, not this search).
func BenchmarkCheck(b *testing.B) {
	for _, c := range []struct {
		name string
		gen  func(*rand.Rand, int) *model.History
		n    int
	}{{"map", mapHistory, 4000}, {"queue", queueHistory, 3000}, {"register", registerHistory, 3000}} {
		h := c.gen(rand.New(rand.NewPCG(7, 7)), c.n)
		b.Run(fmt.Sprintf("%s-%d", c.name, c.n), func(b *testing.B) {
			var states int64
			for b.Loop() {
				res, err := Check(context.Background(), h, Options{})
				if err != nil || res.Verdict != Linearizable {
					b.Fatalf("%v %v", res.Verdict, err)
				}
				states = res.States
			}
			b.ReportMetric(float64(states), "states/op")
		})
	}
}
