// Package dqueue is the durable queue of Friedman, Herlihy, Marathe and
// Petrank, "A Persistent Lock-Free Queue for Non-Volatile Memory" (PPoPP
// 2018, Section 4, "The Durable Queue"), on a pmem.Region, as a
// data-structure target of pmlin's harness (package target) of model
// queue, with planted variants of the bugs that persistent queues are known
// to get wrong.
//
// # Algorithm
//
// It is Michael and Scott's lock-free queue (a list from a sentinel node,
// head and tail words, enqueuers that link at the end with a CAS on the
// last node's next and then swing tail, everybody helping a lagging tail
// forward) with the paper's three additions for durability:
//
//   - every pointer a later operation depends on is flushed before it is
//     used: the new node before it is linked, the last node's next after
//     the linking CAS and by whoever helps tail past it (enqueuer or
//     dequeuer), before tail moves;
//   - a dequeue takes a node by marking it with its id (a CAS of the
//     node's dequeuer word from "none"), flushes the mark, and only then
//     moves head: head itself is never flushed, the marks say durably
//     which nodes are gone; a dequeuer that finds the node marked helps the
//     marker (flushes its mark, writes its returned value, moves head);
//   - each worker has a returned-values slot, pointing to a cell that each
//     dequeue allocates and flushes before it starts, into which the
//     dequeue's result (a value or empty) is written and flushed before
//     head moves: what a restarted thread reads to learn what its last
//     dequeue returned (the paper's detectability; the harness does not
//     read it).
//
// Recovery (the paper's "recovery procedure"): walk from head; while the
// node after it is marked, finish that dequeue (write its value into the
// cell its mark names) and move head past it; make head durable; then walk
// to the last node and make tail point to it (tail is never flushed, so it
// can lag, even behind head, after a crash); and set the allocation
// frontiers (below).
//
// Flushes are followed by a fence wherever the paper's FLUSH is (the paper's
// FLUSH is a write-back and a fence).
//
// # Memory
//
// Nodes and cells come from pools in the region sized by Config.Ops (the
// harness's bound on the operations of a run across its crashes), handed
// out by bump allocation: a frontier word advanced with a CAS. Nothing is
// freed while the queue runs, so no node is reused under a live pointer
// (no ABA). The frontier words are never flushed: recovery sets them from
// what survived instead, the node frontier to one past the largest node
// reachable from head, the cell frontier to one past the largest cell a
// slot points to. So a node still in the queue is never handed out again:
// after a crash the queue is exactly the nodes reachable from head, below
// the new frontier, and recovery has made head and tail durable, pointing
// into that list, before any operation runs; a node above the frontier was
// allocated but never durably linked (or linked before head, and gone),
// and no durable pointer of the recovered queue leads to it. Each enqueue
// allocates once and each dequeue once, and the frontier after a recovery
// is at most what it was before the crash, so Ops+1 nodes (the sentinel)
// and Ops cells suffice for any run.
//
// # Planted bugs
//
// Mutants: the eight failing variants of this queue in lincheck's NVM tests
// (missing flushes of the link, of both helping paths, of the mark and of
// the helper's mark; a recovery that leaves tail; plain stores instead of
// the tail and link CASes), lincheck's queue without recovery, and five
// more of the same kinds (the new node unflushed, the link unfenced, a
// plain store of the mark, the allocation frontier not recovered).
package dqueue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/pmlin/pmlin/internal/targetkit"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Target is the durable queue as a target of pmlin's harness.
func Target() *target.Target {
	muts := make([]target.Mutant, 0, len(mutants)-1)
	for _, m := range mutants[1:] {
		muts = append(muts, m)
	}
	return &target.Target{
		Name:        "dqueue",
		Description: "Friedman et al.'s durable lock-free queue (PPoPP'18), model queue (package internal/dqueue)",
		Mutants:     muts,
		Params: []target.Param{{Name: "node-words", Default: "8", Fuzz: []string{"4", "8", "8"},
			Usage: "words per node: 8 puts each node on a cache line of its own, 4 two nodes on a line (a flush of one writes back the other)"}},
		Size: func(c target.Config) (uint64, error) {
			l, err := newLayout(c)
			return l.total, err
		},
		Model:      "queue",
		Mix:        map[string]int{"enq": 1, "deq": 1},
		NewObject:  create,
		OpenObject: open,
	}
}

