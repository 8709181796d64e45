package driver

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/pmlin/pmlin/pmem"
)

// errAborted is what every region access returns once the driver stops a
// segment early (a stuck or failed operation, or cancellation). It does
// not wrap pmem.ErrCrashed: the region does not crash.
var errAborted = errors.New("driver: segment aborted")

// wstate is the per-worker state the access hooks keep. Only the worker's
// own goroutine touches it during a segment; the padding keeps workers off
// each other's cache lines (no false sharing to serialise them).
type wstate struct {
	accesses int64 // region accesses in this segment
	opAcc    int64 // accesses of the current operation
	opStart  int64 // the current operation's invocation timestamp (Driver.opElapsed)
	inOp     bool
	lastKind pmem.AccessKind
	lastOff  uint64
	// site is the site of its last access (rare.go), while the driver
	// counts sites.
	site uint32
	// loaded are the offsets of the worker's last loads in its operation
	// (nLoaded of them, the late-write policy's: holdable).
	loaded  [lateLoads]uint64
	nLoaded uint32
	yield   *rand.Rand // free: seeded yields
	// waiting (deterministic, while a worker is stalled or held): the
	// worker waits by design, its last access other than a load being a
	// declared wait (pmem.Worker.Wait); round counts the loads since its
	// last access other than a load (declared).
	waiting bool
	round   int64
	// limit (deterministic) is the stuck bound of the current operation:
	// StuckAccesses, or the stall bound from the stall on.
	limit int64
	// beat (free) publishes the worker's progress to the watchdog and
	// says who owns its log: a count<<2 | where, the count going up every
	// beatEvery accesses, at every invocation and at every return from
	// the target; beatClaimed once the watchdog took the log (claim).
	// last is the beat the worker published last.
	beat atomic.Int64
	last int64
	_    [64]byte
}

// Where a free worker is, in its beat. The watchdog may read (and end) the
// log of a worker that never returned only while it runs the target's
// code, between an invocation logged and published and the return that
// it has not yet claimed back: a worker in the driver's own code may be
// writing its log, and returns soon (the segment is aborted). A worker
// that lost its CPU between its last check of the abort and a log write
// once had its log read while it wrote it (found by -race, on a loaded
// machine).
const (
	inDriver    = 0
	inTarget    = 1
	beatClaimed = -1
)

// publish stores worker ws's next beat at place where; false if the
// watchdog claimed its log (the worker then touches it no more).
func (ws *wstate) publish(where int64) bool {
	old := ws.last
	ws.last = (old>>2+1)<<2 | where
	return ws.beat.CompareAndSwap(old, ws.last)
}

// claim takes, for the watchdog, the log of a worker whose goroutine has
// not returned, if the worker is in the target's code: true if it did (or
// had), false if the worker is in the driver's code.
func (ws *wstate) claim() bool {
	for {
		b := ws.beat.Load()
		switch {
		case b == beatClaimed:
			return true
		case b&3 == inDriver:
			return false
		case ws.beat.CompareAndSwap(b, beatClaimed):
			return true
		}
	}
}

// claimed reports whether the watchdog took worker w's log (free).
func (d *Driver) claimed(w int) bool {
	return d.det == nil && d.ws[w].beat.Load() == beatClaimed
}

// beatEvery is how often (in accesses, a power of two) a worker of the
// free scheduler publishes its progress to the watchdog: an atomic store
// per access would cost the free scheduler more than the watchdog is worth.
const beatEvery = 64

