package analyzer

import (
	"cmp"
	"context"
	"slices"
)

// explainer turns an evaluation's findings into anomalies: it keeps them
// in internal ids (findings, for neighbourhoods and sub-histories) and
// builds the Anomaly of each once, lines and sentences included.
type explainer struct {
	e *eval
	h *hist
	r renderer
	// origin maps a line to the line it had in the history this one was
	// cut from (Options.Origin), or is nil.
	origin func(int64) int64
	// observed caches firstObserver.
	observed map[int32][2]int32
	// writersOf caches, for the values of dangling accesses, the accesses
	// of cas that have them as new values (evidence.go).
	writersOf map[uint64][]int32
	// afterCrash caches readAfterCrash by (crash, word).
	afterCrash map[[2]int32][2]int32
	findings   []finding
}

// finding is an anomaly in internal ids.
type finding struct {
	kind Kind
	// ops are the anomaly's operations (a cycle's in cycle order).
	ops []int32
	// acc is the access the anomaly is about (a fork: the second cas's),
	// acc2 a fork's first cas's; none for a cycle.
	acc, acc2 int32
	words     []int32
	edges     []fact
	notes     []note
	stale     []staleFact
	crashes   []int32 // indexes in hist.crashLine
}

func newExplainer(e *eval, origin func(int64) int64) *explainer {
	return &explainer{e: e, h: e.h, r: renderer{ops: e.h, names: e.h.names}, origin: origin}
}

// describe names the operation invoked at line (opNamer).
func (h *hist) describe(line int64) string {
	if line == 0 {
		return "genesis (the initial state)"
	}
	if i := h.opOfLine(line); i != none {
		return h.opName(i)
	}
	return h.names.Op(line)
}

// kindOf names the kind of the operation invoked at line (opNamer).
func (h *hist) kindOf(line int64) string {
	if line == 0 {
		return ""
	}
	if i := h.opOfLine(line); i != none {
		return h.kind(i)
	}
	return ""
}

// anomalies fills res.Anomalies from the evaluation's findings, at most max
// of each kind, counting the rest in res.Omitted, ordered by their
// earliest evidence.
func (x *explainer) anomalies(ctx context.Context, res *Result, max int) error {
	e, h := x.e, x.h
	counts := map[Kind]int{}
	add := func(f finding) {
		if counts[f.kind] >= max {
			res.Omitted++
			return
		}
		counts[f.kind]++
		x.findings = append(x.findings, f)
	}
	for _, a := range h.dangling {
		if i := h.opOf(a); e.observer(i) {
			add(finding{kind: Dangling, ops: []int32{i}, acc: a, acc2: none, words: []int32{h.wordOf(a)}})
		}
	}
	for _, f := range e.forks {
		a, b := f[0], f[1]
		add(finding{kind: Fork, ops: []int32{h.opOf(a), h.opOf(b)}, acc: b, acc2: a, words: []int32{h.wordOf(b)}})
	}
	for _, a := range e.unreach {
		ops := []int32{h.opOf(a)}
		if y := h.ver[a]; y >= 0 {
			ops = append(ops, h.opOf(y))
		}
		add(finding{kind: UnreachableWrite, ops: ops, acc: a, acc2: none, words: []int32{h.wordOf(a)}})
	}
	for _, a := range e.unexplain {
		ops := []int32{h.opOf(a)}
		if y := h.ver[a]; y >= 0 {
			ops = append(ops, h.opOf(y))
		}
		add(finding{kind: UnexplainedFailure, ops: ops, acc: a, acc2: none, words: []int32{h.wordOf(a)}})
	}
	for _, i := range h.contra { // failures that report their expected value
		a := h.blamedAccess(i)
		add(finding{kind: UnexplainedFailure, ops: []int32{i}, acc: a, acc2: none, words: []int32{h.wordOf(a)}})
	}
	if e.cyclic {
		if err := x.cycles(ctx, res, max); err != nil {
			return err
		}
	}
	x.witness()
	slices.SortStableFunc(x.findings, func(a, b finding) int {
		la, ha := x.span(&a)
		lb, hb := x.span(&b)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(ha, hb))
	})
	root := roots(x.findings)
	for k := range x.findings {
		a := x.build(&x.findings[k])
		if r := root[k]; r != k {
			a.Root = &r
		}
		res.Anomalies = append(res.Anomalies, a)
	}
	return nil
}

