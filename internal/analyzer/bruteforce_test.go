package analyzer_test

// A third oracle for the differential tests, written from the definitions
// of the three completion modes and sharing nothing with package exact or
// with the analyzer: not their code, and not their reading of a rule in
// terms of "the next operation". For a history of at most bruteMaxOps
// operations it enumerates every completion and every total order.
//
// Definitions. A completion of a history H keeps every operation that has
// a response, drops every pending read, and either drops each pending CAS
// or swap or completes it as a success (completing a CAS as a failure has
// no effect and no response anyone saw, so it is the same as dropping it;
// a swap always succeeds). Let L be the operations kept. H is linearizable
// in a mode if, for some completion, some total order S of L
//
//  1. is legal for the word array: replayed from the initial values, every
//     read returns the current values of its words; every successful CAS,
//     and every completed one, finds all its expected values and writes its
//     new values; every failed CAS finds a value other than the expected one
//     at the address it blamed, and writes nothing, and if it reports
//     values they are the current values of its words; every swap writes
//     its new values, and if it returned (was not cut off) the values it
//     returned are the ones its words held;
//  2. respects real time: if x responded before y was invoked, x precedes y;
//  3. respects the mode, for each completed CAS or swap a that a crash cut
//     off:
//     - strict (Aguilera and Frølund): a's response is the crash itself, so
//       a precedes every y of L invoked after that crash;
//     - recoverable (Berryhill, Golab and Tripunitara): each process's order
//       survives its crashes, so a precedes every y of L by the same process
//       invoked after a;
//     - durable (Izraelevitz, Mendes and Scott): nothing more.
//
// A CAS or swap pending at the end of the history (no crash after it) gets
// no constraint of its own in any mode.
//
// Nothing here asks which operation is "next": rule 3 talks about every
// later operation of the process that is in L. That is the point: a rule
// phrased as "an edge to the next operation" must agree with this one,
// whatever was cut off in between.

import (
	"github.com/pmlin/pmlin/internal/history"
)

// bruteMaxOps bounds the histories bruteLinearizable accepts.
const bruteMaxOps = 7

// bruteLinearizable decides h in mode by enumeration. ok is false if h has
// more than bruteMaxOps operations.
func bruteLinearizable(h *history.History, mode history.Mode) (lin, ok bool) {
	ops := h.Ops
	if len(ops) > bruteMaxOps {
		return false, false
	}
	var required, pendingW []int
	for i := range ops {
		switch {
		case ops[i].Status != history.Pending:
			required = append(required, i)
		case ops[i].Kind != history.Read:
			pendingW = append(pendingW, i)
		}
	}
	for subset := 0; subset < 1<<len(pendingW); subset++ {
		kept := append([]int(nil), required...)
		for j, id := range pendingW {
			if subset&(1<<j) != 0 {
				kept = append(kept, id)
			}
		}
		if bruteOrder(h, mode, kept) {
			return true, true
		}
	}
	return false, true
}

// mustPrecede reports whether rules 2 and 3 put x before y (both in L).
func mustPrecede(h *history.History, mode history.Mode, x, y int) bool {
	X, Y := &h.Ops[x], &h.Ops[y]
	if X.Status != history.Pending {
		return X.Ret < Y.Inv // rule 2
	}
	if X.Crash < 0 {
		return false // pending at the end
	}
	switch mode {
	case history.Strict:
		return h.Crashes[X.Crash] < Y.Inv
	case history.Recoverable:
		return X.Proc == Y.Proc && X.Inv < Y.Inv
	}
	return false
}

// bruteOrder reports whether some total order of kept satisfies rules 1-3.
// It builds the orders position by position and abandons a prefix as soon
// as it breaks a rule: every total order is still considered, as a prefix
// that breaks a rule breaks it in all its extensions.
func bruteOrder(h *history.History, mode history.Mode, kept []int) bool {
	mem := map[uint64]uint64{}
	get := func(a uint64) uint64 {
		if v, ok := mem[a]; ok {
			return v
		}
		return h.InitValue(a)
	}
	placed := make([]bool, len(kept))
	var extend func(n int) bool
	extend = func(n int) bool {
		if n == len(kept) {
			return true
		}
	candidates:
		for i, x := range kept {
			if placed[i] {
				continue
			}
			for j, y := range kept {
				if !placed[j] && j != i && mustPrecede(h, mode, y, x) {
					continue candidates // y must come first and is not placed yet
				}
			}
			op := &h.Ops[x]
			var undo map[uint64]uint64
			switch {
			case op.Kind == history.Read:
				for k, a := range op.Addrs {
					if get(a) != op.Values[k] {
						continue candidates
					}
				}
			case op.Status == history.Failed:
				for k, a := range op.Addrs {
					if a == op.FailAddr && get(a) == op.Expected[k] {
						continue candidates
					}
					if op.Values != nil && get(a) != op.Values[k] {
						continue candidates
					}
				}
			default: // succeeded, or completed as a success
				for k, a := range op.Addrs {
					switch {
					case op.Kind == history.CAS && get(a) != op.Expected[k]:
						continue candidates
					case op.Kind == history.Swap && op.Status == history.Returned && get(a) != op.Values[k]:
						continue candidates
					}
				}
				undo = map[uint64]uint64{}
				for k, a := range op.Addrs {
					undo[a] = get(a)
					mem[a] = op.New[k]
				}
			}
			placed[i] = true
			if extend(n + 1) {
				return true
			}
			placed[i] = false
			for a, v := range undo {
				mem[a] = v
			}
		}
		return false
	}
	return extend(0)
}
