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
//   - at a CAS inside an operation, or at a scheduling point on the
//     target's volatile state (pmem.Worker.Volatile), the worker is held
//     before the access is made, with probability Config.Late (at least
//     lateVolatile at a volatile point), while another worker is live, no
//     worker is stalled and fewer than lateMaxHeld are held (two held at
//     once: a helper late, and the owner slow to finish). Not at a store:
//     most stores fill memory nobody else writes yet (a new descriptor);
//   - it comes back, and runs next, right after the others have changed
//     the value of that region word a seeded 1 to lateMaxWrites times (a
//     value seen with Region.Peek at each of their accesses: counting
//     writes would count the CAS that fail), or passed that many volatile
//     points of the same key; or once they made a seeded number of
//     accesses, up to lateMaxWait, without doing so; or when they have all
//     finished or one of them waits by design (Worker.Wait);
//   - in half of the holds that end by such changes, once its late CAS is
//     made it is held again at its next access, for good: a worker that
//     wrote late and then stopped, which lock-freedom must survive.
//
// While a worker is held, the progress check's rule holds (see stall.go):
// an operation of another worker that makes StallAccesses region accesses
// without returning waits for the held one, and is reported stuck naming
// it. The policy draws from a stream of its own, so the scheduler's own
// stream of choices is not shifted by it. Scheduling points on volatile
// state are switching points only in these runs: elsewhere they are
// ignored, so the histories of the other runs stay what they were before
// the points existed.

// Bounds of the holds.
const (
	lateMaxWrites = 3
	lateMaxWait   = 1024
	lateMaxHeld   = 2
	// lateVolatile is the least probability of a hold at a scheduling
	// point on volatile state: such points are few (a target marks only
	// the steps between a load of its volatile state and the write that
	// depends on it), and each is such a window.
	lateVolatile = 0.25
)

// lateKey names what a held write writes: a region word, or the
// target's volatile state of a key.
type lateKey struct {
	volatile bool
	off      uint64
}

// late is the late-write policy's state in a segment.
type late struct {
	rng    *rand.Rand
	p      float64
	region *pmem.Region // nil: changes of value are not seen, writes are counted
	held   []*hold
	// rehold is the worker to hold for good at its next access (-1: none).
	rehold int
	holds  int64
}

// hold is a held worker.
type hold struct {
	w   int
	st  *Stall
	key lateKey
	// need is how many more changes of the word's value (or writes of a
	// volatile key) end the hold (0: none do, it is for good); wait how
	// many more accesses of the others end it regardless.
	need int
	wait int64
	// again: held again, for good, right after its late write.
	again bool
	// wake: the last write it waits for is being made (a volatile key):
	// it comes back at the next access.
	wake bool
	// byValue: the key is a region word, whose changes of value are
	// counted (Region.Peek; last is the value seen last), not the writes
	// to it, many of which are CAS that fail.
	byValue bool
	last    uint64
}

func newLate(seed uint64, p float64, r *pmem.Region) *late {
	return &late{rng: rand.New(rand.NewPCG(seed, 0x1a7e)), p: p, region: r, rehold: -1}
}

// isWrite says whether an access of kind writes what a key names.
func isWrite(kind pmem.AccessKind) bool {
	return kind == pmem.AccessStore || kind == pmem.AccessCAS || kind == pmem.AccessVolatile
}

// holdable says whether a worker may be held before an access of kind: a
// CAS, which acts on a value read before, or a step on volatile state.
// Not a store: most stores fill memory nobody else writes yet (a new
// descriptor), and a hold there would wait out its bound for nothing.
func holdable(kind pmem.AccessKind) bool {
	return kind == pmem.AccessCAS || kind == pmem.AccessVolatile
}

// holding says whether the late-write policy holds a worker.
func (s *detSched) holding() bool { return s.late != nil && len(s.late.held) > 0 }

// changed says whether the held word has now changed value for the last
// of the times h waits for.
func (h *hold) changed(r *pmem.Region) bool {
	if !h.byValue || h.need == 0 {
		return false
	}
	if v := r.Peek(h.key.off); v != h.last {
		h.last = v
		h.need--
	}
	return h.need == 0
}

