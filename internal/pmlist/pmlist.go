// Package pmlist is a persistent sorted linked list built on pmlin's own
// PMwCAS (internal/mwcas), as a data-structure target of pmlin's harness
// (package target) of model set: it shows the primitive in use. Wang,
// Levandoski and Larson ("Easy Lock-Free Indexing in Non-Volatile
// Memory", ICDE 2018) propose their persistent multi-word CAS as the one
// tool a lock-free persistent index needs, and show it by building
// doubly-linked skip lists and the Bw-tree on it: every shared word
// changes only by PMwCAS and is read through the PMwCAS's read, and the
// PMwCAS's recovery is most of the structure's. This list is the
// smallest such structure; planted variants of the mistakes one can make
// building it are its mutants.
//
// # Structure
//
// Every word that more than one thread changes is a data word of one
// PMwCAS living on the target's region. Node i (0 is the head sentinel,
// which holds no key) has two data words: next, at address 2i, and key,
// at 2i+1. A next word holds a node index shifted left by one, with bit 0
// as the deletion mark (Harris, DISC 2001); 0 is the end of the list. The
// list from head is sorted by key, strictly.
//
//   - find(k) walks from head with the PMwCAS's single-word read and stops
//     at the first node whose key is k or more (curr), with its predecessor
//     (pred), the value read in pred.next (curr, unmarked) and curr.next.
//     If it reads a marked next, the node it stands on was deleted since
//     it got there: it starts again from head.
//   - add(k): if find stops at a node of key k, false. Else a new node
//     (key k, next = curr) is written with plain stores, flushed and
//     fenced while no other thread can see it, and linked by a PMwCAS of
//     one word: pred.next from curr to the node. On failure, find again.
//   - remove(k): if find's node does not have key k, false. Else one
//     PMwCAS of two words: pred.next from curr to curr.next, and curr.next
//     from its value to the same value marked. Unlinking and marking are
//     one atomic step, so a node is reachable from head exactly while its
//     next is unmarked, and an add that would link after a deleted node
//     fails (its PMwCAS expects the unmarked value): the list needs no
//     separate marking pass and no helping of its own.
//   - contains(k): find; true if its node has key k.
//
// Nodes come from a pool in the region split among the workers; a worker
// hands out its share in order (a frontier in Go memory, not shared with
// anyone) and keeps a node whose add failed to link for its next add.
// Nothing is freed while the list runs, so no node is reused under a live
// pointer.
//
// # Tags
//
// Without more, a next word would get values back: pred.next holds c,
// then a new node, then c again once that node is removed. The list's own
// steps would not mind (an expected value found again still says that
// pred is in the list with that successor), but the PMwCAS does: its
// helpers' RDCSS pointers then recur too, and two helpers held back at
// the wrong moments can apply a finished PMwCAS a second time
// (internal/mwcas, "Assumptions"; the planted next-untagged). So every
// next word carries, above its node, a tag of 36 bits, and every value a
// worker writes has a new one: the worker's counter times the number of
// workers, plus the worker. Recovery starts the counters above every tag
// in the list: a word a PMwCAS can name after it is in the list or gets
// its first value from a new tag, so no word gets a value twice between
// two crashes (TestTags). The counters would wrap after 2^36 values, far
// beyond any run.
//
// # Linearization points
//
// A successful add or remove takes effect at its PMwCAS's linearization
// point (the status CAS that decides it succeeded). An add that returns
// false, and a contains that returns true, take effect at the read of the
// found node's next: it was unmarked, so the node, of key k, was in the
// list then. A remove that returns false and a contains that returns
// false take effect at the read of pred.next: pred was unmarked, hence in
// the list, with the successor read, and key(pred) < k < key(successor)
// (or no successor), so k was absent then. Every read of a next word is
// the PMwCAS's: it helps a PMwCAS it meets to its end and persists a
// dirty word before returning it, so no operation returns on the strength
// of a change that a crash can still undo. (Keys are read with plain
// loads: a node's key is durable before the node is linked and never
// changes while it can be reached.)
//
// # Crashes and recovery
//
// A PMwCAS is durable when it returns, and the PMwCAS's recovery leaves
// every data word as if each PMwCAS whose status was durably decided
// "succeeded" took effect and every other one did not (internal/mwcas,
// the paper's section on recovery). Any PMwCAS whose effect an operation
// read or built on was helped to a durable status first, so the set kept
// is closed under what was observed. The new node's key and next are
// durable before the PMwCAS that links it starts, so a kept link never
// leads to a node the crash lost. The list recovery then only walks the
// list (checking it: sorted, no marked node reachable, no cycle) and sets
// each worker's frontier past the last of its nodes reachable from head;
// and starts the workers' tag counters above every tag in the list; it
// writes nothing durable, so a crash during it is harmless. The state
// after recovery is therefore the set after every operation that
// returned, plus some of the cut-off ones, each at the point where its
// PMwCAS took effect: a durably (and, since nothing outlives the crash
// undecided, strictly) linearizable history.
//
// Why the frontiers are right: after recovery the list is exactly the
// nodes reachable from head, so a node of a worker's share beyond the
// last reachable one is referred to by nothing that the list will ever
// read again (a deleted node points into the list, nothing points to it).
// A frontier after recovery is never beyond the one before the crash, so
// a share of Config.Ops nodes is enough for the whole run.
//
// # Region layout
//
// The PMwCAS's region (its superblock, the data words, its descriptor
// pool: internal/mwcas) comes first, with 2(N+1) data words for N nodes;
// then a line with the list's superblock (magic, version, geometry,
// checksum). The parameters --stride (data words apart in the region: 1
// puts four nodes on a cache line, 8 a word per line) and --descriptors
// (each worker's share of the PMwCAS's descriptor pool) are the PMwCAS's
// own, which pmlin fuzz varies run by run.
//
// # Planted bugs
//
// Config.Mutant selects one (Target's Mutants, pmlin mutants --target
// pmlist): the new node linked before it is durable; a remove made of two
// PMwCASes (unlink, then mark); a find that walks over deleted nodes and
// an add that links after one; a contains that reads the next words from
// the region instead of through the PMwCAS; a recovery that skips the
// PMwCAS's recovery; one that skips the list's own (the frontiers); and
// next words without tags.
package pmlist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/internal/targetkit"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Target is the list as a target of pmlin's harness: model set, lock-free
// (the PMwCAS's one wait, for a descriptor its reclamation holds back, is
// declared), with its planted bugs and the PMwCAS's parameters.
func Target() *target.Target {
	muts := make([]target.Mutant, 0, len(mutants)-1)
	muts = append(muts, mutants[1:]...)
	return &target.Target{
		Name:        "pmlist",
		Description: "a sorted linked list on pmlin's PMwCAS (Wang, Levandoski, Larson, ICDE 2018): add links with a 1-word PMwCAS, remove unlinks and marks with a 2-word one",
		Model:       "set",
		Mutants:     muts,
		// The PMwCAS target's own knobs, by the same names, defaults and
		// fuzz values: the harness shares a flag among the targets that
		// declare it.
		Params: []target.Param{
			{Name: "descriptors", Default: fmt.Sprint(mwcas.DefaultDescriptors), Fuzz: []string{fmt.Sprint(mwcas.DefaultDescriptors), "2", "1", "1"},
				Usage: "pmlist: the PMwCAS's descriptors per thread (1 to 65536)"},
			{Name: "stride", Default: "1", Fuzz: []string{"1", "1", "2", "8"},
				Usage: "pmlist: region words between the PMwCAS's data words (1 to 64; 1 puts four nodes on a cache line, 8 each word on its own)"},
		},
		Size: func(c target.Config) (uint64, error) {
			l, err := newLayout(c)
			return l.total, err
		},
		NewObject:  create,
		OpenObject: open,
	}
}

