package driver

import (
	"fmt"

	"github.com/pmlin/pmlin/history"
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
// Meanwhile every operation of the other workers, the ones in progress at
// the stall and the ones invoked after it, must return within
// StallAccesses of its own region accesses (counted from the stall), so
// an operation that waits for the stopped one, spinning on its descriptor
// instead of helping it, is reported stuck, naming the stopped worker and
// where it stopped.
//
// What is checked, precisely: with one worker stopped for good inside an
// operation and the others interleaved by the seeded scheduler (not run
// solo), every operation of the others returns within StallAccesses of
// its own accesses. Lock-freedom implies this for any operation that does
// not starve; since the scheduler's choices are random, an operation of a
// lock-free target that keeps losing races for StallAccesses accesses is
// vanishingly unlikely, so a report is a wait for the stopped worker. It
// is more than obstruction-freedom asks (that an operation running alone
// finishes): the others run interleaved, and an obstruction-free target
// whose live workers livelock each other would be reported too.
//
// Waits by design are outside the property. A target that blocks (locks)
// declares it (target.Target.Blocking) and is never stalled. A lock-free
// target may still wait on purpose where its design blocks, as epoch-based
// reclamation does when a worker's descriptors all wait for the stopped
// worker to leave its epoch: it marks those waits (pmem.Worker.Wait). A
// declared wait does not count towards the stuck rule while a worker is
// stalled, and once every live worker waits by design the stopped worker
// is released (else nobody could move). It is also released when the
// others have finished their share of the segment, or the region crashed:
// then it finishes its operation and the segment goes on as usual.

// Stall says where the progress check stopped a worker.
type Stall struct {
	Proc int32
	// Line is the line of the invocation of its operation (set when a
	// report needs it: a stuck operation during the stall).
	Line  int64
	Kind  history.OpKind
	Addrs []uint64
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
		return fmt.Sprintf("process %d was held by the late-write policy inside its %s of addresses %v (line %d), at its region access %d of that operation (%s, not made), %s",
			st.Proc, st.Kind, st.Addrs, st.Line, st.Access, at, until)
	}
	return fmt.Sprintf("process %d was stopped for good inside its %s of addresses %v (line %d), at its region access %d of that operation (a %s of region word %d, not made)",
		st.Proc, st.Kind, st.Addrs, st.Line, st.Access, st.AtKind, st.AtOff)
}

// stop stalls worker w, which holds the turn, at its access of kind and
// off: it leaves the live workers, hands the turn on, and waits to be
// released (or woken by an abort).
func (s *detSched) stop(w int, kind pmem.AccessKind, off uint64) {
	d := s.d
	ws := &d.ws[w]
	o := &d.procs[w].op
	s.stallAt = 0
	s.stall = &Stall{Proc: d.pids[w], Kind: o.kind, Addrs: append([]uint64(nil), o.addrs...),
		Access: ws.opAcc, AtKind: kind, AtOff: off, worker: w}
	s.stalled = w
	s.drop(w)
	s.waiters = 0
	for _, x := range s.live {
		d.ws[x].waiting = false
		if o := &d.ws[x]; o.inOp {
			o.opAcc, o.limit = 0, d.cfg.StallAccesses // counted from the stall
		}
	}
	s.handOver(w, s.pick(-1))
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

// stalledStep is an access of a live worker (state ws) while another is
// stalled: a declared wait does not count towards the stuck rule, and
// when every live worker waits by design the stalled one is released.
func (s *detSched) stalledStep(ws *wstate, kind pmem.AccessKind) {
	switch {
	case kind == pmem.AccessWait:
		ws.opAcc--
		if !ws.waiting {
			ws.waiting = true
			s.waiters++
			if s.waiters >= len(s.live) {
				s.release()
			}
		}
	case ws.waiting:
		ws.waiting = false
		s.waiters--
	}
}

// notWaiting is worker w, between operations while another is stalled: it
// no longer waits.
func (s *detSched) notWaiting(w int) {
	if ws := &s.d.ws[w]; ws.waiting {
		ws.waiting = false
		s.waiters--
	}
}

// leftStall is worker w leaving the live workers (its share done, or the
// region crashed) while another is stalled: once every live worker waits
// by design, or none is left, the stalled worker is released.
func (s *detSched) leftStall(w int) {
	s.notWaiting(w)
	if s.waiters >= len(s.live) {
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
	s.waiters = 0
	s.live = append(s.live, s.stalled)
	s.stalled = -1
	s.stall.Released = true
	s.startSlow() // the stall's rules no longer apply
}
