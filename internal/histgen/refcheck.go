package histgen

import (
	"fmt"
	"math"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
)

// RefCheck decides by exhaustive search whether a small history (at most 64
// operations) is linearizable under mode. It is a test oracle independent of
// packages exact and analyzer (the tests of this package and of others
// compare them with it), written from history.Mode's definitions:
//
//   - every completed operation is linearized between its invocation and
//     response; a pending read is dropped; a pending CAS is dropped or
//     linearized as a success after its invocation and before: the crash
//     that interrupted it (Strict), every later operation of its process
//     that is linearized (Recoverable: program order survives the crash;
//     when the next operation was cut off and dropped, the one after it
//     still follows), or whenever (Durable; and every mode for an
//     operation pending at the end); a pending swap likewise;
//   - a read returns the current values; a successful CAS found every
//     expected value and wrote the new ones; a failed CAS found a value
//     other than the expected one at the blamed address and wrote nothing,
//     and the values it reports, if any, are the current ones; a swap
//     wrote its new values, and returned (if it returned) the values they
//     replaced.
func RefCheck(h *history.History, mode history.Mode) (bool, error) {
	n := len(h.Ops)
	if n > 64 {
		return false, fmt.Errorf("RefCheck: %d operations, at most 64", n)
	}
	words := map[uint64]int{}
	var init []uint64
	for i := range h.Ops {
		for _, a := range h.Ops[i].Addrs {
			if _, ok := words[a]; !ok {
				words[a] = len(init)
				init = append(init, h.InitValue(a))
			}
		}
	}
	effRet := make([]int, n)
	// Recoverable: a crashed CAS precedes every later operation of its
	// process that is linearized (process order survives the crash).
	recov := make([]bool, n)
	var required, optional uint64
	for i := range h.Ops {
		op := &h.Ops[i]
		switch {
		case op.Ret >= 0:
			effRet[i] = op.Ret
			required |= 1 << i
		case op.Kind == history.Read:
			effRet[i] = -1 // never linearized
		default:
			optional |= 1 << i
			effRet[i] = math.MaxInt
			if op.Crash >= 0 {
				switch mode {
				case history.Strict:
					effRet[i] = h.Crashes[op.Crash]
				case history.Recoverable:
					recov[i] = true
				}
			}
		}
	}
	// preds[b]: the operations that must be linearized (or, optional ones,
	// dropped) before b.
	preds := make([]uint64, n)
	for b := range h.Ops {
		for a := range h.Ops {
			if (required|optional)&(1<<a) != 0 && (effRet[a] < h.Ops[b].Inv || recov[a] && h.Ops[a].Proc == h.Ops[b].Proc && h.Ops[a].Inv < h.Ops[b].Inv) {
				preds[b] |= 1 << a
			}
		}
	}
	type key struct {
		done uint64
		mem  string
	}
	failed := map[key]bool{}
	memKey := func(mem []uint64) string {
		var b strings.Builder
		for _, v := range mem {
			fmt.Fprintf(&b, "%x,", v)
		}
		return b.String()
	}
	var search func(done uint64, mem []uint64) bool
	search = func(done uint64, mem []uint64) bool {
		if done&required == required {
			return true
		}
		k := key{done, memKey(mem)}
		if failed[k] {
			return false
		}
		for b := range h.Ops {
			bit := uint64(1) << b
			if (required|optional)&bit == 0 || done&bit != 0 {
				continue
			}
			if preds[b]&required&^done != 0 {
				continue
			}
			op := &h.Ops[b]
			next := mem
			switch {
			case op.Kind == history.Read:
				ok := true
				for j, a := range op.Addrs {
					ok = ok && mem[words[a]] == op.Values[j]
				}
				if !ok {
					continue
				}
			case op.Status == history.Failed:
				j := slotOf(op, op.FailAddr)
				if mem[words[op.FailAddr]] == op.Expected[j] {
					continue
				}
				ok := true
				for j, a := range op.Addrs {
					ok = ok && (op.Values == nil || mem[words[a]] == op.Values[j])
				}
				if !ok {
					continue
				}
			default: // succeeded, a swap, or a pending CAS or swap taking effect
				ok := true
				for j, a := range op.Addrs {
					switch {
					case op.Kind == history.CAS:
						ok = ok && mem[words[a]] == op.Expected[j]
					case op.Status == history.Returned:
						ok = ok && mem[words[a]] == op.Values[j]
					}
				}
				if !ok {
					continue
				}
				next = append([]uint64(nil), mem...)
				for j, a := range op.Addrs {
					next[words[a]] = op.New[j]
				}
			}
			// Optional predecessors not linearized yet are dropped.
			if search(done|bit|preds[b]&optional, next) {
				return true
			}
		}
		failed[k] = true
		return false
	}
	return search(0, init), nil
}