// mutant is a planted bug; 0 is the correct code.
type mutant uint8

const (
	correct mutant = iota
	nodeUnflushed
	deleteTwoCAS
	linkAfterDeleted
	containsRawRead
	pmwcasRecoverySkipped
	listRecoverySkipped
	nextUntagged
)

var mutants = [...]target.Mutant{
	correct:               {},
	nodeUnflushed:         {Name: "node-unflushed", Description: "add links its new node before flushing it: the link can survive a crash that loses the node's key and next"},
	deleteTwoCAS:          {Name: "delete-two-cas", Description: "remove unlinks the node with one PMwCAS and marks it with another: an add can link after the node in between, and is lost"},
	linkAfterDeleted:      {Name: "link-after-deleted", Description: "find walks over deleted nodes instead of starting again, and add expects the marked next it read: the new node is linked after a deleted one and is lost"},
	containsRawRead:       {Name: "contains-raw-read", Description: "contains loads the next words from the region and clears the PMwCAS's flag bits instead of using its read: a word in the middle of a PMwCAS is taken for a node"},
	pmwcasRecoverySkipped: {Name: "pmwcas-recovery-skipped", Description: "recovery does not run the PMwCAS's recovery: descriptor pointers and dirty bits stay in the words while the descriptors are handed out again"},
	listRecoverySkipped:   {Name: "list-recovery-skipped", Description: "recovery runs the PMwCAS's recovery but not the list's: a new process hands out nodes that are still in the list"},
	nextUntagged:          {Name: "next-untagged", Description: "next words carry no tag, so a word gets a value back (c, a new node, c again): two late helpers of one PMwCAS can then apply it twice, undoing a remove"},
}