// mutant is a planted bug; 0 is the correct code.
type mutant uint8

const (
	correct mutant = iota
	linkUnflushed
	enqHelpUnflushed
	deqHelpUnflushed
	markUnflushed
	markHelpUnflushed
	recoveryKeepsTail
	tailStore
	linkStore
	noRecovery
	nodeUnflushed
	linkUnfenced
	markStore
	allocNotRecovered
)

var mutants = [...]target.Mutant{
	correct:           {},
	linkUnflushed:     {Name: "link-unflushed", Description: "enq does not flush the last node's next after its linking CAS: a returned enq can be lost (lincheck's failing queue 1)"},
	enqHelpUnflushed:  {Name: "enq-help-unflushed", Description: "an enq that helps a lagging tail moves it without flushing the link it passes: a later durable link hangs off a lost one (lincheck 2)"},
	deqHelpUnflushed:  {Name: "deq-help-unflushed", Description: "a deq that helps a lagging tail moves it without flushing the link it passes (lincheck 3)"},
	markUnflushed:     {Name: "mark-unflushed", Description: "deq does not flush its mark on the node it took: a returned deq's element comes back after a crash (lincheck 4)"},
	markHelpUnflushed: {Name: "mark-help-unflushed", Description: "a deq that helps another's marked node moves head without flushing the mark: the element comes back while later ones are gone (lincheck 5)"},
	recoveryKeepsTail: {Name: "recovery-keeps-tail", Description: "recovery does not repair tail: it can point behind head or into a reused node (lincheck 6)"},
	tailStore:         {Name: "tail-store", Description: "enq's helping path moves tail with a plain store instead of a CAS: tail can move backwards, behind head (lincheck 7)"},
	linkStore:         {Name: "link-store", Description: "enq links its node with a plain store instead of a CAS: it can overwrite another enq's link (lincheck 8)"},
	noRecovery:        {Name: "no-recovery", Description: "recovery does nothing: tail and the allocation frontier keep what the crash left (lincheck's queue without recovery)"},
	nodeUnflushed:     {Name: "node-unflushed", Description: "enq does not flush its new node before linking it: the link can survive a crash without the value"},
	linkUnfenced:      {Name: "link-unfenced", Description: "enq flushes its link but returns before the fence: the write-back may not be done when the crash comes"},
	markStore:         {Name: "mark-store", Description: "deq marks the node with a load and a plain store instead of a CAS: two deqs can take the same element"},
	allocNotRecovered: {Name: "alloc-not-recovered", Description: "recovery keeps the allocation frontier the crash left (never flushed): nodes still in the queue are handed out again"},
}

func parseMutant(name string) (mutant, error) {
	i, err := targetkit.MutantIndex("dqueue", mutants[:], name)
	return mutant(i), err
}

// Region layout, in words: a superblock line; head, tail, the node
// frontier and the cell frontier on a line each; each worker's
// returned-values slot on a line of its own; the cells, packed; the nodes,
// stride words each from a line boundary (value, next, dequeuer).
//
// A pointer to a node or a cell is its index, from 1; 0 is null. A node's
// dequeuer word is 0 while no dequeue took it, else the dequeuer's worker
// id plus one in its low 16 bits and the index of that dequeue's cell
// above them (so recovery finishes the very dequeue that marked it, even
// if the worker's slot moved on to a later one). A cell holds 0 while its
// dequeue has no result, cellEmpty for empty, cellValue|v for the value v.
const (
	lineWords = pmem.LineWords
	sbMagic   = 0x3155455551445050 // "PPDQUEU1"
	sbVersion = 1

	fValue = 0
	fNext  = 1
	fMark  = 2

	markWorkerBits = 16
	markWorkerMask = 1<<markWorkerBits - 1

	cellValue = 1 << 63
	cellEmpty = 1 << 62
	// maxValue is the largest value an enq takes: a cell keeps two flags
	// above it.
	maxValue = 1<<62 - 1
)

