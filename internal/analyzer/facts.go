package analyzer

import (
	"cmp"
	"slices"
)

// Explanations are data first: one function (edgeFacts) yields, for a pair
// of vertices, the edges the graph has between them as facts (kind, rule,
// the access they are about, the lines that justify them); the anomaly
// builder (explain.go), the neighbourhoods and the sub-histories all take
// them from there, and one renderer (render.go) turns them into sentences.
// A new kind of operation (a swap, a failed cas that reports its values)
// adds its rules here and its sentences in render.go, nowhere else.

// Rule refines an edge's kind: the rule of the method that makes it.
type Rule string

const (
	// RuleRead: reads-from; To read Value at Word, written by From (0:
	// the initial value).
	RuleRead Rule = "read"
	// RuleExpected: reads-from; To, a successful (or completed) cas,
	// expected Value at Word, written by From.
	RuleExpected Rule = "expected"
	// RuleReplaced: reads-from; To, a swap, replaced Value at Word (it
	// returned it), written by From.
	RuleReplaced Rule = "replaced"
	// RulePlaced: reads-from; To, a swap cut off by a crash (or by the
	// end) and completed, must have replaced Value at Word, written by
	// From: what it replaced is unknown, and it is placed after the last
	// write of the word's chain (eval.place).
	RulePlaced Rule = "placed"
	// RuleReadFirst: auxiliary; From read Value at Word and To is the
	// write that replaced it, so the read came first.
	RuleReadFirst Rule = "read-first"
	// RuleFailedAfter: auxiliary; To failed at Word expecting Value, and
	// From is the write that replaced Value there, which the failure needs
	// before it.
	RuleFailedAfter Rule = "failed-after"
	// RuleReturned: happens-before; From returned (at RetLine) before To
	// was invoked.
	RuleReturned Rule = "returned"
	// RuleCutOffStrict: happens-before; From, a cas cut off by the crash
	// at CrashLine and completed as a success, took effect before the
	// crash (strict mode), so before To was invoked.
	RuleCutOffStrict Rule = "cut-off-strict"
	// RuleNextOperation: recovery; From, a cas cut off by the crash at
	// CrashLine and completed as a success, took effect before To, its
	// process's next operation that stays in the history (Skipped are
	// those in between that left it).
	RuleNextOperation Rule = "next-operation"
)

// fact is an edge of the multigraph as data, in internal ids.
type fact struct {
	from, to int32 // operations; from may be gen (genesis)
	kind     EdgeKind
	rule     Rule
	// x is the access the edge is about (reads-from: to's access;
	// auxiliary of a read: from's; auxiliary of a failure: to's blamed
	// access); none for happens-before and recovery edges.
	x int32
	// crash is, for an edge from a cut-off cas, the index of its crash
	// (hist.crashLine), else none.
	crash   int32
	skipped []crashRec // recovery: the operations passed over
}

// observeRule is the reads-from rule of an operation that observed a
// value: a read, and a failed cas that reports values, read it; a cas
// expects it; a swap replaced it (a cut-off one was placed after it).
func (h *hist) observeRule(i int32) Rule {
	switch f := h.flags[i]; {
	case f&(fRead|fValued) != 0:
		return RuleRead
	case f&fSwap != 0 && f&fReturned == 0:
		return RulePlaced
	case f&fSwap != 0:
		return RuleReplaced
	}
	return RuleExpected
}

