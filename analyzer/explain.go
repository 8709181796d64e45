package analyzer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/history"
)

// anomalies fills res.Anomalies from the evaluation's findings, at most max
// of each kind, counting the rest in res.Omitted.
func (e *eval) anomalies(ctx context.Context, res *Result, max int) error {
	h := e.h
	add := func(count *int, a Anomaly) {
		if *count >= max {
			res.Omitted++
			return
		}
		*count++
		res.Anomalies = append(res.Anomalies, a)
	}
	var nd, nf, nu, nx int
	for _, x := range e.h.dangling {
		i := h.accOp[x]
		if !e.observer(i) {
			continue
		}
		w := h.wordOf(x)
		verb := "read"
		if !h.isRead(i) {
			verb = "succeeded expecting"
		}
		add(&nd, Anomaly{Kind: Dangling, Ops: []int64{int64(h.line[i])}, Words: []uint64{h.addr[w]},
			Explanation: fmt.Sprintf("%s %s address %d = %s, a value nothing wrote there (its initial value is %s)",
				h.opName(i), verb, h.addr[w], history.FormatValue(h.valueOf(x)), history.FormatValue(h.initVal[w]))})
	}
	for _, f := range e.forks {
		a, b := f[0], f[1]
		w := h.wordOf(b)
		ia, ib := h.accOp[a], h.accOp[b]
		from := "its initial value"
		if y := h.ver[b]; y >= 0 {
			from = "written by " + h.opName(h.accOp[y])
		}
		add(&nf, Anomaly{Kind: Fork, Ops: []int64{int64(h.line[ia]), int64(h.line[ib])}, Words: []uint64{h.addr[w]},
			Explanation: fmt.Sprintf("%s and %s both replaced %s at address %d (%s); values are never written twice, so only one of them can have succeeded",
				h.opName(ia), h.opName(ib), history.FormatValue(h.valueOf(b)), h.addr[w], from)})
	}
	for _, x := range e.unreach {
		i, w := h.accOp[x], h.wordOf(x)
		y := h.ver[x]
		ops := []int64{int64(h.line[i])}
		if y >= 0 {
			ops = append(ops, int64(h.line[h.accOp[y]]))
		}
		add(&nu, Anomaly{Kind: UnreachableWrite, Ops: ops, Words: []uint64{h.addr[w]},
			Explanation: fmt.Sprintf("%s succeeded expecting address %d = %s, written by %s, but that write is not on address %d's chain of writes from its initial value",
				h.opName(i), h.addr[w], history.FormatValue(h.valueOf(x)), h.opName(h.accOp[y]), h.addr[w])})
	}
	for _, x := range e.unexplain {
		i, w := h.accOp[x], h.wordOf(x)
		y := h.ver[x]
		ops := []int64{int64(h.line[i])}
		writer := "its initial value"
		if y >= 0 {
			ops = append(ops, int64(h.line[h.accOp[y]]))
			writer = "written by " + h.opName(h.accOp[y])
		}
		add(&nx, Anomaly{Kind: UnexplainedFailure, Ops: ops, Words: []uint64{h.addr[w]},
			Explanation: fmt.Sprintf("%s failed at address %d expecting %s (%s), but no successful cas ever replaced that value there, so the address always held it",
				h.opName(i), h.addr[w], history.FormatValue(h.valueOf(x)), writer)})
	}
	if e.cyclic {
		if err := e.cycles(ctx, res, max); err != nil {
			return err
		}
	}
	e.witness(res) // witness.go: edges of the other kinds, staleness
	return nil
}

// cycles reports one short cycle per strongly connected component with a
// cycle (Tarjan's algorithm, iterative), found by a breadth-first search
// inside the component.
func (e *eval) cycles(ctx context.Context, res *Result, max int) error {
	comp, roots, err := e.components(ctx)
	if err != nil {
		return err
	}
	for k, s := range roots {
		if k >= max {
			res.Omitted += int64(len(roots) - max)
			break
		}
		// The shortest cycle through the component's root may not be the
		// shortest in the component: also try through each vertex of the
		// one found (few, and each search is linear).
		cyc := e.shortestCycle(s, comp)
		for _, v := range slices.Clone(cyc[1:]) {
			if len(cyc) <= 2 {
				break
			}
			if c := e.shortestCycle(v, comp); len(c) < len(cyc) {
				cyc = c
			}
		}
		res.Anomalies = append(res.Anomalies, e.explainCycle(cyc))
	}
	return nil
}

