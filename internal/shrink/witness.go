package shrink

import (
	"context"
	"slices"

	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
)

// The exact checker's witness. exact.Check names the operations of a
// component with no linearization: often the whole history. ExactWitness
// cuts them down to a few that still cannot be ordered, re-checking with
// the exact checker, so that it needs neither assumption of the graph
// method either.

// WitnessOptions bound ExactWitness.
type WitnessOptions struct {
	Mode history.Mode
	// MaxChecks bounds the exact re-checks (default 2000), MaxStates each
	// one's search (default 200000); past them the witness is the smallest
	// found so far.
	MaxChecks, MaxStates int
}

// ExactWitness returns a small subset of the operations failing (indexes
// in h.Ops: exact.Result.Failing) that is not linearizable on its own: no
// operation of it can be removed, together with those that observed a
// value it wrote (a read of a value nobody wrote would fail trivially),
// and leave it not linearizable. The crashes are kept. It returns failing
// itself when that does not fail on its own or the first check is beyond
// the budget, and ctx's error.
func ExactWitness(ctx context.Context, h *history.History, failing []int, opts WitnessOptions) ([]int, error) {
	if opts.MaxChecks <= 0 {
		opts.MaxChecks = 2000
	}
	if opts.MaxStates <= 0 {
		opts.MaxStates = 200000
	}
	s := newShrinker(ctx, h, Options{Mode: opts.Mode})
	checks := 0
	fails := func(keep []int) bool {
		checks++
		st := s.full()
		for i := range st.ops {
			st.ops[i] = slices.Contains(keep, i)
		}
		sub := s.build(st)
		if sub == nil || len(sub.Ops) == 0 {
			return false
		}
		r, err := exact.Check(ctx, sub, exact.Options{Mode: opts.Mode, MaxStates: opts.MaxStates})
		return err == nil && !r.Linearizable
	}
	cur := slices.Clone(failing)
	slices.Sort(cur)
	if !fails(cur) {
		return cur, ctx.Err()
	}
	for changed := true; changed; {
		changed = false
		// Later operations first: fewer operations observed their values.
		for k := len(cur) - 1; k >= 0 && k < len(cur); k-- {
			if checks >= opts.MaxChecks || ctx.Err() != nil {
				return cur, ctx.Err()
			}
			drop := dependents(h, cur, cur[k])
			next := slices.DeleteFunc(slices.Clone(cur), func(i int) bool { return slices.Contains(drop, i) })
			if len(next) > 0 && fails(next) {
				cur, changed = next, true
				k = min(k, len(cur))
			}
		}
	}
	return cur, ctx.Err()
}

// dependents are op and the operations among ops that observed, directly
// or not, a value it wrote (same address, same value).
func dependents(h *history.History, ops []int, op int) []int {
	out := []int{op}
	for k := 0; k < len(out); k++ {
		w := &h.Ops[out[k]]
		if w.Kind == history.Read || w.Status == history.Failed {
			continue
		}
		for _, i := range ops {
			if !slices.Contains(out, i) && observes(&h.Ops[i], w) {
				out = append(out, i)
			}
		}
	}
	return out
}

// observes reports whether op observed a value w wrote: a read returned
// it, a cas that did not fail expected it, or another operation reported
// it, at the address w wrote it to.
func observes(op, w *history.Op) bool {
	var seen []uint64
	switch {
	case op.Kind == history.CAS && op.Status != history.Failed:
		seen = op.Expected
	case op.Values != nil:
		seen = op.Values
	}
	for k, a := range op.Addrs {
		if k >= len(seen) {
			break
		}
		if j := slices.Index(w.Addrs, a); j >= 0 && j < len(w.New) && w.New[j] == seen[k] {
			return true
		}
	}
	return false
}
