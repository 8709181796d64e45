package lin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/model"
)

// The engines that may answer for an object (ObjectResult.Engine).
const (
	EngineExact = "exact" // the generic search (search.go)
	EngineQueue = "queue" // Lowe's queue-oriented algorithm (this file)
	EngineMixed = "mixed" // some parts of an object by one, some by another
)

// queueApplies says whether the queue engine decides part p: one object
// of the built-in unbounded queue, every operation returned (no optional
// one: no window to respect, so neither crashes, whose only effect on a
// returned operation is none, window.go, nor the mode matter), enq always
// answered ok, every enqueued value enqueued once, and no contents. Anything else is
// the generic search's. A user's own models (opt.Models) may call a
// different model "queue": the engine then stays out.
func queueApplies(h *model.History, p *part, opt *Options) bool {
	if opt.Generic || opt.Engine == EngineExact || opt.Engine == EngineUnique || opt.Models != nil || len(p.objs) != 1 || p.required != nil {
		return false
	}
	obj := &h.Objects[p.objs[0]]
	if obj.Model != "queue" || len(obj.Params) != 0 {
		return false
	}
	seen := make(map[model.Value]bool, len(p.ops)/2)
	for _, i := range p.ops {
		op := &h.Ops[i]
		if op.Status != model.Returned || op.Name == "contents" {
			// (contents, pmlin's read of the whole queue, is the generic
			// search's: Lowe's algorithm knows enq and deq.)
			return false
		}
		if op.Name == "enq" {
			if op.Results[0].Sym != model.OK || seen[op.Args[0]] {
				return false
			}
			seen[op.Args[0]] = true
		}
	}
	return true
}

// queueOutcome is the queue engine's answer: a verdict, or ok false when
// its budget of steps ran out (the generic search then decides); on a
// violation, the successful or empty deq it could not place and, when
// there is one, the enq of its value.
type queueOutcome struct {
	verdict  Verdict
	ok       bool
	failing  int // index in History.Ops
	enq      int // the enq of failing's value, or -1
	enqGone  bool
	matched  int // pairs removed before the engine stuck (deterministic path)
	branched bool
}

// Kinds of operation of the queue engine.
const (
	qEnq = iota
	qDeq // successful
	qEmpty
)