type layout struct {
	workers, nodes, cells, stride  uint64
	head, tail, nodeNext, cellNext uint64
	slotBase, cellBase, nodeBase   uint64
	total                          uint64
}

func roundLine(n uint64) uint64 { return (n + lineWords - 1) / lineWords * lineWords }

func newLayout(c target.Config) (layout, error) {
	stride, err := c.Int("node-words", 4, 8)
	if err != nil {
		return layout{}, err
	}
	switch {
	case stride != 4 && stride != 8:
		return layout{}, fmt.Errorf("dqueue: --node-words %d: 4 or 8 (a node's three words on one cache line)", stride)
	case c.Workers < 1 || c.Workers > markWorkerMask-1:
		return layout{}, fmt.Errorf("dqueue: %d workers (1..%d)", c.Workers, markWorkerMask-1)
	case c.Ops < 1 || c.Ops > 1<<30:
		return layout{}, fmt.Errorf("dqueue: %d operations (1..2^30): the node pool is sized by the run's operations", c.Ops)
	}
	if _, err := parseMutant(c.Mutant); err != nil {
		return layout{}, err
	}
	l := layout{workers: uint64(c.Workers), nodes: uint64(c.Ops) + 1, cells: uint64(c.Ops), stride: uint64(stride)}
	l.head = 1 * lineWords
	l.tail = 2 * lineWords
	l.nodeNext = 3 * lineWords
	l.cellNext = 4 * lineWords
	l.slotBase = 5 * lineWords
	l.cellBase = l.slotBase + l.workers*lineWords
	l.nodeBase = l.cellBase + roundLine(l.cells)
	l.total = l.nodeBase + l.nodes*l.stride
	return l, nil
}

func (l *layout) node(i uint64) uint64  { return l.nodeBase + (i-1)*l.stride }
func (l *layout) next(i uint64) uint64  { return l.node(i) + fNext }
func (l *layout) mark(i uint64) uint64  { return l.node(i) + fMark }
func (l *layout) value(i uint64) uint64 { return l.node(i) + fValue }
func (l *layout) cell(c uint64) uint64  { return l.cellBase + c - 1 }
func (l *layout) slot(w uint64) uint64  { return l.slotBase + w*lineWords }

func (l *layout) superblock() [lineWords]uint64 {
	sb := [lineWords]uint64{sbMagic, sbVersion, l.workers, l.nodes, l.cells, l.stride}
	h := fnv.New64a()
	for _, v := range sb[:lineWords-1] {
		h.Write(binary.LittleEndian.AppendUint64(nil, v))
	}
	sb[lineWords-1] = h.Sum64()
	return sb
}

// queue is the durable queue on a region. Workers share nothing in Go:
// every field is set by create, open or Recover, which run alone.
type queue struct {
	r   *pmem.Region
	l   layout
	mut mutant
	// ready is false from open until Recover.
	ready bool
}

// errCorrupt says that the region holds a state that no run of the
// correct code leaves.
var errCorrupt = errors.New("dqueue: region is corrupt")

func build(r *pmem.Region, c target.Config) (*queue, error) {
	l, err := newLayout(c)
	if err != nil {
		return nil, err
	}
	if r.Words() < l.total {
		return nil, fmt.Errorf("dqueue: region of %d words, %d needed", r.Words(), l.total)
	}
	mut, _ := parseMutant(c.Mutant)
	return &queue{r: r, l: l, mut: mut}, nil
}

