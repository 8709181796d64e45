package exact

import (
	"fmt"

	"github.com/pmlin/pmlin/internal/history"
)

// Validate replays order (op IDs, as in Result.Order) against the sequential
// specification and the order constraints of mode, and explains the first
// problem it finds, naming operations by the line of their invocation. It
// shares no code with the search, so that tests can check every answer of
// Check independently: a nil error means order proves h linearizable.
//
// order must hold every completed op exactly once, may hold pending cas
// and swap ops (taken as successes), and must not hold pending reads.
func Validate(h *history.History, mode history.Mode, order []int) error {
	if err := checkInput(h, mode); err != nil {
		return err
	}
	line := func(id int) int64 { return h.Ops[id].Line }
	pos := make([]int, len(h.Ops))
	for i := range pos {
		pos[i] = -1
	}
	for k, id := range order {
		switch {
		case id < 0 || id >= len(h.Ops):
			return fmt.Errorf("position %d: no operation %d", k, id)
		case pos[id] >= 0:
			return fmt.Errorf("operation of line %d appears twice", line(id))
		case droppedAlways(&h.Ops[id]):
			return fmt.Errorf("operation of line %d is a pending read: it has no response to linearize", line(id))
		}
		pos[id] = k
	}
	for id := range h.Ops {
		if h.Ops[id].Status != history.Pending && pos[id] < 0 {
			return fmt.Errorf("operation of line %d completed but is not linearized", line(id))
		}
	}

	// Order constraints, pair by pair.
	for _, b := range order {
		for _, a := range order {
			A, B := &h.Ops[a], &h.Ops[b]
			if pos[a] < pos[b] || a == b {
				continue
			}
			switch {
			case A.Ret >= 0 && A.Ret < B.Inv:
				return fmt.Errorf("operation of line %d responded before operation of line %d was invoked, yet comes after it", A.Line, B.Line)
			case A.Status == history.Pending && A.Crash >= 0 && mode.CrashBounds() && h.Crashes[A.Crash] < B.Inv:
				return fmt.Errorf("pending operation of line %d was cut off by the crash before operation of line %d was invoked, yet comes after it (strict)", A.Line, B.Line)
			case A.Status == history.Pending && A.Crash >= 0 && mode.ProcessOrder() && A.Proc == B.Proc && A.Inv < B.Inv:
				return fmt.Errorf("pending operation of line %d was cut off by a crash, yet comes after a later operation of its process, line %d (recoverable)", A.Line, B.Line)
			}
		}
	}

	// Replay.
	mem := map[uint64]uint64{}
	get := func(a uint64) uint64 {
		if v, ok := mem[a]; ok {
			return v
		}
		return h.InitValue(a)
	}
	for _, id := range order {
		op := &h.Ops[id]
		switch {
		case op.Kind == history.Read:
			for k, a := range op.Addrs {
				if v := get(a); v != op.Values[k] {
					return fmt.Errorf("read of line %d returned %s at address %d, which holds %s there", op.Line, history.FormatValue(op.Values[k]), a, history.FormatValue(v))
				}
			}
		case op.Status == history.Failed:
			k := indexOf(op.Addrs, op.FailAddr)
			if get(op.FailAddr) == op.Expected[k] {
				return fmt.Errorf("cas of line %d failed at address %d, which holds the expected %s there", op.Line, op.FailAddr, history.FormatValue(op.Expected[k]))
			}
			for k, a := range op.Addrs {
				if op.Values != nil && get(a) != op.Values[k] {
					return fmt.Errorf("cas of line %d failed reporting %s at address %d, which holds %s there", op.Line, history.FormatValue(op.Values[k]), a, history.FormatValue(get(a)))
				}
			}
		case op.Kind == history.Swap: // returned, or pending and taken
			for k, a := range op.Addrs {
				if v := get(a); op.Status == history.Returned && v != op.Values[k] {
					return fmt.Errorf("swap of line %d returned %s at address %d, which holds %s there", op.Line, history.FormatValue(op.Values[k]), a, history.FormatValue(v))
				}
			}
			for k, a := range op.Addrs {
				mem[a] = op.New[k]
			}
		default: // succeeded, or pending and taken as a success
			for k, a := range op.Addrs {
				if v := get(a); v != op.Expected[k] {
					return fmt.Errorf("cas of line %d (%v) expected %s at address %d, which holds %s there", op.Line, op.Status, history.FormatValue(op.Expected[k]), a, history.FormatValue(v))
				}
			}
			for k, a := range op.Addrs {
				mem[a] = op.New[k]
			}
		}
	}
	return nil
}
