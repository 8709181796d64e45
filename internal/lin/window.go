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
//   - cut off by a crash: Strict, bounded by that crash; Recoverable,
//     bounded by the invocation of the next operation of the same process
//     (nextCall; unbounded if there is none); Durable, unbounded.
//
// Every bound is a position, so every operation's constraint is an
// interval of real time: that is what keeps objects, and the partitions of
// one object, independent (locality; Horn and Kroening's
// P-compositionality needs nothing more). The recoverable bound is the
// next invocation whatever becomes of that operation: the invocation is an
// event of the history even when the operation is left out.
func window(h *model.History, op *model.Op, mode history.Mode, nextCall int) (bound int, optional bool) {
	switch {
	case op.Status == model.Returned:
		return op.Return, false
	case op.Status == model.Unknown || op.Crash < 0:
		return unbounded, true
	case mode == history.Strict:
		return h.Crashes[op.Crash].Pos, true
	case mode == history.Recoverable && nextCall >= 0:
		return nextCall, true
	}
	return unbounded, true
}

// nextCalls returns, for each operation of h, the invocation position of
// the next operation of the same process, or -1.
func nextCalls(h *model.History) []int {
	next := make([]int, len(h.Ops))
	last := map[int64]int{}
	for i := range h.Ops {
		next[i] = -1
		if j, ok := last[h.Ops[i].Proc]; ok {
			next[j] = h.Ops[i].Call
		}
		last[h.Ops[i].Proc] = i
	}
	return next
}
