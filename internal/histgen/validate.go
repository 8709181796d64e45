package histgen

import (
	"fmt"

	"github.com/pmlin/pmlin/internal/history"
)

// Validate checks that h is a consistent, well-formed in-memory history: op
// IDs are indexes in invocation order; Inv, Ret and Crashes are the event
// positions 0..Events-1, each used once; per process, invocations and
// responses alternate; a crash interrupts every pending operation (and sets
// its Crash index); Status, Values, Expected, New and FailAddr fit the kind.
// Line numbers are not checked.
func Validate(h *history.History) error {
	type slot struct {
		op    int // -1: crash
		isRet bool
		used  bool
	}
	slots := make([]slot, h.Events)
	put := func(pos, op int, isRet bool) error {
		if pos < 0 || pos >= h.Events {
			return fmt.Errorf("op %d: event position %d outside 0..%d", op, pos, h.Events-1)
		}
		if slots[pos].used {
			return fmt.Errorf("event position %d used twice", pos)
		}
		slots[pos] = slot{op, isRet, true}
		return nil
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.ID != i {
			return fmt.Errorf("op %d has ID %d", i, op.ID)
		}
		if i > 0 && h.Ops[i-1].Inv >= op.Inv {
			return fmt.Errorf("ops %d and %d are not in invocation order", i-1, i)
		}
		if op.Proc < 0 {
			return fmt.Errorf("op %d: negative process id %d", i, op.Proc)
		}
		if err := checkShape(op); err != nil {
			return fmt.Errorf("op %d: %v", i, err)
		}
		if err := put(op.Inv, i, false); err != nil {
			return err
		}
		if op.Ret >= 0 {
			if op.Ret <= op.Inv {
				return fmt.Errorf("op %d: response before invocation", i)
			}
			if err := put(op.Ret, i, true); err != nil {
				return err
			}
		}
	}
	for _, c := range h.Crashes {
		if err := put(c, -1, false); err != nil {
			return err
		}
	}
	pending := map[int32]int{}
	crashIdx := 0
	for pos, s := range slots {
		if !s.used {
			return fmt.Errorf("event position %d unused", pos)
		}
		if s.op < 0 {
			if h.Crashes[crashIdx] != pos {
				return fmt.Errorf("crashes are not in order")
			}
			for _, id := range pending {
				if h.Ops[id].Crash != crashIdx {
					return fmt.Errorf("op %d was interrupted by crash %d but has Crash %d", id, crashIdx, h.Ops[id].Crash)
				}
			}
			clear(pending)
			crashIdx++
			continue
		}
		op := &h.Ops[s.op]
		if !s.isRet {
			if other, ok := pending[op.Proc]; ok {
				return fmt.Errorf("process %d invokes op %d while op %d is pending", op.Proc, s.op, other)
			}
			pending[op.Proc] = s.op
			continue
		}
		if pending[op.Proc] != s.op {
			return fmt.Errorf("op %d returns while not pending", s.op)
		}
		if op.Crash != -1 {
			return fmt.Errorf("op %d returned but has Crash %d", s.op, op.Crash)
		}
		delete(pending, op.Proc)
	}
	for _, id := range pending {
		if h.Ops[id].Crash != -1 {
			return fmt.Errorf("op %d is pending at the end but has Crash %d", id, h.Ops[id].Crash)
		}
	}
	return nil
}

