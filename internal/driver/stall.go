package driver

import (
	"fmt"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/pmem"
)

// The progress check: a stalled worker.
//
// A lock-free operation cannot depend on another worker taking steps: if a
// worker stops forever in the middle of an operation (it is descheduled,
// or its thread dies), the others must still finish theirs (Lawrence and
// Lowe's progressibility asks as much). The deterministic scheduler makes
// such a stop one scheduling choice: from the segment's CrashPoint.Stall-th
// region access on, the first worker to make an access right after one of
// its writes (a store or a CAS) in the same operation, while another
// worker is live, is stopped before that access is made, and is not
// scheduled again until it is released. Right after a write is where a
// stop hurts most: the worker has just published something (a descriptor,
// a dirty value, a lock) that the others may have to finish for it.
//
// What is checked, precisely: with one worker stopped for good inside an
// operation and the others interleaved by the seeded scheduler (not run
// solo), the others keep completing operations: no operation of theirs
// makes the stall bound (Config.StallBound) of its own region accesses,
// counted from the stall, while no operation of another live worker
// returns. Each return restarts the count of every operation in progress.
// That is lock-freedom (some operation always completes) measured in the
// others' operations, not in accesses: an operation that retries because
// the others keep changing its words (a double collect) is overtaken by
// operations that return, as lock-freedom allows, and is not reported
// however long it takes; an operation that waits for the stopped worker,
// spinning on its descriptor instead of helping it, is reported stuck,
// naming the stopped worker and where it stopped, once the others have
// finished their share or wait too. The bound is for one operation's own
// steps between two returns, so it grows with k (a correct operation may
// make O(k^2) accesses). It is more than obstruction-freedom asks (that
// an operation running alone finishes): the others run interleaved, and
// an obstruction-free target whose live workers livelock each other is
// reported too.
//
// Waits by design are outside the property. A target that blocks (locks)
// declares it (target.Target.Blocking) and is never stalled. A lock-free
// target may still wait on purpose where its design blocks, as
// reclamation does when a descriptor is held back by the stopped worker
// (an epoch it has not left, a hazard slot it has not cleared): it marks
// those waits (pmem.Worker.Wait). A wait loop is rounds of loads, each
// round closed by a declared wait: the wait and the loads of its round
// (those since the worker's last access other than a load) do not count
// towards the bound (wstate.declared), and the worker waits by design
// until its next access other than a load. Once every live worker waits
// by design the stopped worker is released (else nobody could move). It
// is also released when the others have finished their share of the
// segment, or the region crashed: then it finishes its operation and the
// segment goes on as usual.

// Stall says where the progress check stopped a worker.
type Stall struct {
	Proc int32
	// Line is the line of the invocation of its operation (set when a
	// report needs it: a stuck operation during the stall).
	Line  int64
	Kind  history.OpKind
	Addrs []uint64
	Op    string // an object workload's operation (see Stuck.Op)
	// Access is the number, within its operation, of the region access
	// it was stopped at (before making it); AtKind and AtOff say what that
	// access was.
	Access int64
	AtKind pmem.AccessKind
	AtOff  uint64
	// Released: it was released before the segment ended (the others
	// finished, crashed, or all waited by design).
	Released bool
	// Late: the late-write policy held it (late.go), until the others had
	// written the word of that access Until times (0: for good, right
	// after a late write of its own); or, with ABA, until the word held
	// again Expect, the value its CAS expects, after holding another.
	Late   bool
	Until  int
	ABA    bool
	Expect uint64
	worker int
}

func (st *Stall) String() string {
	if st.Late {
		at := fmt.Sprintf("a %s of region word %d", st.AtKind, st.AtOff)
		if st.AtKind == pmem.AccessVolatile {
			at = fmt.Sprintf("a step on its volatile state of key %d", st.AtOff)
		}
		until := fmt.Sprintf("until the others had written there %d times", st.Until)
		switch {
		case st.ABA:
			until = fmt.Sprintf("until the word held again %#x, the value the CAS expects, after another value", st.Expect)
		case st.Until == 0:
			until = "for good, right after a late write of its own"
		}
		return fmt.Sprintf("process %d was held by the late-write policy inside its %s (line %d), at its region access %d of that operation (%s, not made), %s",
			st.Proc, opName(st.Kind, st.Addrs, st.Op), st.Line, st.Access, at, until)
	}
	return fmt.Sprintf("process %d was stopped for good inside its %s (line %d), at its region access %d of that operation (a %s of region word %d, not made)",
		st.Proc, opName(st.Kind, st.Addrs, st.Op), st.Line, st.Access, st.AtKind, st.AtOff)
}