func parseMutant(name string) (mutant, error) {
	i, err := targetkit.MutantIndex("pmlist", mutants[:], name)
	return mutant(i), err
}

const (
	lineWords = pmem.LineWords
	sbMagic   = 0x31305453494c4d50 // "PMLIST01"
	sbVersion = 1
	// A next word: bit 0 the mark, then the node (nodeBits), then a tag
	// (tagBits) that makes every value written to a word new to it (see
	// the package documentation, "Tags").
	markBit  = 1
	nodeBits = 24
	maxNodes = 1<<nodeBits - 1
	tagShift = 1 + nodeBits
	tagBits  = 36
	tagMask  = 1<<tagBits - 1
	// maxWords bounds the region: an error names it rather than the
	// allocation failing.
	maxWords = 1 << 26
)

// layout is the geometry of a list: the PMwCAS's configuration, the pool
// (per worker shares of perWorker nodes, node indexes 1..nodes), and where
// the list's superblock is.
type layout struct {
	mc                        mwcas.Config
	workers, perWorker, nodes uint64
	keys                      uint64
	sbBase, total             uint64
}

func roundLine(n uint64) uint64 { return (n + lineWords - 1) / lineWords * lineWords }

func newLayout(c target.Config) (layout, error) {
	d, err := c.Int("descriptors", 1, 1<<16)
	if err != nil {
		return layout{}, err
	}
	stride, err := c.Int("stride", 1, 64)
	if err != nil {
		return layout{}, err
	}
	switch {
	case c.Workers < 1 || c.Workers > 1<<16:
		return layout{}, fmt.Errorf("pmlist: %d workers (1..65536)", c.Workers)
	case c.Ops < 1 || c.Ops > 1<<24:
		return layout{}, fmt.Errorf("pmlist: %d operations (1..2^24): the node pool is sized by the run's operations", c.Ops)
	case c.Keys < 1 || c.Keys > mwcas.MaxValue:
		return layout{}, fmt.Errorf("pmlist: %d keys (at least 1)", c.Keys)
	}
	if _, err := parseMutant(c.Mutant); err != nil {
		return layout{}, err
	}
	// Each add takes at most one node of its worker's share (a node that
	// failed to link is kept for the worker's next add), so a share of
	// Ops+1 is never exhausted (the package documentation, "Crashes and
	// recovery", says why recovery keeps it so).
	l := layout{workers: uint64(c.Workers), perWorker: uint64(c.Ops) + 1, keys: c.Keys}
	l.nodes = l.workers * l.perWorker
	if l.nodes > maxNodes {
		return layout{}, fmt.Errorf("pmlist: %d nodes (%d threads x %d operations + 1), at most %d", l.nodes, l.workers, c.Ops, maxNodes)
	}
	l.mc = mwcas.Config{Words: 2 * (l.nodes + 1), MaxWorkers: c.Workers, DescriptorsPerWorker: d, MaxK: 2, Stride: uint64(stride)}
	if l.mc.Words*uint64(stride) > maxWords {
		return layout{}, fmt.Errorf("pmlist: %d nodes at stride %d need more than %d region words: fewer operations, threads or a smaller stride", l.nodes, stride, maxWords)
	}
	mw, err := mwcas.RegionWords(l.mc)
	if err != nil {
		return layout{}, fmt.Errorf("pmlist: %w", err)
	}
	l.sbBase = roundLine(mw)
	l.total = l.sbBase + lineWords
	return l, nil
}