// span is the first and last of a finding's operations. Anomalies are
// listed by their earliest evidence: a lost write comes before the
// anomalies it causes later on.
func (x *explainer) span(f *finding) (lo, hi int32) {
	ops := sorted(f.ops)
	if len(ops) == 0 {
		return 0, 0
	}
	return ops[0], ops[len(ops)-1]
}

// sorted is a sorted copy of ops without genesis and repeats.
func sorted(ops []int32) []int32 {
	out := slices.DeleteFunc(slices.Clone(ops), func(i int32) bool { return i < 0 })
	slices.Sort(out)
	return slices.Compact(out)
}

// evidenceOps are a finding's operations and its edges' ends, sorted,
// genesis left out.
func (x *explainer) evidenceOps(f *finding) []int32 {
	ops := slices.Clone(f.ops)
	for _, ed := range f.edges {
		ops = append(ops, ed.from, ed.to)
	}
	return sorted(ops)
}

// cycles reports one short cycle per strongly connected component with a
// cycle (Tarjan's algorithm, iterative), found by a breadth-first search
// inside the component.
func (x *explainer) cycles(ctx context.Context, res *Result, max int) error {
	e := x.e
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
		f := finding{kind: Cycle, ops: cyc, acc: none, acc2: none}
		for k, u := range cyc {
			ed := e.why(u, cyc[(k+1)%len(cyc)])
			f.edges = append(f.edges, ed)
			if ed.x != none && !slices.Contains(f.words, x.h.wordOf(ed.x)) {
				f.words = append(f.words, x.h.wordOf(ed.x))
			}
		}
		x.findings = append(x.findings, f)
	}
	return nil
}

