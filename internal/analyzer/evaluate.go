package analyzer

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/reduce"
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
	// The explicit out-edges (reads-from, auxiliary of failures,
	// recovery) as a compressed adjacency over the operations that have
	// any (src numbers them): most have none once the implied ones are
	// pruned, and the offsets then cost a few bits per operation instead
	// of four bytes.
	src   rankIndex
	off   []uint32
	tgt   []int32
	pairs [][2]int32 // scratch: the edges kept, before packing
	// back marks the operations with an edge back, to an operation
	// invoked no later (checkPass); the cycle check starts from them.
	back  []uint64
	split splitter // how a pass spreads over goroutines
	// pruned: the CSR leaves out the edges that happens-before implies
	// (see buildCSR); fullCSR puts them back for explanations.
	pruned bool
	gray   []uint64 // DFS colours, bitsets (neither: white)
	black  []uint64
	// rank orders the completed cut-off swaps on the words they share
	// (see place): op id -> rank; nil ranks them in invocation order.
	rank    map[int32]int
	unknown []int32 // scratch: the accesses place links
	// guard bounds the memory of the arrays made after loading (nil:
	// no bound).
	guard *memoryGuard

	// outcome
	edges      EdgeCounts
	completed  int64
	unexplain  []int32 // blamed accesses of unexplained failures
	forks      [][2]int32
	unreach    []int32
	cyclic     bool
	assumeFail bool // constraints of failed cas breaking Assumption 2 included
}

