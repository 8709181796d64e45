package lin

import (
	"context"
	"fmt"
	"slices"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// unbounded is the bound of an operation that may take effect at any time
// after its invocation.
const unbounded = -1

// window is this package's statement of when an operation may take
// effect, in positions among the history's events: after its invocation
// (op.Call) and, unless bound is unbounded, before the event at position
// bound. optional says whether it may be left out instead. (The
// completion rules themselves are history.Mode's.)
//
// An operation that returned is bounded by its response. An optional one
// (docs/history-format.md, "Optional operations and their windows"):
//
//   - answered "?" (Unknown), or cut off by the end of the history (CutOff
//     without a crash): unbounded, in every mode;
//   - cut off by a crash: bounded by that crash where the mode says so
//     (Mode.CrashBounds: strict), else unbounded in positions; where the
//     mode orders it (Mode.ProcessOrder: recoverable), it takes effect
//     before the next operation of its process that takes effect
//     (processOrder), which is not a position.
func window(h *model.History, op *model.Op, mode history.Mode) (bound int, optional bool) {
	switch {
	case op.Status == model.Returned:
		return op.Return, false
	case op.Status == model.CutOff && op.Crash >= 0 && mode.CrashBounds():
		return h.Crashes[op.Crash].Pos, true
	}
	return unbounded, true
}

// processOrder lays out recoverable linearizability's process order
// (Berryhill, Golab and Tripunitara; the rule is history.Mode's,
// ProcessOrder) over a part's operations: an operation cut off by a
// crash, if it takes effect, takes effect before the next operation of
// its own process that stays in the history (takes effect), an order
// constraint between the two operations and not a deadline at that
// operation's invocation.
// If that next operation is itself left out, the constraint passes to the
// one after it, and so on; it ends at the first operation of the process
// that returned, since whatever follows that one follows it in real time
// too. (An operation answered "?" is not cut off: it constrains nothing,
// but one that is cut off before it must precede it if it stays.)
//
// An operation answered "?" inside a chain is the one case the chain
// cannot settle alone: if it stays, the cut-off operation must precede it
// and nothing after it. required (nil: none) names such operations that
// are to stay: a chain ends at one of them too (see decide).
//
// ops are indexes in h.Ops in order of invocation; the result gives, for
// each position j in ops of an operation cut off by a crash, the positions
// in ops of the operations it must precede if they stay, until one stays
// (nil for the others). Only the operations in ops count: a sub-history's
// own process order.
func processOrder(h *model.History, ops []int, required map[int]bool) [][]int {
	chains := make([][]int, len(ops))
	open := map[int64][]int{} // per process: its cut-off operations whose chain has not ended
	for j, i := range ops {
		op := &h.Ops[i]
		for _, x := range open[op.Proc] {
			chains[x] = append(chains[x], j)
		}
		if op.Status == model.Returned || required[i] {
			delete(open, op.Proc)
		}
		if op.Status == model.CutOff && op.Crash >= 0 {
			open[op.Proc] = append(open[op.Proc], j)
		}
	}
	return chains
}

// maxOpenUnknowns bounds the operations answered "?" inside process-order
// chains that decide splits on: 2^maxOpenUnknowns searches at most.
const maxOpenUnknowns = 6

// decide searches a part. In recoverable mode, an operation answered "?"
// that lies inside a process-order chain (a cut-off operation, then the
// "?" one, then more of the same process) leaves the chain open: if it
// stays, the cut-off operation must precede it and may follow what comes
// after; if it is left out, the chain goes on. The search first assumes
// the chain goes on through every such operation (more order than the
// definition asks: if that explains the part, so does the definition).
// If not, it tries each case: each such operation left out (removed from
// the part) or made to stay (required, ending the chains through it);
// the part is explained if one case is. More than maxOpenUnknowns of them
// and a violation in the first search is undecided, never a guess.
func decide(ctx context.Context, h *model.History, p *part, bounds []int, opt *Options, sh *shared) outcome {
	out := search(ctx, h, p, bounds, opt, sh)
	if out.verdict != Violation || !opt.Mode.ProcessOrder() || p.required != nil {
		return out
	}
	var open []int
	for _, chain := range processOrder(h, p.ops, nil) {
		// Not the last of a chain: one that returned ends it, and a "?"
		// one last (its process's last operation) leaves nothing open.
		for _, j := range chain[:max(0, len(chain)-1)] {
			if i := p.ops[j]; h.Ops[i].Status == model.Unknown && !slices.Contains(open, i) {
				open = append(open, i)
			}
		}
	}
	if len(open) == 0 {
		return out
	}
	if len(open) > maxOpenUnknowns {
		out.verdict = Undecided
		out.reason = fmt.Sprintf("%s: %d operations answered ? inside recoverable process order (the most it splits on is %d)", p.label, len(open), maxOpenUnknowns)
		return out
	}
	undecided := ""
	for mask := 0; mask < 1<<len(open); mask++ {
		c := *p
		c.required = map[int]bool{}
		removed := map[int]bool{}
		for k, i := range open {
			if mask&(1<<k) != 0 {
				c.required[i] = true
			} else {
				removed[i] = true
			}
		}
		c.ops = slices.DeleteFunc(slices.Clone(p.ops), func(i int) bool { return removed[i] })
		o := search(ctx, h, &c, bounds, opt, sh)
		out.states += o.states
		switch o.verdict {
		case Linearizable:
			o.states = out.states
			return o
		case Undecided:
			undecided = o.reason
		}
	}
	if undecided != "" {
		out.verdict, out.reason = Undecided, undecided
	}
	return out
}
