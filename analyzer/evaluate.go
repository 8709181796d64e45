package analyzer

import (
	"cmp"
	"context"
	"slices"

	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/reduce"
)

// eval holds the state of one evaluation of the properties for one choice
// of completions of crashed operations. Its arrays are reused across
// evaluations (the completion search may run several).
type eval struct {
	h    *hist
	mode history.Mode

	hi    []int32  // ReduceHB ranges [lo, hi)
	succ  []int32  // per slot (writer access): the access that replaced its value, or none
	gsucc []int32  // per word: the access that replaced the initial value, or none
	mark  []uint64 // per access bitset: on its word's path from genesis
	loser []uint64 // per access bitset: lost a fork (reported once)
	off   []uint32 // CSR of explicit out-edges (reads-from, auxiliary of failures, recovery)
	tgt   []int32
	// pruned: the CSR leaves out the edges that happens-before implies
	// (see buildCSR); fullCSR puts them back for explanations.
	pruned bool
	color  []uint8
	// rank orders the completed cut-off swaps on the words they share
	// (see place): op id -> rank; nil ranks them in invocation order.
	rank    map[int32]int
	unknown []int32 // scratch: the accesses place links

	// outcome
	edges      EdgeCounts
	completed  int64
	unexplain  []int32 // blamed accesses of unexplained failures
	forks      [][2]int32
	unreach    []int32
	cyclic     bool
	assumeFail bool // constraints of failed cas breaking Assumption 2 included
}

func newEval(h *hist, mode history.Mode) *eval {
	nacc := len(h.word)
	return &eval{
		h: h, mode: mode,
		succ:  h.aux, // free once Assumption 2 was checked
		gsucc: make([]int32, len(h.addr)),
		mark:  make([]uint64, (nacc+63)/64),
		loser: make([]uint64, (nacc+63)/64),
	}
}

func bit(b []uint64, i int32) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }
func setBit(b []uint64, i int32)   { b[i>>6] |= 1 << (uint(i) & 63) }

// effective reports whether operation i is in the graph: it responded, or
// it is a pending cas or swap taken to have taken effect.
func (e *eval) effective(i int32) bool {
	return e.h.flags[i]&(fReturned|fCompleted) != 0
}

// writer reports whether i is an effective writer: a successful cas, a
// returned swap, or a completed pending one.
func (e *eval) writer(i int32) bool {
	return e.h.flags[i]&(fOK|fCompleted) != 0
}

// observer reports whether the accesses of operation i read from their
// versions in the graph: every word of a returned read, of a failed cas
// that reports values, of an effective writer.
func (e *eval) observer(i int32) bool {
	f := e.h.flags[i]
	return (f&fReturned != 0 && f&(fRead|fValued) != 0) || f&(fOK|fCompleted) != 0
}

// complete decides which pending cas and swaps took effect: those in
// extra, and every one whose value an operation in the graph observed
// (transitively: a completed cas observes the values it expected; what a
// completed swap replaced is placed later, and forces nothing).
func (e *eval) complete(extra []int32) {
	h := e.h
	for _, c := range h.pendingW {
		h.flags[c] &^= fCompleted
	}
	for _, c := range h.pendingSwap {
		for x := int32(h.acc[c]); x < int32(h.acc[c+1]); x++ {
			h.ver[x] = verUnresolved
		}
	}
	var work []int32
	for _, c := range extra {
		if h.flags[c]&fCompleted == 0 {
			h.flags[c] |= fCompleted
			work = append(work, c)
		}
	}
	visit := func(i int32) {
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			y := h.ver[x]
			if y < 0 {
				continue
			}
			w := h.opOf(y)
			if h.flags[w]&(fReturned|fCompleted) == 0 && h.flags[w]&fRead == 0 {
				h.flags[w] |= fCompleted
				work = append(work, w)
			}
		}
	}
	for i := int32(0); i < h.n; i++ {
		if h.flags[i]&fReturned != 0 && e.observer(i) {
			visit(i)
		}
	}
	for len(work) > 0 {
		w := work[len(work)-1]
		work = work[:len(work)-1]
		visit(w)
	}
	e.completed = 0
	for _, c := range h.pendingW {
		if h.flags[c]&fCompleted != 0 {
			e.completed++
		}
	}
}

