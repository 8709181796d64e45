package lin

import (
	"cmp"
	"context"
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
	obj   int
	m     *model.Model
	ops   []int // indexes in History.Ops, in order of invocation
	label string
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
}

// frame is one placed operation: its call entry, the states it may lead
// to, which of them is being tried, and the state before it.
type frame struct {
	ent  int32
	alts []any
	idx  int
	prev any
}

// memoOverhead is the memory a memo entry takes beyond its key's bytes:
// the string header and the map's slot.
const memoOverhead = 48

// search decides one part by Lowe's just-in-time linearisation ("Testing
// for linearizability", Section 3: the Wing-Gong search that only tries
// operations that may be linearised next, with a memo of configurations,
// Section 3.2). Entries are the part's invocations and the ends of its
// windows in real-time order, in a doubly linked list; a configuration is
// the set of operations done (taken effect or left out) with the model's
// state. The search is depth first; it never explores a configuration
// twice, since whether one can be completed depends on nothing else.
//
// An optional operation is tried like any other, with one more
// alternative: left out (the state unchanged). Leaving it out at its
// first chance is as good as later, since a left-out operation constrains
// nothing; the memo merges the orders that reach the same configuration.
// An unbounded one has no window end: once only those are left, the
// history is explained.
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
	for j, i := range p.ops {
		ents = append(ents, ent{pos: h.Ops[i].Call, op: int32(j)})
		if bounds[i] != unbounded {
			ents = append(ents, ent{pos: bounds[i], ret: true, op: int32(j)})
		}
		optional[j] = h.Ops[i].Status != model.Returned
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

	bits := make([]byte, (n+7)/8)
	memo := map[string]struct{}{}
	var buf []byte
	var out outcome
	out.failing = -1
	var memBytes, flushedMem, flushedStates int64
	defer func() { sh.memory.Add(-flushedMem) }()
	maxStates := opt.maxStates()
	// fresh says whether the configuration (s, bits with op j done) is new,
	// and records it.
	fresh := func(s any, j int32) bool {
		bits[j/8] |= 1 << (j % 8)
		buf = append(append(buf[:0], p.m.Key(s)...), bits...)
		bits[j/8] &^= 1 << (j % 8)
		if _, seen := memo[string(buf)]; seen {
			return false
		}
		memo[string(buf)] = struct{}{}
		out.states++
		memBytes += int64(len(buf)) + memoOverhead
		return true
	}
	first := func(alts []any, from int, j int32) int {
		for k := from; k < len(alts); k++ {
			if fresh(alts[k], j) {
				return k
			}
		}
		return -1
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
		state := init
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
				if optional[j] {
					alts = append(alts[:len(alts):len(alts)], state)
				}
				if k := first(alts, 0, j); k >= 0 {
					stack = append(stack, frame{ent: x, alts: alts, idx: k, prev: state})
					bits[j/8] |= 1 << (j % 8)
					state = alts[k]
					lift(x)
					cur = next[0]
					continue
				}
				cur = next[x]
				continue
			}
			// A window closes before its operation could be placed:
			// backtrack.
			if len(stack) > len(out.deepest) || out.failing < 0 {
				out.deepest = out.deepest[:0]
				out.left = out.left[:0]
				for _, f := range stack {
					j := entOp[f.ent]
					out.deepest = append(out.deepest, p.ops[j])
					out.left = append(out.left, optional[j] && f.idx == len(f.alts)-1) // left out is the last alternative
				}
				out.state = state
				out.failing = p.ops[entOp[x]]
			}
			if len(stack) == 0 {
				break
			}
			f := &stack[len(stack)-1]
			j := entOp[f.ent]
			unlift(f.ent)
			bits[j/8] &^= 1 << (j % 8)
			state = f.prev
			if k := first(f.alts, f.idx+1, j); k >= 0 {
				f.idx = k
				bits[j/8] |= 1 << (j % 8)
				state = f.alts[k]
				lift(f.ent)
				cur = next[0]
				continue
			}
			stack = stack[:len(stack)-1]
			cur = next[f.ent]
		}
		// This initial state cannot explain the part; the memo stays valid
		// for the next one, since its keys hold the state.
	}
	if check() {
		out.verdict = Violation
	}
	return out
}