func (l *layout) superblock() [lineWords]uint64 {
	sb := [lineWords]uint64{sbMagic, sbVersion, l.workers, l.perWorker, l.keys, l.mc.Stride, uint64(l.mc.DescriptorsPerWorker)}
	h := fnv.New64a()
	for _, v := range sb[:lineWords-1] {
		h.Write(binary.LittleEndian.AppendUint64(nil, v))
	}
	sb[lineWords-1] = h.Sum64()
	return sb
}

// Data word addresses of node i.
func nextAddr(i uint64) uint64 { return 2 * i }
func keyAddr(i uint64) uint64  { return 2*i + 1 }

// share returns the first and last node of worker w's share.
func (l *layout) share(w uint64) (uint64, uint64) {
	return 1 + w*l.perWorker, (w + 1) * l.perWorker
}

// list is the sorted list on a region. Workers share nothing in Go: each
// touches only its own wstate, and the other fields are set by create,
// open or Recover, which run alone.
type list struct {
	r   *pmem.Region
	l   layout
	m   *mwcas.PMwCAS
	mut mutant
	ws  []wstate
	// ready is false from open until Recover.
	ready bool
}

// wstate is one worker's own: its share's frontier, its unlinked node, and
// scratch space for PMwCAS calls.
type wstate struct {
	next  uint64 // the next node of the share to hand out
	seq   uint64 // the worker's tags are seq*workers+worker, seq counting up
	spare uint64 // a node handed out whose add failed to link it, or 0
	words [2]mwcas.Word
	addr  [1]uint64
	out   [1]uint64
	_     [64]byte // workers' states on different cache lines
}

// errCorrupt says that the region holds a state that no run of the
// correct code leaves.
var errCorrupt = errors.New("pmlist: region is corrupt")

func build(r *pmem.Region, c target.Config, m *mwcas.PMwCAS) (*list, error) {
	l, err := newLayout(c)
	if err != nil {
		return nil, err
	}
	mut, _ := parseMutant(c.Mutant)
	x := &list{r: r, l: l, m: m, mut: mut, ws: make([]wstate, l.workers)}
	for w := range x.ws {
		x.ws[w].next, _ = l.share(uint64(w))
	}
	return x, nil
}

// create formats r (all zero) as an empty list: a PMwCAS whose data words
// are all 0 (head.next: the end), then the list's superblock, magic last,
// durable.
func create(r *pmem.Region, c target.Config) (target.Object, error) {
	l, err := newLayout(c)
	if err != nil {
		return nil, err
	}
	if r.Words() < l.total {
		return nil, fmt.Errorf("pmlist: region of %d words, %d needed", r.Words(), l.total)
	}
	m, err := mwcas.New(r, l.mc)
	if err != nil {
		return nil, err
	}
	x, err := build(r, c, m)
	if err != nil {
		return nil, err
	}
	a := pmem.Steps{W: r.Worker(0)}
	sb := l.superblock()
	for i := lineWords - 1; i >= 0; i-- {
		a.Store(l.sbBase+uint64(i), sb[i])
	}
	a.Flush(l.sbBase)
	a.Fence()
	if a.Err != nil {
		return nil, a.Err
	}
	x.ready = true
	return x, nil
}