// detSched is the deterministic scheduler: one worker runs at a time, and
// at every scheduling point a seeded choice picks the next one. A worker
// holds the turn while it runs; everything it does, including logging,
// happens then, so the scheduler's fields need no lock. Once the segment is
// aborted nobody holds the turn: every worker is run to its end and
// returns without touching the scheduler's state.
//
// The turn is handed on through coroutines (iter.Pull), not channels:
// each worker runs in a coroutine of its own, and the worker that holds
// the turn switches directly to the one chosen next (handoff.go). A
// coroutine switch hands the thread over directly, where a channel
// hand-off parks one goroutine and readies another through the Go
// scheduler. The choices, and so the histories, are those the channels
// made.
type detSched struct {
	d  *Driver
	dr draws
	// stickAt is the stick probability as a bound of the draws' 53 bits
	// (draws.below; 0: stick 0, no draw).
	stickAt uint64
	live    []int
	clock   int64 // the logical clock of the log timestamps
	*turns        // the driver's (handoff.go)
	epoch   int64 // the segment's, in turns
	workers []int // the segment's workers
	// beat is a sign of progress the watchdog reads from its own
	// goroutine: a count of the invocations and of the turns a worker kept
	// (ticks, under the turn). The turns handed on are counted under mu
	// (turns.taken).
	beat  atomic.Int64
	ticks int64
	*crew
	// The progress check (stall.go): the worker that makes the segment's
	// stallAt-th access (0: none) inside an operation is stopped, stalled
	// (-1: none) until released.
	stallAt int64
	stalled int
	stall   *Stall
	// late is the late-write policy (late.go; nil: off); lc the late
	// crash (latecrash.go; nil: off).
	late *late
	lc   *lateCrash
	// slowFrom is the segment's access from which Access takes its
	// special part (startSlow): until then no rule applies, and Access
	// checks one count instead of each rule.
	slowFrom int64
}

func (s *detSched) pick(cur int) int {
	if cur >= 0 && s.stickAt > 0 && s.dr.below(s.stickAt) { // as in Access
		return cur
	}
	if is64bit {
		// intN, inlined (a call to it was a tenth of a scheduling
		// point's instructions)
		return s.live[s.dr.reduce(s.dr.Uint64(), uint64(len(s.live)))]
	}
	return s.live[s.dr.intN(len(s.live))]
}

// pickOther picks a live worker other than w, if there is one.
func (s *detSched) pickOther(w int) int {
	n := len(s.live)
	if n < 2 {
		return s.pick(w)
	}
	var i int
	if is64bit {
		i = s.dr.reduce(s.dr.Uint64(), uint64(n-1)) // intN, inlined
	} else {
		i = s.dr.intN(n - 1)
	}
	if s.live[i] == w {
		i = n - 1 // w's place taken by the last one
	}
	return s.live[i]
}

// yield is a scheduling point of worker w, which holds the turn. Once the
// segment is aborted it draws nothing: the rescue may be running a worker
// back from an aborted access beside the one that held the turn (see
// turns), and the two must not both draw (the race detector saw a
// target that ignored the aborted access's error reach this point while
// the holder drew in Access, once in a loaded go test -race run of
// examples/hazard).
func (s *detSched) yield(w int) {
	if s.d.aborted.Load() {
		return
	}
	s.yieldTo(w, s.pick(w))
}

// yieldTo is a scheduling point of worker w at which worker n (maybe w)
// is chosen to run next.
func (s *detSched) yieldTo(w, n int) {
	if s.d.aborted.Load() {
		return
	}
	if n != w {
		s.handOver(w, n)
	}
}

// took tells the watchdog that the worker holding the turn has taken
// it, kept it at a scheduling point, or invoked an operation: the turn
// changing hands (counted by the hand-off, turns.taken) and operations
// being invoked are the signs of progress it looks for (a worker that
// keeps the turn through all its accesses cannot do so for long: it
// invokes operations, or gets stuck after StuckAccesses). An atomic store
// per region access would cost the deterministic scheduler several percent
// of its throughput.
func (s *detSched) took() {
	s.ticks++
	s.beat.Store(s.ticks)
}

// invoked is worker w's invocation of an operation, logged: what a
// watchdog may read of it if the target never comes back (the operation,
// the counters) is published before the target runs.
func (d *Driver) invoked(w int) {
	if s := d.det; s != nil {
		ws := &d.ws[w]
		ws.limit, ws.round = d.cfg.StuckAccesses, 0
		if s.stalled >= 0 || s.holding() {
			ws.limit = d.stallBound
		}
		s.took()
		return
	}
	d.ws[w].publish(inTarget) // a worker in the driver's code is never claimed
}

// back is worker w's return from the target's code; false if the
// watchdog claimed its log meanwhile (free: see claim).
func (d *Driver) back(w int) bool {
	return d.det != nil || d.ws[w].publish(inDriver)
}

