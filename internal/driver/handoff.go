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
// to their workers: slot[g] says where goroutine g is parked and co[p].occ
// who is parked in slot p. Every live slot holds exactly one goroutine
// (a switch parks one and resumes one); when a coroutine ends, its slot
// dies and the goroutine parked there resumes (the Go runtime's rule).
//
// The workers' coroutines outlive their segment: a worker that has run its
// body to the end parks, idle, and is given the next segment's body (a
// driver that keeps its workers, Driver.KeepWorkers, even the next run's:
// Driver.Recycle), instead of a new coroutine per segment, whose creation,
// stack growth and end cost about 1.5 % of a fuzz run's instructions. A
// driver that does not keep them closes them at the end of each segment.
//
// Goroutines: the workers (0 .. n-1), and three of no slot of their own:
// the conductor, which starts the segment and ends once every worker is
// idle; the rescue, started by an abort; the closer, which ends idle
// workers. Everything below happens under mu, which every switch carries
// along: the goroutine that switches holds it, and the one that resumes
// takes it over. While the segment runs normally, the worker holding the
// turn does not hold mu: a hand-off takes it, switches, and the worker
// resumed releases it. A worker that finished its body goes idle (active
// false) and parks in the slot of the worker to run next, or of the
// conductor if none is left: the conductor is parked while any worker
// runs, and resumed only once all are idle.
//
// Once the segment is aborted, nobody holds the turn. The first goroutine
// to take mu after the abort starts the drain: from then on mu is a baton,
// held by one goroutine at a time and passed with every switch, that runs
// every parked active worker until it is idle (each returns at once: its
// accesses fail); a worker that goes idle passes the baton on to the next
// one (parkTarget). The worker holding the turn at the abort may never
// come back (a silent worker, parked by the Go runtime or spinning): the
// rescue, a goroutine of its own, takes the baton while that worker runs,
// drains the others (each goes back to the rescue once none is left), and
// ends; the silent worker, if it comes back, resumes the conductor. One
// that never comes back is abandoned, and so is the driver (Blocked): a
// closer ends the idle workers, and one goroutine stays parked in the
// abandoned worker's slot for good (it may come back: then it ends its
// coroutine, and the one parked there resumes and ends).
type turns struct {
	mu     sync.Mutex
	co     []coro // co[p]: slot p
	slot   []int  // slot[g]: where goroutine g is parked (-1: running, or ended)
	active []bool // active[w]: worker w has the segment's body to run (else idle)
	cur    int    // the goroutine that is to hold the turn (-1: every worker finished)
	// taken counts the times a worker took the turn, and holder is the
	// last one: the watchdog's sign of progress, read under mu (turnsTaken),
	// where an atomic store per hand-off (a locked exchange, ten thousand
	// times a run) cost a few percent of a fuzz run.
	taken  int64
	holder int
	// draining: the segment is aborted and mu is the baton; baton[w]:
	// worker w holds it.
	draining bool
	baton    []bool
	// seg is the segment under way (or the last one), epoch counts the
	// segments, over: the conductor saw every worker idle. A conductor or
	// rescue that takes mu after its segment is over ends at once.
	seg   *detSched
	epoch int64
	over  bool
	// body is what the segment's workers run; closing: the idle workers
	// end when resumed (close).
	body    func(w int)
	closing bool
	// spawns counts the coroutines made (for the tests: kept ones are
	// made once).
	spawns int
	// panicked is a panic of the driver's own code on a worker, re-raised
	// by the conductor (a coroutine's panic would reach whoever is parked
	// in its slot).
	panicked any
}

// coro is a slot: worker p's coroutine, and who is parked in it.
type coro struct {
	// next and yield are the coroutine's; nextDue: the next switch on the
	// slot goes through next (else yield).
	next    func() (struct{}, bool)
	yield   func(struct{}) bool
	nextDue bool
	occ     int // who is parked in it (-1: its worker ended, or never began)
}

// none is no goroutine.
const none = -1

// The goroutines of no slot (see turns) are numbered after the workers,
// which are as many as slots.
func (t *turns) conductor() int { return len(t.co) }
func (t *turns) rescuer() int   { return len(t.co) + 1 }
func (t *turns) closer() int    { return len(t.co) + 2 }

