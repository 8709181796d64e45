package exact

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/pmlin/pmlin/history"
)

// maxPorcupineWords bounds the words of a porcupine test history, so that a
// state is a comparable array.
const maxPorcupineWords = 4

type wordState [maxPorcupineWords]uint64

// porcupineModel is the word array as a Porcupine model. Input is the
// *history.Op itself (its status says which output it recorded); Output is
// unused. A failed cas and a pending cas are nondeterministic: the first may
// blame any differing word (Step checks the recorded one differs), the
// second either takes effect or not.
func porcupineModel(h *history.History, slot map[uint64]int) porcupine.Model {
	return (&porcupine.NondeterministicModel{
		Init: func() []any {
			var s wordState
			for a, i := range slot {
				s[i] = h.InitValue(a)
			}
			return []any{s}
		},
		Step: func(state, input, _ any) []any {
			s, op := state.(wordState), input.(*history.Op)
			matches := func(want []uint64) bool {
				for k, a := range op.Addrs {
					if s[slot[a]] != want[k] {
						return false
					}
				}
				return true
			}
			write := func() wordState {
				n := s
				for k, a := range op.Addrs {
					n[slot[a]] = op.New[k]
				}
				return n
			}
			switch op.Status {
			case history.Returned:
				if matches(op.Values) {
					return []any{s}
				}
			case history.Succeeded:
				if matches(op.Expected) {
					return []any{write()}
				}
			case history.Failed:
				for k, a := range op.Addrs {
					if a == op.FailAddr && s[slot[a]] != op.Expected[k] {
						return []any{s}
					}
				}
			case history.Pending: // a cas: dropped, or a success
				if op.Kind == history.CAS && matches(op.Expected) {
					return []any{s, write()}
				}
				return []any{s}
			}
			return nil
		},
		Partition: partitionByWords,
		DescribeOperation: func(input, _ any) string {
			op := input.(*history.Op)
			return fmt.Sprintf("%v %v line %d", op.Kind, op.Status, op.Line)
		},
	}).ToModel()
}

// partitionByWords splits operations into groups that share words.
func partitionByWords(ops []porcupine.Operation) [][]porcupine.Operation {
	parent := make([]int, len(ops))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		if parent[x] != x {
			parent[x] = find(parent[x])
		}
		return parent[x]
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
	groups := map[int][]porcupine.Operation{}
	var roots []int
	for i, o := range ops {
		r := find(i)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], o)
	}
	out := make([][]porcupine.Operation, len(roots))
	for i, r := range roots {
		out[i] = groups[r]
	}
	return out
}

// porcupineOps turns h into Porcupine operations, or reports that mode's
// constraints are not intervals for h. Event positions are doubled, so that
// Porcupine's closed intervals order exactly the ops whose positions are
// ordered. A pending cas that may take effect at any time gets a response
// after the end; one that must take effect before its crash (Strict) gets
// the crash as its response. A Recoverable crashed cas must precede only
// the next op of its process, which is not an interval: such histories are
// left out. Pending reads are left out, as Check drops them.
func porcupineOps(h *history.History, mode history.Mode) ([]porcupine.Operation, bool) {
	next := map[int32]bool{} // processes that invoke again after a crashed cas
	var ops []porcupine.Operation
	for i := len(h.Ops) - 1; i >= 0; i-- {
		op := &h.Ops[i]
		if mode == history.Recoverable && op.Status == history.Pending && op.Kind == history.CAS && op.Crash >= 0 && next[op.Proc] {
			return nil, false
		}
		next[op.Proc] = op.Status != history.Pending || op.Kind != history.Read
		if op.Status == history.Pending && op.Kind == history.Read {
			continue
		}
		ret := int64(2*h.Events + 1)
		switch {
		case op.Ret >= 0:
			ret = int64(2 * op.Ret)
		case op.Crash >= 0 && mode == history.Strict:
			ret = int64(2 * h.Crashes[op.Crash])
		}
		ops = append(ops, porcupine.Operation{ClientId: int(op.Proc), Input: op,
			Call: int64(2 * op.Inv), Return: ret})
	}
	return ops, true
}

// porcupineConfigs make histories larger than the brute force can take.
var porcupineConfigs = []genConfig{
	{procs: 3, words: 3, values: 3, minOps: 6, maxOps: 14, maxK: 2, lie: 0.06},
	{procs: 4, words: 2, values: 3, minOps: 6, maxOps: 14, maxK: 2, lie: 0.06},
	{procs: 3, words: 4, values: 2, minOps: 8, maxOps: 16, maxK: 3, lie: 0.05},
	{procs: 3, words: 3, values: 3, minOps: 6, maxOps: 12, maxK: 2, crash: 0.05, lie: 0.05, late: 0.3},
	{procs: 4, words: 2, values: 2, minOps: 6, maxOps: 12, maxK: 1, crash: 0.1, late: 0.3},
}

// TestAgainstPorcupine compares Check with Porcupine, a second oracle, on
// histories of up to 16 ops: in every mode when it has no crash, and with
// crashes in the modes whose constraints are intervals.
func TestAgainstPorcupine(t *testing.T) {
	n := 6000
	if testing.Short() {
		n = 600
	}
	r := rand.New(rand.NewPCG(3, 4))
	var yes, no, compared, crashed, skipped int
	for i := range n {
		h := genHistory(r, porcupineConfigs[i%len(porcupineConfigs)])
		slot := map[uint64]int{}
		for _, op := range h.Ops {
			for _, a := range op.Addrs {
				if _, ok := slot[a]; !ok {
					slot[a] = len(slot)
				}
			}
		}
		model := porcupineModel(h, slot)
		for _, mode := range history.Modes {
			ops, ok := porcupineOps(h, mode)
			if !ok {
				skipped++
				continue
			}
			res, err := Check(context.Background(), h, Options{Mode: mode})
			if err != nil {
				t.Fatalf("history %d: %v", i, err)
			}
			compared++
			if len(h.Crashes) > 0 {
				crashed++
			}
			if p := porcupine.CheckOperations(model, ops); p != res.Linearizable {
				t.Fatalf("history %d, %v: Check says %v, Porcupine %v\n%s", i, mode, res.Linearizable, p, text(h))
			}
			if res.Linearizable {
				yes++
				if err := Validate(h, mode, res.Order); err != nil {
					t.Fatalf("history %d, %v: %v\n%s", i, mode, err, text(h))
				}
			} else {
				no++
			}
		}
	}
	t.Logf("%d histories, %d (history, mode) pairs compared (%d with crashes): %d linearizable, %d not; %d recoverable pairs skipped",
		n, compared, crashed, yes, no, skipped)
	if yes < compared/10 || no < compared/10 {
		t.Errorf("verdicts too lopsided: %d yes, %d no", yes, no)
	}
}
