package analyzer

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/pmlin/pmlin/internal/history"
)

// Operation flags.
const (
	fRead      uint8 = 1 << iota // a read (else a cas or a swap)
	fReturned                    // it has a response
	fOK                          // a cas that returned ok, or a swap that returned
	fCrashed                     // cut off by a crash (else, if not returned, by the end)
	fCompleted                   // a pending cas or swap taken to have taken effect
	fNoAux                       // a failed cas that breaks Assumption 2: no auxiliary constraint
	fSwap                        // a swap (Section 5.1: a successful cas whose expected values are learnt at its response)
	fValued                      // a failed cas that reports the values it read (Section 5.2: also a read)
)

// Versions (ver[x]) are writer access indexes, or one of these.
const (
	verGenesis    int32 = -1 // the initial value
	verDangling   int32 = -2 // a value nobody wrote at that word
	verUnresolved int32 = -3 // not looked up (pending read, failed cas's other words)
)

// none marks an absent op or access.
const none int32 = -1

// blamed marks, in word[x], the access a failed cas blamed.
const blamed uint32 = 1 << 31

// crashRec is an operation cut off by a crash.
type crashRec struct {
	op   int32
	at   int32 // operations invoked before the crash: the op's strict "response"
	next int32 // its process's next invoked operation, or none
	// nextRec is, when next was itself cut off by a later crash, the index
	// of next's record in hist.crashed, else none: the chain that
	// recoveryTarget walks past operations that leave the history.
	nextRec int32
	line    uint32
}

// hist is a history loaded into flat arrays. Operations are numbered in
// invocation order (dense ids); accesses are the (operation, word) pairs,
// operation i owning accesses acc[i]..acc[i+1]-1, in the invocation's order.
//
// Values are not kept per access: every value read or expected is resolved
// to its version (the writer access, genesis, or dangling) while streaming,
// and a version's value is its writer's new value. That saves 8 bytes per
// read word and a second pass over the accesses.
//
// What only writes need (the new value, the owning operation, the
// successor on the word's path) is kept per slot: the accesses of cas and
// swaps, numbered densely (slotIndex). A read access is 8 bytes (word and
// version), a cas or swap access 24: splitting them saves 16 bytes per
// read word, the most common access.
//
// ver[x] is what access x observed: the value a read returned, a cas
// expected, a swap replaced (learnt at its response; for a swap cut off by
// a crash, chosen per evaluation, see eval.place), or a failed cas
// reported having read. A failed cas that reports no values observed
// nothing: ver[x] at its blamed word is its expected value there; one that
// reports values keeps that expected value in valued instead. A version is
// always the access of a cas or a swap (it has a slot).
type hist struct {
	name string
	// names names events in sentences (Options.Names).
	names Namer
	n     int32

	// per operation
	line []uint32 // line of the invocation
	// retGap is the response's line minus the invocation's (retLineOf),
	// 0 if none, gapFar for the few in far (by operation).
	retGap []uint16
	far    []farRet
	// proc16 is the process index, or proc32 once there are more than
	// 65536 processes (procOf).
	proc16 []uint16
	proc32 []int32
	flags  []uint8
	acc    []uint32 // len n+1
	lo     []int32  // ops invoked before its response (see package reduce); n if none

	// per access
	word []uint32 // word id, | blamed
	ver  []int32  // version read or expected

	// per slot: an access of a cas or a swap, numbered densely
	// (slots.of maps an access to its slot, if it has one)
	slots rankIndex
	nw    []uint64 // new value
	owner []int32  // owning operation
	// aux is scratch per slot: the first observation of a version while
	// checking Assumption 2, then the path successor of a version (eval).
	aux []int32

	// words
	wordID  map[uint64]int32 // addresses beyond the direct table
	direct  []int32          // address -> word id + 1, for small addresses
	addr    []uint64         // word id -> address
	initVal []uint64         // word id -> initial value

	procIDs []int32 // process index -> process id
	crashed []crashRec
	crashes int64
	// per crash line, in order: its line and the operations invoked
	// before it (for explanations: what falls before and after a crash)
	crashLine []uint32
	crashAt   []int32

	pendingW []int32 // cas and swaps without a response
	// observedPending are the writers in pendingW whose value an
	// operation that returned observed, in the order of those operations
	// and their accesses (with repeats): the completions every evaluation
	// starts from (eval.complete). The versions of returned operations
	// never change once loaded, so assumption2 lists them once.
	observedPending []int32
	pendingSwap     []int32 // swaps without a response: what they replaced is unknown
	// failedCAS are the cas that returned fail without reporting values:
	// the failures a write must explain (one that reports values is
	// judged by its reads, see eval.failureSource).
	failedCAS []int32
	// valued are the failures that report values, by blamed access; contra
	// are those among them (operations, in order) that report their own
	// expected value at the blamed word: they contradict themselves (an
	// unexplained failure that no completion or order changes).
	valued []valuedFail
	contra []int32

	// dangling values, by access, for explanations
	danglingVal map[int32]uint64
	dangling    []int32
}