// open attaches to the list that create made on r: the PMwCAS's
// superblock and the list's must match c. Recover must run before any
// operation.
func open(r *pmem.Region, c target.Config) (target.Object, error) {
	l, err := newLayout(c)
	if err != nil {
		return nil, err
	}
	if r.Words() < l.total {
		return nil, fmt.Errorf("%w: region of %d words, %d needed", errCorrupt, r.Words(), l.total)
	}
	sb := l.superblock()
	if err := targetkit.CheckSuperblockAt(r, l.sbBase, sb[:], "pmlist", errCorrupt); err != nil {
		return nil, err
	}
	m, err := mwcas.Open(r, l.mc)
	if err != nil {
		return nil, err
	}
	return build(r, c, m)
}

// Do applies add, remove or contains as worker (target.Object).
func (x *list) Do(worker int, name string, args []model.Value, res []model.Value) ([]model.Value, error) {
	if !x.ready {
		return res, errors.New("pmlist: Recover must run before operations")
	}
	if worker < 0 || uint64(worker) >= x.l.workers {
		return res, fmt.Errorf("pmlist: worker %d out of range (0..%d)", worker, x.l.workers-1)
	}
	if len(args) != 1 || args[0].Sym != model.Num || args[0].N >= x.l.keys {
		return res, fmt.Errorf("pmlist: no operation %s %v (add, remove or contains of a key below %d)", name, args, x.l.keys)
	}
	k := args[0].N
	var ok bool
	var err error
	switch name {
	case "add":
		ok, err = x.add(worker, k)
	case "remove":
		ok, err = x.remove(worker, k)
	case "contains":
		ok, err = x.contains(worker, k)
	default:
		return res, fmt.Errorf("pmlist: no operation %s (add, remove or contains)", name)
	}
	if ok {
		return append(res[:0], model.Sym(model.True)), err
	}
	return append(res[:0], model.Sym(model.False)), err
}

// readNext returns the next word of node i through the PMwCAS's read, or,
// if raw, by a load of the region with the PMwCAS's flags cleared (the
// planted contains-raw-read).
func (x *list) readNext(worker int, i uint64, raw bool) (uint64, error) {
	if raw {
		v, err := x.r.Worker(worker).Load(x.m.DataOffset(nextAddr(i)))
		return v & mwcas.ValueMask, err
	}
	w := &x.ws[worker]
	w.addr[0] = nextAddr(i)
	err := x.m.Read(worker, w.addr[:], w.out[:])
	return w.out[0], err
}

// key returns node i's key: written before the node was linked and never
// changed while it is, so a plain load reads it.
func (x *list) key(worker int, i uint64) (uint64, error) {
	return x.r.Worker(worker).Load(x.m.DataOffset(keyAddr(i)))
}

// found is where find stopped: pred and the value read in pred.next
// (pn: curr, unmarked), curr (0 at the end of the list) with its key and
// the value read in curr.next (cn).
type found struct {
	pred, pn, curr, ckey, cn uint64
}

// find is the search of the package documentation.
func (x *list) find(worker int, k uint64, raw bool) (found, error) {
	nodes := x.l.nodes
retry:
	for {
		f := found{}
		var err error
		if f.pn, err = x.readNext(worker, 0, raw); err != nil {
			return f, err
		}
		for steps := uint64(0); ; steps++ {
			f.curr = node(f.pn)
			if f.curr == 0 {
				return f, nil
			}
			if f.curr > nodes || steps > nodes {
				return f, fmt.Errorf("%w: node %d's next holds %#x (a cycle, or beyond the %d nodes)", errCorrupt, f.pred, f.pn, nodes)
			}
			if f.cn, err = x.readNext(worker, f.curr, raw); err != nil {
				return f, err
			}
			if f.cn&markBit != 0 && x.mut != linkAfterDeleted {
				continue retry // curr was removed since pred.next was read
			}
			if f.ckey, err = x.key(worker, f.curr); err != nil {
				return f, err
			}
			if f.ckey >= k {
				return f, nil
			}
			f.pred, f.pn = f.curr, f.cn
		}
	}
}

