package analyzer

import (
	"slices"
	"testing"
)

// TestRoots: the rule of implies on findings made by hand, operations
// numbered as the analyzer numbers them (genesis is -1).
func TestRoots(t *testing.T) {
	f := func(k Kind, ops ...int32) finding { return finding{kind: k, ops: ops} }
	for _, tc := range []struct {
		name string
		fs   []finding
		want []int
	}{
		{"a lost write's cascade: fork, then a chain of writes off the path",
			[]finding{f(Fork, 1, 2), f(UnreachableWrite, 3, 2), f(UnreachableWrite, 4, 3), f(UnreachableWrite, 5, 4)},
			[]int{0, 0, 0, 0}},
		{"a torn cas: its cycle, then its forks on the other words",
			[]finding{f(Cycle, 7, 1), f(Fork, 1, 9), f(Fork, 1, 9), f(UnreachableWrite, 10, 9)},
			[]int{0, 0, 0, 0}},
		{"two lost writes stay two",
			[]finding{f(Fork, 1, 2), f(UnreachableWrite, 3, 2), f(Fork, 11, 12), f(UnreachableWrite, 13, 12), f(UnreachableWrite, 14, 3)},
			[]int{0, 0, 2, 2, 0}},
		// An unreachable write's second operation is its version, at
		// fault in an anomaly of its own, if at all: a failure that
		// expected the same version's value shares nothing at fault.
		{"a shared version is no shared fault",
			[]finding{f(UnreachableWrite, 3, 2), f(UnexplainedFailure, 5, 2), f(UnreachableWrite, 6, 2)},
			[]int{0, 1, 2}},
		{"genesis is no one's fault",
			[]finding{f(Cycle, -1, 4), f(Cycle, -1, 5)},
			[]int{0, 1}},
		// The root of an implied anomaly is its implier's root, and the
		// first implier wins.
		{"transitive, to the first root",
			[]finding{f(Dangling, 4), f(Fork, 8, 9), f(Cycle, 4, 9), f(UnreachableWrite, 10, 9)},
			[]int{0, 1, 0, 1}},
	} {
		if got := roots(tc.fs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: roots %v, want %v", tc.name, got, tc.want)
		}
	}
}
