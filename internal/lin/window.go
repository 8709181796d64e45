package lin

import (
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/model"
)

// unbounded is the bound of an operation that may take effect at any time
// after its invocation.
const unbounded = -1

// window is the one statement of when an operation may take effect, in
// positions among the history's events: after its invocation (op.Call)
// and, unless bound is unbounded, before the event at position bound.
// optional says whether it may be left out instead.
//
// An operation that returned is bounded by its response. An optional one
// (docs/history-format.md, "Optional operations and their windows"):
//
//   - answered "?" (Unknown), or cut off by the end of the history (CutOff
//     without a crash): unbounded, in every mode;
//   - cut off by a crash: Strict, bounded by that crash; Durable,
//     unbounded; Recoverable, unbounded in positions but ordered: it takes
//     effect before the next operation of its process that takes effect
//     (processOrder), which is not a position.
func window(h *model.History, op *model.Op, mode history.Mode) (bound int, optional bool) {
	switch {
	case op.Status == model.Returned:
		return op.Return, false
	case op.Status == model.CutOff && op.Crash >= 0 && mode == history.Strict:
		return h.Crashes[op.Crash].Pos, true
	}
	return unbounded, true
}

// processOrder is the one statement of recoverable linearizability's
// process order (Berryhill, Golab and Tripunitara; version 1's rule for
// words, history.Recoverable): an operation cut off by a crash, if it
// takes effect, takes effect before the next operation of its own process
// that stays in the history (takes effect), an order constraint between
// the two operations and not a deadline at that operation's invocation.
// If that next operation is itself left out, the constraint passes to the
// one after it, and so on; it ends at the first operation of the process
// that returned, since whatever follows that one follows it in real time
// too. (An operation answered "?" is not cut off: it constrains nothing,
// but one that is cut off before it must precede it if it stays.)
//
// ops are indexes in h.Ops in order of invocation; the result gives, for
// each position j in ops of an operation cut off by a crash, the positions
// in ops of the operations it must precede (nil for the others). Only the
// operations in ops count: a sub-history's own process order.
func processOrder(h *model.History, ops []int) [][]int {
	chains := make([][]int, len(ops))
	open := map[int64][]int{} // per process: its cut-off operations whose chain has not ended
	for j, i := range ops {
		op := &h.Ops[i]
		for _, x := range open[op.Proc] {
			chains[x] = append(chains[x], j)
		}
		if op.Status == model.Returned {
			delete(open, op.Proc)
		}
		if op.Status == model.CutOff && op.Crash >= 0 {
			open[op.Proc] = append(open[op.Proc], j)
		}
	}
	return chains
}
