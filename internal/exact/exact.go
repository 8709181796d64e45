package exact

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/units"
)

// DefaultMaxStates is the state budget when Options.MaxStates is 0. A state
// costs 8 bytes per 64 operations of its component plus a few bytes of
// memory contents, and 16 to 32 bytes of hash table: for components of up
// to a few hundred operations the default stays under half a gigabyte, and
// takes seconds (about a million states per second).
const DefaultMaxStates = 5_000_000

// ErrTooLarge is returned (wrapped, with the size of the component being
// searched) when the search exceeds its state budget or its memory bound
// (then as a *MemoryError). The history is then neither known to be
// linearizable nor known not to be.
var ErrTooLarge = errors.New("history too large for the exact checker")

// MemoryError is the error of a search that would need more memory than
// Options.MaxMemory: before it compiled a component, or when its memo of
// states would grow past the bound. It wraps ErrTooLarge.
type MemoryError struct {
	// Component describes the component searched.
	Component string
	// Need is the memory the search would take, at least; Limit is
	// Options.MaxMemory.
	Need, Limit int64
	// States are the states of the component explored when it stopped.
	States int
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("%v: the search of %s needs more than %s of memory (after %d states), and the bound is %s",
		ErrTooLarge, e.Component, units.Bytes(e.Need), e.States, units.Bytes(e.Limit))
}

func (e *MemoryError) Unwrap() error { return ErrTooLarge }

// Options tune Check. The zero value checks in Strict mode with the default
// state budget.
type Options struct {
	// Mode is the completion rule for operations cut off by a crash.
	Mode history.Mode
	// MaxStates bounds the number of states explored, over all components.
	// 0 means DefaultMaxStates; a negative value means no bound.
	MaxStates int
	// MaxMemory, if positive, bounds the memory of the search, in bytes:
	// a component's compiled operations and constraints (which grow as
	// the square of its operations) and its memo of the states visited.
	// Each allocation is checked before it is made (*MemoryError).
	MaxMemory int64
	// Progress, if set, is told the states explored so far, over all
	// components, every 1024 states (for progress displays).
	Progress func(states int)
}

// Result is the verdict of Check.
type Result struct {
	Linearizable bool
	// Order is, when linearizable, one linearization: op IDs (indexes into
	// h.Ops) in order; dropped pending ops are omitted; completed pending
	// cas (those taken as successes) are included. Validate accepts it.
	Order []int
	// Failing is, when not linearizable, the op IDs of one component that
	// has no linearization (the first, by first invocation), in invocation
	// order. Pending reads, always dropped, belong to no component.
	Failing []int
	// States is the number of states explored in total.
	States int
	// Components is the number of components the history was split into.
	Components int
}

// Check decides whether h is linearizable in mode opts.Mode. It searches the
// components one by one, in order of their first invocation, and stops at
// the first that has no linearization. It returns an error if h is
// malformed, if ctx is done, or if the search exceeds its state budget
// (errors.Is(err, ErrTooLarge)); the Result then holds the states explored
// so far. Check does not modify h.
func Check(ctx context.Context, h *history.History, opts Options) (Result, error) {
	if err := checkInput(h, opts.Mode); err != nil {
		return Result{}, err
	}
	budget := opts.MaxStates
	switch {
	case budget == 0:
		budget = DefaultMaxStates
	case budget < 0:
		budget = math.MaxInt
	}
	comps := components(h, opts.Mode)
	res := Result{Components: len(comps)}
	orders := make([][]int, 0, len(comps))
	for _, c := range comps {
		s, err := newSearch(ctx, h, opts, c, budget-res.States, res.States)
		if err != nil {
			return res, err
		}
		ok, err := s.run()
		res.States += s.states
		if err != nil {
			return res, err
		}
		if !ok {
			res.Failing = c
			return res, nil
		}
		orders = append(orders, s.order())
	}
	res.Linearizable = true
	res.Order = merge(h, orders)
	return res, nil
}

// The exact search also decides, without being asked, a small history
// that the graph method (package analyzer) left undecided: pmlin check and
// pmlin.Check call Fallback. FallbackOps bounds its operations, and
// FallbackStates the states searched: a fraction of a second.
const (
	FallbackOps    = 200
	FallbackStates = 500_000
)

// Fallback is Check of a history the graph method left undecided, if it
// has at most FallbackOps operations (tried says whether it had), within
// FallbackStates states unless opts.MaxStates says otherwise.
func Fallback(ctx context.Context, h *history.History, opts Options) (res Result, tried bool, err error) {
	if len(h.Ops) > FallbackOps {
		return Result{}, false, nil
	}
	if opts.MaxStates == 0 {
		opts.MaxStates = FallbackStates
	}
	res, err = Check(ctx, h, opts)
	return res, true, err
}

