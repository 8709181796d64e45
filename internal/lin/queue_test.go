package lin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// genUniqueQueue simulates procs processes on one correct unbounded queue
// for nops operations: each enq enqueues a value of its own, each
// operation takes effect at a random step between its invocation and its
// response. With chance lie it then breaks one dequeue's result (empty, a
// value enqueued elsewhere, or one never enqueued), so that both verdicts
// are common. deqs is the chance that an operation is a deq: high, so
// that the queue is often empty and deq -> empty overlaps enqueues.
func genUniqueQueue(r *rand.Rand, nops, procs int, deqs, lie float64) *model.History {
	h := &model.History{Objects: []model.Object{{Name: "q", Model: "queue"}}}
	type flight struct {
		idx     int
		applied bool
		res     model.Value
	}
	inflight := map[int64]*flight{}
	var q []uint64
	next := uint64(1)
	for len(h.Ops) < nops || len(inflight) > 0 {
		p := int64(1 + r.IntN(procs))
		f, busy := inflight[p]
		switch {
		case !busy && len(h.Ops) < nops:
			op := model.Op{Proc: p, Name: "deq", Status: model.CutOff, Call: h.Events, Return: -1, Crash: -1}
			if r.Float64() >= deqs {
				op.Name, op.Args = "enq", []model.Value{model.Number(next)}
				next++
			}
			h.Ops = append(h.Ops, op)
			h.Events++
			inflight[p] = &flight{idx: len(h.Ops) - 1}
		case busy && !f.applied:
			op := &h.Ops[f.idx]
			f.applied = true
			switch {
			case op.Name == "enq":
				q = append(q, op.Args[0].N)
				f.res = model.Sym(model.OK)
			case len(q) == 0:
				f.res = model.Sym(model.Empty)
			default:
				f.res = model.Number(q[0])
				q = q[1:]
			}
		case busy:
			op := &h.Ops[f.idx]
			op.Status, op.Return, op.Results = model.Returned, h.Events, []model.Value{f.res}
			h.Events++
			delete(inflight, p)
		}
	}
	if r.Float64() < lie {
		var ds []int
		for i := range h.Ops {
			if h.Ops[i].Name == "deq" {
				ds = append(ds, i)
			}
		}
		if len(ds) > 0 {
			d := &h.Ops[ds[r.IntN(len(ds))]]
			switch k := r.IntN(4); {
			case k == 0:
				d.Results[0] = model.Sym(model.Empty)
			case k == 3 && r.IntN(3) == 0:
				d.Results[0] = model.Number(next) // never enqueued
			default:
				d.Results[0] = model.Number(1 + uint64(r.IntN(int(next))))
			}
		}
	}
	return h
}

func checkQueue(t *testing.T, h *model.History, generic bool) (bool, string) {
	t.Helper()
	res, err := lin.Check(context.Background(), h, lin.Options{Generic: generic})
	if err != nil {
		t.Fatalf("lin.Check: %v\n%s", err, renderV2(h))
	}
	if res.Verdict == lin.Undecided {
		t.Fatalf("undecided: %s\n%s", res.Objects[0].Reason, renderV2(h))
	}
	return res.Verdict == lin.Linearizable, res.Objects[0].Engine
}

// TestQueueEngineAgrees compares the queue engine with the generic search
// (forced) on random unique-value queue histories of up to 14 operations,
// and with the brute force on those of up to bruteMax: 20,000 histories
// (100,000 under PMLIN_LONG=1). Each must be answered by the queue
// engine, and both verdicts must be common.
func TestQueueEngineAgrees(t *testing.T) {
	n := 20_000
	if testenv.Long() {
		n = 100_000
	}
	var ok, bad, brute int
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 30))
		nops := 1 + r.IntN(14)
		if i%2 == 0 {
			nops = 1 + r.IntN(bruteMax)
		}
		h := genUniqueQueue(r, nops, 2+r.IntN(3), 0.3+0.4*r.Float64(), 0.5)
		fast, engine := checkQueue(t, h, false)
		if engine != lin.EngineQueue {
			t.Fatalf("history %d: answered by %q, not the queue engine\n%s", i, engine, renderV2(h))
		}
		slow, engine := checkQueue(t, h, true)
		if engine != lin.EngineExact {
			t.Fatalf("history %d: forced generic search answered by %q", i, engine)
		}
		if fast != slow {
			t.Fatalf("history %d: queue engine says %v, generic search %v\n%s", i, fast, slow, renderV2(h))
		}
		if len(h.Ops) <= bruteMax {
			want, err := bruteForce(h, history.Strict)
			if err != nil {
				t.Fatal(err)
			}
			if fast != want {
				t.Fatalf("history %d: queue engine says %v, brute force %v\n%s", i, fast, want, renderV2(h))
			}
			brute++
		}
		if fast {
			ok++
		} else {
			bad++
		}
	}
	t.Logf("%d histories: %d linearizable, %d not; %d also by the brute force", n, ok, bad, brute)
	if ok < n/5 || bad < n/5 {
		t.Fatalf("verdicts too one-sided: %d linearizable, %d not", ok, bad)
	}
}

// TestQueueEngineFallsBack: what the queue engine cannot take goes to the
// generic search, which still answers.
func TestQueueEngineFallsBack(t *testing.T) {
	base := func() *model.History {
		return genUniqueQueue(rand.New(rand.NewPCG(1, 2)), 8, 2, 0.4, 0)
	}
	cases := map[string]func(h *model.History){
		"repeated value": func(h *model.History) {
			for i := range h.Ops {
				if h.Ops[i].Name == "enq" {
					h.Ops[i].Args[0] = model.Number(7)
				}
			}
		},
		"cap":     func(h *model.History) { h.Objects[0].Params = []model.Param{{Key: "cap", Value: "3"}} },
		"unknown": func(h *model.History) { h.Ops[len(h.Ops)-1].Status, h.Ops[len(h.Ops)-1].Results = model.Unknown, nil },
		"enq fail": func(h *model.History) {
			for i := range h.Ops {
				if h.Ops[i].Name == "enq" {
					h.Ops[i].Results[0] = model.Sym(model.Fail)
					return
				}
			}
		},
	}
	if _, engine := checkQueue(t, base(), false); engine != lin.EngineQueue {
		t.Fatalf("the base history is answered by %q", engine)
	}
	for name, change := range cases {
		h := base()
		change(h)
		res, err := lin.Check(context.Background(), h, lin.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e := res.Objects[0].Engine; e != lin.EngineExact {
			t.Errorf("%s: answered by %q, want the generic search", name, e)
		}
	}
}

// TestQueueEngineExplains: a violation the queue engine finds is
// explained, on a small history by the generic search's explanation.
func TestQueueEngineExplains(t *testing.T) {
	for i := range 200 {
		h := genUniqueQueue(rand.New(rand.NewPCG(uint64(i), 31)), 10, 3, 0.5, 1)
		res, err := lin.Check(context.Background(), h, lin.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != lin.Violation {
			continue
		}
		o := res.Objects[0]
		if o.Engine != lin.EngineQueue || o.Explanation == nil || o.Explanation.Sentence == "" || len(o.Explanation.Ops) == 0 {
			t.Fatalf("history %d: engine %q, explanation %+v", i, o.Engine, o.Explanation)
		}
		return
	}
	t.Fatal(fmt.Errorf("no violation in 200 histories"))
}