// components labels strongly connected components that hold a cycle; it
// returns comp (component id+1 per vertex, 0 for vertices on no cycle) and
// one vertex of each such component.
func (e *eval) components(ctx context.Context) (comp []int32, roots []int32, err error) {
	h := e.h
	n := h.n
	// Every explicit edge (at most one per access, failure and crash)
	// and the degrees, then the search's three arrays per operation and
	// its stacks.
	edges := int64(len(h.word)) + int64(len(h.failedCAS)) + int64(len(h.crashed))
	if err := e.guard.room(h, "explain its cycles", 4*edges+4*int64(n)+20*int64(n)); err != nil {
		return nil, nil, err
	}
	e.fullGraph()
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

// line is the line of vertex i (0 for genesis).
func (x *explainer) line(i int32) int64 {
	if i < 0 {
		return 0
	}
	return int64(x.h.line[i])
}

// lines are the lines of vertices.
func (x *explainer) lines(ops []int32) []int64 {
	out := make([]int64, len(ops))
	for k, i := range ops {
		out[k] = x.line(i)
	}
	return out
}

// build turns a finding into its Anomaly, once: lines, data, sentences.
func (x *explainer) build(f *finding) Anomaly {
	h := x.h
	a := Anomaly{Kind: f.kind, Ops: x.lines(f.ops), Words: []uint64{}}
	if x.origin != nil {
		a.OriginalOps = make([]int64, len(a.Ops))
		for k, l := range a.Ops {
			a.OriginalOps[k] = x.origin(l)
		}
		if !slices.ContainsFunc(a.OriginalOps, func(l int64) bool { return l != 0 }) {
			a.OriginalOps = nil
		}
	}
	for _, w := range f.words {
		a.Words = append(a.Words, h.addr[w])
	}
	slices.Sort(a.Words)
	for _, c := range f.crashes {
		a.Crashes = append(a.Crashes, int64(h.crashLine[c]))
	}
	for _, ed := range f.edges {
		a.Edges = append(a.Edges, x.edge(ed))
	}
	for _, n := range f.notes {
		a.Evidence = append(a.Evidence, x.evidenceOf(n))
	}
	for _, s := range f.stale {
		a.Staleness = append(a.Staleness, x.stalenessOf(s))
	}
	a.Summary = x.r.summary(x.summaryOf(f))
	a.Explanation = explanation(&a)
	return a
}

// summaryOf is the data of a finding's first sentence.
func (x *explainer) summaryOf(f *finding) summary {
	h := x.h
	s := summary{kind: f.kind, ops: x.lines(f.ops)}
	if f.acc == none {
		return s
	}
	w := h.wordOf(f.acc)
	s.word, s.value, s.writer, s.init = h.addr[w], h.valueOf(f.acc), h.writerLine(h.ver[f.acc]), h.initVal[w]
	i := h.opOf(f.acc)
	s.rule = h.observeRule(i)
	s.contra = f.kind == UnexplainedFailure && h.flags[i]&fValued != 0
	return s
}

// edge turns a fact into an Edge: lines, word, value, the lines that
// justify it, and its sentence.
func (x *explainer) edge(f fact) Edge {
	h := x.h
	ed := Edge{From: x.line(f.from), To: x.line(f.to), Kind: f.kind, Rule: f.rule}
	if f.x != none {
		ed.Word, ed.Value = h.addr[h.wordOf(f.x)], h.valueOf(f.x)
	}
	if f.kind == HappensBefore && f.rule == RuleReturned {
		ed.RetLine = int64(h.retLineOf(f.from))
	}
	if f.crash != none {
		ed.CrashLine = int64(h.crashLine[f.crash])
		obs, _ := x.firstObserver(f.from)
		ed.ObservedBy = x.line(obs)
	}
	ed.Skipped = x.cutOffs(f.skipped)
	ed.Reason = x.r.edge(ed)
	return ed
}

// cutOffs are crash records as lines.
func (x *explainer) cutOffs(cs []crashRec) []CutOff {
	var out []CutOff
	for _, c := range cs {
		out = append(out, CutOff{Op: int64(x.h.line[c.op]), Crash: int64(c.line)})
	}
	return out
}

// evidenceOf turns a note into an Evidence: lines, data, its sentence.
func (x *explainer) evidenceOf(n note) Evidence {
	h := x.h
	ev := Evidence{Kind: n.kind, Completed: n.completed, Rule: n.rule, Skipped: x.cutOffs(n.skipped),
		Before: x.lines(n.before), After: x.lines(n.after)}
	if len(ev.Before) == 0 {
		ev.Before, ev.After = nil, nil
	}
	if n.op != none {
		ev.Op = x.line(n.op)
	}
	if n.crash != none {
		ev.Crash = int64(h.crashLine[n.crash])
	}
	if len(n.also) > 0 {
		ev.Crashes = []int64{ev.Crash}
		for _, c := range n.also {
			ev.Crashes = append(ev.Crashes, int64(h.crashLine[c]))
		}
	}
	if n.target != none {
		ev.Target = x.line(n.target)
	}
	wordValue := func(a int32) {
		w, v := h.addr[h.wordOf(a)], h.valueOf(a)
		ev.Word, ev.Value = &w, &v
	}
	switch n.kind {
	case EvidenceCutOff:
		if obs, a := x.firstObserver(n.op); obs != none {
			ev.ObservedBy = x.line(obs)
			wordValue(a)
		}
	case EvidenceRecovery:
		ev.Rule = n.rule
		if n.op != none && h.retLineOf(n.op) != 0 {
			ev.RetLine = int64(h.retLineOf(n.op))
		}
		for _, v := range n.vals {
			ev.Values = append(ev.Values, WordValue{Word: h.addr[h.wordOf(v.acc)], Value: h.valueOf(v.acc),
				Writer: x.writerOf(v.acc), Read: x.line(h.opOf(v.acc)), Full: v.full, Fate: v.fate})
		}
		for _, w := range n.unknown {
			ev.Unknown = append(ev.Unknown, h.addr[w])
		}
	case EvidenceElsewhere:
		wordValue(n.acc)
		at := h.addr[h.wordOf(n.writerAcc)]
		ev.Writer, ev.WrittenAt = x.line(h.opOf(n.writerAcc)), &at
		ev.WriterStatus = x.e.opInfo(h.opOf(n.writerAcc), nil).Status
	case EvidenceExpected:
		wordValue(n.acc)
		still := n.still
		ev.StillThere, ev.RetLine = &still, int64(h.retLineOf(n.op))
		if n.replacer != none {
			ev.ReplacedBy = x.line(n.replacer)
		}
		if n.readBy != none {
			ev.Read = x.line(n.readBy)
		}
	}
	ev.Reason = x.r.evidence(ev)
	return ev
}

// writerOf is the line of the operation that wrote the value access a
// observed: 0 for the initial value, -1 for a value nobody wrote there.
func (x *explainer) writerOf(a int32) int64 {
	switch y := x.h.ver[a]; {
	case y >= 0:
		return int64(x.h.line[x.h.opOf(y)])
	case y == verGenesis:
		return 0
	}
	return -1
}