// checkInput rejects what the Reader would have rejected, for histories
// built in memory by hand: the search relies on these facts.
func checkInput(h *history.History, mode history.Mode) error {
	if h == nil {
		return errors.New("exact: nil history")
	}
	if mode > history.Durable {
		return fmt.Errorf("exact: unknown mode %v", mode)
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("exact: operation %d (line %d): %s", i, op.Line, fmt.Sprintf(format, args...))
		}
		switch {
		case op.ID != i:
			return bad("ID is %d", op.ID)
		case len(op.Addrs) == 0:
			return bad("no address")
		case op.Kind != history.Read && op.Kind != history.CAS && op.Kind != history.Swap:
			return bad("unknown kind %v", op.Kind)
		case op.Kind == history.CAS && (len(op.Expected) != len(op.Addrs) || len(op.New) != len(op.Addrs)):
			return bad("cas with %d addresses, %d expected and %d new values", len(op.Addrs), len(op.Expected), len(op.New))
		case op.Kind == history.Swap && (len(op.Expected) != 0 || len(op.New) != len(op.Addrs)):
			return bad("swap with %d addresses, %d expected and %d new values", len(op.Addrs), len(op.Expected), len(op.New))
		case op.Status == history.Returned && len(op.Values) != len(op.Addrs):
			return bad("%v of %d addresses returned %d values", op.Kind, len(op.Addrs), len(op.Values))
		case op.Status == history.Returned && op.Kind == history.CAS,
			(op.Status == history.Succeeded || op.Status == history.Failed) && op.Kind != history.CAS,
			op.Status > history.Failed:
			return bad("%v with status %v", op.Kind, op.Status)
		case op.Status == history.Failed && !slices.Contains(op.Addrs, op.FailAddr):
			return bad("fail at address %d, which is not one of its addresses", op.FailAddr)
		case op.Status == history.Failed && len(op.Values) != 0 && len(op.Values) != len(op.Addrs):
			return bad("failure reporting %d values for %d addresses", len(op.Values), len(op.Addrs))
		case op.Status == history.Succeeded && len(op.Values) != 0:
			return bad("successful cas with values")
		case (op.Status == history.Pending) != (op.Ret < 0):
			return bad("status %v with response position %d", op.Status, op.Ret)
		case op.Ret >= 0 && op.Ret <= op.Inv:
			return bad("response at position %d, not after invocation at %d", op.Ret, op.Inv)
		case i > 0 && op.Inv <= h.Ops[i-1].Inv:
			return bad("not in invocation order")
		case op.Crash < -1 || op.Crash >= len(h.Crashes):
			return bad("crash index %d out of range", op.Crash)
		case op.Crash >= 0 && op.Status != history.Pending:
			return bad("interrupted by crash %d, yet %v", op.Crash, op.Status)
		case op.Crash >= 0 && h.Crashes[op.Crash] < op.Inv:
			return bad("interrupted by crash %d before its invocation", op.Crash)
		}
		for j := 1; j < len(op.Addrs); j++ {
			if slices.Contains(op.Addrs[:j], op.Addrs[j]) {
				return bad("address %d appears twice", op.Addrs[j])
			}
		}
	}
	return nil
}

// droppedAlways reports whether op is a pending read: it has no effect and
// no response, so it is left out of every linearization and constraint.
func droppedAlways(op *history.Op) bool {
	return op.Status == history.Pending && op.Kind == history.Read
}

// crashedWriter reports whether op is a CAS or a swap cut off by a crash.
func crashedWriter(op *history.Op) bool {
	return op.Kind != history.Read && op.Status == history.Pending && op.Crash >= 0
}

// components splits the ops of h (except pending reads) into groups that
// share words, merging a crashed pending CAS with every later op of its
// process in Recoverable mode (see the package doc). Each group lists op
// IDs in invocation order; groups are ordered by their first op.
func components(h *history.History, mode history.Mode) [][]int {
	parent := make([]int, len(h.Ops))
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	union := func(a, b int) {
		a, b = find(a), find(b)
		if a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	owner := map[uint64]int{} // word -> some op that touches it
	for i := range h.Ops {
		op := &h.Ops[i]
		if droppedAlways(op) {
			continue
		}
		for _, a := range op.Addrs {
			if j, ok := owner[a]; ok {
				union(i, j)
			} else {
				owner[a] = i
			}
		}
	}
	if mode.ProcessOrder() {
		// Joining each op to its process's latest crashed CAS joins it
		// to all of them, since each of those was joined to the one
		// before.
		last := map[int32]int{}
		for i := range h.Ops {
			op := &h.Ops[i]
			if droppedAlways(op) {
				continue
			}
			if j, ok := last[op.Proc]; ok {
				union(i, j)
			}
			if crashedWriter(op) {
				last[op.Proc] = i
			}
		}
	}
	index := map[int]int{} // root -> group
	var groups [][]int
	for i := range h.Ops {
		if droppedAlways(&h.Ops[i]) {
			continue
		}
		r := find(i)
		g, ok := index[r]
		if !ok {
			g = len(groups)
			index[r] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// merge interleaves the components' linearizations into one. Each op gets
// the point max(invocations of it and of the ops before it in its
// component): within its interval, because an op linearized before it was
// invoked before it must respond (otherwise it would have had to come
// after), and non-decreasing along the component. Sorting by point then
// respects every interval constraint across components; points of different
// components never tie, since a point is the invocation of one of the
// component's own ops.
func merge(h *history.History, orders [][]int) []int {
	type placed struct{ point, comp, seq, id int }
	var all []placed
	for c, order := range orders {
		point := -1
		for seq, id := range order {
			point = max(point, h.Ops[id].Inv)
			all = append(all, placed{point, c, seq, id})
		}
	}
	slices.SortFunc(all, func(a, b placed) int {
		return cmp.Or(cmp.Compare(a.point, b.point), cmp.Compare(a.comp, b.comp), cmp.Compare(a.seq, b.seq))
	})
	out := make([]int, len(all))
	for i, p := range all {
		out[i] = p.id
	}
	return out
}
