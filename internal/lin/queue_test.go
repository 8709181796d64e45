package lin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
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
// that the queue is often empty and deq -> empty overlaps enqueues. slow
// is the chance that a process's turn passes without its operation
// taking effect or returning: operations overlap more.
func genUniqueQueue(r *rand.Rand, nops, procs int, deqs, lie, slow float64) *model.History {
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
		case busy && r.Float64() < slow:
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
	res, err := lin.Check(context.Background(), h, lin.Options{Generic: generic, Engine: lin.EngineQueue})
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
// and with the brute force on those of up to bruteMax (three in four):
// 30,000 histories (100,000 under PMLIN_LONG=1). Each must be answered by the queue
// engine, and both verdicts must be common.
func TestQueueEngineAgrees(t *testing.T) {
	n := 30_000
	if testenv.Long() {
		n = 100_000
	}
	var ok, bad, brute, branched, branchedBad int
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 30))
		nops := 1 + r.IntN(14)
		if i%2 == 0 {
			nops = 1 + r.IntN(bruteMax)
		}
		h := genUniqueQueue(r, nops, 2+r.IntN(3), 0.3+0.4*r.Float64(), 0.5, 0)
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
		if lin.QueueBranched(h) {
			branched++
			if !fast {
				branchedBad++
			}
		}
		if fast {
			ok++
		} else {
			bad++
		}
	}
	t.Logf("%d histories: %d linearizable, %d not; %d also by the brute force; %d branched (a conflicting deq -> empty), %d of them not linearizable", n, ok, bad, brute, branched, branchedBad)
	if branched == 0 {
		t.Fatal("no history made the queue engine branch")
	}
	if ok < n/5 || bad < n/5 {
		t.Fatalf("verdicts too one-sided: %d linearizable, %d not", ok, bad)
	}
}