func checkShape(op *history.Op) error {
	k := len(op.Addrs)
	if k == 0 {
		return fmt.Errorf("no address")
	}
	for i := 1; i < k; i++ {
		for j := 0; j < i; j++ {
			if op.Addrs[i] == op.Addrs[j] {
				return fmt.Errorf("address %d twice", op.Addrs[i])
			}
		}
	}
	pending := op.Ret < 0
	switch op.Kind {
	case history.Read:
		if len(op.Expected) != 0 || len(op.New) != 0 {
			return fmt.Errorf("read with CAS values")
		}
		if pending {
			if op.Status != history.Pending || len(op.Values) != 0 {
				return fmt.Errorf("pending read with status %v or values", op.Status)
			}
		} else if op.Status != history.Returned || len(op.Values) != k {
			return fmt.Errorf("returned read with status %v and %d values for %d words", op.Status, len(op.Values), k)
		}
	case history.CAS:
		if len(op.Expected) != k || len(op.New) != k || len(op.Values) != 0 && op.Status != history.Failed {
			return fmt.Errorf("CAS with %d expected and %d new values for %d words", len(op.Expected), len(op.New), k)
		}
		switch {
		case pending:
			if op.Status != history.Pending {
				return fmt.Errorf("pending CAS with status %v", op.Status)
			}
		case op.Status == history.Succeeded:
		case op.Status == history.Failed:
			if slotOf(op, op.FailAddr) < 0 {
				return fmt.Errorf("CAS fails at %d, not one of its addresses", op.FailAddr)
			}
			if op.Values != nil && len(op.Values) != k {
				return fmt.Errorf("failure reporting %d values for %d words", len(op.Values), k)
			}
			return nil
		default:
			return fmt.Errorf("returned CAS with status %v", op.Status)
		}
	case history.Swap:
		if len(op.Expected) != 0 || len(op.New) != k {
			return fmt.Errorf("swap with %d expected and %d new values for %d words", len(op.Expected), len(op.New), k)
		}
		if pending {
			if op.Status != history.Pending || len(op.Values) != 0 {
				return fmt.Errorf("pending swap with status %v or values", op.Status)
			}
		} else if op.Status != history.Returned || len(op.Values) != k {
			return fmt.Errorf("returned swap with status %v and %d values for %d words", op.Status, len(op.Values), k)
		}
		return nil
	default:
		return fmt.Errorf("unknown kind %v", op.Kind)
	}
	return nil
}

// slotOf is the index of address a in op.Addrs, or -1.
func slotOf(op *history.Op, a uint64) int {
	for i, b := range op.Addrs {
		if b == a {
			return i
		}
	}
	return -1
}

// CheckAssumptions checks the OPODIS paper's assumptions, as
// docs/history-format.md states them:
//
//  1. every value a CAS or a swap writes to an address differs from the
//     address's initial value and from every other value written to it;
//  2. the value a CAS expects at an address was returned for that address by
//     a read, a swap or a failure that reports values, or was the expected
//     value of a successful CAS, that finished before the CAS was invoked,
//     or is the address's initial value. (A swap expects nothing.)
func CheckAssumptions(h *history.History) error {
	type wv struct{ w, v uint64 }
	written := map[wv]int{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind == history.Read {
			continue
		}
		for j, a := range op.Addrs {
			v := op.New[j]
			if v == h.InitValue(a) {
				return fmt.Errorf("assumption 1: op %d writes the initial value %#x to address %d", i, v, a)
			}
			if other, dup := written[wv{a, v}]; dup {
				return fmt.Errorf("assumption 1: ops %d and %d both write %#x to address %d", other, i, v, a)
			}
			written[wv{a, v}] = i
		}
	}
	// finished[(w,v)] is the earliest response position justifying v at w.
	finished := map[wv]int{}
	note := func(k wv, pos int) {
		if old, ok := finished[k]; !ok || pos < old {
			finished[k] = pos
		}
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		switch op.Status {
		case history.Returned, history.Failed:
			for j, a := range op.Addrs {
				if op.Values != nil {
					note(wv{a, op.Values[j]}, op.Ret)
				}
			}
		case history.Succeeded:
			for j, a := range op.Addrs {
				note(wv{a, op.Expected[j]}, op.Ret)
			}
		}
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.CAS {
			continue
		}
		for j, a := range op.Addrs {
			e := op.Expected[j]
			if e == h.InitValue(a) {
				continue
			}
			if pos, ok := finished[wv{a, e}]; !ok || pos > op.Inv {
				return fmt.Errorf("assumption 2: op %d expects %#x at address %d, which no operation finished before it returned", i, e, a)
			}
		}
	}
	return nil
}