// responses places the responses of crashed operations by the mode and
// computes the ReduceHB ranges.
func (e *eval) responses() {
	h := e.h
	for _, c := range h.crashed {
		h.lo[c.op] = h.n
		if e.mode == history.Strict && h.flags[c.op]&fCompleted != 0 {
			h.lo[c.op] = c.at
		}
	}
	e.hi = reduce.Ranges(h.lo, e.hi)
	e.edges.HappensBefore = 0
	for i := int32(0); i < h.n; i++ {
		if e.effective(i) && e.hi[i] > h.lo[i] {
			e.edges.HappensBefore += int64(e.hi[i] - h.lo[i])
		}
	}
}

// paths builds each word's reads-from path (properties ii and iii): the
// successor of every version, forks, and the writes off the path. The
// completed cut-off swaps, whose replaced values are unknown, are linked in
// by place.
func (e *eval) paths() {
	h, ver := e.h, e.h.ver
	for i := range e.succ {
		e.succ[i] = none
	}
	for i := range e.gsucc {
		e.gsucc[i] = none
	}
	clear(e.mark)
	clear(e.loser)
	e.forks, e.unreach = e.forks[:0], e.unreach[:0]
	forward := true // every write's version is an earlier access
	for i := int32(0); i < h.n; i++ {
		if !e.writer(i) {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			var slot *int32
			switch y := ver[x]; {
			case y == verGenesis:
				slot = &e.gsucc[h.wordOf(x)]
			case y >= 0:
				slot = &e.succ[h.slots.of(y)]
				forward = forward && y < x
			default:
				continue // dangling: reported from h.dangling
			}
			if *slot != none {
				e.forks = append(e.forks, [2]int32{*slot, x})
				setBit(e.loser, x)
				continue
			}
			*slot = x
		}
	}
	if e.place() {
		forward = false
	}
	if forward {
		e.markForward()
		return
	}
	for w := range e.gsucc {
		for x := e.gsucc[w]; x != none; x = e.succOf(x) {
			setBit(e.mark, x)
		}
	}
	for i := int32(0); i < h.n; i++ {
		if !e.writer(i) {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			if !bit(e.mark, x) && !bit(e.loser, x) && ver[x] != verDangling {
				e.unreach = append(e.unreach, x)
			}
		}
	}
}

// markForward marks the writes on their word's path from genesis, and
// lists those off it (e.unreach), in one pass in access order: when every
// write's version is an earlier access (the common case: a value is
// expected after it is written), a write is on the path iff it is its
// version's successor and its version is on the path, which the pass has
// then already decided. Following each word's chain instead costs a cache
// miss per write on a long history.
func (e *eval) markForward() {
	h, ver := e.h, e.h.ver
	for i := int32(0); i < h.n; i++ {
		if !e.writer(i) {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			on := false
			switch y := ver[x]; {
			case y == verGenesis:
				on = e.gsucc[h.wordOf(x)] == x
			case y >= 0:
				on = bit(e.mark, y) && e.succOf(y) == x
			}
			if on {
				setBit(e.mark, x)
			} else if !bit(e.loser, x) && ver[x] != verDangling {
				e.unreach = append(e.unreach, x)
			}
		}
	}
}

