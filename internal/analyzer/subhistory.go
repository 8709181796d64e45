package analyzer

import (
	"fmt"
	"slices"
)

// SubHistory is what a sub-history that still shows one anomaly needs
// (Analysis.SubHistory): the operations to keep, and initial values that
// stand in for the writes before them.
type SubHistory struct {
	// Lines are the invocation lines of the operations to keep, in order.
	Lines []int64
	// Init are initial values that replace the writes before the kept
	// ones (address -> value); they override the input's.
	Init map[uint64]uint64
	// Crashes are the crash lines to keep besides those that cut off a
	// kept operation: the crashes of the anomaly's evidence, without
	// which it would not fail the same way.
	Crashes []int64
}

// maxSubHistory bounds the operations a sub-history may keep.
const maxSubHistory = 200000

// SubHistory picks, for anomaly k of the result, the operations a
// sub-history needs to show it: the anomaly's operations and what their
// edges need, transitively: the writers of every value they observed, up
// to the earliest such value per word (which becomes the word's initial
// value, so the chain of writes before it is not needed; with fromGenesis
// every word's chain is kept from its initial value instead), the writes
// that replaced those values, the write that took the version of a kept
// write that lost a fork (what puts the loser, and the writes that follow
// from it, off the path: an unreachable write's reason), the sources of
// failures, the target of a recovery edge, an operation that observed a
// completed cut-off cas, and, for a failed cas, a read that returned its
// expected value before it was invoked (Assumption 2).
//
// The analyzer keeps no values: package shrink re-reads the lines
// (history.Extract) and minimizes the result. The sub-history is not
// guaranteed to fail on its own; it does in the cases tested, and
// fromGenesis, then the whole history, are package shrink's fallbacks
// when it does not.
func (a *Analysis) SubHistory(k int, fromGenesis bool) (*SubHistory, error) {
	if k < 0 || k >= len(a.Result.Anomalies) || k >= len(a.x.findings) {
		return nil, fmt.Errorf("analyzer: no anomaly %d (the result has %d)", k, len(a.Result.Anomalies))
	}
	p := newPlanner(a.e, fromGenesis)
	f := &a.x.findings[k]
	for _, i := range a.x.evidenceOps(f) {
		p.add(i)
	}
	// The reads after a crash that the evidence cites.
	for _, n := range f.notes {
		for _, v := range n.vals {
			p.add(p.h.opOf(v.acc))
		}
	}
	for {
		for len(p.work) > 0 {
			i := p.work[len(p.work)-1]
			p.work = p.work[:len(p.work)-1]
			p.visit(i)
		}
		// The writes between the earliest and the latest version kept on
		// each word.
		for w, r := range p.words {
			if r.dirty {
				p.segment(w, r)
			}
		}
		p.observers()
		if len(p.in) > maxSubHistory {
			return nil, fmt.Errorf("the anomaly's operations need more than %d others", maxSubHistory)
		}
		if len(p.work) == 0 {
			break
		}
	}
	sub := p.result()
	for _, c := range f.crashes {
		sub.Crashes = append(sub.Crashes, int64(p.h.crashLine[c]))
	}
	return sub, nil
}

// planner gathers a SubHistory.
type planner struct {
	e    *eval
	h    *hist
	full bool // every word's chain from genesis
	in   map[int32]bool
	work []int32
	// words holds, per word, the versions kept operations refer to
	// among those on the word's path.
	words map[int32]*wordRefs
	// next maps a completed crashed op to its recovery edge's target.
	next map[int32]int32
	// needObs: version -> failed cas that expected it, wanting an
	// observer (Assumption 2); satisfied: failed cas already served.
	needObs   map[int32][]int32
	satisfied map[int32]bool
	// needSeen: versions written by completed cut-off cas, wanting an
	// operation that observed them.
	needSeen map[int32]bool
}

// wordRefs are the versions of one word kept operations refer to
// (verGenesis for the initial value). The path is walked again when they
// change, keeping no copy of it: a hot word of a long history has
// millions of versions.
type wordRefs struct {
	refs  map[int32]bool
	dirty bool
	lo    int32 // first referenced version (an access, or verGenesis)
}

func newPlanner(e *eval, full bool) *planner {
	p := &planner{e: e, h: e.h, full: full, in: map[int32]bool{}, words: map[int32]*wordRefs{},
		next: map[int32]int32{}, needObs: map[int32][]int32{}, satisfied: map[int32]bool{}, needSeen: map[int32]bool{}}
	if e.mode.ProcessOrder() {
		for _, c := range p.h.crashed {
			if p.h.flags[c.op]&fCompleted != 0 {
				if t := e.recoveryTarget(c, nil); t != none {
					p.next[c.op] = t
				}
			}
		}
	}
	return p
}

func (p *planner) add(i int32) {
	if i >= 0 && i < p.h.n && !p.in[i] {
		p.in[i] = true
		p.work = append(p.work, i)
	}
}

