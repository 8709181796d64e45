package driver

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"time"

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
	opStart  int64 // when the current operation was invoked (its timestamp)
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
// so the scheduler's fields need no lock.
type detSched struct {
	d     *Driver
	rng   *rand.Rand
	stick float64
	turn  []chan struct{}
	live  []int
	done  chan struct{}
	clock int64 // the logical clock of the log timestamps
}

func (s *detSched) pick(cur int) int {
	if cur >= 0 && s.stick > 0 && s.rng.Float64() < s.stick {
		return cur
	}
	return s.live[s.rng.IntN(len(s.live))]
}

// yield is a scheduling point of worker w, which holds the turn.
func (s *detSched) yield(w int) {
	if n := s.pick(w); n != w {
		s.turn[n] <- struct{}{}
		<-s.turn[w]
	}
}

// finish takes worker w out and hands the turn on.
func (s *detSched) finish(w int) {
	for i, x := range s.live {
		if x == w {
			s.live = append(s.live[:i], s.live[i+1:]...)
			break
		}
	}
	if len(s.live) == 0 {
		close(s.done)
		return
	}
	s.turn[s.pick(-1)] <- struct{}{}
}

// Access implements pmem.AccessHook for the deterministic scheduler.
func (s *detSched) Access(w int, kind pmem.AccessKind, off uint64) error {
	d := s.d
	ws := &d.ws[w]
	ws.accesses++
	ws.opAcc++
	ws.lastKind, ws.lastOff = kind, off
	d.segAccesses++
	if d.aborted.Load() {
		return errAborted
	}
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
	if ws.inOp && ws.opAcc > d.cfg.StuckAccesses && ws.opAcc&1023 == 0 && time.Since(d.base)-time.Duration(ws.opStart) > d.cfg.StuckAfter {
		d.setStuck(w)
		return errAborted
	}
	if ws.yield != nil && ws.yield.Float64() < d.cfg.Yield {
		runtime.Gosched()
	}
	return nil
}