// farRet is the response line of an operation that responded more than
// 65534 lines after its invocation.
type farRet struct {
	op   int32
	line uint32
}

// gapFar marks, in retGap, a response line kept in far.
const gapFar = 1<<16 - 1

// retLineOf is the line of op i's response, 0 if none.
func (h *hist) retLineOf(i int32) uint32 {
	switch g := h.retGap[i]; g {
	case 0:
		return 0
	case gapFar:
		k, _ := slices.BinarySearchFunc(h.far, i, func(f farRet, i int32) int { return cmp.Compare(f.op, i) })
		return h.far[k].line
	default:
		return h.line[i] + uint32(g)
	}
}

// procOf is op i's process index.
func (h *hist) procOf(i int32) int32 {
	if h.proc32 != nil {
		return h.proc32[i]
	}
	return int32(h.proc16[i])
}

// addProc appends the process index of a new operation, widening the
// column the first time an index does not fit in 16 bits.
func (h *hist) addProc(p int32) {
	if h.proc32 == nil && p > math.MaxUint16 {
		h.proc32 = make([]int32, len(h.proc16), max(cap(h.proc16), len(h.proc16)+1))
		for i, q := range h.proc16 {
			h.proc32[i] = int32(q)
		}
		h.proc16 = nil
	}
	if h.proc32 != nil {
		h.proc32 = append(h.proc32, p)
	} else {
		h.proc16 = append(h.proc16, uint16(p))
	}
}

// newVal is the new value of access x of a cas or a swap.
func (h *hist) newVal(x int32) uint64 { return h.nw[h.slots.of(x)] }

// opOf is the operation that owns access x: from its slot for a cas or
// a swap (every version), by binary search for a read.
func (h *hist) opOf(x int32) int32 {
	if h.slots.has(x) {
		return h.owner[h.slots.of(x)]
	}
	i, found := slices.BinarySearch(h.acc[:h.n], uint32(x))
	if !found {
		i--
	}
	return int32(i)
}

// writerOp is the operation that owns version y (a cas's or a swap's
// access: it has a slot): opOf without its test for a read, short enough
// to inline in the evaluation's loops, which ask it of every version.
func (h *hist) writerOp(y int32) int32 { return h.owner[h.slots.of(y)] }

func (h *hist) isRead(i int32) bool { return h.flags[i]&fRead != 0 }
func (h *hist) failed(i int32) bool {
	return h.flags[i]&(fRead|fReturned|fOK) == fReturned
}

// reader reports whether op i observed each of its words and wrote none: a
// returned read, or a failed cas that reports values. It has an auxiliary
// edge to the write that replaced each value it observed (Section 5.1).
func (h *hist) reader(i int32) bool {
	f := h.flags[i]
	return f&fReturned != 0 && f&(fRead|fValued) != 0
}

// valuedFail is a failed cas that reported values: its blamed access and
// the value it expected there (ver holds what it read). The failure is
// judged by its reads alone (eval.failureSource); this says whether it
// contradicts itself, and explains it.
type valuedFail struct {
	acc int32
	val uint64
}

// expectedValue is the value failed cas i expected at its blamed access x.
func (h *hist) expectedValue(i, x int32) uint64 {
	if h.flags[i]&fValued == 0 {
		return h.valueOf(x)
	}
	k, ok := slices.BinarySearchFunc(h.valued, x, func(v valuedFail, x int32) int { return cmp.Compare(v.acc, x) })
	if !ok {
		panic("analyzer: no valued failure at this access")
	}
	return h.valued[k].val
}

// wordOf is the word id of access x.
func (h *hist) wordOf(x int32) int32 { return int32(h.word[x] &^ blamed) }

// valueOf is the value access x read or expected, when it was resolved.
func (h *hist) valueOf(x int32) uint64 {
	switch y := h.ver[x]; {
	case y >= 0:
		return h.newVal(y)
	case y == verGenesis:
		return h.initVal[h.wordOf(x)]
	}
	return h.danglingVal[x]
}