// place links the completed cut-off swaps into their words' paths. A
// swap's response would have said which values it replaced; without it,
// on each word the chain of writes from genesis (each write replacing the
// previous one's value) ends somewhere, and so does the chain that starts
// at each such swap. In a linearization the word's writes are one chain,
// so the swaps' chains follow the genesis chain one after the other, in
// the order in which the linearization takes the swaps, which e.rank
// gives (the searcher tries the orders; one swap per word is placed in
// the only way possible). Each access's version becomes the end of the
// chain before it. It reports whether it placed any.
func (e *eval) place() bool {
	h := e.h
	e.unknown = e.unknown[:0]
	for _, s := range h.pendingSwap {
		if h.flags[s]&fCompleted != 0 {
			for x := int32(h.acc[s]); x < int32(h.acc[s+1]); x++ {
				e.unknown = append(e.unknown, x)
			}
		}
	}
	if len(e.unknown) == 0 {
		return false
	}
	slices.SortFunc(e.unknown, func(a, b int32) int {
		return cmp.Or(cmp.Compare(h.wordOf(a), h.wordOf(b)), cmp.Compare(e.rankOf(h.opOf(a)), e.rankOf(h.opOf(b))))
	})
	for k := 0; k < len(e.unknown); {
		w := h.wordOf(e.unknown[k])
		tail := e.chainEnd(verGenesis, w)
		for ; k < len(e.unknown) && h.wordOf(e.unknown[k]) == w; k++ {
			x := e.unknown[k]
			h.ver[x] = tail
			if tail == verGenesis {
				e.gsucc[w] = x
			} else {
				e.succ[h.slots.of(tail)] = x
			}
			tail = e.chainEnd(x, w)
		}
	}
	return true
}

// rankOf is the position of completed cut-off swap s in the order place
// follows.
func (e *eval) rankOf(s int32) int {
	if r, ok := e.rank[s]; ok {
		return r
	}
	return int(s)
}

// chainEnd follows word w's successors from version y to the last one.
// The chains have no cycles: each write has one version, and a chain that
// came back to a write would pass through its version twice.
func (e *eval) chainEnd(y, w int32) int32 {
	for s := e.next(y, w); s != none; s = e.next(y, w) {
		y = s
	}
	return y
}

// next is the successor on its word's path of version y (an access, or
// genesis at word w), or none.
func (e *eval) next(y int32, w int32) int32 {
	switch {
	case y == verGenesis:
		return e.gsucc[w]
	case y >= 0:
		return e.succOf(y)
	}
	return none
}

// succOf is the successor of version y (an access) on its word's path, or
// none.
func (e *eval) succOf(y int32) int32 { return e.succ[e.h.slots.of(y)] }

// failureSource returns, for the blamed access x of failed cas i, the
// access whose write explains the failure (the auxiliary edge's source), or
// none, and whether the failure needs one at all. i reports no values (one
// of h.failedCAS): a failure that reports values is a read (Section 5.2),
// placed by its reads-from and auxiliary edges where every word held what
// it reported, so the blamed word held a value other than the expected
// one, which is all its failure says (or it reported the expected value
// there and contradicts itself, an anomaly of its own: hist.contra); no
// write need explain it, and its ver holds what it read.
func (e *eval) failureSource(i, x int32) (src int32, needed bool) {
	h := e.h
	y := h.ver[x]
	if y == verDangling || (y >= 0 && !e.writer(h.opOf(y))) {
		// The expected value never was at that word: the failure
		// constrains nothing.
		return none, false
	}
	return e.next(y, h.wordOf(x)), true
}

// failures finds each failed cas's auxiliary source, or reports it
// unexplained.
func (e *eval) failures() {
	h := e.h
	e.unexplain = e.unexplain[:0]
	for _, i := range h.failedCAS {
		if h.flags[i]&fNoAux != 0 && !e.assumeFail {
			continue
		}
		x := h.blamedAccess(i)
		if src, needed := e.failureSource(i, x); needed && src == none {
			e.unexplain = append(e.unexplain, x)
		}
	}
}