func (x *list) contains(worker int, k uint64) (bool, error) {
	f, err := x.find(worker, k, x.mut == containsRawRead)
	return err == nil && f.curr != 0 && f.ckey == k && f.cn&markBit == 0, err
}

func (x *list) add(worker int, k uint64) (bool, error) {
	w := &x.ws[worker]
	for {
		f, err := x.find(worker, k, false)
		if err != nil {
			return false, err
		}
		if f.curr != 0 && f.ckey == k {
			return false, nil
		}
		n, err := x.alloc(worker)
		if err != nil {
			return false, err
		}
		// The node is private until the PMwCAS links it: plain stores,
		// durable before the link can be.
		a := pmem.Steps{W: x.r.Worker(worker)}
		nOff, kOff := x.m.DataOffset(nextAddr(n)), x.m.DataOffset(keyAddr(n))
		a.Store(kOff, k)
		a.Store(nOff, x.link(worker, f.curr))
		if x.mut != nodeUnflushed {
			a.Flush(nOff)
			if kOff/lineWords != nOff/lineWords {
				a.Flush(kOff)
			}
			a.Fence()
		}
		if a.Err != nil {
			return false, a.Err
		}
		w.words[0] = mwcas.Word{Addr: nextAddr(f.pred), Old: f.pn, New: x.link(worker, n)}
		ok, _, err := x.m.CAS(worker, w.words[:1])
		if err != nil {
			return false, err
		}
		if ok {
			w.spare = 0
			return true, nil
		}
	}
}

func (x *list) remove(worker int, k uint64) (bool, error) {
	w := &x.ws[worker]
	for {
		f, err := x.find(worker, k, false)
		if err != nil || f.curr == 0 || f.ckey != k {
			return false, err
		}
		if x.mut == deleteTwoCAS {
			w.words[0] = mwcas.Word{Addr: nextAddr(f.pred), Old: f.pn, New: x.link(worker, node(f.cn))}
			if ok, _, err := x.m.CAS(worker, w.words[:1]); err != nil || !ok {
				if err != nil {
					return false, err
				}
				continue
			}
			// Unlinked; now mark, whatever curr.next holds by now.
			for {
				v, err := x.readNext(worker, f.curr, false)
				if err != nil || v&markBit != 0 {
					return err == nil, err
				}
				w.words[0] = mwcas.Word{Addr: nextAddr(f.curr), Old: v, New: v | markBit}
				if ok, _, err := x.m.CAS(worker, w.words[:1]); err != nil || ok {
					return err == nil, err
				}
			}
		}
		w.words[0] = mwcas.Word{Addr: nextAddr(f.pred), Old: f.pn, New: x.link(worker, node(f.cn))}
		w.words[1] = mwcas.Word{Addr: nextAddr(f.curr), Old: f.cn, New: f.cn | markBit}
		ok, _, err := x.m.CAS(worker, w.words[:2])
		if err != nil || ok {
			return err == nil, err
		}
	}
}

// node is the node a next word points to (0: the end of the list).
func node(v uint64) uint64 { return v >> 1 & maxNodes }

// link returns a next word pointing to node i, unmarked, with the worker's
// next tag (or none: the planted next-untagged).
func (x *list) link(worker int, i uint64) uint64 {
	if x.mut == nextUntagged {
		return i << 1
	}
	w := &x.ws[worker]
	w.seq++
	tag := (w.seq*x.l.workers + uint64(worker)) & tagMask
	return tag<<tagShift | i<<1
}

// alloc returns the worker's spare node, or the next of its share.
func (x *list) alloc(worker int) (uint64, error) {
	w := &x.ws[worker]
	if w.spare != 0 {
		return w.spare, nil
	}
	if _, last := x.l.share(uint64(worker)); w.next > last {
		return 0, fmt.Errorf("pmlist: worker %d is out of nodes (%d): more adds than the run's bound on operations", worker, x.l.perWorker)
	}
	w.spare = w.next
	w.next++
	return w.spare, nil
}