// blamedAccess is the access failed cas i blamed.
func (h *hist) blamedAccess(i int32) int32 {
	for x := int32(h.acc[i]); ; x++ {
		if h.word[x]&blamed != 0 {
			return x
		}
	}
}

// maxLine is the largest line number the compact arrays hold.
const maxLine = math.MaxUint32

// maxDirect bounds the direct address table (4 bytes per entry): dense
// address spaces, the common case, skip the map.
const maxDirect = 1 << 22

// wordOfAddr interns an address.
func (h *hist) wordOfAddr(a uint64, r *history.Reader) int32 {
	if w, ok := h.known(a); ok {
		return w
	}
	if a >= uint64(len(h.direct)) && a < maxDirect {
		size := max(1024, len(h.direct))
		for uint64(size) <= a {
			size *= 2
		}
		d := make([]int32, size)
		copy(d, h.direct)
		h.direct = d
	} else if w, ok := h.wordID[a]; ok {
		return w
	}
	w := int32(len(h.addr))
	h.addr = append(h.addr, a)
	h.initVal = append(h.initVal, r.InitValue(a))
	if a < maxDirect {
		h.direct[a] = w + 1
	} else {
		h.wordID[a] = w
	}
	return w
}

// loader holds what streaming resolution needs until the end of the input.
type loader struct {
	h     *hist
	split splitter // how finish spreads over goroutines
	// recent holds, per word, the last writes (in invocation
	// order): most reads return one of the latest values, and this small
	// array stays in cache where the table (one miss per probe) does not.
	recent []ring
	// tentative: accesses resolved to a cas still pending at the time,
	// which may yet fail (then the value was not written by it).
	tentative blockList[int32]
	// deferred: accesses whose value had no writer yet (a read of the
	// future, or a value written only by a cas that failed so far).
	deferred    blockList[int32]
	deferredVal blockList[uint64]
	// initWrites: cas and swap accesses writing their word's initial value.
	initWrites blockList[int32]
	// valuedQ are the lookups of what the failures that report values
	// read. They bypass the ring: a failure may come long after the write
	// it saw.
	valuedQ blockList[keyed]
	// lastCrashed is, per process index, the record in hist.crashed of its
	// last operation cut off by a crash, or none.
	lastCrashed []int32
	counts      opCounts
	guard       *memoryGuard // nil: no bound
	// reserved are the capacities reserved for the columns per
	// operation, access and slot (hist.reserve): past them, they grow by
	// append (usage).
	reserved [3]int64
}

// ring is a word's recent writes kept in cache, the latest first.
type ring [4]ringEntry

// ringEntry is one recent write: its value, its access + 1 (0: empty) and
// its operation (so that a lookup needs no slot query).
type ringEntry struct {
	val uint64
	acc int32
	op  int32
}

// recentWriter looks (w, v) up among the word's recent writes: the access
// and its operation, or none.
func (l *loader) recentWriter(w int32, v uint64) (int32, int32) {
	r := &l.recent[w]
	// The entries compared without a branch each (which one matches is
	// anyone's guess: a mispredicted branch per lookup cost more than the
	// compares), the first match taken. Empty entries are at the end (the
	// ring fills from the front): an empty one that matches (v is 0)
	// means none did before it.
	m := eq(r[0].val, v) | eq(r[1].val, v)<<1 | eq(r[2].val, v)<<2 | eq(r[3].val, v)<<3
	if m == 0 {
		return none, none
	}
	e := &r[bits.TrailingZeros8(m)&3]
	if e.acc == 0 {
		return none, none
	}
	return e.acc - 1, e.op
}

// eq is 1 if a == b, else 0 (compiled without a branch).
func eq(a, b uint64) uint8 {
	var x uint8
	if a == b {
		x = 1
	}
	return x
}

// remember records access x of operation i, writing v, as the latest
// write of word w.
func (l *loader) remember(w, x, i int32, v uint64) {
	r := &l.recent[w]
	// Moved one by one, unrolled: copy calls memmove, and a loop cost
	// more than the moves.
	r[3], r[2], r[1] = r[2], r[1], r[0]
	r[0] = ringEntry{val: v, acc: x + 1, op: i}
}