// create formats r (all zero) as an empty queue: the sentinel node 1 (all
// zero already), head and tail pointing to it, the frontiers past it; all
// of it durable before the superblock, whose magic is written last.
func create(r *pmem.Region, c target.Config) (target.Object, error) {
	q, err := build(r, c)
	if err != nil {
		return nil, err
	}
	l := &q.l
	a := pmem.Steps{W: r.Worker(0)}
	for _, w := range [...][2]uint64{{l.head, 1}, {l.tail, 1}, {l.nodeNext, 2}, {l.cellNext, 1}} {
		a.Store(w[0], w[1])
		a.Flush(w[0])
	}
	a.Fence()
	sb := l.superblock()
	for i := lineWords - 1; i >= 0; i-- {
		a.Store(uint64(i), sb[i])
	}
	a.Flush(0)
	a.Fence()
	if a.Err != nil {
		return nil, a.Err
	}
	q.ready = true
	return q, nil
}

// open attaches to the queue that create made on r: its superblock must
// match c. Recover must run before any operation.
func open(r *pmem.Region, c target.Config) (target.Object, error) {
	q, err := build(r, c)
	if err != nil {
		return nil, err
	}
	sb := q.l.superblock()
	if err := targetkit.CheckSuperblock(r, sb[:], "dqueue", errCorrupt); err != nil {
		return nil, err
	}
	return q, nil
}

// Do applies enq or deq as worker (target.Object).
func (q *queue) Do(worker int, name string, args []model.Value, res []model.Value) ([]model.Value, error) {
	if !q.ready {
		return res, errors.New("dqueue: Recover must run before operations")
	}
	if worker < 0 || uint64(worker) >= q.l.workers {
		return res, fmt.Errorf("dqueue: worker %d out of range (0..%d)", worker, q.l.workers-1)
	}
	a := pmem.Steps{W: q.r.Worker(worker)}
	switch {
	case name == "enq" && len(args) == 1 && args[0].Sym == model.Num && args[0].N <= maxValue:
		err := q.enq(&a, args[0].N)
		return append(res[:0], model.Sym(model.OK)), err
	case name == "deq" && len(args) == 0:
		v, ok, err := q.deq(&a, uint64(worker))
		if !ok {
			return append(res[:0], model.Sym(model.Empty)), err
		}
		return append(res[:0], model.Number(v)), err
	}
	return res, fmt.Errorf("dqueue: no operation %s %v (enq V with V a number up to %#x, or deq)", name, args, uint64(maxValue))
}

// alloc hands out the next index below or at limit from the frontier word
// at off (see the package documentation, "Memory").
func (q *queue) alloc(a *pmem.Steps, off, limit uint64, what string) (uint64, error) {
	for {
		i := a.Load(off)
		switch {
		case a.Err != nil:
			return 0, a.Err
		case i == 0:
			return 0, fmt.Errorf("%w: the %s frontier is 0", errCorrupt, what)
		case i > limit:
			return 0, fmt.Errorf("dqueue: out of %ss (%d): more operations than the run's bound", what, limit)
		}
		if a.CAS(off, i, i+1) {
			return i, nil
		}
	}
}

// ptr checks a node pointer loaded from the region: 1..nodes, or 0 if
// null is allowed.
func (q *queue) ptr(a *pmem.Steps, i uint64, null bool, where string) bool {
	if a.Err == nil && (i > q.l.nodes || i == 0 && !null) {
		a.Err = fmt.Errorf("%w: %s holds node %d (of %d)", errCorrupt, where, i, q.l.nodes)
	}
	return a.Err == nil
}

// enq is the paper's enqueue.
func (q *queue) enq(a *pmem.Steps, v uint64) error {
	l := &q.l
	n, err := q.alloc(a, l.nodeNext, l.nodes, "node")
	if err != nil {
		return err
	}
	a.Store(l.value(n), v)
	a.Store(l.next(n), 0) // a node used before a crash may hold anything
	a.Store(l.mark(n), 0)
	if q.mut != nodeUnflushed {
		a.Flush(l.node(n)) // the node is on one line (stride divides it)
		a.Fence()
	}
	for a.Err == nil {
		last := a.Load(l.tail)
		if !q.ptr(a, last, false, "tail") {
			break
		}
		next := a.Load(l.next(last))
		if !q.ptr(a, next, true, "a node's next") || last != a.Load(l.tail) {
			continue
		}
		if next == 0 {
			if a.Err == nil {
				a.W.MarkLinearization()
			}
			var linked bool
			if q.mut == linkStore {
				a.Store(l.next(last), n)
				linked = true
			} else {
				linked = a.CAS(l.next(last), 0, n)
			}
			if linked {
				if q.mut != linkUnflushed {
					a.Flush(l.next(last))
					if q.mut != linkUnfenced {
						a.Fence()
					}
				}
				a.CAS(l.tail, last, n)
				return a.Err
			}
			continue
		}
		if q.mut != enqHelpUnflushed {
			a.Flush(l.next(last))
			a.Fence()
		}
		if q.mut == tailStore {
			a.Store(l.tail, next)
		} else {
			a.CAS(l.tail, last, next)
		}
	}
	return a.Err
}