// stop stalls worker w, which holds the turn, at its access of kind and
// off: it leaves the live workers, hands the turn on, and waits to be
// released (or woken by an abort).
func (s *detSched) stop(w int, kind pmem.AccessKind, off uint64) {
	d := s.d
	ws := &d.ws[w]
	okind, addrs, op := d.curOp(w)
	s.stallAt = 0
	s.stall = &Stall{Proc: d.pids[w], Kind: okind, Addrs: addrs, Op: op,
		Access: ws.opAcc, AtKind: kind, AtOff: off, worker: w}
	s.stalled = w
	s.drop(w)
	for _, x := range s.live {
		o := &d.ws[x]
		o.waiting, o.round = false, 0
		if o.inOp {
			o.opAcc, o.limit = 0, d.stallBound // counted from the stall
		}
	}
	s.handOver(w, s.pick(-1))
}

// declared is the rule of declared waits at the worker's access of kind
// while another worker is stopped or held: a declared wait
// (pmem.Worker.Wait) and the loads of its round, those since the worker's
// last access other than a load, do not count towards the stuck bound,
// nor does a step on volatile state, which is no region access; from a
// declared wait on, the worker waits by design until its next access
// other than a load (a step on volatile state, such as an attempt to
// advance an epoch, ends the wait too). So a wait loop that scans the
// hazard slots of the others, or any words, and waits once per scan
// waits, while a loop that spins on loads and never declares a wait is
// counted access by access. Wait declares that the worker could not help:
// a loop that waits for an operation it could finish (a descriptor it
// could help) and declares it hides a progress bug from the check.
func (ws *wstate) declared(kind pmem.AccessKind) {
	switch kind {
	case pmem.AccessLoad:
		ws.round++
	case pmem.AccessWait:
		ws.opAcc -= ws.round + 1
		ws.round, ws.waiting = 0, true
	case pmem.AccessVolatile:
		ws.opAcc--
		ws.waiting = false
	default:
		ws.round, ws.waiting = 0, false
	}
}

// returned is worker w's operation returning while another worker is
// stopped or held: the others' operations in progress start counting
// again (the others make progress, see above).
func (s *detSched) returned(w int) {
	for _, x := range s.live {
		if o := &s.d.ws[x]; x != w && o.inOp {
			o.opAcc, o.round = 0, 0
		}
	}
}

// drop takes worker w out of the live workers.
func (s *detSched) drop(w int) {
	for i, x := range s.live {
		if x == w {
			s.live = append(s.live[:i], s.live[i+1:]...)
			return
		}
	}
}

// stalledStep is an access of kind of a live worker (state ws, which
// declared has applied the access to) while another is stalled: when
// every live worker waits by design the stalled one is released.
func (s *detSched) stalledStep(ws *wstate, kind pmem.AccessKind) {
	if kind == pmem.AccessWait && s.allWait() {
		s.release()
	}
}

// allWait reports whether every live worker waits by design. It counts
// them afresh: a worker's flag may go up or down where no count would
// follow it (held by the late-write policy, or between two regimes).
func (s *detSched) allWait() bool {
	for _, x := range s.live {
		if !s.d.ws[x].waiting {
			return false
		}
	}
	return true
}

// notWaiting is worker w between operations: it no longer waits.
func (s *detSched) notWaiting(w int) {
	s.d.ws[w].waiting = false
}

// leftStall is worker w leaving the live workers (its share done, or the
// region crashed) while another is stalled: once every live worker waits
// by design, or none is left, the stalled worker is released.
func (s *detSched) leftStall(w int) {
	s.notWaiting(w)
	if s.allWait() {
		s.release()
	}
}

// release puts the stalled worker back among the live ones: the scheduler
// picks it again from now on.
func (s *detSched) release() {
	for _, x := range s.live {
		ws := &s.d.ws[x]
		ws.waiting = false
		ws.limit = s.d.cfg.StuckAccesses
	}
	s.live = append(s.live, s.stalled)
	s.stalled = -1
	s.stall.Released = true
	s.startSlow() // the stall's rules no longer apply
}
