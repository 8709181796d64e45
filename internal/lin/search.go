package lin

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/pmlin/pmlin/model"
)

// shared is what the searches running at the same time share: the memory
// their memos hold, and the states explored, for the memory bound and for
// progress.
type shared struct {
	memory    atomic.Int64
	maxMemory int64
	states    atomic.Int64
}

// part is one unit of search: some operations of one object (all of
// them, or one partition), with their windows.
type part struct {
	obj   int   // its first object
	objs  []int // its objects: several when process order joins them
	m     *model.Model
	ops   []int // indexes in History.Ops, in order of invocation
	label string
	// required: operations answered "?" that this search must make take
	// effect (a case of decide's); nil: none.
	required map[int]bool
}

// outcome is the end of one search.
type outcome struct {
	verdict Verdict
	reason  string // why undecided
	states  int64
	// deepest is the longest sequence of operations that replays correctly
	// (ops as indexes in History.Ops; left[i]: left out rather than taking
	// effect), the state after it, and the operation whose window closed
	// before it could be placed after that sequence.
	deepest []int
	left    []bool
	state   any
	failing int
	// queue: the queue engine's answer, when it answered (decideFast);
	// unique: the unique-value engine's (decideUnit).
	queue  *queueOutcome
	unique *uniqueOutcome
	// engine answered: EngineExact, EngineQueue or EngineUnique.
	engine string
}

// frame is one placed operation: its call entry, the states it may lead
// to, which of them is being tried, and the state before it; or an
// optional operation left out when its window closed.
type frame struct {
	ent     int32
	alts    []any
	idx     int
	prev    any
	prevKey string
	leftOut bool
	forced  bool // an operation without effect, placed at once
	// drop: the cut-off operations, not done yet, that the operation's
	// taking effect leaves out (processOrder).
	drop []int32
}

