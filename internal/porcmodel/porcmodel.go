// Package porcmodel expresses pmlin histories for Porcupine
// (github.com/anishathalye/porcupine), the Wing–Gong/Lowe style checker
// pmlin is compared against: a word-array model of multi-word reads and
// CAS, partitioned by connected components of addresses (the partitions
// P-compositionality allows; swaps and failures that report values
// included), and the conversion of a history into
// Porcupine operations. It serves the benchmarks and the tests' second
// oracle; the analyzer does not use it.
package porcmodel

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/history"
)

// state is the memory of one partition: the words written so far, sorted
// by address, with their values; every other word holds its initial value.
// It is immutable: a write copies it, so Porcupine may keep old states.
type state []word

type word struct{ addr, val uint64 }

// find is the position of address a in s, or where it would go.
func (s state) find(a uint64) (int, bool) {
	return slices.BinarySearchFunc(s, a, func(w word, a uint64) int { return cmp.Compare(w.addr, a) })
}

func (s state) get(a uint64, initial func(uint64) uint64) uint64 {
	i, ok := s.find(a)
	if ok {
		return s[i].val
	}
	return initial(a)
}

func (s state) with(addrs, vals []uint64) state {
	n := slices.Clone(s)
	for k, a := range addrs {
		i, ok := n.find(a)
		if ok {
			n[i].val = vals[k]
		} else {
			n = slices.Insert(n, i, word{a, vals[k]})
		}
	}
	return n
}

// Model is the word array with initial values initial. Inputs are
// *history.Op (their status says which output was recorded); outputs are
// unused. A failed cas is consistent when the word it blamed differs from
// its expected value (and, if it reports values, its words hold them); a
// returned swap when its words hold the values it returned; a pending cas
// or swap either took effect or did not.
func Model(initial func(uint64) uint64) porcupine.Model {
	return (&porcupine.NondeterministicModel{
		Init: func() []any { return []any{state(nil)} },
		Step: func(st, input, _ any) []any {
			s, op := st.(state), input.(*history.Op)
			matches := func(want []uint64) bool {
				for k, a := range op.Addrs {
					if s.get(a, initial) != want[k] {
						return false
					}
				}
				return true
			}
			switch op.Status {
			case history.Returned:
				if matches(op.Values) && op.Kind == history.Swap {
					return []any{s.with(op.Addrs, op.New)}
				}
				if matches(op.Values) {
					return []any{s}
				}
			case history.Succeeded:
				if matches(op.Expected) {
					return []any{s.with(op.Addrs, op.New)}
				}
			case history.Failed:
				if op.Values != nil && !matches(op.Values) {
					return nil
				}
				for k, a := range op.Addrs {
					if a == op.FailAddr && s.get(a, initial) != op.Expected[k] {
						return []any{s}
					}
				}
			case history.Pending:
				if op.Kind == history.Swap || op.Kind == history.CAS && matches(op.Expected) {
					return []any{s, s.with(op.Addrs, op.New)}
				}
				return []any{s}
			}
			return nil
		},
		Equal: func(a, b any) bool {
			return slices.Equal(a.(state), b.(state))
		},
		Partition: Partition,
		DescribeOperation: func(input, _ any) string {
			op := input.(*history.Op)
			return fmt.Sprintf("%v %v (line %d)", op.Kind, op.Status, op.Line)
		},
	}).ToModel()
}

// Partition splits operations into groups that share words (union-find).
func Partition(ops []porcupine.Operation) [][]porcupine.Operation {
	parent := make([]int, len(ops))
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
	owner := map[uint64]int{}
	for i, o := range ops {
		for _, a := range o.Input.(*history.Op).Addrs {
			if j, ok := owner[a]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[a] = i
			}
		}
	}
	index := map[int]int{}
	var out [][]porcupine.Operation
	for i, o := range ops {
		r := find(i)
		k, ok := index[r]
		if !ok {
			k = len(out)
			index[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], o)
	}
	return out
}

// Operations converts a history into Porcupine operations under the
// completion rule of mode, with event positions as times, or reports false
// when mode's constraints for h are not intervals, which Porcupine cannot
// express. Pending reads are left out (pmlin drops them); a pending cas or
// swap may take effect or not (the model's Step) until its response time:
// the crash that cut it off in Strict mode, after the end otherwise. A
// Recoverable crashed cas or swap must precede its process's later operations that stay in the
// history, which is not an interval: histories where it has one (anything
// but a pending read, which always leaves) are refused.
func Operations(h *history.History, mode history.Mode) ([]porcupine.Operation, bool) {
	later := map[int32]bool{} // processes with a later operation that may stay
	ops := make([]porcupine.Operation, 0, len(h.Ops))
	for i := len(h.Ops) - 1; i >= 0; i-- {
		op := &h.Ops[i]
		pendingW := op.Status == history.Pending && op.Kind != history.Read
		if mode == history.Recoverable && pendingW && op.Crash >= 0 && later[op.Proc] {
			return nil, false
		}
		later[op.Proc] = later[op.Proc] || op.Status != history.Pending || op.Kind != history.Read
		if op.Status == history.Pending && op.Kind == history.Read {
			continue
		}
		ret := int64(h.Events + 1)
		switch {
		case op.Ret >= 0:
			ret = int64(op.Ret)
		case op.Crash >= 0 && mode == history.Strict:
			ret = int64(h.Crashes[op.Crash])
		}
		ops = append(ops, porcupine.Operation{ClientId: int(op.Proc), Input: op, Call: int64(op.Inv), Return: ret})
	}
	return ops, true
}