// note records that a kept operation refers to version y of word w.
func (p *planner) note(w, y int32) {
	if !p.e.onPath(y) {
		return
	}
	r := p.words[w]
	if r == nil {
		r = &wordRefs{refs: map[int32]bool{}, lo: verUnresolved}
		p.words[w] = r
	}
	if !r.refs[y] {
		r.refs[y] = true
		r.dirty = true
	}
}

// visit adds what kept operation i's edges need.
func (p *planner) visit(i int32) {
	e, h := p.e, p.h
	if h.flags[i]&fCompleted != 0 {
		if n, ok := p.next[i]; ok {
			p.add(n) // the recovery edge's target
		}
		// A cut-off cas is in the graph because someone observed its
		// value: keep one who did.
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			p.needSeen[x] = true
		}
	}
	for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
		w, y := h.wordOf(x), h.ver[x]
		switch {
		case e.observer(i):
			p.note(w, y)
			if y >= 0 && !e.onPath(y) {
				p.add(h.opOf(y))
			}
			if e.writer(i) {
				p.note(w, x)
				// A write off the path whose version is on it lost a
				// fork: keep the write that took its version, without
				// which it (and every write that follows from it, the
				// unreachable ones) would be back on the path.
				if !e.onPath(x) && e.onPath(y) {
					if s := e.next(y, w); s != none && s != x {
						p.note(w, s)
					}
				}
			}
		case h.failed(i) && h.word[x]&blamed != 0:
			p.note(w, y)
			if y >= 0 && !e.onPath(y) {
				p.add(h.opOf(y))
			}
			if s := e.next(y, w); s != none {
				p.note(w, s)
			}
			if y >= 0 && !p.satisfied[i] {
				p.needObs[y] = append(p.needObs[y], i)
			}
		}
	}
}

// segment adds the writers of word w's versions from the first referenced
// (excluded, unless full: from genesis) to the last referenced.
func (p *planner) segment(w int32, r *wordRefs) {
	e := p.e
	r.dirty = false
	seen := 0
	if r.refs[verGenesis] {
		seen++
	}
	var first, last int32 = none, none // positions: genesis 0, then 1, 2, ...
	if r.refs[verGenesis] || p.full {
		first = 0
		r.lo = verGenesis
	}
	if r.refs[verGenesis] {
		last = 0
	}
	q := int32(0)
	for x := e.gsucc[w]; x != none && seen < len(r.refs); x = e.succOf(x) {
		q++
		if r.refs[x] {
			seen++
			if first == none {
				first, r.lo = q, x
			}
			last = q
		}
	}
	q = 0
	for x := e.gsucc[w]; x != none && q < last; x = e.succOf(x) {
		q++
		if q > first {
			p.add(p.h.opOf(x))
		}
	}
}

// observers keeps, for each failed cas waiting for one, a read (or
// successful cas) that returned its expected value before it was invoked
// (Assumption 2), and for each version of a completed cut-off cas an
// operation that observed it.
func (p *planner) observers() {
	e, h := p.e, p.h
	if len(p.needObs) == 0 && len(p.needSeen) == 0 {
		return
	}
	best := map[int32]int32{} // failed cas -> observer
	seenBy := map[int32]int32{}
	for o := int32(0); o < h.n; o++ {
		if !e.observer(o) {
			continue
		}
		// A completed cut-off swap did not observe what it replaced:
		// place put it after the chain's end, which forces nothing.
		placed := h.flags[o]&(fSwap|fReturned) == fSwap
		for x := int32(h.acc[o]); x < int32(h.acc[o+1]); x++ {
			y := h.ver[x]
			if p.needSeen[y] && !placed {
				if _, ok := seenBy[y]; !ok {
					seenBy[y] = o
				}
			}
			if h.flags[o]&fReturned == 0 {
				continue
			}
			for _, f := range p.needObs[y] {
				if _, ok := best[f]; !ok && h.lo[o] <= f {
					best[f] = o
				}
			}
		}
	}
	for y := range p.needSeen {
		if o, ok := seenBy[y]; ok {
			p.add(o)
		}
	}
	clear(p.needSeen)
	for _, fs := range p.needObs {
		for _, f := range fs {
			p.satisfied[f] = true
			if o, ok := best[f]; ok {
				p.add(o)
			}
		}
	}
	clear(p.needObs)
}

// result turns the kept operations into lines and the first kept version
// of each word, when its writer is not kept, into an initial value.
func (p *planner) result() *SubHistory {
	h := p.h
	sub := &SubHistory{Init: map[uint64]uint64{}}
	for w, r := range p.words {
		if r.dirty {
			p.segment(w, r)
		}
		if r.lo >= 0 && !p.in[h.opOf(r.lo)] {
			sub.Init[h.addr[w]] = h.newVal(r.lo)
		}
	}
	sub.Lines = make([]int64, 0, len(p.in))
	for i := range p.in {
		sub.Lines = append(sub.Lines, int64(h.line[i]))
	}
	slices.Sort(sub.Lines)
	return sub
}