func newEval(h *hist, mode history.Mode, split splitter) *eval {
	nacc := len(h.word)
	return &eval{
		h: h, mode: mode, split: split,
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
	// What the operations that returned observed (listed once, by
	// assumption2: their versions do not change), completed in order,
	// then what those observed in turn.
	take := func(ws []int32) {
		for _, w := range ws {
			if h.flags[w]&(fReturned|fCompleted|fRead) == 0 {
				h.flags[w] |= fCompleted
				work = append(work, w)
			}
		}
	}
	take(h.observedPending)
	var next []int32
	for len(work) > 0 {
		w := work[len(work)-1]
		work = work[:len(work)-1]
		next = h.pendingObserved(w, next[:0])
		take(next)
	}
	e.completed = 0
	for _, c := range h.pendingW {
		if h.flags[c]&fCompleted != 0 {
			e.completed++
		}
	}
}

// pendingObserved appends to out the writers of what operation i (a
// completed one) observed that are pending and not completed yet.
func (h *hist) pendingObserved(i int32, out []int32) []int32 {
	for x, end := int32(h.acc[i]), int32(h.acc[i+1]); x < end; x++ {
		if y := h.ver[x]; y >= 0 {
			if w := h.writerOp(y); h.flags[w]&(fReturned|fCompleted|fRead) == 0 {
				out = append(out, w)
			}
		}
	}
	return out
}

// responses places the responses of crashed operations by the mode, which
// moves the ReduceHB ranges: the cycle check scans them from lo alone, and
// hiRanges computes their ends for explanations.
func (e *eval) responses() {
	h := e.h
	for _, c := range h.crashed {
		h.lo[c.op] = h.n
		if e.mode.CrashBounds() && h.flags[c.op]&fCompleted != 0 {
			h.lo[c.op] = c.at
		}
	}
	e.hi = e.hi[:0]
}

// hiRanges computes the ends of the ReduceHB ranges (package reduce), 4
// bytes per operation that the cycle check does without.
func (e *eval) hiRanges() {
	if len(e.hi) != int(e.h.n) {
		e.hi = reduce.Ranges(e.h.lo, e.hi)
	}
}

// paths builds each word's reads-from path (properties ii and iii): the
// successor of every version, forks, and the writes off the path. The
// completed cut-off swaps, whose replaced values are unknown, are linked in
// by place. In the common case (markForward) the marking, a serial pass,
// goes on beside the cycle check, which reads none of what it writes (the
// marks, the losers, the forks and the writes off the path): the returned
// function waits for it.
func (e *eval) paths() (marked func()) {
	h, ver := e.h, e.h.ver
	e.split.run(len(e.succ), func(_, lo, hi int) {
		for i := range e.succ[lo:hi] {
			e.succ[lo+i] = none
		}
	})
	for i := range e.gsucc {
		e.gsucc[i] = none
	}
	clear(e.mark)
	clear(e.loser)
	e.forks, e.unreach = e.forks[:0], e.unreach[:0]
	if e.successors() && !e.placing() {
		e.unknown = e.unknown[:0] // (as place leaves it: the searcher reads it)
		// (markForward finds the forks too)
		return e.split.aside(int(h.n), e.markForward)
	}
	e.findForks()
	e.place()
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
	return func() {}
}

// successors sets each version's successor: the first write, in access
// order, whose version it is (a later one forks). The operations split
// over the workers, each write lowering its version's entry to itself
// (firstAccess), so the least access wins in any order: done serially,
// this pass kept the other cores idle. It reports whether every write's
// version is an earlier access (the common case, see markForward).
func (e *eval) successors() (forward bool) {
	h, ver := e.h, e.h.ver
	n := int(h.n)
	shared := e.split.parts(n) > 1
	back := make([]bool, e.split.parts(n))
	e.split.run(n, func(k, lo, hi int) {
		for i := int32(lo); i < int32(hi); i++ {
			if !e.writer(i) {
				continue
			}
			for x, end := int32(h.acc[i]), int32(h.acc[i+1]); x < end; x++ {
				switch y := ver[x]; {
				case y == verGenesis:
					firstAccess(&e.gsucc[h.wordOf(x)], x, shared)
				case y >= 0:
					firstAccess(&e.succ[h.slots.of(y)], x, shared)
					back[k] = back[k] || y >= x
				}
			}
		}
	})
	return !slices.Contains(back, true)
}

// firstAccess sets *p, an access or none, to x if x comes first, by
// compare-and-swap when other goroutines may set it at the same time.
func firstAccess(p *int32, x int32, shared bool) {
	if !shared {
		if old := *p; old == none || x < old {
			*p = x
		}
		return
	}
	for {
		old := atomic.LoadInt32(p)
		if old != none && old <= x {
			return
		}
		if atomic.CompareAndSwapInt32(p, old, x) {
			return
		}
	}
}

// fork records that write x is not the successor of its version, which s
// is: x is off the path (a loser, reported once).
func (e *eval) fork(s, x int32) {
	e.forks = append(e.forks, [2]int32{s, x})
	setBit(e.loser, x)
}

// findForks lists the forks (e.fork), in access order, each write with
// the successor it lost to.
func (e *eval) findForks() {
	h, ver := e.h, e.h.ver
	for i := int32(0); i < h.n; i++ {
		if !e.writer(i) {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			s := x
			switch y := ver[x]; {
			case y == verGenesis:
				s = e.gsucc[h.wordOf(x)]
			case y >= 0:
				s = e.succOf(y)
			}
			if s != x {
				e.fork(s, x)
			}
		}
	}
}

// markForward marks the writes on their word's path from genesis, and
// lists those off it (e.unreach) and the forks, in one pass in access
// order: when every write's version is an earlier access (the common
// case: a value is expected after it is written), a write is on the path
// iff it is its version's successor and its version is on the path, which
// the pass has then already decided. Following each word's chain instead
// costs a cache miss per write on a long history.
func (e *eval) markForward() {
	h, ver := e.h, e.h.ver
	for i := int32(0); i < h.n; i++ {
		if !e.writer(i) {
			continue
		}
		for x, end := int32(h.acc[i]), int32(h.acc[i+1]); x < end; x++ {
			on := false
			switch y := ver[x]; {
			case y == verGenesis:
				s := e.gsucc[h.wordOf(x)]
				if on = s == x; !on {
					e.fork(s, x)
				}
			case y >= 0:
				s := e.succOf(y)
				if s != x {
					e.fork(s, x)
				}
				on = s == x && bit(e.mark, y)
			}
			if on {
				setBit(e.mark, x)
			} else if !bit(e.loser, x) && ver[x] != verDangling {
				e.unreach = append(e.unreach, x)
			}
		}
	}
}

// placing reports whether place has swaps to link: completed cut-off ones.
func (e *eval) placing() bool {
	for _, s := range e.h.pendingSwap {
		if e.h.flags[s]&fCompleted != 0 {
			return true
		}
	}
	return false
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
	if y == verDangling || (y >= 0 && !e.writer(h.writerOp(y))) {
		// The expected value never was at that word: the failure
		// constrains nothing.
		return none, false
	}
	return e.next(y, h.wordOf(x)), true
}

// The explicit out-edges: reads-from (writer -> observer), auxiliary of
// failures (the write that explains it -> the failed cas) and recovery
// (crashed cas -> its process's next operation). The read auxiliary edges
// are not stored: the DFS derives them from the read's versions, saving 4
// bytes per read word.
//
// checkPass lists them for the cycle check, and leaves out those that
// happens-before implies: u -> v where v was invoked after u's response
// (hbBefore) is also a path of ReduceHB edges, whose transitive closure is
// happens-before (Theorem 1 of the OPODIS paper; every operation inside
// such a path responded, so it is a vertex with its edges), so the graph
// has a cycle iff the pruned one has. Most reads return a value written
// before they started: this drops most reads-from edges. The same pass
// finds the unexplained failures, marks the operations with an edge back
// (to an operation invoked no later: the cycle check starts only from
// those, see acyclic) and counts every edge of the full graph, parts of it
// on several goroutines. Explanations take every edge (fullGraph).
func (e *eval) checkPass() error {
	h := e.h
	nw := (int(h.n) + 63) / 64
	if cap(e.back) < nw {
		e.back = make([]uint64, nw)
	}
	e.back = e.back[:nw]
	clear(e.back)
	type part struct {
		pairs     [][2]int32
		unexplain []int32
		counts    EdgeCounts
	}
	ops := make([]part, e.split.parts(int(h.n)))
	e.split.run(int(h.n), func(k, lo, hi int) { e.opEdges(int32(lo), int32(hi), &ops[k].pairs, &ops[k].counts) })
	fails := make([]part, e.split.parts(len(h.failedCAS)))
	e.split.run(len(h.failedCAS), func(k, lo, hi int) {
		p := &fails[k]
		for _, i := range h.failedCAS[lo:hi] {
			if h.flags[i]&fNoAux != 0 && !e.assumeFail {
				continue
			}
			x := h.blamedAccess(i)
			src, needed := e.failureSource(i, x)
			switch {
			case needed && src == none:
				p.unexplain = append(p.unexplain, x)
			case src != none:
				p.counts.Auxiliary++
				if from := h.writerOp(src); !e.hbBefore(from, i) {
					p.pairs = append(p.pairs, [2]int32{from, i})
				}
			}
		}
	})
	e.pairs, e.unexplain, e.edges = e.pairs[:0], e.unexplain[:0], EdgeCounts{}
	for _, p := range append(ops, fails...) {
		e.pairs = append(e.pairs, p.pairs...)
		e.unexplain = append(e.unexplain, p.unexplain...)
		e.edges.HappensBefore += p.counts.HappensBefore
		e.edges.ReadsFrom += p.counts.ReadsFrom
		e.edges.Auxiliary += p.counts.Auxiliary
	}
	e.recoveryEdges(func(from, to int32) {
		e.edges.Recovery++
		e.pairs = append(e.pairs, [2]int32{from, to})
	})
	for _, p := range e.pairs {
		if p[1] <= p[0] {
			setBit(e.back, p[0])
		}
	}
	// The adjacency: a target per edge, an offset per source, and the
	// sources' cursors.
	if err := e.guard.room(h, "pack its graph's edges", 12*int64(len(e.pairs))); err != nil {
		return err
	}
	e.packPairs()
	e.pruned = true
	return nil
}

// opEdges is checkPass on operations lo to hi-1 (lo a multiple of 64): the
// happens-before edges they have (scanned from lo, as acyclic does), the
// reads-from edges into them (those kept appended to pairs) and their
// read auxiliary edges (an operation with one back marked in e.back).
func (e *eval) opEdges(lo, hi int32, pairs *[][2]int32, c *EdgeCounts) {
	h, ver := e.h, e.h.ver
	for i := lo; i < hi; i++ {
		if !e.effective(i) {
			continue
		}
		if l := h.lo[i]; l < h.n {
			end := h.n
			for j := l; j < end; j++ {
				end = min(end, h.lo[j])
				c.HappensBefore++
			}
		}
		if !e.observer(i) {
			continue
		}
		reader := h.reader(i)
		for x, end := int32(h.acc[i]), int32(h.acc[i+1]); x < end; x++ {
			y := ver[x]
			if y < 0 {
				if reader && y == verGenesis {
					if s := e.gsucc[h.wordOf(x)]; s != none {
						c.Auxiliary++
						if h.writerOp(s) <= i {
							setBit(e.back, i)
						}
					}
				}
				continue
			}
			sl := h.slots.of(y)
			from := h.owner[sl]
			c.ReadsFrom++
			if !e.hbBefore(from, i) {
				*pairs = append(*pairs, [2]int32{from, i})
			}
			if reader {
				if s := e.succ[sl]; s != none {
					c.Auxiliary++
					if h.writerOp(s) <= i {
						setBit(e.back, i)
					}
				}
			}
		}
	}
}

// recoveryEdges calls f with each recovery edge, in recoverable mode.
func (e *eval) recoveryEdges(f func(from, to int32)) {
	if !e.mode.ProcessOrder() {
		return
	}
	for _, c := range e.h.crashed {
		if e.h.flags[c.op]&fCompleted != 0 {
			if t := e.recoveryTarget(c, nil); t != none {
				f(c.op, t)
			}
		}
	}
}

// packPairs stores e.pairs (few, once pruned) as the adjacency, each
// operation's edges in the order they were listed: placed by a counting
// sort on their source's rank, in two passes (a stable sort of the pairs,
// serial, took a tenth of the check's time after reading at 10 million
// operations).
func (e *eval) packPairs() {
	e.src.reset(int(e.h.n))
	for _, p := range e.pairs {
		e.src.set(p[0])
	}
	e.src.count()
	e.off = append(e.off[:0], make([]uint32, e.src.n+1)...)
	for _, p := range e.pairs {
		e.off[e.src.of(p[0])+1]++
	}
	for k := 1; k < len(e.off); k++ {
		e.off[k] += e.off[k-1]
	}
	e.tgt = append(e.tgt[:0], make([]int32, len(e.pairs))...)
	cursor := slices.Clone(e.off[:e.src.n]) // the next free place of each source
	for _, p := range e.pairs {
		r := e.src.of(p[0])
		e.tgt[cursor[r]] = p[1]
		cursor[r]++
	}
}

// packAll stores every explicit edge as the adjacency: their degrees
// counted per operation first (a temporary 4 bytes per operation), then
// the edges filled in, each operation's in the order forEachExplicit lists
// them.
func (e *eval) packAll() {
	n := e.h.n
	deg := make([]uint32, n)
	e.forEachExplicit(func(from, to int32, _ EdgeKind) {
		deg[from]++
	})
	e.src.reset(int(n))
	for i, d := range deg {
		if d > 0 {
			e.src.set(int32(i))
		}
	}
	e.src.count()
	e.off = append(e.off[:0], make([]uint32, e.src.n+1)...)
	for i, d := range deg {
		if d > 0 {
			e.off[e.src.of(int32(i))+1] = d
		}
	}
	for k := 1; k < len(e.off); k++ {
		e.off[k] += e.off[k-1]
	}
	cursor := deg[:e.src.n] // reused: the next free place of each source
	copy(cursor, e.off)
	e.tgt = append(e.tgt[:0], make([]int32, e.off[len(e.off)-1])...)
	e.forEachExplicit(func(from, to int32, _ EdgeKind) {
		r := e.src.of(from)
		e.tgt[cursor[r]] = to
		cursor[r]++
	})
}

// explicit is the range of u's explicit edges in tgt.
func (e *eval) explicit(u int32) (lo, hi uint32) {
	if !e.src.has(u) {
		return 0, 0
	}
	r := e.src.of(u)
	return e.off[r], e.off[r+1]
}

// fullGraph puts back the edges buildCSR pruned and computes the ReduceHB
// ranges' ends, for explanations (which show the graph's own edges, not
// the implied paths).
func (e *eval) fullGraph() {
	if e.pruned {
		e.packAll()
		e.pruned = false
	}
	e.hiRanges()
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
	e.recoveryEdges(func(from, to int32) { f(from, to, Recovery) })
}

// recoveryTarget is the operation that the completed crashed cas c must
// precede in recoverable mode (history.Mode.ProcessOrder, the rule's one
// statement; the differential tests hold this edge to the oracles): the
// first later operation of its process
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

// degree is the number of out-edges of u the explanations enumerate;
// edgeAt returns the i-th, or none when that slot holds no edge (a read
// whose version has no successor). The happens-before edges come first
// (hbDegree of them), then the explicit ones and those derived from a
// read's versions (otherDegree, otherEdge). They take hiRanges.
func (e *eval) degree(u int32) int32 {
	return e.hbDegree(u) + e.otherDegree(u)
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
	if n := e.hbDegree(u); i < n {
		return e.h.lo[u] + i
	} else {
		i -= n
	}
	return e.otherEdge(u, i)
}

// otherDegree is the number of u's edges that are not happens-before.
func (e *eval) otherDegree(u int32) int32 {
	h := e.h
	lo, hi := e.explicit(u)
	d := int32(hi - lo)
	if h.reader(u) {
		d += int32(h.acc[u+1] - h.acc[u])
	}
	return d
}

// otherEdge is u's i-th edge that is not happens-before, or none.
func (e *eval) otherEdge(u, i int32) int32 {
	h := e.h
	lo, hi := e.explicit(u)
	if n := int32(hi - lo); i < n {
		return e.tgt[int32(lo)+i]
	} else {
		i -= n
	}
	x := int32(h.acc[u]) + i
	if s := e.next(h.ver[x], h.wordOf(x)); s != none {
		return h.writerOp(s)
	}
	return none
}

// acyclic reports whether the graph has no cycle (property i), by an
// iterative DFS: histories have millions of operations, and recursion that
// deep is slow in Go and unbounded in memory.
//
// Roots are taken from the last operation back. Every operation after a
// root is then black (done), so edges forward lead nowhere new: a root
// whose edges all point forward (no back mark, see checkPass) is done at
// once, and the search only goes deep from the edges that point back,
// which are few and short. Happens-before edges all point forward; inside
// the search they are scanned as ranges of the colour bitsets, without a
// call per edge and without the ranges' ends: u's range is [lo[u], hi[u])
// where hi[u] is the least lo of the operations from lo[u] on (package
// reduce), and since lo[c] > c, whether position j is still in the range
// depends only on the operations before j, whose least lo the frame keeps
// as it scans.
func (e *eval) acyclic(ctx context.Context) (bool, error) {
	h := e.h
	n := h.n
	words := (int(n) + 63) / 64
	if cap(e.gray) < words {
		e.gray, e.black = make([]uint64, words), make([]uint64, words)
	}
	gray, black := e.gray[:words], e.black[:words]
	clear(gray)
	clear(black)
	// A frame scans v's happens-before range (j, below end) first, then
	// its other edges (k, below deg: their number, counted once, when
	// the range is done; -1 before).
	type frame struct{ v, j, end, k, deg int32 }
	open := func(v int32) frame {
		setBit(gray, v)
		if e.effective(v) && h.lo[v] < n {
			return frame{v: v, j: h.lo[v], end: n, deg: -1}
		}
		return frame{v: v, j: n, end: n, deg: -1}
	}
	var stack []frame
	for root := n - 1; root >= 0; root-- {
		if root&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		if bit(gray, root) || !e.effective(root) {
			continue
		}
		if !bit(e.back, root) {
			setBit(gray, root)
			setBit(black, root)
			continue
		}
		stack = append(stack[:0], open(root))
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			u := top.v
			t := none
			for top.j < top.end {
				j := top.j
				top.end = min(top.end, h.lo[j])
				top.j++
				if !bit(black, j) {
					t = j
					break
				}
			}
			if t == none {
				if top.deg < 0 {
					top.deg = e.otherDegree(u)
				}
				for ; top.k < top.deg && t == none; top.k++ {
					t = e.otherEdge(u, top.k)
				}
			}
			if t == none {
				setBit(black, u)
				stack = stack[:len(stack)-1]
				continue
			}
			switch {
			case bit(black, t):
			case bit(gray, t):
				return false, nil
			default:
				stack = append(stack, open(t))
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
	marked := e.paths()
	err := e.checkPass()
	ok := false
	if err == nil {
		ok, err = e.acyclic(ctx)
	}
	marked()
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