// deq is the paper's dequeue; ok is false for empty.
func (q *queue) deq(a *pmem.Steps, w uint64) (v uint64, ok bool, err error) {
	l := &q.l
	c, err := q.alloc(a, l.cellNext, l.cells, "cell")
	if err != nil {
		return 0, false, err
	}
	a.Store(l.cell(c), 0)
	a.Flush(l.cell(c))
	a.Fence()
	a.Store(l.slot(w), c)
	a.Flush(l.slot(w))
	a.Fence()
	for a.Err == nil {
		first, last := a.Load(l.head), a.Load(l.tail)
		if !q.ptr(a, first, false, "head") || !q.ptr(a, last, false, "tail") {
			break
		}
		next := a.Load(l.next(first))
		if !q.ptr(a, next, true, "a node's next") || first != a.Load(l.head) {
			continue
		}
		if first == last {
			if next == 0 {
				a.Store(l.cell(c), cellEmpty)
				a.Flush(l.cell(c))
				a.Fence()
				return 0, false, a.Err
			}
			if q.mut != deqHelpUnflushed {
				a.Flush(l.next(last))
				a.Fence()
			}
			a.CAS(l.tail, last, next)
			continue
		}
		if next == 0 {
			// Tail is neither head nor after it: no run of the correct
			// code gets here (the paper would follow a null pointer).
			if a.Err == nil {
				a.Err = fmt.Errorf("%w: head %d has no next but tail is %d", errCorrupt, first, last)
			}
			break
		}
		v := a.Load(l.value(next))
		mark := (w + 1) | c<<markWorkerBits
		if a.Err == nil {
			a.W.MarkLinearization()
		}
		var won bool
		if q.mut == markStore {
			if a.Load(l.mark(next)) == 0 {
				a.Store(l.mark(next), mark)
				won = true
			}
		} else {
			won = a.CAS(l.mark(next), 0, mark)
		}
		if won {
			if q.mut != markUnflushed {
				a.Flush(l.mark(next))
				a.Fence()
			}
			a.Store(l.cell(c), cellValue|v)
			a.Flush(l.cell(c))
			a.Fence()
			a.CAS(l.head, first, next)
			return v, a.Err == nil, a.Err
		}
		// Help the dequeue that marked next: its worker's slot holds its
		// cell as long as head has not moved (the paper's "same context"
		// check, after the read of the slot).
		m := a.Load(l.mark(next))
		mw := m & markWorkerMask
		if a.Err == nil && (mw == 0 || mw > l.workers) {
			a.Err = fmt.Errorf("%w: node %d's dequeuer is %#x", errCorrupt, next, m)
		}
		if a.Err != nil {
			break
		}
		addr := a.Load(l.slot(mw - 1))
		if a.Load(l.head) != first {
			continue
		}
		if a.Err == nil && (addr == 0 || addr > l.cells) {
			a.Err = fmt.Errorf("%w: worker %d's slot holds cell %d (of %d)", errCorrupt, mw-1, addr, l.cells)
			break
		}
		if q.mut != markHelpUnflushed {
			a.Flush(l.mark(next))
			a.Fence()
		}
		a.Store(l.cell(addr), cellValue|v)
		a.Flush(l.cell(addr))
		a.Fence()
		a.CAS(l.head, first, next)
	}
	return 0, false, a.Err
}