// walk visits the list from head by plain loads (what recovery left: no
// PMwCAS is in flight), checking it: no PMwCAS flag, no marked node, no
// node beyond the pool, keys ascending and below the run's keys, no
// cycle. It returns the largest tag in the next words it read.
func (x *list) walk(worker int, visit func(node, key uint64)) (maxTag uint64, err error) {
	a := pmem.Steps{W: x.r.Worker(worker)}
	nodes := x.l.nodes
	prev, prevKey := uint64(0), uint64(0)
	for steps := uint64(0); ; steps++ {
		v := a.Load(x.m.DataOffset(nextAddr(prev)))
		i := node(v)
		maxTag = max(maxTag, v>>tagShift&tagMask)
		switch {
		case a.Err != nil:
			return 0, a.Err
		case v&^mwcas.ValueMask != 0:
			return 0, fmt.Errorf("%w: node %d's next holds %#x, a PMwCAS in progress after recovery", errCorrupt, prev, v)
		case v&markBit != 0:
			return 0, fmt.Errorf("%w: node %d is removed (its next is marked) but still in the list", errCorrupt, prev)
		case i == 0:
			return maxTag, nil
		case i > nodes || steps >= nodes:
			return 0, fmt.Errorf("%w: node %d's next holds %#x (a cycle, or beyond the %d nodes)", errCorrupt, prev, v, nodes)
		}
		k := a.Load(x.m.DataOffset(keyAddr(i)))
		switch {
		case a.Err != nil:
			return 0, a.Err
		case k >= x.l.keys:
			return 0, fmt.Errorf("%w: node %d holds key %d (of %d)", errCorrupt, i, k, x.l.keys)
		case prev != 0 && k <= prevKey:
			return 0, fmt.Errorf("%w: node %d's key %d follows key %d", errCorrupt, i, k, prevKey)
		}
		visit(i, k)
		prev, prevKey = i, k
	}
}

// Recover runs the PMwCAS's recovery, then the list's: a walk that checks
// the list and sets each worker's frontier past its last node in the list.
// It writes nothing durable of its own, so running it again after a crash
// of its own decides the same.
func (x *list) Recover(worker int) (string, error) {
	if worker < 0 || uint64(worker) >= x.l.workers {
		return "", fmt.Errorf("pmlist: worker %d out of range (0..%d)", worker, x.l.workers-1)
	}
	x.ready = false
	note := "PMwCAS recovery skipped"
	if x.mut == pmwcasRecoverySkipped {
		x.m.SkipRecovery()
	} else {
		st, err := x.m.Recover(worker)
		if err != nil {
			return "", err
		}
		note = fmt.Sprintf("PMwCAS: %d words rolled forward, %d back, %d RDCSS undone, %d dirty bits cleared",
			st.RolledForward, st.RolledBack, st.RDCSSUndone, st.DirtyCleared)
	}
	top := make([]uint64, x.l.workers) // the last node of each share in the list
	members := 0
	maxTag, err := x.walk(worker, func(i, _ uint64) {
		w := (i - 1) / x.l.perWorker
		top[w] = max(top[w], i)
		members++
	})
	if err != nil && x.mut != pmwcasRecoverySkipped {
		return "", err
	}
	for w := range x.ws {
		first, _ := x.l.share(uint64(w))
		x.ws[w].spare = 0
		// Tags after recovery are above every tag in the list: a word that
		// a PMwCAS can name from now on is in the list, or gets its first
		// value from a new tag.
		x.ws[w].seq = maxTag/x.l.workers + 1
		if x.mut == listRecoverySkipped {
			x.ws[w].next = first // what a new process starts with
		} else {
			x.ws[w].next = max(first, top[w]+1)
		}
	}
	x.ready = true
	return fmt.Sprintf("%s; %d members", note, members), nil
}

// State returns the members, ascending (target.Object).
func (x *list) State(worker int, res []model.Value) ([]model.Value, error) {
	res = res[:0]
	if worker < 0 || uint64(worker) >= x.l.workers {
		return res, fmt.Errorf("pmlist: worker %d out of range (0..%d)", worker, x.l.workers-1)
	}
	_, err := x.walk(worker, func(_, k uint64) { res = append(res, model.Number(k)) })
	return res, err
}