// decideQueue decides a complete history of a queue whose enqueued values
// are unique by Lowe's queue-oriented algorithm ("Testing for
// linearizability", Concurrency and Computation 2017, Section 5, Figure
// 3). With every value enqueued once, every minimal matching pair is
// earliest-ending, so the algorithm is:
//
//   - no dequeue left: linearizable (Lemma 7);
//   - a minimal deq -> empty: remove it (Lemma 8);
//   - a minimal matching pair (e, d) without a conflicting unsuccessful
//     dequeue (Definition 11): h is linearizable iff h - e -D d is (Lemma
//     12), so take it without a choice point;
//   - else try every minimal matching pair (Lemmas 9 and 10), backtracking;
//     none: not linearizable.
//
// The transformation -D d delays the invocation of every dequeue left
// to just after the last return of an enqueue that precedes d; since it
// applies to every dequeue left (those not concurrent with the
// deq-minimal d are invoked after d returns, later already), the history
// left is the original one with each dequeue's invocation raised to a
// floor F, the largest such return so far: eff(d) = max(call(d), F).
// Times are doubled so that "just after F" (2F+1) ties with nothing.
//
// Which pair to take: whether d has a conflicting unsuccessful dequeue
// depends on d only through the enqueues that return before eff(d) (the
// one that returns last is the best e'), so the deq-minimal d with the
// earliest eff(d) is the one with the fewest; if it has one, every pair
// has, and the algorithm branches. The test is conservative (e' may be
// e itself), which only makes it branch where it need not: branching is
// exact anyway.
//
// Each step costs O(p) for p dequeues pending at once, plus O(log n) for
// the enqueues' Fenwick tree; without branching the whole is O(n (p +
// log n)). Branching is exponential in the worst case: beyond budget
// steps the engine gives up (ok false) rather than guess.
func decideQueue(ctx context.Context, h *model.History, p *part, budget int64) queueOutcome {
	n := len(p.ops)
	kind := make([]uint8, n)
	call := make([]int64, n)
	ret := make([]int64, n)
	match := make([]int32, n) // a successful deq's enq, or -1
	enqOf := make(map[model.Value]int32, n/2)
	for j, i := range p.ops {
		op := &h.Ops[i]
		call[j], ret[j] = 2*int64(op.Call), 2*int64(op.Return)
		switch {
		case op.Name == "enq":
			kind[j] = qEnq
			enqOf[op.Args[0]] = int32(j)
		case op.Results[0].Sym == model.Empty:
			kind[j] = qEmpty
		default:
			kind[j] = qDeq
		}
	}
	var (
		byRet, deqByRet, empties, enqByRet []int32
		succ                               []int32 // successful deqs in call order
	)
	for j := range n {
		byRet = append(byRet, int32(j))
		match[j] = -1
		switch kind[j] {
		case qEnq:
			enqByRet = append(enqByRet, int32(j))
		case qEmpty:
			empties = append(empties, int32(j))
			deqByRet = append(deqByRet, int32(j))
		case qDeq:
			succ = append(succ, int32(j))
			deqByRet = append(deqByRet, int32(j))
			if e, ok := enqOf[h.Ops[p.ops[j]].Results[0]]; ok {
				match[j] = e
			}
		}
	}
	byR := func(a, b int32) int { return int(ret[a] - ret[b]) }
	slices.SortFunc(byRet, byR)
	slices.SortFunc(deqByRet, byR)
	slices.SortFunc(enqByRet, byR)
	rank := make([]int32, n) // an enq's place in enqByRet, from 1
	for r, j := range enqByRet {
		rank[j] = int32(r + 1)
	}
	// fen counts the enqueues left by rank (a Fenwick tree).
	fen := make([]int32, len(enqByRet)+1)
	fenAdd := func(r int32, d int32) {
		for ; int(r) < len(fen); r += r & -r {
			fen[r] += d
		}
	}
	fenSum := func(r int32) (s int32) {
		for ; r > 0; r -= r & -r {
			s += fen[r]
		}
		return
	}
	// fenFind: the least rank whose prefix count reaches c (c >= 1).
	top := int32(1)
	for int(top*2) < len(fen) {
		top *= 2
	}
	fenFind := func(c int32) int32 {
		pos := int32(0)
		for step := top; step > 0; step /= 2 {
			if q := pos + step; int(q) < len(fen) && fen[q] < c {
				pos = q
				c -= fen[q]
			}
		}
		return pos + 1
	}
	for r := range enqByRet {
		fenAdd(int32(r+1), 1)
	}
	// before counts the enqueues left that return before time t.
	before := func(t int64) int32 {
		r, _ := slices.BinarySearchFunc(enqByRet, t, func(x int32, t int64) int { return int(ret[x] - t) })
		return fenSum(int32(r))
	}
	// The successful deqs left, a doubly linked list in call order; node
	// k+1 is succ[k], 0 the head.
	next := make([]int32, len(succ)+2)
	prev := make([]int32, len(succ)+2)
	node := make([]int32, n)
	for k := range len(succ) + 1 {
		next[k], prev[k+1] = int32(k+1), int32(k)
	}
	next[len(succ)] = 0
	prev[0] = int32(len(succ))
	for k, j := range succ {
		node[j] = int32(k + 1)
	}
	unlink := func(x int32) { next[prev[x]], prev[next[x]] = next[x], prev[x] }
	relink := func(x int32) { next[prev[x]], prev[next[x]] = x, x }

	removed := make([]bool, n)
	F := int64(-1)
	eff := func(j int32) int64 { return max(call[j], F) }
	const inf = int64(1) << 62
	var ptrAll, ptrDeq, ptrEmpty int
	deqsLeft := len(deqByRet)
	first := func(list []int32, ptr *int) int32 {
		for *ptr < len(list) && removed[list[*ptr]] {
			*ptr++
		}
		if *ptr == len(list) {
			return -1
		}
		return list[*ptr]
	}
	minRet := func(list []int32, ptr *int) int64 {
		if j := first(list, ptr); j >= 0 {
			return ret[j]
		}
		return inf
	}

	// The trail of steps, to undo them when backtracking.
	type step struct {
		a, b                     int32 // removed: a deq and its enq, or an empty deq and -1
		f                        int64
		ptrAll, ptrDeq, ptrEmpty int
	}
	var trail []step
	apply := func(d int32) {
		s := step{a: d, b: -1, f: F, ptrAll: ptrAll, ptrDeq: ptrDeq, ptrEmpty: ptrEmpty}
		removed[d] = true
		deqsLeft--
		if kind[d] == qDeq {
			e := match[d]
			s.b = e
			removed[e] = true
			fenAdd(rank[e], -1)
			unlink(node[d])
			// Raise the floor to the last return of an enqueue left that
			// returned before d was invoked (-D d).
			if c := before(eff(d)); c > 0 {
				F = max(F, ret[enqByRet[fenFind(c)-1]]+1)
			}
		}
		trail = append(trail, s)
	}
	undo := func() {
		s := trail[len(trail)-1]
		trail = trail[:len(trail)-1]
		removed[s.a] = false
		deqsLeft++
		if s.b >= 0 {
			removed[s.b] = false
			fenAdd(rank[s.b], 1)
			relink(node[s.a])
		}
		F, ptrAll, ptrDeq, ptrEmpty = s.f, s.ptrAll, s.ptrDeq, s.ptrEmpty
	}
	// conflict: some enqueue left returns after the first successful and
	// the first empty dequeue left are invoked, and before d is.
	conflict := func(d int32) bool {
		x := first(empties, &ptrEmpty)
		if x < 0 {
			return false
		}
		lo := max(eff(succ[next[0]-1]), eff(x))
		return before(eff(d)) > before(lo+1)
	}

	type choice struct {
		trail int
		cands []int32
		next  int
	}
	var choices []choice
	var cands []int32
	out := queueOutcome{ok: true, verdict: Violation, failing: -1, enq: -1}
	steps := int64(0)
	for {
		if steps++; steps > budget {
			return queueOutcome{}
		}
		if steps&4095 == 0 && ctx.Err() != nil {
			return queueOutcome{}
		}
		if deqsLeft == 0 {
			out.verdict = Linearizable
			return out
		}
		m := minRet(byRet, &ptrAll)
		if x := first(empties, &ptrEmpty); x >= 0 && eff(x) < m {
			apply(x)
			continue
		}
		mD := minRet(deqByRet, &ptrDeq)
		cands = cands[:0]
		for k := next[0]; k != 0 && eff(succ[k-1]) < mD; k = next[k] {
			d := succ[k-1]
			if e := match[d]; e >= 0 && !removed[e] && call[e] < m {
				cands = append(cands, d)
			}
		}
		switch {
		case len(cands) > 0 && !conflict(cands[0]):
			apply(cands[0])
			continue
		case len(cands) > 0:
			out.branched = true
			choices = append(choices, choice{trail: len(trail), cands: slices.Clone(cands), next: 1})
			apply(cands[0])
			continue
		}
		// Stuck: no order from here. The first time, say where.
		if out.failing < 0 {
			out.matched = len(trail)
			var d int32
			if next[0] != 0 {
				d = succ[next[0]-1]
			} else {
				d = first(empties, &ptrEmpty)
			}
			out.failing = p.ops[d]
			if kind[d] == qDeq && match[d] >= 0 {
				out.enq, out.enqGone = p.ops[match[d]], removed[match[d]]
			}
		}
		for len(choices) > 0 && choices[len(choices)-1].next == len(choices[len(choices)-1].cands) {
			choices = choices[:len(choices)-1]
		}
		if len(choices) == 0 {
			return out
		}
		c := &choices[len(choices)-1]
		for len(trail) > c.trail {
			undo()
		}
		apply(c.cands[c.next])
		c.next++
	}
}