// Recover is the paper's recovery (see the package documentation). Run
// again after a crash of its own, it finds head where it left it (made
// durable) or where the crash left it, and does the rest again.
func (q *queue) Recover(worker int) (string, error) {
	if worker < 0 || uint64(worker) >= q.l.workers {
		return "", fmt.Errorf("dqueue: worker %d out of range (0..%d)", worker, q.l.workers-1)
	}
	q.ready = false
	if q.mut == noRecovery {
		q.ready = true
		return "no recovery", nil
	}
	l := &q.l
	a := pmem.Steps{W: q.r.Worker(worker)}
	h := a.Load(l.head)
	q.ptr(&a, h, false, "head")
	top := h // the largest node reachable from head
	finished := 0
	for steps := uint64(0); a.Err == nil; steps++ {
		nx := a.Load(l.next(h))
		if !q.ptr(&a, nx, true, "a node's next") || nx == 0 {
			break
		}
		m := a.Load(l.mark(nx))
		if m == 0 || a.Err != nil {
			break
		}
		if c := m >> markWorkerBits; c >= 1 && c <= l.cells {
			a.Store(l.cell(c), cellValue|a.Load(l.value(nx)))
			a.Flush(l.cell(c))
		} else {
			a.Err = fmt.Errorf("%w: node %d's dequeuer is %#x", errCorrupt, nx, m)
		}
		if steps > l.nodes {
			a.Err = fmt.Errorf("%w: the list from head has a cycle", errCorrupt)
		}
		h = nx
		top = max(top, h)
		finished++
	}
	a.Fence() // the cells before head: a finished dequeue's result is durable before its node leaves the list
	a.Store(l.head, h)
	a.Flush(l.head)
	t, n := h, 0
	for steps := uint64(0); a.Err == nil; steps++ {
		nx := a.Load(l.next(t))
		if !q.ptr(&a, nx, true, "a node's next") || nx == 0 {
			break
		}
		if steps > l.nodes {
			a.Err = fmt.Errorf("%w: the list from head has a cycle", errCorrupt)
		}
		t = nx
		top = max(top, t)
		n++
	}
	oldTail := a.Load(l.tail)
	if q.mut != recoveryKeepsTail {
		a.Store(l.tail, t)
		a.Flush(l.tail)
	}
	cells := uint64(0)
	for w := range l.workers {
		cells = max(cells, a.Load(l.slot(w)))
	}
	if q.mut != allocNotRecovered {
		a.Store(l.nodeNext, top+1)
		a.Flush(l.nodeNext)
		a.Store(l.cellNext, cells+1)
		a.Flush(l.cellNext)
	}
	a.Fence()
	if a.Err != nil {
		return "", a.Err
	}
	q.ready = true
	return fmt.Sprintf("%d marked dequeues finished, tail %d -> %d, %d nodes queued, frontiers node %d cell %d", finished, oldTail, t, n, top+1, cells+1), nil
}

// State returns the values of the nodes after head that no dequeue
// marked, front first (target.Object): the queue that the next operations
// see (they pass over a marked node, helping its dequeue).
func (q *queue) State(worker int, res []model.Value) ([]model.Value, error) {
	res = res[:0]
	if worker < 0 || uint64(worker) >= q.l.workers {
		return res, fmt.Errorf("dqueue: worker %d out of range (0..%d)", worker, q.l.workers-1)
	}
	l := &q.l
	a := pmem.Steps{W: q.r.Worker(worker)}
	h := a.Load(l.head)
	q.ptr(&a, h, false, "head")
	for steps := uint64(0); a.Err == nil; steps++ {
		nx := a.Load(l.next(h))
		if !q.ptr(&a, nx, true, "a node's next") || nx == 0 {
			break
		}
		if steps > l.nodes {
			return res, fmt.Errorf("%w: the list from head has a cycle", errCorrupt)
		}
		if a.Load(l.mark(nx)) == 0 {
			res = append(res, model.Number(a.Load(l.value(nx))))
		}
		h = nx
	}
	return res, a.Err
}
