package driver

import (
	"errors"
	"math/rand/v2"
	"runtime"
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
	yield    *rand.Rand // free: seeded yields
	_        [64]byte
}

// detSched is the deterministic scheduler: one worker runs at a time, and
// at every scheduling point a seeded choice picks the next one. A worker
// holds the turn from receiving on its channel until it hands the turn on;
// everything a worker does, including logging, happens while it holds it,
// so the scheduler's fields need no lock. Once the segment is aborted
// nobody holds the turn: every worker is woken and returns without
// touching the scheduler's state.
type detSched struct {
	d     *Driver
	rng   *rand.Rand
	stick float64
	turn  []chan struct{}
	live  []int
	clock int64 // the logical clock of the log timestamps
	// beat is the watchdog's sign of progress, which it reads from its own
	// goroutine: a count of the hand-overs of the turn and of the
	// invocations (ticks, under the turn), times 1<<16, plus the worker
	// holding the turn.
	beat  atomic.Int64
	ticks int64
	// returned[w] is set when worker w's goroutine returns; the last one
	// to return closes done.
	returned []atomic.Bool
	running  atomic.Int32
	done     chan struct{}
}

// exit is the last thing worker w's goroutine does.
func (s *detSched) exit(w int) {
	s.returned[w].Store(true)
	if s.running.Add(-1) == 0 {
		close(s.done)
	}
}

func (s *detSched) pick(cur int) int {
	if cur >= 0 && s.stick > 0 && s.rng.Float64() < s.stick {
		return cur
	}
	return s.live[s.rng.IntN(len(s.live))]
}

// hand gives the turn to worker n. It never blocks: the one turn, or an
// abort's wake-up, is all a worker's channel ever holds.
func (s *detSched) hand(n int) {
	select {
	case s.turn[n] <- struct{}{}:
	default:
	}
}

// yield is a scheduling point of worker w, which holds the turn.
func (s *detSched) yield(w int) {
	if s.d.aborted.Load() {
		return
	}
	if n := s.pick(w); n != w {
		s.hand(n)
		<-s.turn[w]
		if !s.d.aborted.Load() { // else woken by an abort, with the others
			s.took(w)
		}
	}
}

// took tells the watchdog that worker w, which holds the turn, has taken
// it or invoked an operation: the turn changing hands and operations being
// invoked are the signs of progress it looks for (a worker that keeps the
// turn through all its accesses cannot do so for long: it invokes
// operations, or gets stuck after StuckAccesses). One atomic store per
// hand-over: one per region access would cost the deterministic scheduler
// several percent of its throughput.
func (s *detSched) took(w int) {
	s.ticks++
	s.beat.Store(s.ticks<<16 | int64(w))
}

// holder is the worker holding the turn at beat b.
func holder(b int64) int { return int(b & (1<<16 - 1)) }

// finish takes worker w out and hands the turn on.
func (s *detSched) finish(w int) {
	if s.d.aborted.Load() {
		return
	}
	for i, x := range s.live {
		if x == w {
			s.live = append(s.live[:i], s.live[i+1:]...)
			break
		}
	}
	if len(s.live) > 0 {
		s.hand(s.pick(-1))
	}
}

// Access implements pmem.AccessHook for the deterministic scheduler.
func (s *detSched) Access(w int, kind pmem.AccessKind, off uint64) error {
	d := s.d
	if d.aborted.Load() {
		return errAborted
	}
	ws := &d.ws[w]
	ws.accesses++
	ws.opAcc++
	ws.lastKind, ws.lastOff = kind, off
	d.segAccesses++
	if d.crashAt > 0 && d.segAccesses == d.crashAt {
		if d.crashAction != nil {
			d.crashAction()
		}
		return pmem.ErrCrashed
	}
	if ws.inOp && ws.opAcc > d.cfg.StuckAccesses {
		d.setStuck(w)
		return errAborted
	}
	s.yield(w)
	if d.aborted.Load() {
		return errAborted // woken by an abort
	}
	return nil
}

// freeHook is the access hook of the free scheduler: it counts each
// worker's accesses in the worker's own state (no shared counter), crashes
// the region at the chosen access of the chosen worker, spots stuck
// operations, and yields at random.
type freeHook struct{ d *Driver }

func (h freeHook) Access(w int, kind pmem.AccessKind, off uint64) error {
	d := h.d
	ws := &d.ws[w]
	ws.accesses++
	ws.opAcc++
	ws.lastKind, ws.lastOff = kind, off
	if d.aborted.Load() {
		return errAborted
	}
	if w == d.crashWorker && ws.accesses == d.crashAt {
		if d.crashAction != nil {
			d.crashAction()
		}
		return pmem.ErrCrashed
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