// components labels strongly connected components that hold a cycle; it
// returns comp (component id+1 per vertex, 0 for vertices on no cycle) and
// one vertex of each such component.
func (e *eval) components(ctx context.Context) (comp []int32, roots []int32, err error) {
	h := e.h
	n := h.n
	index := make([]int32, n) // 0: unvisited; else discovery order + 1
	low := make([]int32, n)
	onStack := make([]uint64, (n+63)/64)
	comp = make([]int32, n)
	var stack []int32
	type frame struct{ v, i int32 }
	var calls []frame
	counter := int32(0)
	ncomp := int32(0)
	push := func(v int32) {
		counter++
		index[v], low[v] = counter, counter
		stack = append(stack, v)
		setBit(onStack, v)
		calls = append(calls, frame{v, 0})
	}
	for root := int32(0); root < n; root++ {
		if index[root] != 0 || !e.effective(root) {
			continue
		}
		if root&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		push(root)
		for len(calls) > 0 {
			top := &calls[len(calls)-1]
			v := top.v
			d := e.degree(v)
			descended := false
			for top.i < d {
				t := e.edgeAt(v, top.i)
				top.i++
				if t == none {
					continue
				}
				if index[t] == 0 {
					push(t)
					descended = true
					break
				}
				if bit(onStack, t) && index[t] < low[v] {
					low[v] = index[t]
				}
			}
			if descended {
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].v
				if low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] != index[v] {
				continue
			}
			// v is the root of a component: pop it.
			j := len(stack) - 1
			for stack[j] != v {
				j--
			}
			members := stack[j:]
			cyclic := len(members) > 1
			if !cyclic { // a self-loop is a cycle of one
				for k := int32(0); k < d; k++ {
					if e.edgeAt(v, k) == v {
						cyclic = true
					}
				}
			}
			if cyclic {
				ncomp++
				for _, m := range members {
					comp[m] = ncomp
				}
				roots = append(roots, v)
			}
			for _, m := range members {
				onStack[m>>6] &^= 1 << (uint(m) & 63)
			}
			stack = stack[:j]
		}
	}
	return comp, roots, nil
}

// shortestCycle finds a shortest cycle through s inside s's component by a
// breadth-first search in which happens-before is the whole relation, not
// ReduceHB's edges: a person reads "A returned before B was invoked" as one
// step, however many operations ran in between. The successors of u by
// happens-before are all ids >= lo[u]; a "next unvisited id" union-find
// (vertices outside the component start visited) lets the search take each
// vertex once, so it stays linear.
func (e *eval) shortestCycle(s int32, comp []int32) []int32 {
	h := e.h
	n := h.n
	c := comp[s]
	parent := make([]int32, n)
	free := make([]int32, n+1) // free[v] == v: v unvisited; else a later candidate
	for v := int32(0); v <= n; v++ {
		free[v] = v
		if v < n && comp[v] != c {
			free[v] = v + 1
		}
	}
	find := func(v int32) int32 {
		r := v
		for free[r] != r {
			r = free[r]
		}
		for free[v] != r {
			free[v], v = r, free[v]
		}
		return r
	}
	visit := func(v, from int32) { parent[v] = from; free[v] = v + 1 }
	queue := []int32{s}
	visit(s, s)
	last := none
	for qi := 0; qi < len(queue) && last == none; qi++ {
		u := queue[qi]
		hb := e.effective(u) && h.lo[u] < n
		if hb && s >= h.lo[u] {
			last = u
			break
		}
		if hb {
			for v := find(h.lo[u]); v < n; v = find(v) {
				visit(v, u)
				queue = append(queue, v)
			}
		}
		d := e.degree(u)
		for k := e.hbDegree(u); k < d; k++ {
			t := e.edgeAt(u, k)
			if t == none || comp[t] != c {
				continue
			}
			if t == s {
				last = u
				break
			}
			if find(t) == t {
				visit(t, u)
				queue = append(queue, t)
			}
		}
	}
	var cyc []int32
	for v := last; v != s; v = parent[v] {
		cyc = append(cyc, v)
	}
	cyc = append(cyc, s)
	slices.Reverse(cyc)
	return cyc
}

// explainCycle turns a cycle of vertices into an anomaly, each edge with
// its reason.
func (e *eval) explainCycle(cyc []int32) Anomaly {
	h := e.h
	a := Anomaly{Kind: Cycle}
	words := map[uint64]bool{}
	var steps []string
	for k, u := range cyc {
		v := cyc[(k+1)%len(cyc)]
		ed := e.why(u, v)
		a.Ops = append(a.Ops, int64(h.line[u]))
		a.Edges = append(a.Edges, ed)
		if ed.Kind != HappensBefore && ed.Kind != Recovery && !words[ed.Word] {
			words[ed.Word] = true
			a.Words = append(a.Words, ed.Word)
		}
		steps = append(steps, ed.Reason)
	}
	slices.Sort(a.Words)
	if a.Words == nil {
		a.Words = []uint64{}
	}
	a.Explanation = fmt.Sprintf("%d operations must each come before the next, and the last before the first: %s",
		len(cyc), strings.Join(steps, "; "))
	return a
}