// edgeFacts lists the edges from u (an operation, or gen) to v that the
// graph has, one per reason and word, in the order of preference of an
// explanation: reads-from, auxiliary, recovery, then (with hb) the
// happens-before edge. The guards are the graph's own (forEachExplicit,
// edgeAt): a failed cas that breaks Assumption 2 has no auxiliary edge
// unless the analysis put those constraints back.
func (e *eval) edgeFacts(u, v int32, hb bool) []fact {
	h := e.h
	var out []fact
	if e.observer(v) {
		for x := int32(h.acc[v]); x < int32(h.acc[v+1]); x++ {
			y := h.ver[x]
			if (u == gen && y == verGenesis) || (u != gen && y >= 0 && h.opOf(y) == u) {
				out = append(out, fact{from: u, to: v, kind: ReadsFrom, rule: h.observeRule(v), x: x, crash: none})
			}
		}
	}
	if u == gen {
		return out
	}
	if h.reader(u) {
		for x := int32(h.acc[u]); x < int32(h.acc[u+1]); x++ {
			if s := e.next(h.ver[x], h.wordOf(x)); s != none && h.opOf(s) == v {
				out = append(out, fact{from: u, to: v, kind: Auxiliary, rule: RuleReadFirst, x: x, crash: none})
			}
		}
	}
	if h.failed(v) && h.flags[v]&fValued == 0 && (h.flags[v]&fNoAux == 0 || e.assumeFail) {
		x := h.blamedAccess(v)
		if src, _ := e.failureSource(v, x); src != none && h.opOf(src) == u {
			out = append(out, fact{from: u, to: v, kind: Auxiliary, rule: RuleFailedAfter, x: x, crash: none})
		}
	}
	if e.mode.ProcessOrder() && h.flags[u]&(fCrashed|fCompleted) == fCrashed|fCompleted {
		c := h.crashRecOf(u)
		var skipped []crashRec
		if e.recoveryTarget(c, &skipped) == v {
			out = append(out, fact{from: u, to: v, kind: Recovery, rule: RuleNextOperation, x: none,
				crash: h.crashIndex(c.line), skipped: skipped})
		}
	}
	if hb && e.hbBefore(u, v) {
		out = append(out, e.hbFact(u, v))
	}
	return out
}

// hbFact is the happens-before edge u -> v (e.hbBefore(u, v) holds).
func (e *eval) hbFact(u, v int32) fact {
	h := e.h
	f := fact{from: u, to: v, kind: HappensBefore, rule: RuleReturned, x: none, crash: none}
	if h.flags[u]&fReturned == 0 {
		f.rule, f.crash = RuleCutOffStrict, h.crashIndex(h.crashRecOf(u).line)
	}
	return f
}

// why is the reason for the edge u -> v of a cycle: the first of
// edgeFacts. The shortest cycle takes happens-before as the whole
// relation, so an edge with no other reason is one.
func (e *eval) why(u, v int32) fact {
	if fs := e.edgeFacts(u, v, true); len(fs) > 0 {
		return fs[0]
	}
	return e.hbFact(u, v) // not reached: the cycle's edges are the graph's
}

// crashRecOf is the record of operation i, cut off by a crash: the crash
// is the first after its invocation, and its records are contiguous in
// h.crashed (in crash order), a few, one per operation it cut off.
func (h *hist) crashRecOf(i int32) crashRec {
	c, _ := slices.BinarySearch(h.crashAt, i+1)
	if c < len(h.crashLine) {
		line := h.crashLine[c]
		k, _ := slices.BinarySearchFunc(h.crashed, line, func(r crashRec, l uint32) int { return cmp.Compare(r.line, l) })
		for ; k < len(h.crashed) && h.crashed[k].line == line; k++ {
			if h.crashed[k].op == i {
				return h.crashed[k]
			}
		}
	}
	return crashRec{op: i, next: none, nextRec: none}
}

// crashIndex is the index of the crash at line in h.crashLine, or none.
func (h *hist) crashIndex(line uint32) int32 {
	k, ok := slices.BinarySearch(h.crashLine, line)
	if !ok {
		return none
	}
	return int32(k)
}

// crashOf is the index of the crash that cut operation i off, or none (it
// returned, or was cut off by the end of the history).
func (h *hist) crashOf(i int32) int32 {
	if h.flags[i]&fCrashed == 0 {
		return none
	}
	return h.crashIndex(h.crashRecOf(i).line)
}

// firstObserver is an operation in the graph that observed a value of the
// completed cut-off cas i, and the access with which it did (why i took
// effect): one that responded if there is one; none when i was completed
// to explain a failure. The answers for every completed cas come from one
// pass, made on first use.
func (x *explainer) firstObserver(i int32) (op, acc int32) {
	if x.observed == nil {
		x.observed = map[int32][2]int32{}
		e, h := x.e, x.h
		for o := int32(0); o < h.n; o++ {
			if !e.observer(o) {
				continue
			}
			for a := int32(h.acc[o]); a < int32(h.acc[o+1]); a++ {
				y := h.ver[a]
				if y < 0 {
					continue
				}
				w := h.opOf(y)
				if w == o || h.flags[w]&fCompleted == 0 {
					continue
				}
				// Keep the first observer, unless it was itself cut off
				// and a later one responded.
				if prev, ok := x.observed[w]; !ok || (h.flags[prev[0]]&fReturned == 0 && h.flags[o]&fReturned != 0) {
					x.observed[w] = [2]int32{o, a}
				}
			}
		}
	}
	if r, ok := x.observed[i]; ok {
		return r[0], r[1]
	}
	return none, none
}