// queueExplainMax bounds the operations of a queue whose violation the
// generic search explains (its search and shrinking are exponential at
// worst); beyond it, or if that search stops, the queue engine's own
// account explains it.
const queueExplainMax = 2000

// explainQueue explains a violation the queue engine found: by the
// generic search when the object is small enough and the search finds it
// too, else by where the engine stuck.
func explainQueue(ctx context.Context, h *model.History, p *part, bounds []int, opt *Options, sh *shared, q *queueOutcome) *Explanation {
	if len(p.ops) <= queueExplainMax {
		if out := decide(ctx, h, p, bounds, opt, sh); out.verdict == Violation {
			return explain(ctx, h, p, bounds, opt, &out)
		}
	}
	obj := &h.Objects[p.objs[0]]
	e := &Explanation{Object: obj.Name, Model: obj.Model, Failing: opt.ref(h, q.failing)}
	for _, i := range p.ops {
		e.Ops = append(e.Ops, opt.ref(h, i))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "No order of the operations of %s (%s) explains them (Lowe's queue-oriented algorithm", obj.Name, obj.Model)
	if q.branched {
		b.WriteString(", having tried every minimal enq/deq pair where it had to choose")
	}
	fmt.Fprintf(&b, "). After pairing %d enqueues with dequeues in order, the first dequeue left, %s at %s, ", q.matched, e.Failing.Op, e.Failing.at())
	switch f := &h.Ops[q.failing]; {
	case f.Results[0].Sym == model.Empty:
		b.WriteString("returned empty though an enqueue left had to take effect before it")
	case q.enq < 0:
		fmt.Fprintf(&b, "returned %s, which no enq of %s enqueues", f.Results[0], obj.Name)
	case q.enqGone:
		fmt.Fprintf(&b, "returned %s, which an earlier dequeue already took (enqueued by %s at %s)", f.Results[0], opt.ref(h, q.enq).Op, opt.ref(h, q.enq).at())
	default:
		fmt.Fprintf(&b, "cannot take effect: the enq of its value, %s at %s, cannot come before the operations left that precede it", opt.ref(h, q.enq).Op, opt.ref(h, q.enq).at())
	}
	b.WriteString(".")
	e.Sentence = b.String()
	return e
}