// buildCSR stores the explicit out-edges: reads-from (writer -> observer),
// auxiliary of failures (the write that explains it -> the failed cas) and
// recovery (crashed cas -> its process's next operation). The read
// auxiliary edges are not stored: the DFS derives them from the read's
// versions, saving 4 bytes per read word.
//
// With prune, it leaves out the edges that happens-before implies: u -> v
// where v was invoked after u's response (hbBefore) is also a path of
// ReduceHB edges, whose transitive closure is happens-before (Theorem 1 of
// the OPODIS paper; every operation inside such a path responded, so it is
// a vertex with its edges), so the graph has a cycle iff the pruned one
// has. Most reads return a value written before they started: this drops
// most reads-from edges from the cycle check. The edge counts are the full
// graph's; explanations take every edge (fullCSR).
func (e *eval) buildCSR(prune bool) {
	h, ver := e.h, e.h.ver
	n := h.n
	if cap(e.off) < int(n)+1 {
		e.off = make([]uint32, n+1)
	}
	e.off = e.off[:n+1]
	clear(e.off)
	deg := e.off[1:] // count out-degrees at off[i+1], then prefix-sum
	var rf, aux, rec int64
	e.forEachExplicit(func(from, to int32, kind EdgeKind) {
		switch kind {
		case ReadsFrom:
			rf++
		case Auxiliary:
			aux++
		case Recovery:
			rec++
		}
		if !prune || !e.hbBefore(from, to) {
			deg[from]++
		}
	})
	for i := int32(1); i <= n; i++ {
		e.off[i] += e.off[i-1]
	}
	total := e.off[n]
	if cap(e.tgt) < int(total) {
		e.tgt = make([]int32, total)
	}
	e.tgt = e.tgt[:total]
	// Fill using off[i] as a cursor, then shift back.
	e.forEachExplicit(func(from, to int32, _ EdgeKind) {
		if !prune || !e.hbBefore(from, to) {
			e.tgt[e.off[from]] = to
			e.off[from]++
		}
	})
	for i := n; i > 0; i-- {
		e.off[i] = e.off[i-1]
	}
	e.off[0] = 0
	e.pruned = prune
	// Read auxiliary edges, counted here for the report.
	for i := int32(0); i < n; i++ {
		if !h.reader(i) {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			if e.next(ver[x], h.wordOf(x)) != none {
				aux++
			}
		}
	}
	e.edges.ReadsFrom, e.edges.Auxiliary, e.edges.Recovery = rf, aux, rec
}

// fullCSR puts back the edges buildCSR pruned, for explanations (which
// show the graph's own edges, not the implied paths).
func (e *eval) fullCSR() {
	if e.pruned {
		e.buildCSR(false)
	}
}

// forEachExplicit calls f for every explicit edge, in a fixed order.
func (e *eval) forEachExplicit(f func(from, to int32, kind EdgeKind)) {
	h, ver := e.h, e.h.ver
	for i := int32(0); i < h.n; i++ {
		if !e.observer(i) {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			if y := ver[x]; y >= 0 {
				f(h.opOf(y), i, ReadsFrom)
			}
		}
	}
	for _, i := range h.failedCAS {
		if h.flags[i]&fNoAux != 0 && !e.assumeFail {
			continue
		}
		if src, _ := e.failureSource(i, h.blamedAccess(i)); src != none {
			f(h.opOf(src), i, Auxiliary)
		}
	}
	if e.mode == history.Recoverable {
		for _, c := range h.crashed {
			if h.flags[c.op]&fCompleted != 0 {
				if t := e.recoveryTarget(c, nil); t != none {
					f(c.op, t, Recovery)
				}
			}
		}
	}
}

// recoveryTarget is the operation that the completed crashed cas c must
// precede in recoverable mode: the first later operation of its process
// that stays in the graph, or none. The operations in between were cut off
// themselves and left the history (a read, or a cas nobody observed), so
// the process order passes the constraint on to the next one that stays
// (Section 5.3 of the OPODIS paper applies its removal rules first). The
// target depends on the completions chosen, so it is recomputed for each
// evaluation. If skipped is not nil, the records of the operations passed
// over are appended to it, for explanations.
func (e *eval) recoveryTarget(c crashRec, skipped *[]crashRec) int32 {
	h := e.h
	t, r := c.next, c.nextRec
	for t != none && !e.effective(t) {
		if r == none {
			return none // t is pending at the end and dropped: nothing follows it
		}
		if skipped != nil {
			*skipped = append(*skipped, h.crashed[r])
		}
		t, r = h.crashed[r].next, h.crashed[r].nextRec
	}
	return t
}