// grow makes room for n workers (mu held, no goroutine of no slot
// parked: between segments, their numbers change).
func (t *turns) grow(n int) {
	m := len(t.co)
	if m >= n && len(t.slot) > 0 {
		return
	}
	for len(t.co) < n {
		t.co, t.active, t.baton = append(t.co, coro{occ: none}), append(t.active, false), append(t.baton, false)
	}
	slot := make([]int, len(t.co)+3)
	for g := range slot {
		slot[g] = none
	}
	copy(slot, t.slot[:min(m, len(t.slot))])
	t.slot = slot
}

// parked reports whether goroutine g is parked in a slot.
func (t *turns) parked(g int) bool { return t.slot[g] >= 0 }

// start makes ready the segment of s, whose workers run body: their
// coroutines parked, idle ones given the body, new ones made for the
// others. It returns the segment's epoch.
func (s *detSched) start(threads int, body func(w int)) int64 {
	t := s.turns
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.slot) > 0 && (t.parked(t.conductor()) || t.parked(t.rescuer()) || t.parked(t.closer())) {
		panic("driver: a segment starts while a goroutine of the last one is parked (a bug)")
	}
	t.grow(threads)
	t.epoch++
	t.seg, t.body = s, body
	t.cur, t.draining, t.over, t.closing, t.panicked = none, false, false, false, nil
	for _, w := range s.workers {
		if t.co[w].occ == none {
			t.spawn(w)
		}
		t.active[w], t.baton[w] = true, false
	}
	return t.epoch
}

// spawn makes worker w's coroutine, parked in its own slot and not
// started: it runs the body of each segment it is given, idle in between,
// until it is resumed idle while the workers close.
func (t *turns) spawn(w int) {
	c := &t.co[w]
	t.slot[w], c.occ, c.nextDue = w, w, true
	t.spawns++
	c.next, _ = iter.Pull(func(yield func(struct{}) bool) {
		growStack()
		t.co[w].yield = yield
		for !t.closing {
			s := t.seg
			s.resumed(w)
			s.run(w, t.body)
			if t.closing {
				break // abandoned, and back
			}
			t.switchTo(w, t.parkTarget())
		}
		t.end(w)
	})
}

// run is worker w running the segment's body, then going idle; it
// returns holding mu.
func (s *detSched) run(w int, body func(int)) {
	defer s.ran(w)
	body(w)
}

// ran is worker w going idle, with mu (the baton, or taken now: at the
// end of its segment's body, or after a silent worker comes back).
func (s *detSched) ran(w int) {
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
	s.active[w] = false
	s.crew.exit(w)
}

// parkTarget is whom a worker that went idle resumes (mu held): the
// worker to run next, or the conductor once none is left; when draining,
// the next parked active worker, else the rescue that started the drain
// (a worker still runs: the one holding the turn at the abort), else the
// conductor (every worker is idle).
func (t *turns) parkTarget() int {
	switch {
	case !t.draining && t.cur >= 0:
		return t.cur
	case !t.draining:
		return t.conductor()
	}
	if x := t.parkedActive(); x >= 0 {
		return x
	}
	if t.parked(t.rescuer()) {
		return t.rescuer()
	}
	if t.parked(t.conductor()) && t.allIdle() {
		return t.conductor()
	}
	panic("driver: a drained worker has nobody to pass the baton to (a bug)")
}

// switchTo parks goroutine me (holding mu) in the slot of the parked
// goroutine g and runs g; it returns when someone resumes me, mu then
// held again.
func (t *turns) switchTo(me, g int) {
	p := t.slot[g]
	if p < 0 {
		panic(fmt.Sprintf("driver: goroutine %d hands the turn to %d, which is not parked (a bug)", me, g))
	}
	c := &t.co[p]
	c.occ, t.slot[me], t.slot[g] = me, p, none
	if c.nextDue {
		c.nextDue = false
		c.next()
	} else {
		c.nextDue = true
		c.yield(struct{}{})
	}
}

// handOver is worker w, which holds the turn, handing it to worker n
// (another live worker, or the next one the scheduler picks when w stops)
// and waiting until it is handed back. Handing it to itself (the
// late-write policy's choice may be w) keeps the turn without a switch.
// Its callers saw the segment not aborted; an abort since then is seen
// under mu (draining, or by the worker resumed, which starts the drain).
func (s *detSched) handOver(w, n int) {
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
	if s.takeTurn(w) { // resumed, written out
		s.mu.Unlock()
		return
	}
	s.resumedAborted(w)
}

// resumed is active worker w running again, holding mu: it keeps mu as
// the baton if the segment is aborted, else releases it, the turn its
// own. (handOver has it written out: thousands of times a run, a call
// costs about 1 % of the hand-off.)
func (s *detSched) resumed(w int) {
	if s.takeTurn(w) {
		s.mu.Unlock()
		return
	}
	s.resumedAborted(w)
}

