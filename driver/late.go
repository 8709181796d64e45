package driver

import (
	"math/rand/v2"

	"github.com/pmlin/pmlin/pmem"
)

// The late-write policy (Config.Late; deterministic scheduler).
//
// Some interleavings need one worker to be overtaken in a narrow window
// and then to act on what it read before: a helper that read a status,
// then installs an RDCSS after the operation was decided and rolled back;
// an advancer that read the epoch, then stores it after two others moved
// it on. The uniform scheduler rarely keeps one worker out for the
// dozens of steps this takes, and when it does, the word has usually moved
// on for good by the time the worker comes back. The policy makes such a
// window a seeded choice, in the spirit of PCT (Burckhardt, Kothari,
// Musuvathi and Nagarakatte, "A randomized scheduler with probabilistic
// guarantees of finding bugs", ASPLOS 2010), where a thread whose
// priority drops at a seeded step stays descheduled while others run; here
// the point where it comes back is tied to the word it was about to write:
//
//   - at a write inside an operation (a region store or CAS, or a
//     scheduling point on the target's volatile state, pmem.Worker.Volatile),
//     with probability Config.Late the worker is held before the write is
//     made, while another worker is live and no worker is held or stalled;
//   - it comes back, and runs next, right after the others have written
//     that word (the same region word, or volatile points of the same key)
//     a seeded 1 to lateMaxWrites times; or once the others made a seeded
//     number of accesses (up to lateMaxWait) without writing it that often;
//     or when the others have all finished or wait by design (Worker.Wait);
//   - in half of the holds that end by writes, once its late write is made
//     it is held again at its next access for good: a worker that wrote late
//     and then stopped, which is what lock-freedom must survive.
//
// While a worker is held, the progress check's rule holds (see stall.go):
// an operation of another worker that makes StallAccesses region accesses
// without returning waits for the held one, and is reported stuck naming
// it. The policy draws from a stream of its own, and the scheduler's
// other draws are those of a run without it, so the holds change nothing
// else of the schedule's choices. Scheduling points on volatile state are
// switching points only in these runs: elsewhere they are ignored, so the
// histories of the other runs stay what they were before the points
// existed.

// Bounds of a hold.
const (
	lateMaxWrites = 4
	lateMaxWait   = 4096
)

// lateKey names what a held write writes: a region word, or the
// target's volatile state of a key.
type lateKey struct {
	volatile bool
	off      uint64
}

// late is the late-write policy's state in a segment.
type late struct {
	rng   *rand.Rand
	p     float64
	held  int // the held worker (-1: none)
	hold  *Stall
	key   lateKey
	need  int   // writes of key by the others that end the hold (0: for good)
	wait  int64 // accesses of the others that end it regardless
	again bool  // held again, for good, after its late write
	wake  bool  // the need-th write is being made: hand over next
	// rehold is the worker to hold for good at its next access (-1: none).
	rehold int
	holds  int64
}

func newLate(seed uint64, p float64) *late {
	return &late{rng: rand.New(rand.NewPCG(seed, 0x1a7e)), p: p, held: -1, rehold: -1}
}

// isWrite says whether an access of kind writes what a key names.
func isWrite(kind pmem.AccessKind) bool {
	return kind == pmem.AccessStore || kind == pmem.AccessCAS || kind == pmem.AccessVolatile
}

// holding says whether the late-write policy holds a worker.
func (s *detSched) holding() bool { return s.late != nil && s.late.held >= 0 }

// lateStep is the policy at worker w's access of kind and off (state ws),
// after the crash and stall rules. It reports whether the access's
// scheduling point was taken here (the worker held and back, or the turn
// handed to the worker whose hold ended): then it is made at once.
func (s *detSched) lateStep(w int, ws *wstate, kind pmem.AccessKind, off uint64) bool {
	l := s.late
	if l.held >= 0 {
		if l.rehold == w {
			l.rehold = -1 // it was overtaken meanwhile: the late write is past
		}
		if l.wake {
			s.unhold()
			s.handOver(w, s.lateReturn())
			return true
		}
		if kind == pmem.AccessWait {
			s.unhold() // it may be the one waited for
			return false
		}
		if isWrite(kind) && (lateKey{kind == pmem.AccessVolatile, off}) == l.key && l.need > 0 {
			if l.need--; l.need == 0 {
				l.wake = true
				return true // the write is made before the held worker comes back
			}
		}
		if l.wait--; l.wait == 0 {
			s.unhold()
			l.again = false
		}
		return false
	}
	ok := s.stalled < 0 && ws.inOp && len(s.live) > 1
	if l.rehold == w {
		l.rehold = -1
		if ok {
			s.holdAt(w, kind, off, 0)
		}
		return ok
	}
	if !ok {
		return false
	}
	if !isWrite(kind) || l.rng.Float64() >= l.p {
		return false
	}
	need := 1 + l.rng.IntN(lateMaxWrites)
	l.wait = 1 + l.rng.Int64N(lateMaxWait)
	l.again = l.rng.IntN(2) == 0
	s.holdAt(w, kind, off, need)
	return true
}

// holdAt holds worker w, which holds the turn, before its access of kind
// and off, until need writes of it by the others (0: for good, until the
// others finish or wait by design); it returns once w runs again.
func (s *detSched) holdAt(w int, kind pmem.AccessKind, off uint64, need int) {
	d, l := s.d, s.late
	ws := &d.ws[w]
	o := &d.procs[w].op
	l.held, l.need, l.wake, l.key = w, need, false, lateKey{kind == pmem.AccessVolatile, off}
	if need == 0 {
		l.wait = 0
	}
	l.hold = &Stall{Proc: d.pids[w], Kind: o.kind, Addrs: append([]uint64(nil), o.addrs...),
		Access: ws.opAcc, AtKind: kind, AtOff: off, Late: true, Until: need, worker: w}
	l.holds++
	s.drop(w)
	for _, x := range s.live {
		if o := &d.ws[x]; o.inOp {
			o.opAcc, o.limit = 0, d.cfg.StallAccesses // counted from the hold
		}
	}
	s.handOver(w, s.pick(-1))
}

// unhold puts the held worker back among the live ones.
func (s *detSched) unhold() {
	l := s.late
	l.hold.Released = true
	s.live = append(s.live, l.held)
	l.held, l.wake = -1, false
	if s.stalled < 0 {
		for _, x := range s.live {
			s.d.ws[x].limit = s.d.cfg.StuckAccesses
		}
	}
}

// lateReturn is the worker whose hold just ended by the others' writes: it
// runs next, and is held again for good at its next access if so drawn.
func (s *detSched) lateReturn() int {
	l := s.late
	w := l.hold.worker
	if l.again {
		l.rehold, l.again = w, false
	}
	return w
}

// lateFinish is the policy when a worker finished its share (finish): a
// hold whose last write was made, or whose worker nobody else is left to
// overtake, ends, and the held worker runs next.
func (s *detSched) lateFinish() {
	l := s.late
	if l.held < 0 || !l.wake && len(s.live) > 0 {
		return
	}
	wake := l.wake
	s.unhold()
	if wake {
		s.after = s.lateReturn()
	} else {
		l.again = false
		s.after = s.live[len(s.live)-1]
	}
}