// degree is the number of out-edges of u the DFS enumerates; edgeAt returns
// the i-th, or none when that slot holds no edge (a read whose version has
// no successor).
func (e *eval) degree(u int32) int32 {
	h := e.h
	d := int32(0)
	if e.effective(u) && e.hi[u] > h.lo[u] {
		d = e.hi[u] - h.lo[u]
	}
	d += int32(e.off[u+1] - e.off[u])
	if h.reader(u) {
		d += int32(h.acc[u+1] - h.acc[u])
	}
	return d
}

// hbDegree is the number of ReduceHB edges of u, which come first in
// edgeAt's order.
func (e *eval) hbDegree(u int32) int32 {
	if e.effective(u) && e.hi[u] > e.h.lo[u] {
		return e.hi[u] - e.h.lo[u]
	}
	return 0
}

func (e *eval) edgeAt(u, i int32) int32 {
	h := e.h
	if e.effective(u) && e.hi[u] > h.lo[u] {
		if n := e.hi[u] - h.lo[u]; i < n {
			return h.lo[u] + i
		} else {
			i -= n
		}
	}
	if n := int32(e.off[u+1] - e.off[u]); i < n {
		return e.tgt[int32(e.off[u])+i]
	} else {
		i -= n
	}
	x := int32(h.acc[u]) + i
	if s := e.next(h.ver[x], h.wordOf(x)); s != none {
		return h.opOf(s)
	}
	return none
}

// acyclic reports whether the graph has no cycle (property i), by an
// iterative DFS: histories have millions of operations, and recursion that
// deep is slow in Go and unbounded in memory. The happens-before edges,
// most of the graph, are scanned as ranges of the color array, without a
// call per edge.
func (e *eval) acyclic(ctx context.Context) (bool, error) {
	h := e.h
	n := h.n
	if cap(e.color) < int(n) {
		e.color = make([]uint8, n)
	}
	color := e.color[:n]
	clear(color)
	const (
		white = iota
		gray
		black
	)
	// A frame's cursor i runs over u's happens-before range first (as an
	// offset from lo), then its explicit and read-auxiliary edges (as
	// edgeAt indexes).
	type frame struct{ v, i int32 }
	var stack []frame
	for root := int32(0); root < n; root++ {
		if color[root] != white || !e.effective(root) {
			continue
		}
		if root&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		color[root] = gray
		stack = append(stack[:0], frame{root, 0})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			u := top.v
			t := none
			nhb := e.hbDegree(u)
			if top.i < nhb {
				lo := h.lo[u]
				rng := color[lo+top.i : lo+nhb]
				k := 0
				for k < len(rng) && rng[k] == black {
					k++
				}
				top.i += int32(k)
				if k < len(rng) {
					t = lo + top.i
					top.i++
				}
			}
			if t == none {
				for d := e.degree(u); top.i < d && t == none; top.i++ {
					t = e.edgeAt(u, top.i)
				}
			}
			if t == none {
				color[u] = black
				stack = stack[:len(stack)-1]
				continue
			}
			switch color[t] {
			case white:
				color[t] = gray
				stack = append(stack, frame{t, 0})
			case gray:
				return false, nil
			}
		}
	}
	return true, nil
}

// run evaluates the properties for the completions forced by observation
// plus extra. It reports whether the history passed.
func (e *eval) run(ctx context.Context, extra []int32) (bool, error) {
	e.complete(extra)
	e.responses()
	e.paths()
	e.failures()
	e.buildCSR(true)
	ok, err := e.acyclic(ctx)
	if err != nil {
		return false, err
	}
	e.cyclic = !ok
	return ok && len(e.unexplain) == 0 && len(e.forks) == 0 && len(e.unreach) == 0 && e.danglingCount() == 0 && len(e.h.contra) == 0, nil
}

// danglingCount counts the dangling accesses of operations in the graph.
func (e *eval) danglingCount() int {
	c := 0
	for _, x := range e.h.dangling {
		if e.observer(e.h.opOf(x)) {
			c++
		}
	}
	return c
}