// finish takes worker w out and hands the turn on.
func (s *detSched) finish(w int) {
	if s.d.aborted.Load() {
		return
	}
	s.drop(w)
	if s.stalled >= 0 {
		s.leftStall(w)
	}
	s.cur = -1
	if len(s.live) > 0 {
		s.cur = s.pick(-1) // resumed when w goes idle (handoff.go)
	}
	if s.late != nil {
		s.lateFinish()
	}
}

// Exclusive marks the deterministic scheduler as a pmem.ExclusiveHook: a
// worker makes its access holding the turn, which passes on only at its
// next access, through the hand-off's mutex and coroutine switch (seen by
// the race detector); once the segment is aborted no access gets past
// Access. A silent worker the watchdog gave up on may still be making its
// access: the crash harness then uses the region no more.
func (s *detSched) Exclusive() {}

// Access implements pmem.AccessHook for the deterministic scheduler. It
// runs at every region access (thirty thousand times a fuzz run), so it
// is written for its common case: the crash point and the progress
// check's and the late-write policy's rules (special) are looked at only
// from the segment's first access where one may apply (slowFrom), and the
// scheduler's choice (pick; pickOther at a declared wait) is made here,
// its draws inlined.
func (s *detSched) Access(w int, kind pmem.AccessKind, off uint64) error {
	d := s.d
	if kind == pmem.AccessVolatile && s.late == nil {
		return nil // a switching point of the late-write policy only
	}
	if d.aborted.Load() {
		return errAborted
	}
	ws := &d.ws[w]
	ws.accesses++
	ws.opAcc++
	prev := ws.lastKind
	ws.lastKind, ws.lastOff = kind, off
	d.segAccesses++
	if d.segAccesses >= s.slowFrom {
		if done, err := s.special(w, ws, prev, kind, off); done {
			return err
		}
	}
	if ws.inOp && ws.opAcc > ws.limit {
		d.setStuck(w)
		return errAborted
	}
	n := w
	switch {
	case kind == pmem.AccessWait:
		// A worker that waits by design waits for the others: it does
		// not keep the turn (the stick probability would have it spin on).
		n = s.pickOther(w)
	case s.stickAt > 0 && s.dr.below(s.stickAt):
		// w keeps the turn (as pick would have it; written out: a method
		// would not be inlined)
	case is64bit:
		n = s.live[s.dr.reduce(s.dr.Uint64(), uint64(len(s.live)))] // intN, inlined
	default:
		n = s.live[s.dr.intN(len(s.live))]
	}
	if n != w {
		s.handOver(w, n)
		return s.resumedErr()
	}
	// w kept the turn: an abort since the check above races with the
	// access either way (the segment's accesses fail from the next one).
	return nil
}

// resumedErr is the result of an access whose scheduling point was taken:
// errAborted if the segment was aborted meanwhile (the worker woken by the
// abort).
func (s *detSched) resumedErr() error {
	if s.d.aborted.Load() {
		return errAborted
	}
	return nil
}

// special is the part of Access that applies from the segment's access
// slowFrom on: the crash point, the late crash, the rule of declared waits
// while a worker is stopped or held (wstate.declared), the progress
// check's rules (stall.go) and the late-write policy's (late.go), at
// worker w's access of kind and off (state ws; prev: the kind of its
// access before). done:
// the access ends there, with err (a crash; or the scheduling point was
// taken there, the worker stopped or held, and back, and the access is
// made at once); else the scheduler makes its choice.
func (s *detSched) special(w int, ws *wstate, prev, kind pmem.AccessKind, off uint64) (done bool, err error) {
	d := s.d
	if d.segAccesses == d.crashAt {
		return true, d.crashHere()
	}
	if ss := d.sites; ss != nil && kind != pmem.AccessVolatile && ss.step(ws, kind, d.rare) {
		d.rareHit = true
		return true, d.crashHere()
	}
	was := ws.waiting
	if s.stalled >= 0 || s.holding() {
		ws.declared(kind)
	}
	if s.lc != nil && s.lc.phase != lcIdle || s.stalled >= 0 || s.stallAt > 0 && d.segAccesses >= s.stallAt {
		// (a call of its own: the values it needs afterwards are saved
		// on this path only)
		if done, err := s.lateCrashOrStall(w, ws, was, prev, kind, off); done {
			return true, err
		}
	}
	if s.late != nil && kind == pmem.AccessLoad {
		ws.noteLoad(off) // for a hold at a store (holdable)
	}
	switch l := s.late; {
	case l == nil:
	case l.idle(w, ws, kind, off):
		l.casKnown = false // all lateStep would do
	case s.lateStep(w, ws, was, kind, off):
		return true, s.resumedErr()
	}
	return false, nil
}