// resolve finds the version of value v at word w for access x, if a
// recent write of w has it; otherwise the lookup is deferred to finish.
func (l *loader) resolve(x int32, w int32, v uint64) int32 {
	h := l.h
	if y, i := l.recentWriter(w, v); y != none {
		switch f := h.flags[i]; {
		case f&fReturned == 0:
			l.tentative.add(x)
			return y
		case f&fOK != 0:
			return y
		}
		// Its writer failed: some other cas may write it (which breaks
		// Assumption 1 unless this one failed, as it did).
	} else if v == h.initVal[w] {
		// No writer can have the initial value without breaking
		// Assumption 1, which finish checks.
		return verGenesis
	}
	l.deferred.add(x)
	l.deferredVal.add(v)
	return verUnresolved
}

// load streams a history into h, resolving reads-from on the way: the only
// pass over the input.
func load(ctx context.Context, r *history.Reader, sizeHint int64, split splitter, guard *memoryGuard, old *hist, names Namer) (*hist, error) {
	defer r.Parallel(split.workers)()
	h := &hist{name: r.Name(), names: names, wordID: make(map[uint64]int32), danglingVal: make(map[int32]uint64)}
	h.reserve(sizeHint, old)
	l := &loader{h: h, split: split, guard: guard, reserved: [3]int64{int64(cap(h.line)), int64(cap(h.word)), int64(cap(h.nw))}}
	pre := newPrefaulter(split, sizeHint)
	defer pre.stop()
	line := int64(0)
	// Every input is read as Steps: a Recording's (pmlin fuzz's runs)
	// without an Event filled for each, any other's the Event decoded, in
	// place (see history.Step).
	for count := 0; ; count++ {
		if count&0xfff == 0 && count > 0 {
			// The counts every 4096 events (a few dozen loads), the
			// resident memory every 65536 (a system call).
			spike := int64(-1)
			if count&0xffff == 0 {
				spike = l.spike()
			}
			if err := guard.check(h.name, l.usage(), line, r.Offset(), spike); err != nil {
				return nil, err
			}
		}
		if count&0xffff == 0 {
			pre.tick(h)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		st, err := r.NextStep()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if count == 0 {
			// The format is known from the first line.
			if err := guard.refuse(h.name, r.Format()); err != nil {
				return nil, err
			}
		}
		line = st.Line
		if line > maxLine {
			return nil, h.limit(line, "histories longer than 4294967295 lines are not supported")
		}
		switch st.Kind {
		case history.Invoke:
			if err := l.invoke(st, r); err != nil {
				return nil, err
			}
		case history.Return:
			l.respond(st)
		case history.Crash:
			l.crash(st.Line, st.Interrupted)
		}
	}
	h.acc = append(h.acc, uint32(len(h.word)))
	slices.SortFunc(h.far, func(a, b farRet) int { return cmp.Compare(a.op, b.op) })
	h.listOps(l.counts)
	if err := guard.check(h.name, l.usage(), line, r.Offset(), l.usage().slots*memJoinSlot); err != nil {
		return nil, err
	}
	if err := l.finish(); err != nil {
		return nil, err
	}
	return h, nil
}

// listOps lists the pending cas and swaps and the failures that report no
// values, each list allocated at the size counted while loading (grown by
// append, a list of millions leaves copies that raise the peak memory;
// the counts are capacities only, the lists are what the flags say). On
// the way, the operations without a response get their lo (package
// reduce): none invoked after them, n. One pass: this one is serial.
func (h *hist) listOps(c opCounts) {
	h.pendingW = make([]int32, 0, max(0, c.writers-c.writersReturned))
	h.pendingSwap = make([]int32, 0, max(0, c.swaps-c.swapsReturned))
	h.failedCAS = make([]int32, 0, c.failedPlain)
	for i, f := range h.flags {
		switch {
		case f&fReturned == 0:
			h.lo[i] = h.n
			if f&fRead == 0 {
				h.pendingW = append(h.pendingW, int32(i))
				if f&fSwap != 0 {
					h.pendingSwap = append(h.pendingSwap, int32(i))
				}
			}
		case f&(fRead|fOK|fValued) == 0:
			h.failedCAS = append(h.failedCAS, int32(i))
		}
	}
}

// opCounts are counted while loading, for listOps.
type opCounts struct {
	writers, writersReturned int // cas and swaps invoked, and returned
	swaps, swapsReturned     int
	failedPlain              int // cas that failed reporting no values
}

// reserve sizes the arrays for an input of sizeHint bytes (0: unknown):
// about 60 bytes of text per operation (two lines), 25 per access and 45
// per slot; preallocating avoids the copies of append's growth on large
// files, and capacity never written costs address space, not memory. The
// arrays of old (nil: none), a history nobody uses any more, are filled
// again where they are large enough (Options.Recycle).
func (h *hist) reserve(sizeHint int64, old *hist) {
	if sizeHint <= 0 {
		return
	}
	if old == nil {
		old = &hist{}
	}
	ops := min(sizeHint/60, 1<<28)
	h.line = room(old.line, ops)
	h.retGap = room(old.retGap, ops)
	h.proc16 = room(old.proc16, ops)
	h.flags = room(old.flags, ops)
	h.acc = room(old.acc, ops+1)
	h.lo = room(old.lo, ops)
	accs := min(sizeHint/25, 1<<30)
	h.word = room(old.word, accs)
	h.ver = room(old.ver, accs)
	h.slots.bits = room(old.slots.bits, accs/64+1)
	h.slots.base = room(old.slots.base, accs/64+1)
	h.slots.dense = room(old.slots.dense, min(accs, denseMax))
	slots := min(sizeHint/45, 1<<30)
	h.nw = room(old.nw, slots)
	h.owner = room(old.owner, slots)
}

// room is s emptied if it has room for n items, else a new empty slice
// with that room.
func room[T any](s []T, n int64) []T {
	if int64(cap(s)) >= n {
		return s[:0]
	}
	return make([]T, 0, n)
}

// limit is the error for an input beyond the compact arrays' range.
func (h *hist) limit(line int64, msg string) error {
	return &history.Error{File: h.name, Line: line, Err: history.ErrLimit, Msg: msg}
}

// invoke adds the operation st invokes, resolving a cas's expected values
// (a swap's are known at its response).
func (l *loader) invoke(st *history.Step, r *history.Reader) error {
	h := l.h
	line, p, op, k := st.Line, st.ProcIndex, st.Op, st.K
	addrs, exp, nw, stride := st.Addrs, st.Expected, st.New, st.Stride
	if h.n == math.MaxInt32-1 {
		return h.limit(line, "more than 2147483646 operations are not supported")
	}
	if len(h.word)+k >= math.MaxInt32 {
		return h.limit(line, "more than 2147483646 words accessed in all are not supported")
	}
	for int(p) >= len(h.procIDs) {
		h.procIDs = append(h.procIDs, 0)
		l.lastCrashed = append(l.lastCrashed, none)
	}
	id := h.n // == st.OpID: both count invocations
	h.n++
	h.procIDs[p] = st.Proc
	if c := l.lastCrashed[p]; c != none && h.crashed[c].next == none {
		h.crashed[c].next = id
	}
	read := op == history.Read
	f := uint8(0)
	if read {
		f = fRead
	} else {
		l.counts.writers++
		if op == history.Swap {
			f = fSwap
			l.counts.swaps++
		}
	}
	h.line = append(h.line, uint32(line))
	h.retGap = append(h.retGap, 0)
	h.addProc(p)
	h.flags = append(h.flags, f)
	first := int32(len(h.word))
	h.acc = append(h.acc, uint32(first))
	h.lo = append(h.lo, math.MaxInt32)
	h.slots.push(first, k, !read)
	if read {
		for j := range k {
			a := addrs[j*stride]
			wd, ok := h.known(a)
			if !ok {
				wd = l.wordOf(a, r)
			}
			h.word = append(h.word, uint32(wd))
			h.ver = append(h.ver, verUnresolved) // what it saw comes with its response
		}
		return nil
	}
	swap := f&fSwap != 0
	for j := range k {
		a := addrs[j*stride]
		wd, ok := h.known(a)
		if !ok {
			wd = l.wordOf(a, r)
		}
		x, v := first+int32(j), nw[j*stride]
		h.word = append(h.word, uint32(wd))
		if swap { // what it replaced comes with its response
			h.ver = append(h.ver, verUnresolved)
		} else {
			h.ver = append(h.ver, l.resolve(x, wd, exp[j*stride]))
		}
		h.nw = append(h.nw, v)
		h.owner = append(h.owner, id)
		// Remembered after its expected value is resolved, so that a cas
		// never resolves to itself while streaming (a swap that returns
		// its own new value does: a self-loop, as it should); its other
		// words are other words (an address appears once in an
		// operation), resolved in their own rings.
		l.remember(wd, x, id, v)
		if v == h.initVal[wd] {
			l.initWrites.add(x)
		}
	}
	return nil
}

// known is the word id of address a if the direct table has it (then its
// ring exists too): most lookups, inlined where invoke interns (two calls
// per address were 3 % of the in-order loading) and first in wordOfAddr.
func (h *hist) known(a uint64) (int32, bool) {
	if a < uint64(len(h.direct)) {
		w := h.direct[a]
		return w - 1, w != 0
	}
	return 0, false
}

// wordOf interns address a (hist.wordOfAddr), making room for its ring.
func (l *loader) wordOf(a uint64, r *history.Reader) int32 {
	w := l.h.wordOfAddr(a, r)
	if int(w) >= len(l.recent) {
		// Grown by a quarter, not doubled: with millions of words the
		// ring is the largest array of the load, and at a growth the
		// old one and its copy are both resident.
		more := max(64, int(w)+1-len(l.recent), len(l.recent)/4)
		l.guard.makeRoom(int64(len(l.recent)+more) * int64(unsafe.Sizeof(ring{})))
		l.recent = append(l.recent, make([]ring, more)...)
	}
	return w
}

// respond records the response ev, resolving a read's values.
func (l *loader) respond(ev *history.Step) {
	h := l.h
	id := int32(ev.OpID)
	h.lo[id] = h.n
	if gap := uint32(ev.Line) - h.line[id]; gap < gapFar {
		h.retGap[id] = uint16(gap)
	} else {
		h.retGap[id] = gapFar
		h.far = append(h.far, farRet{op: id, line: uint32(ev.Line)})
	}
	h.flags[id] |= fReturned
	a := int32(h.acc[id])
	switch {
	case ev.Op != history.CAS: // a read, or a swap: the values it replaced
		if ev.Op == history.Swap {
			h.flags[id] |= fOK
			l.counts.writersReturned++
			l.counts.swapsReturned++
		}
		for j, v := range ev.Values {
			x := a + int32(j)
			h.ver[x] = l.resolve(x, int32(h.word[x]), v)
		}
	case ev.OK:
		h.flags[id] |= fOK
		l.counts.writersReturned++
	case len(ev.Values) > 0:
		l.respondValued(id, a, ev)
		l.counts.writersReturned++
	default:
		l.counts.writersReturned++
		l.counts.failedPlain++
		// Only the blamed word of a failed cas says anything (gray box:
		// it names one word that differed).
		for x := a; x < a+int32(ev.K); x++ { // acc[id+1] may not exist yet
			if h.addr[h.word[x]] == ev.FailAddr {
				h.word[x] |= blamed
			} else {
				h.ver[x] = verUnresolved
			}
		}
	}
}

// respondValued records failed cas id, whose accesses start at a, that
// reported the values it read: a read at every word (Section 5.2) that
// also failed at the blamed word, expecting ev.Expected's there. Every
// value is looked up by the join (finish), which skips the lookups of its
// expected values made at its invocation.
func (l *loader) respondValued(id, a int32, ev *history.Step) {
	h := l.h
	h.flags[id] |= fValued
	for j, v := range ev.Values {
		x := a + int32(j)
		w := h.word[x]
		h.ver[x] = verUnresolved
		l.valuedQ.add(keyed{val: v, word: w, acc: x})
		if h.addr[w] == ev.FailAddr {
			h.word[x] |= blamed
			h.valued = append(h.valued, valuedFail{acc: x, val: ev.Expected[j*ev.Stride]})
		}
	}
}

// crash records the crash at line and the operations it cut off
// (interrupted), chaining each to its process's previous cut-off
// operation when it was that one's next (the chain recoveryTarget walks).
func (l *loader) crash(line int64, interrupted []int64) {
	h := l.h
	h.crashes++
	h.crashLine = append(h.crashLine, uint32(line))
	h.crashAt = append(h.crashAt, h.n)
	for _, id64 := range interrupted {
		id := int32(id64)
		p := h.procOf(id)
		h.flags[id] |= fCrashed
		rec := int32(len(h.crashed))
		if c := l.lastCrashed[p]; c != none && h.crashed[c].next == id {
			h.crashed[c].nextRec = rec
		}
		l.lastCrashed[p] = rec
		h.crashed = append(h.crashed, crashRec{op: id, at: h.n, next: none, nextRec: none, line: uint32(line)})
	}
}

// kind names op i's kind: "read", "cas" or "swap".
func (h *hist) kind(i int32) string {
	switch f := h.flags[i]; {
	case f&fRead != 0:
		return "read"
	case f&fSwap != 0:
		return "swap"
	}
	return "cas"
}

// opName describes an operation for explanations.
func (h *hist) opName(i int32) string {
	return fmt.Sprintf("%s (process %d %s)", h.names.Op(int64(h.line[i])), h.procIDs[h.procOf(i)], h.kind(i))
}
