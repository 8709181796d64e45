package driver

import (
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
)

// The deterministic scheduler's hand-off of the turn: workers are
// coroutines, and the worker that holds the turn switches directly to the
// one chosen next.
//
// A coroutine of iter.Pull is a slot holding one parked goroutine: its
// next (or, after a next, its yield) parks whoever calls it in the slot and
// runs the goroutine parked there, whichever goroutine that is; the Go
// runtime switches goroutines (coroswitch) without the Go scheduler. With
// a conductor that resumes every worker in turn, a hand-off is two such
// switches (the worker back to the conductor, the conductor on to the next
// worker); used symmetrically, a worker parks itself in the slot where the
// next one waits, and a hand-off is one switch (about 60 ns instead of 120
// here, ten thousand times per fuzz run). The slots then no longer belong
// to their workers: slot[g] says where goroutine g is parked and occ[p]
// who is parked in slot p.
//
// Goroutines: the workers (0 .. threads-1), the conductor (threads),
// which starts the segment, and the rescue (threads+1), started by an
// abort. Everything below happens under mu, which every switch carries
// along: the goroutine that switches holds it, and the one that resumes
// takes it over. While the segment runs normally, the worker holding the
// turn does not hold mu: a hand-off takes it, switches, and the worker
// resumed releases it. When a worker's coroutine ends, the goroutine parked
// in its own slot resumes (the Go runtime's rule): if that is not the one
// the finished worker chose (cur), it passes the turn on to it.
//
// Once the segment is aborted, nobody holds the turn. The first goroutine
// to take mu after the abort starts the drain: from then on mu is a baton,
// held by one goroutine at a time and passed with every switch, that runs
// every parked worker to its end (each returns at once: its accesses
// fail). The worker holding the turn at the abort may never come back (a
// silent worker, parked by the Go runtime or spinning): the rescue, a
// goroutine of its own, takes the baton while that worker runs and drains
// the others, so they all return without waiting for it. A silent worker
// that comes back takes mu before its coroutine ends; the goroutine parked
// in its slot is then the conductor, which ends. One that never comes back
// keeps the conductor parked in its slot for good, as the conductor of
// channels and of two-switch hand-offs was kept waiting for it: a parked
// goroutine leaves a coroutine's slot only when another takes its place,
// and nobody else may (the silent worker could come back). The driver is
// abandoned then anyway (Blocked).
type turns struct {
	mu sync.Mutex
	// next[p] and yield[p] are coroutine p's; nextDue[p]: the next switch
	// on slot p goes through next[p] (else yield[p]).
	next    []func() (struct{}, bool)
	yield   []func(struct{}) bool
	nextDue []bool
	slot    []int // slot[g]: where goroutine g is parked (-1: running, or ended)
	occ     []int // occ[p]: who is parked in slot p (-1: the slot's worker ended)
	cur     int   // the goroutine that is to hold the turn (-1: every worker finished)
	// taken counts the times a worker took the turn, and holder is the
	// last one: the watchdog's sign of progress, read under mu (turnTaken),
	// where an atomic store per hand-off (a locked exchange, ten thousand
	// times a run) cost a few percent of a fuzz run.
	taken  int64
	holder int
	// draining: the segment is aborted and mu is the baton; baton[g]:
	// goroutine g holds it.
	draining bool
	baton    []bool
	// panicked is a panic of the driver's own code on a worker, re-raised
	// by the conductor (a coroutine's panic would reach whoever is parked
	// in its slot).
	panicked any
}

// conductor and rescuer are the goroutine numbers of the conductor and
// the rescue.
func (s *detSched) conductor() int { return len(s.occ) }
func (s *detSched) rescuer() int   { return len(s.occ) + 1 }

// start makes the coroutines of the workers, each running body, parked in
// their own slots and not started.
func (s *detSched) start(threads int, body func(w int)) {
	t := &s.turns
	t.next, t.yield = make([]func() (struct{}, bool), threads), make([]func(struct{}) bool, threads)
	t.nextDue, t.occ = make([]bool, threads), make([]int, threads)
	t.slot, t.baton = make([]int, threads+2), make([]bool, threads+2)
	for i := range t.slot {
		t.slot[i] = -1
	}
	for i := range t.occ {
		t.occ[i] = -1
	}
	for _, w := range s.workers {
		t.slot[w], t.occ[w], t.nextDue[w] = w, w, true
		t.next[w], _ = iter.Pull(func(yield func(struct{}) bool) {
			growStack()
			t.yield[w] = yield
			s.resumed(w)
			defer s.leave(w)
			body(w)
		})
	}
}

// switchTo parks goroutine me (holding mu) in the slot of the parked
// goroutine g and runs g; it returns when someone resumes me, mu then
// held again.
func (s *detSched) switchTo(me, g int) {
	t := &s.turns
	p := t.slot[g]
	if p < 0 {
		panic(fmt.Sprintf("driver: goroutine %d hands the turn to %d, which is not parked (a bug)", me, g))
	}
	t.occ[p], t.slot[me], t.slot[g] = me, p, -1
	if t.nextDue[p] {
		t.nextDue[p] = false
		t.next[p]()
	} else {
		t.nextDue[p] = true
		t.yield[p](struct{}{})
	}
}