// takeTurn is resumed's common case: worker w takes the turn, unless the
// segment is aborted.
func (s *detSched) takeTurn(w int) bool {
	if t := s.turns; !t.draining && t.cur == w && !s.d.aborted.Load() {
		t.taken++
		t.holder = w
		return true
	}
	return false
}

// resumedAborted is resumed once the segment is aborted.
func (s *detSched) resumedAborted(w int) {
	if !s.d.aborted.Load() && !s.draining {
		panic(fmt.Sprintf("driver: worker %d resumed while the turn is %d's (a bug)", w, s.cur))
	}
	s.draining = true
	s.baton[w] = true
}

// turnsTaken is, for the watchdog, how many times a worker took the turn
// and which one holds it; busy: mu is held, a hand-off is under way (a
// sign of progress too).
func (s *detSched) turnsTaken() (taken int64, holder int, busy bool) {
	if !s.mu.TryLock() {
		return 0, 0, true
	}
	defer s.mu.Unlock()
	return s.taken, s.holder, false
}

// conduct is the conductor of the segment of epoch: it hands the turn to
// the first worker, or drains the segment if it is already aborted, and
// waits, parked, until every worker is idle.
func (s *detSched) conduct(first int, epoch int64) {
	t := s.turns
	t.mu.Lock()
	if t.epoch != epoch || t.over {
		t.mu.Unlock()
		return // drained by the rescue before it began
	}
	t.cur = first
	for {
		if t.closing {
			t.closeAs(t.conductor())
			return
		}
		if s.d.aborted.Load() {
			t.draining = true
		}
		if t.allIdle() {
			break
		}
		x := t.cur
		if t.draining {
			x = t.parkedActive()
		}
		t.switchTo(t.conductor(), x)
	}
	t.over = true
	p := t.panicked
	t.mu.Unlock()
	if p != nil {
		panic(p)
	}
}

// rescue drains the aborted segment of epoch beside the worker holding
// the turn, which may never come back (see turns).
func (s *detSched) rescue(epoch int64) {
	t := s.turns
	t.mu.Lock()
	if t.epoch != epoch || t.over || t.closing {
		t.mu.Unlock()
		return
	}
	t.draining = true
	for {
		if t.closing {
			t.closeAs(t.rescuer())
			return
		}
		x := t.parkedActive()
		if x < 0 {
			break
		}
		t.switchTo(t.rescuer(), x)
	}
	if t.parked(t.conductor()) && t.allIdle() {
		panic("driver: the rescue ends with every worker idle and the conductor parked (a bug)")
	}
	t.mu.Unlock()
}

// close ends every idle worker's coroutine, as the closer: at once if no
// worker runs; else the one that does (abandoned) ends when it comes
// back, if ever.
func (t *turns) close() {
	t.mu.Lock()
	t.closeAs(t.closer())
}

// closeAs ends the idle workers' coroutines as goroutine me, which holds
// mu, and releases it. Each ends when resumed, and the goroutine parked
// in its slot resumes: an idle worker ends in turn, a goroutine of no slot
// goes on closing here. One may stay parked in the slot of a worker that
// still runs (abandoned).
func (t *turns) closeAs(me int) {
	t.closing = true
	for {
		x := none
		for w := range t.co {
			if t.co[w].occ != none && !t.active[w] && t.slot[w] >= 0 {
				x = w
				break
			}
		}
		if x < 0 {
			t.mu.Unlock()
			return
		}
		t.switchTo(me, x)
	}
}

// end is worker w's coroutine ending (mu held): its slot dies, and the
// goroutine parked there resumes, holding mu.
func (t *turns) end(w int) {
	q := t.co[w].occ
	t.co[w].occ, t.slot[q] = none, none
}

// parkedActive is an active worker whose coroutine is parked (-1: none).
func (t *turns) parkedActive() int {
	for w, a := range t.active {
		if a && t.slot[w] >= 0 {
			return w
		}
	}
	return none
}

// allIdle reports whether every worker is idle.
func (t *turns) allIdle() bool {
	for _, a := range t.active {
		if a {
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
// goroutine with the smallest stack (in every segment, unless the driver
// keeps its workers): it grew in steps deep inside the target's calls,
// each step copying the stack and adjusting every frame on it (about 2 %
// of a fuzz run's CPU time; 1.6 % of its instructions).
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
