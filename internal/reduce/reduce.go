// Package reduce computes the happens-before (real-time) order of a history
// as few edges as possible: ReduceHB, Figure 3 of Cepeda et al., "Toward
// Linearizability Testing for Multi-Word Persistent Synchronization
// Primitives" (OPODIS 2019), and the all-pairs baseline it replaces.
//
// Operation A happens before B when A responded before B was invoked. The
// relation is transitive, so the edge A->B is redundant when some C has
// A -> C -> B. ReduceHB keeps exactly the edges that are not implied by two
// others (Theorem 1 of the paper): A -> B iff B was invoked after A's
// response but before the first response of any operation invoked after
// A's response. All operations so targeted are pending at that first
// response, so there are at most C of them per A (C the history's maximum
// concurrency): O(C·n) edges instead of O(n²).
//
// Representation. Operations are numbered 0..n-1 in invocation order. Then
// the operations invoked after A's response are the suffix lo(A)..n-1, and
// ReduceHB's targets of A are the id range [lo(A), hi(A)): the edges of one
// operation are two int32s, whatever the concurrency. lo(A) is the number of
// operations invoked before A's response (n for an operation that never
// responds); hi(A) = min{ lo(C) : C >= lo(A) } (a suffix minimum), because
// C is invoked after A's response iff C >= lo(A), and B is invoked before
// C's response iff B < lo(C).
//
// For a history read in real-time order (a pmlin history file) lo comes for
// free while streaming: it is the count of invocations seen when A's
// response is read. Ranges computes hi from lo in one backward pass, O(n).
// Intervals handles operations given by arbitrary timestamps, sorting them
// first: O(n log n + C·n) as in the paper.
package reduce

import (
	"fmt"
	"math"
	"slices"
)

// Ranges computes hi from lo for operations numbered in invocation order,
// where lo[i] is the number of operations invoked before i's response, or
// len(lo) (or more) if i never responds. It returns hi, so that ReduceHB's
// edges are i -> j for lo[i] <= j < hi[i] (an empty range when lo[i] >= n).
// It panics if lo[i] <= i for some i (a response before its invocation),
// which a well-formed history cannot produce.
func Ranges(lo []int32, hi []int32) []int32 {
	n := int32(len(lo))
	if cap(hi) < len(lo) {
		hi = make([]int32, len(lo))
	}
	hi = hi[:len(lo)]
	// First pass, backwards: hi[i] = min{lo[j] : j >= i}, the suffix
	// minimum (clamped to n).
	m := n
	for i := n - 1; i >= 0; i-- {
		l := lo[i]
		if l <= i {
			panic(fmt.Sprintf("reduce: operation %d responds (lo=%d) before it is invoked", i, l))
		}
		if l < m {
			m = l
		}
		hi[i] = m
	}
	// Second pass, forwards: hi[i] = suffixMin[lo[i]]. Since lo[i] > i,
	// index lo[i] still holds its suffix minimum when i is reached.
	for i := int32(0); i < n; i++ {
		l := lo[i]
		if l >= n {
			hi[i] = n
			continue
		}
		hi[i] = hi[l]
	}
	return hi
}

// Count is the number of edges of the ranges.
func Count(lo, hi []int32) int64 {
	var e int64
	for i := range lo {
		if hi[i] > lo[i] {
			e += int64(hi[i] - lo[i])
		}
	}
	return e
}

// Interval is an operation's invocation and response times; Res is
// math.MaxInt64 for an operation that never responds. Times are distinct
// across all invocations and responses (they are positions in one order).
type Interval struct {
	Inv, Res int64
}

// Never is the response time of an operation that never responds.
const Never = math.MaxInt64

// Intervals applies ReduceHB to operations in any order. It returns order,
// the operations sorted by invocation (order[k] is the index in ops of the
// k-th invoked operation), and lo, hi over those ranks: the edges are
// ops[order[k]] -> ops[order[j]] for lo[k] <= j < hi[k].
func Intervals(ops []Interval) (order []int32, lo, hi []int32) {
	n := len(ops)
	order = make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		return cmpInt64(ops[a].Inv, ops[b].Inv)
	})
	// lo[k] = number of invocations before the response of order[k]: a
	// binary search over the sorted invocation times.
	invs := make([]int64, n)
	for k, i := range order {
		invs[k] = ops[i].Inv
	}
	lo = make([]int32, n)
	for k, i := range order {
		r := ops[i].Res
		if r == Never {
			lo[k] = int32(n)
			continue
		}
		if r <= ops[i].Inv {
			panic(fmt.Sprintf("reduce: operation %d responds at %d, not after its invocation at %d", i, r, ops[i].Inv))
		}
		j, _ := slices.BinarySearch(invs, r)
		lo[k] = int32(j)
	}
	return order, lo, Ranges(lo, nil)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AllPairs is the baseline without reduction: every happens-before pair as
// an explicit edge, in compressed adjacency form (succ[off[i]:off[i+1]] are
// the targets of i). It materialises O(n²) edges on purpose: the benchmark
// of ReduceHB compares against it. lo is as for Ranges.
func AllPairs(lo []int32) (off []int64, succ []int32) {
	n := int32(len(lo))
	off = make([]int64, n+1)
	for i, l := range lo {
		d := int64(0)
		if l < n {
			d = int64(n - l)
		}
		off[i+1] = off[i] + d
	}
	succ = make([]int32, off[n])
	for i, l := range lo {
		p := off[i]
		for j := l; j < n; j++ {
			succ[p] = j
			p++
		}
	}
	return off, succ
}