// why names the reason for the edge u -> v, preferring reads-from, then
// auxiliary, then recovery, then happens-before.
func (e *eval) why(u, v int32) Edge {
	h, ver := e.h, e.h.ver
	ed := Edge{From: int64(h.line[u]), To: int64(h.line[v])}
	if e.observer(v) {
		for x := int32(h.acc[v]); x < int32(h.acc[v+1]); x++ {
			if y := ver[x]; y >= 0 && h.accOp[y] == u {
				w := h.wordOf(x)
				verb := "read"
				if !h.isRead(v) {
					verb = "expected"
				}
				ed.Kind, ed.Word = ReadsFrom, h.addr[w]
				ed.Reason = fmt.Sprintf("%s %s address %d = %s, written by %s", h.opName(v), verb, h.addr[w], history.FormatValue(h.valueOf(x)), h.opName(u))
				return ed
			}
		}
	}
	if h.flags[u]&(fRead|fReturned) == fRead|fReturned {
		for x := int32(h.acc[u]); x < int32(h.acc[u+1]); x++ {
			if s := e.next(ver[x], h.wordOf(x)); s != none && h.accOp[s] == v {
				w := h.wordOf(x)
				ed.Kind, ed.Word = Auxiliary, h.addr[w]
				ed.Reason = fmt.Sprintf("%s read address %d = %s, which %s replaced, so the read came first", h.opName(u), h.addr[w], history.FormatValue(h.valueOf(x)), h.opName(v))
				return ed
			}
		}
	}
	if !h.isRead(v) && h.flags[v]&(fReturned|fOK) == fReturned {
		x := h.blamedAccess(v)
		if src, _ := e.failureSource(v, x); src != none && h.accOp[src] == u {
			w := h.wordOf(x)
			ed.Kind, ed.Word = Auxiliary, h.addr[w]
			ed.Reason = fmt.Sprintf("%s failed at address %d expecting %s, so it needs a write that replaced that value there; %s is that write", h.opName(v), h.addr[w], history.FormatValue(h.valueOf(x)), h.opName(u))
			return ed
		}
	}
	if e.mode == history.Recoverable && h.flags[u]&fCompleted != 0 {
		for _, c := range h.crashed {
			if c.op == u {
				if reason, ok := e.recoveryReason(c, v); ok {
					ed.Kind, ed.Reason = Recovery, reason
					return ed
				}
			}
		}
	}
	ed.Kind = HappensBefore
	if h.flags[u]&fReturned != 0 {
		ed.Reason = fmt.Sprintf("%s returned at line %d, before %s was invoked", h.opName(u), h.retLine[u], h.opName(v))
	} else {
		line := uint32(0)
		for _, c := range h.crashed {
			if c.op == u {
				line = c.line
			}
		}
		ed.Reason = fmt.Sprintf("%s was cut off by the crash at line %d and took effect before it (strict), so before %s was invoked", h.opName(u), line, h.opName(v))
	}
	return ed
}

// recoveryReason explains the recovery edge from the completed crashed cas
// c to v, if v is its target (recoveryTarget), naming the operations of its
// process that were cut off in between and passed the constraint on.
func (e *eval) recoveryReason(c crashRec, v int32) (string, bool) {
	var skipped []crashRec
	if e.recoveryTarget(c, &skipped) != v {
		return "", false
	}
	h := e.h
	if len(skipped) == 0 {
		return fmt.Sprintf("%s was cut off by the crash at line %d and took effect, before its process's next operation %s",
			h.opName(c.op), c.line, h.opName(v)), true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s was cut off by the crash at line %d and took effect, before its process's next operation that stays in the history: process %d's next operation, line %d, was cut off by the crash at line %d and left it",
		h.opName(c.op), c.line, h.procIDs[h.proc[c.op]], h.line[skipped[0].op], skipped[0].line)
	for _, s := range skipped[1:] {
		fmt.Fprintf(&b, ", and so was line %d, by the crash at line %d", h.line[s.op], s.line)
	}
	fmt.Fprintf(&b, ", so the constraint passes to %s", h.opName(v))
	return b.String(), true
}