// lateCrashOrStall is special's late crash and progress check, when one
// of them may apply (was: ws waited by design before this access).
func (s *detSched) lateCrashOrStall(w int, ws *wstate, was bool, prev, kind pmem.AccessKind, off uint64) (done bool, err error) {
	d := s.d
	if s.lc != nil && s.lc.phase != lcIdle && s.lc.step(d.region, d.pids[w], w, kind, off) {
		return true, d.crashHere()
	}
	if s.stalled >= 0 {
		s.stalledStep(ws, kind)
	} else if s.stallAt > 0 && d.segAccesses >= s.stallAt && ws.inOp && (prev == pmem.AccessCAS || prev == pmem.AccessStore) && ws.opAcc > 1 && len(s.live) > 1 {
		s.stop(w, kind, off) // until released: then the access is made
		return true, s.resumedErr()
	}
	return false, nil
}

// startSlow sets slowFrom at the start of a segment, once the crash
// point, the stall point, the late-write policy and the late crash are
// known, and again when a stall ends: every access while a policy, a late
// crash or a stall is on, else the first of the crash point and the stall
// point. A stall starts at the stall point, and nothing else turns a rule
// on during a segment.
func (s *detSched) startSlow() {
	s.slowFrom = math.MaxInt64
	switch {
	case s.late != nil || s.lc != nil || s.stalled >= 0 || s.d.sites != nil:
		s.slowFrom = 0
	case s.d.crashAt > 0:
		s.slowFrom = s.d.crashAt
	}
	if s.stallAt > 0 {
		s.slowFrom = min(s.slowFrom, s.stallAt)
	}
}

// crashHere is the crash at the segment's crash point.
func (d *Driver) crashHere() error {
	if d.crashAction != nil {
		d.crashAction()
	}
	return pmem.ErrCrashed
}

// freeHook is the access hook of the free scheduler: it counts each
// worker's accesses in the worker's own state (no shared counter), crashes
// the region at the chosen access of the chosen worker, spots stuck
// operations, and yields at random.
type freeHook struct{ d *Driver }

func (h freeHook) Access(w int, kind pmem.AccessKind, off uint64) error {
	if kind == pmem.AccessVolatile {
		return nil // the goroutines interleave there anyway; not a region access
	}
	d := h.d
	ws := &d.ws[w]
	ws.accesses++
	ws.opAcc++
	ws.lastKind, ws.lastOff = kind, off
	if d.aborted.Load() {
		return errAborted
	}
	if w == d.crashWorker && ws.accesses == d.crashAt {
		return d.crashHere()
	}
	if ws.accesses&(beatEvery-1) == 0 && !ws.publish(ws.last&3) {
		return errAborted
	}
	if ws.inOp && ws.opAcc > d.cfg.StuckAccesses && ws.opAcc&1023 == 0 && d.opElapsed(ws) > d.cfg.StuckAfter {
		d.setStuck(w)
		return errAborted
	}
	if ws.yield != nil && ws.yield.Float64() < d.cfg.Yield {
		runtime.Gosched()
	}
	return nil
}

// catch, deferred by a worker's goroutine, turns a panic of the target's
// code (during an operation) into a failed operation, as an error would
// be: it stops the segment and is reported. A panic of the driver's own
// code goes on.
func (d *Driver) catch(w int) {
	p := recover()
	if p == nil {
		return
	}
	if !d.ws[w].inOp {
		panic(p)
	}
	d.ws[w].inOp = false
	if !d.back(w) {
		return // abandoned meanwhile: the log is the watchdog's
	}
	d.procs[w].interrupted()
	d.setOpErr(w, NewPanicError(p, debug.Stack()))
}