// TestQueueEngineFallsBack: what the queue engine cannot take goes to the
// generic search, which still answers.
func TestQueueEngineFallsBack(t *testing.T) {
	base := func() *model.History {
		return genUniqueQueue(rand.New(rand.NewPCG(1, 2)), 8, 2, 0.4, 0, 0)
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

// TestQueueEngineExplainsLarge: a violation in a queue too large for the
// generic search to explain is explained by where the queue engine stuck.
func TestQueueEngineExplainsLarge(t *testing.T) {
	h := genUniqueQueue(rand.New(rand.NewPCG(5, 34)), 3000, 4, 0.5, 0, 0)
	last := -1
	for i := range h.Ops {
		if h.Ops[i].Name == "deq" && h.Ops[i].Results[0].Sym == model.Num {
			last = i
		}
	}
	h.Ops[last].Results[0] = model.Number(1 << 40) // never enqueued
	res, err := lin.Check(context.Background(), h, lin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Objects[0]
	if res.Verdict != lin.Violation || o.Engine != lin.EngineQueue || o.Explanation == nil {
		t.Fatalf("%v by %s, explanation %v", res.Verdict, o.Engine, o.Explanation)
	}
	x := o.Explanation
	if x.Failing.Index != last || !strings.Contains(x.Sentence, "Lowe's queue-oriented algorithm") || !strings.Contains(x.Sentence, "which no enq of q enqueues") {
		t.Fatalf("failing %d (want %d): %s", x.Failing.Index, last, x.Sentence)
	}
}

// TestQueueEngineExplains: a violation the queue engine finds is
// explained, on a small history by the generic search's explanation.
func TestQueueEngineExplains(t *testing.T) {
	for i := range 200 {
		h := genUniqueQueue(rand.New(rand.NewPCG(uint64(i), 31)), 10, 3, 0.5, 1, 0)
		// The engine is forced: on ten operations the generic search, raced
		// against it, may answer first on a loaded machine.
		res, err := lin.Check(context.Background(), h, lin.Options{Engine: lin.EngineQueue})
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

// genRandomQueue makes a queue history of nops operations on procs
// processes with random overlaps and random results: each enq a value of
// its own, each deq empty (chance empty) or a value enqueued somewhere
// (each value dequeued at most once). Most are not linearizable, but
// their shapes are those a simulation rarely makes (a deq -> empty
// overlapping a dequeue and an enqueue that returns before another
// dequeue starts: the queue engine's branching case).
func genRandomQueue(r *rand.Rand, nops, procs int, empty float64) *model.History {
	h := &model.History{Objects: []model.Object{{Name: "q", Model: "queue"}}}
	var pending []int // by process - 1: index of its operation in flight, or -1
	for range procs {
		pending = append(pending, -1)
	}
	var vals []uint64
	next := uint64(1)
	started := 0
	for started < nops || slices.ContainsFunc(pending, func(i int) bool { return i >= 0 }) {
		p := r.IntN(procs)
		if i := pending[p]; i >= 0 {
			op := &h.Ops[i]
			op.Status, op.Return = model.Returned, h.Events
			h.Events++
			pending[p] = -1
			continue
		}
		if started == nops {
			continue
		}
		op := model.Op{Proc: int64(p + 1), Name: "deq", Status: model.CutOff, Call: h.Events, Return: -1, Crash: -1}
		if r.IntN(2) == 0 {
			op.Name, op.Args, op.Results = "enq", []model.Value{model.Number(next)}, []model.Value{model.Sym(model.OK)}
			vals = append(vals, next)
			next++
		}
		h.Ops = append(h.Ops, op)
		h.Events++
		pending[p] = len(h.Ops) - 1
		started++
	}
	// Results of the deqs: distinct values, or empty.
	r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Name == "deq" {
			op.Results = []model.Value{model.Sym(model.Empty)}
			if len(vals) > 0 && r.Float64() >= empty {
				op.Results[0] = model.Number(vals[0])
				vals = vals[1:]
			}
		}
	}
	return h
}

// TestQueueEngineBranching: the histories where the queue engine must
// branch (a conflicting deq -> empty, Lowe's Definition 11) are rare in
// random ones (a few in a thousand): this test looks for them among many
// generated histories and compares the engine's verdict on each with the
// generic search's, and with the brute force's on small ones.
func TestQueueEngineBranching(t *testing.T) {
	want := 150
	if testenv.Long() {
		want = 1500
	}
	var found, ok, brute int
	for i := 0; found < want; i++ {
		if i > 2000*want {
			t.Fatalf("only %d histories that branch in %d", found, i)
		}
		r := rand.New(rand.NewPCG(uint64(i), 33))
		var h *model.History
		if i%2 == 0 {
			h = genRandomQueue(r, 4+r.IntN(10), 3+r.IntN(4), 0.2+0.3*r.Float64())
		} else {
			h = genUniqueQueue(r, 4+r.IntN(10), 3+r.IntN(6), 0.4+0.3*r.Float64(), 0.5, 0.6)
		}
		if !lin.QueueBranched(h) {
			continue
		}
		found++
		fast, engine := checkQueue(t, h, false)
		slow, _ := checkQueue(t, h, true)
		if engine != lin.EngineQueue || fast != slow {
			t.Fatalf("history %d: queue engine (%s) says %v, generic search %v\n%s", i, engine, fast, slow, renderV2(h))
		}
		if len(h.Ops) <= bruteMax {
			if b, err := bruteForce(h, history.Strict); err != nil || b != fast {
				t.Fatalf("history %d: queue engine says %v, brute force %v (%v)\n%s", i, fast, b, err, renderV2(h))
			}
			brute++
		}
		if fast {
			ok++
		}
	}
	t.Logf("%d histories that branch: %d linearizable, %d not; %d also by the brute force", found, ok, found-ok, brute)

	// Random histories that branch are violations (a dequeue whose value
	// is gone keeps the engine stuck whatever it chooses). One that branches
	// and is linearizable, by hand: the deq -> empty of process 4 and the
	// deq -> 1 of process 3 are invoked before enq 1 returns, and deq -> 2
	// after, so the pair (enq 2, deq -> 2) has a conflicting deq -> empty;
	// the order enq 2, enq 1, deq -> 2, deq -> 1, deq -> empty explains it.
	h, err := parseV2("pmlin-history v2\nobject q queue\n" +
		"1 inv q enq 2\n1 ret ok\n2 inv q enq 1\n3 inv q deq\n4 inv q deq\n2 ret ok\n" +
		"1 inv q deq\n1 ret 2\n3 ret 1\n4 ret empty\n")
	if err != nil {
		t.Fatal(err)
	}
	b, err := bruteForce(h, history.Strict)
	if err != nil {
		t.Fatal(err)
	}
	fast, engine := checkQueue(t, h, false)
	if !lin.QueueBranched(h) || !b || !fast || engine != lin.EngineQueue {
		t.Fatalf("branched %v, brute force %v, queue engine (%s) %v", lin.QueueBranched(h), b, engine, fast)
	}
}