// handOver is worker w, which holds the turn, handing it to worker n
// (another live worker, or the next one the scheduler picks when w stops)
// and waiting until it is handed back. Handing it to itself (the
// late-write policy's choice may be w) keeps the turn without a switch.
func (s *detSched) handOver(w, n int) {
	if s.d.aborted.Load() {
		return
	}
	if n == w {
		s.took()
		return
	}
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return
	}
	s.cur = n
	s.switchTo(w, n)
	s.resumed(w)
}

// resumed is worker w running again, holding mu: it keeps mu as the baton
// if the segment is aborted, releases it if the turn is its own, else
// passes the turn on to the worker it belongs to (w was parked in the slot
// of a worker that finished).
func (s *detSched) resumed(w int) {
	for {
		if s.d.aborted.Load() {
			s.draining = true
		}
		switch {
		case s.draining:
			s.baton[w] = true
			return
		case s.cur == w:
			s.taken++
			s.holder = w
			s.mu.Unlock()
			return
		case s.cur < 0:
			panic(fmt.Sprintf("driver: worker %d resumed after every worker finished (a bug)", w))
		}
		s.switchTo(w, s.cur)
	}
}

// turnTaken is, for the watchdog, how many times a worker took the turn
// and which one holds it; busy: mu is held, a hand-off is under way (a
// sign of progress too).
func (s *detSched) turnTaken() (taken int64, holder int, busy bool) {
	if !s.mu.TryLock() {
		return 0, 0, true
	}
	defer s.mu.Unlock()
	return s.taken, s.holder, false
}

// leave is the last thing a worker's coroutine does: with mu (the baton,
// or taken now: after a silent worker comes back, once the drain is over)
// it leaves its slot's occupant to run next, holding mu, when the
// coroutine ends.
func (s *detSched) leave(w int) {
	if p := recover(); p != nil {
		s.d.mu.Lock()
		if s.panicked == nil {
			s.panicked = fmt.Sprintf("%v\n\n(on worker %d)\n%s", p, w, debug.Stack())
		}
		s.d.abort()
		s.d.mu.Unlock()
	}
	if !s.baton[w] {
		s.mu.Lock()
	}
	s.baton[w] = false
	if s.d.aborted.Load() {
		s.draining = true
	}
	q := s.occ[w]
	s.occ[w], s.slot[q] = -1, -1
	if s.draining {
		s.baton[q] = true
	}
	s.crew.exit(w)
}

// conduct is the conductor: it hands the turn to the first worker and
// waits, parked, until every worker finished, or passes the turn on when a
// finished worker's slot resumes it, or drains an aborted segment.
func (s *detSched) conduct(first int) {
	k := s.conductor()
	s.mu.Lock()
	s.cur = first
	for {
		if s.d.aborted.Load() {
			s.draining = true
		}
		if s.draining {
			s.drainAs(k)
			break
		}
		if s.cur < 0 {
			s.mu.Unlock()
			break
		}
		s.switchTo(k, s.cur)
	}
	if s.panicked != nil {
		panic(s.panicked)
	}
}

// rescue drains an aborted segment beside the worker holding the turn,
// which may never come back (see turns).
func (s *detSched) rescue() {
	s.mu.Lock()
	s.draining = true
	s.drainAs(s.rescuer())
}

// drainAs runs every parked worker to its end, as goroutine me (the
// conductor or the rescue) holding the baton. The rescue then ends; the
// conductor ends once every worker has, else hands the baton to the
// parked rescue (a worker still runs: the one the rescue was started for,
// whose end will resume the conductor).
func (s *detSched) drainAs(me int) {
	for {
		if x := s.parkedWorker(); x >= 0 {
			s.switchTo(me, x)
			continue
		}
		if me == s.rescuer() || s.allEnded() {
			s.baton[me] = false
			s.mu.Unlock()
			return
		}
		s.switchTo(me, s.rescuer())
	}
}

// parkedWorker is a worker whose coroutine is parked (-1: none).
func (s *detSched) parkedWorker() int {
	for _, w := range s.workers {
		if s.slot[w] >= 0 {
			return w
		}
	}
	return -1
}

// allEnded reports whether every worker's coroutine has ended.
func (s *detSched) allEnded() bool {
	for _, w := range s.workers {
		if s.occ[w] >= 0 {
			return false
		}
	}
	return true
}

// workerStack is the frame growStack makes: the runtime doubles the
// stack until it holds it, to 8 KiB, which a worker's coroutine rarely
// outgrows (measured: 16 KiB ran a fuzz campaign's instructions 0.5 %
// slower, larger stacks cost more to allocate and to scan).
const workerStack = 4 << 10

// growStack grows the calling goroutine's stack to hold workerStack bytes
// more, once, while it holds a frame or two. A worker's coroutine is a new
// goroutine in every segment, with the smallest stack: it grew in steps
// deep inside the target's calls, each step copying the stack and
// adjusting every frame on it (about 2 % of a fuzz run's CPU time; 1.6 %
// of its instructions).
//
//go:noinline
func growStack() {
	var pad [workerStack]byte
	stackSink(pad[:])
}

// stackSink keeps growStack's frame from being optimised away.
//
//go:noinline
func stackSink(b []byte) { b[0] = 1 }