// search decides one part by the Wing & Gong search with Lowe's memo of
// configurations (Lowe, "Testing for linearizability", Section 3, the
// search that only tries operations that may be linearised first, and
// Section 3.1, the graph search: the "WGL" search Porcupine implements).
// Entries are the part's invocations and the ends of its
// windows in real-time order, in a doubly linked list; a configuration is
// the set of operations done (taken effect or left out) with the model's
// state. The search is depth first; it never explores a configuration
// twice, since whether one can be completed depends on nothing else.
//
// An optional operation is tried like any other, with the results the
// model allows; it is left out only when its window closes before it took
// effect (an unbounded one: never explicitly; what is left when every
// window has closed is left out). Leaving out at the last moment is as
// good as earlier, since a left-out operation constrains nothing, and it
// spares the search the configurations where it was left out early, which
// the undecided configuration already covers. In recoverable mode an
// operation that takes effect leaves out the cut-off operations of its
// process that had to precede it and did not (processOrder): they are
// marked done with it, so that the memo's configurations still say
// everything that matters.
func search(ctx context.Context, h *model.History, p *part, bounds []int, opt *Options, sh *shared) outcome {
	n := len(p.ops)
	// entries: 1..2n at most; 0 is the head.
	type ent struct {
		pos int
		ret bool
		op  int32 // local index
	}
	ents := make([]ent, 0, 2*n)
	optional := make([]bool, n)
	readOnly := make([]bool, n)
	for j, i := range p.ops {
		readOnly[j] = p.m.ReadOnly != nil && h.Ops[i].Status == model.Returned && p.m.ReadOnly(&h.Ops[i])
		ents = append(ents, ent{pos: h.Ops[i].Call, op: int32(j)})
		b := bounds[i]
		if p.required[i] {
			b = h.Events // it must take effect: before the end
		}
		if b != unbounded {
			ents = append(ents, ent{pos: b, ret: true, op: int32(j)})
		}
		optional[j] = h.Ops[i].Status != model.Returned && !p.required[i]
	}
	// Real-time order; at one position a window's end comes before the
	// invocation that bounds it.
	slices.SortStableFunc(ents, func(a, b ent) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		if a.ret != b.ret {
			if a.ret {
				return -1
			}
			return 1
		}
		return 0
	})
	E := len(ents)
	next := make([]int32, E+1)
	prev := make([]int32, E+1)
	entOp := make([]int32, E+1)
	isRet := make([]bool, E+1)
	match := make([]int32, E+1) // call entry -> its window's end, or 0
	callOf := make([]int32, n)
	for k, e := range ents {
		x := int32(k + 1)
		entOp[x], isRet[x] = e.op, e.ret
		if !e.ret {
			callOf[e.op] = x
		}
	}
	for k := range ents {
		x := int32(k + 1)
		if isRet[x] {
			match[callOf[entOp[x]]] = x
		}
	}
	for x := int32(0); x <= int32(E); x++ {
		next[x] = x + 1
		prev[x] = x - 1
	}
	next[E] = -1
	rets := 0
	for x := 1; x <= E; x++ {
		if isRet[x] {
			rets++
		}
	}
	unlink := func(x int32) {
		next[prev[x]] = next[x]
		if next[x] >= 0 {
			prev[next[x]] = prev[x]
		}
	}
	relink := func(x int32) {
		next[prev[x]] = x
		if next[x] >= 0 {
			prev[next[x]] = x
		}
	}
	lift := func(x int32) {
		unlink(x)
		if m := match[x]; m != 0 {
			unlink(m)
			rets--
		}
	}
	unlift := func(x int32) {
		if m := match[x]; m != 0 {
			relink(m)
			rets++
		}
		relink(x)
	}

	// The done set: a bitset with, beside it, the first byte not full
	// (low) and the last byte not empty (high). Operations are in order of
	// invocation and the search places them nearly in that order, so the
	// done set is "everything before low" plus a few bytes: the memo's
	// key holds only those, a few bytes instead of n/8.
	bits := make([]byte, (n+7)/8)
	low, high := 0, -1
	set := func(j int32) {
		b := int(j / 8)
		bits[b] |= 1 << (j % 8)
		high = max(high, b)
		for low < len(bits) && bits[low] == 0xFF {
			low++
		}
	}
	unset := func(j int32) {
		b := int(j / 8)
		bits[b] &^= 1 << (j % 8)
		low = min(low, b)
		for high >= 0 && bits[high] == 0 {
			high--
		}
	}
	// before[j]: the cut-off operations that must take effect before j, if
	// they take effect at all.
	before := make([][]int32, n)
	if opt.Mode.ProcessOrder() {
		for x, chain := range processOrder(h, p.ops, p.required) {
			for _, j := range chain {
				before[j] = append(before[j], int32(x))
			}
		}
	}
	done := func(j int32) bool { return bits[j/8]&(1<<(j%8)) != 0 }
	// drops are the operations that j's taking effect would leave out now.
	drops := func(j int32) []int32 {
		var d []int32
		for _, x := range before[j] {
			if !done(x) {
				d = append(d, x)
			}
		}
		return d
	}
	seen := newMemo()
	var buf []byte
	var out outcome
	out.failing = -1
	var flushedMem, flushedStates int64
	defer func() { sh.memory.Add(-flushedMem) }()
	maxStates := opt.maxStates()
	// fresh says whether the configuration (s, the done set and op j) is
	// new, and records it. The key: the state's key with its length (so
	// that the rest cannot be mistaken for a part of it), low, and the
	// bytes from low to high.
	fresh := func(sk string, j int32, drop []int32) bool {
		set(j)
		for _, x := range drop {
			set(x)
		}
		buf = binary.AppendUvarint(buf[:0], uint64(len(sk)))
		buf = append(buf, sk...)
		buf = binary.AppendUvarint(buf, uint64(low))
		if high >= low {
			buf = append(buf, bits[low:high+1]...)
		}
		for _, x := range drop {
			unset(x)
		}
		unset(j)
		if !seen.add(buf) {
			return false
		}
		out.states++
		return true
	}
	first := func(alts []any, from int, j int32, drop []int32) (int, string) {
		for k := from; k < len(alts); k++ {
			if sk := p.m.Key(alts[k]); fresh(sk, j, drop) {
				return k, sk
			}
		}
		return -1, ""
	}
	// place marks frame f's operation done (with what it leaves out) and
	// takes it out of the list; unplace undoes it, in the reverse order of
	// the list's unlinks.
	place := func(f *frame) {
		set(entOp[f.ent])
		lift(f.ent)
		for _, x := range f.drop {
			set(x)
			lift(callOf[x])
		}
	}
	unplace := func(f *frame) {
		for k := len(f.drop) - 1; k >= 0; k-- {
			unlift(callOf[f.drop[k]])
			unset(f.drop[k])
		}
		unlift(f.ent)
		unset(entOp[f.ent])
	}
	opOf := func(j int32) *model.Op { return &h.Ops[p.ops[j]] }
	var stack []frame
	steps := 0
	// check is run every few thousand steps: cancellation, budget, memory.
	check := func() bool {
		if ctx.Err() != nil {
			out.verdict, out.reason = Undecided, "cancelled"
			return false
		}
		sh.states.Add(out.states - flushedStates)
		flushedStates = out.states
		memBytes := seen.bytes()
		sh.memory.Add(memBytes - flushedMem)
		flushedMem = memBytes
		if out.states > maxStates {
			out.verdict = Undecided
			out.reason = fmt.Sprintf("%s: explored %d states, the budget", p.label, maxStates)
			return false
		}
		if total := sh.memory.Load(); sh.maxMemory > 0 && total > sh.maxMemory {
			out.verdict = Undecided
			out.reason = fmt.Sprintf("%s: the searches' memos would take more than %d bytes, the memory bound", p.label, sh.maxMemory)
			return false
		}
		return true
	}

	for _, init := range p.m.Init() {
		state, stateKey := init, p.m.Key(init)
		cur := next[0]
		for {
			if steps++; steps&1023 == 0 && !check() {
				return out
			}
			if rets == 0 {
				out.verdict = Linearizable
				check()
				return out
			}
			x := cur
			if !isRet[x] {
				j := entOp[x]
				alts := p.m.Step(state, opOf(j))
				drop := drops(j)
				if readOnly[j] && len(drop) == 0 && len(alts) == 1 && p.m.Key(alts[0]) == stateKey {
					// An operation that changes no state it can return its
					// results in (Model.ReadOnly), and that may take effect
					// now, takes effect now, without the alternative of
					// placing it later: any order that places it later stays
					// one when it moves here (nothing that must precede it
					// is left, and it changes nothing for what it jumps
					// over). So if this fails, so does this configuration.
					// (Without effect here is not enough: a write of the
					// value already there has an effect elsewhere. Nor when
					// placing it now would leave out a cut-off operation that
					// a later place lets take effect first.)
					if fresh(stateKey, j, nil) {
						stack = append(stack, frame{ent: x, prev: state, prevKey: stateKey, forced: true})
						place(&stack[len(stack)-1])
						cur = next[0]
						continue
					}
				} else {
					if k, sk := first(alts, 0, j, drop); k >= 0 {
						stack = append(stack, frame{ent: x, alts: alts, idx: k, prev: state, prevKey: stateKey, drop: drop})
						place(&stack[len(stack)-1])
						state, stateKey = alts[k], sk
						cur = next[0]
						continue
					}
					cur = next[x]
					continue
				}
			} else {
				// A window closes before its operation took effect. An
				// optional one is left out now: as good as earlier, since
				// a left-out operation constrains nothing.
				if j := entOp[x]; optional[j] && fresh(stateKey, j, nil) {
					stack = append(stack, frame{ent: callOf[j], prev: state, prevKey: stateKey, leftOut: true})
					place(&stack[len(stack)-1])
					cur = next[0]
					continue
				}
				if len(stack) > len(out.deepest) || out.failing < 0 {
					out.deepest = out.deepest[:0]
					out.left = out.left[:0]
					for _, f := range stack {
						out.deepest = append(out.deepest, p.ops[entOp[f.ent]])
						out.left = append(out.left, f.leftOut)
					}
					out.state = state
					out.failing = p.ops[entOp[x]]
				}
			}
			// Backtrack.
			resumed := false
			for len(stack) > 0 && !resumed {
				f := &stack[len(stack)-1]
				j := entOp[f.ent]
				unplace(f)
				state, stateKey = f.prev, f.prevKey
				if k, sk := first(f.alts, f.idx+1, j, f.drop); k >= 0 {
					f.idx = k
					place(f)
					state, stateKey = f.alts[k], sk
					cur, resumed = next[0], true
					continue
				}
				stack = stack[:len(stack)-1]
				if !f.leftOut && !f.forced {
					// Try the entries after its invocation. After a left-out
					// operation, the window that closed is there again; after
					// a forced one, the configuration before it failed too:
					// back further.
					cur, resumed = next[f.ent], true
				}
			}
			if !resumed {
				break // nothing left to try from this initial state
			}
		}
		// This initial state cannot explain the part; the memo stays valid
		// for the next one, since its keys hold the state.
	}
	if check() {
		out.verdict = Violation
	}
	return out
}