// lateStep is the policy at worker w's access of kind and off (state ws),
// after the crash and stall rules. It reports whether the access's
// scheduling point was taken here (the worker held and back, or the turn
// handed to a worker whose hold ended): then the access is made at once.
func (s *detSched) lateStep(w int, ws *wstate, kind pmem.AccessKind, off uint64) bool {
	l := s.late
	for i := 0; i < len(l.held); i++ {
		h := l.held[i]
		if h.wake || h.changed(l.region) {
			s.unhold(i)
			s.handOver(w, s.lateReturn(h))
			return true
		}
		if kind == pmem.AccessWait || h.wait == 1 {
			// A declared wait may be for the held worker; a hold that
			// waited out its bound ends.
			h.again = false
			s.unhold(i)
			i--
			continue
		}
		h.wait--
		if !h.byValue && h.need > 0 && isWrite(kind) && (lateKey{kind == pmem.AccessVolatile, off}) == h.key {
			if h.need--; h.need == 0 {
				h.wake = true
				return true // the write is made before the held worker comes back
			}
		}
	}
	ok := s.stalled < 0 && ws.inOp && len(s.live) > 1 && len(l.held) < lateMaxHeld
	if l.rehold == w {
		l.rehold = -1
		if ok {
			s.holdAt(w, kind, off, &hold{})
		}
		return ok
	}
	p := l.p
	if kind == pmem.AccessVolatile {
		p = max(p, lateVolatile)
	}
	if !ok || !holdable(kind) || l.rng.Float64() >= p {
		return false
	}
	h := &hold{need: 1 + l.rng.IntN(lateMaxWrites), wait: 1 + l.rng.Int64N(lateMaxWait), again: l.rng.IntN(2) == 0}
	s.holdAt(w, kind, off, h)
	return true
}

// holdAt holds worker w, which holds the turn, before its access of kind
// and off, as h says (its need, wait and again; need 0: for good, until
// the others finish or wait by design); it returns once w runs again.
func (s *detSched) holdAt(w int, kind pmem.AccessKind, off uint64, h *hold) {
	d, l := s.d, s.late
	ws := &d.ws[w]
	o := &d.procs[w].op
	h.w, h.key = w, lateKey{kind == pmem.AccessVolatile, off}
	h.byValue = !h.key.volatile && l.region != nil
	if h.byValue {
		h.last = l.region.Peek(off)
	}
	h.st = &Stall{Proc: d.pids[w], Kind: o.kind, Addrs: append([]uint64(nil), o.addrs...),
		Access: ws.opAcc, AtKind: kind, AtOff: off, Late: true, Until: h.need, worker: w}
	l.held = append(l.held, h)
	l.holds++
	s.drop(w)
	for _, x := range s.live {
		if o := &d.ws[x]; o.inOp {
			o.opAcc, o.limit = 0, d.cfg.StallAccesses // counted from the hold
		}
	}
	s.handOver(w, s.pick(-1))
}

// unhold puts the i-th held worker back among the live ones.
func (s *detSched) unhold(i int) {
	l := s.late
	h := l.held[i]
	h.st.Released = true
	l.held = append(l.held[:i], l.held[i+1:]...)
	s.live = append(s.live, h.w)
	if s.stalled < 0 && len(l.held) == 0 {
		for _, x := range s.live {
			s.d.ws[x].limit = s.d.cfg.StuckAccesses
		}
	}
}

// lateReturn is the worker of h, whose hold just ended by the others'
// writes: it runs next, and is held again for good at its next access if
// so drawn.
func (s *detSched) lateReturn(h *hold) int {
	if h.again {
		s.late.rehold = h.w
	}
	return h.w
}

// lateFinish is the policy when a worker finished its share (finish): a
// hold whose last change was made ends, and its worker runs next; if
// nobody else is left to overtake them, every hold ends.
func (s *detSched) lateFinish() {
	l := s.late
	for i, h := range l.held {
		if h.wake || h.changed(l.region) {
			s.unhold(i)
			s.after = s.lateReturn(h)
			return
		}
	}
	if len(s.live) > 0 || len(l.held) == 0 {
		return
	}
	for len(l.held) > 0 {
		l.held[0].again = false
		s.unhold(0)
	}
	s.after = s.live[len(s.live)-1]
}
