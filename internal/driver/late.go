package driver

import (
	"slices"

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
//   - at a CAS inside an operation, at a scheduling point on the
//     target's volatile state (pmem.Worker.Volatile), or at a plain store
//     to a word the worker loaded in its operation (holdable), the worker
//     is held before the access is made, with probability Config.Late (at
//     least lateVolatile at a volatile point or such a store; lateStale
//     times it at a stale CAS, one whose word does not hold the value it
//     expects), while another worker is live, no worker is stalled and
//     fewer than lateMaxHeld are held (two held at once: a helper late,
//     and the owner slow to finish). Not at the other stores: most fill
//     memory nobody else writes yet (a new descriptor); a hold at a store
//     ends by its bound only (below);
//   - a late CAS lands only if its word holds the value it expects: the
//     window of a late CAS is an ABA (the word changed away from that
//     value and came back). A hold at a stale CAS, and lateABA of the
//     others, wait for exactly that: the worker comes back, and runs next,
//     as soon as the word holds the expected value again after holding
//     another (seen with Region.Peek at each access of the others; the
//     region tells the scheduler a CAS's expected value, pmem.CASHook), so
//     its CAS lands before anyone can change the word again. This is the
//     window of any CAS-based primitive that acts on a value read before:
//     an RDCSS that lands after a rollback, a pop whose next pointer is
//     stale (the classic ABA of lock-free stacks), a counter back at an old
//     value;
//   - the other holds at a CAS or a volatile point end right after the
//     others have changed the value
//     of that region word a seeded 1 to lateMaxWrites times (counting
//     writes would count the CAS that fail), or passed that many volatile
//     points of the same key;
//   - a hold at a plain store ends only so: a plain store lands whatever
//     the word holds, and what it undoes grows with how far the others
//     went meanwhile, not with the word's changes;
//   - every hold also ends once the others made a seeded number of
//     accesses, up to lateMaxWait, without that; or when they have all
//     finished, or all wait by design (Worker.Wait: lateAllWait waits each
//     in a row);
//   - in lateAgain of the holds that end by such changes, once its late CAS
//     is made the worker is held again at its next access, for good: a
//     worker that wrote late and then stopped, which lock-freedom must
//     survive. The others in an operation then run alone, one at a time in
//     a seeded order, each until its operation returns (or it waits by
//     design): an operation that runs alone must finish
//     (obstruction-freedom, which lock-freedom implies), whatever the
//     stopped worker left; run interleaved, one of them may finish that
//     (a reader undoing the late RDCSS) and hide an operation that would
//     wait for the stopped worker forever.
//
// While a worker is held, the progress check's rule holds (see stall.go):
// an operation of another worker that makes the stall bound of region
// accesses while no other operation returns (the rounds of declared waits
// not counted) waits for the held one, and is reported stuck naming it. The policy draws from a stream of its
// own, so the scheduler's own stream of choices is not shifted by it.
// Scheduling points on volatile state are switching points only in these
// runs: elsewhere they are ignored, so the histories of the other runs
// stay what they were before the points existed.

// Bounds of the holds.
const (
	lateMaxWrites = 3
	lateMaxWait   = 1024
	lateMaxHeld   = 2
	// lateABA is the share of the holds at a CAS that wait for the ABA
	// return of the word (the value the CAS expects, back after another)
	// rather than for a number of changes.
	lateABA = 0.5
	// lateAllWait: the live workers all wait by design once they made
	// this many declared waits each in a row (waitStep).
	lateAllWait = 2
	// lateStale multiplies the probability of a hold at a stale CAS, one
	// whose word does not hold the value it expects: it can only land if
	// the word comes back to that value (an ABA), so it is where a late
	// write matters most, and such a hold waits for that return.
	lateStale = 10
	// lateAgain is the share of the holds ended by the others' changes
	// that hold the worker again, for good, right after its late CAS.
	lateAgain = 0.75
	// lateVolatile is the least probability of a hold at a scheduling
	// point on volatile state, or at a plain store to a word loaded in
	// the same operation: such points are few (a target marks only the
	// steps between a load of its volatile state and the write that
	// depends on it; a lock-free structure writes shared words with CAS),
	// and each is such a window. (Measured on the durable queue's plain
	// store of tail, planted: at 0.02 the holds at such stores found it in
	// 3 runs of 4,000, as without them; at 0.25, in 10; ended by their
	// bound only, in 15.)
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
	// dr draws the policy's choices: the stream of rand.New(rand.NewPCG(
	// seed, 0x1a7e)), inlined (draws) where a rand.Rand made an interface
	// call per holdable access.
	dr     draws
	p      float64
	region *pmem.Region // nil: changes of value are not seen, writes are counted
	held   []*hold
	// rehold is the worker to hold for good at its next access (-1: none).
	rehold int
	holds  int64
	// casOld is the value the CAS being accessed expects, if casKnown
	// (AccessCAS; the workers run one at a time, so one slot will do).
	casOld   uint64
	casKnown bool
	// waits counts the declared waits in a row while a worker is held.
	waits int64
	// solo is the worker that runs alone (-1: none) until its operation
	// that began at soloOp returns, it waits by design or it leaves.
	solo   int
	soloOp int64
	soloQ  []int // who runs alone after solo
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
	// aba: the hold waits for the word to hold expect (the value its CAS
	// expects) again after another value (away: another was seen), not
	// for need changes.
	aba    bool
	away   bool
	expect uint64
	// old is the value the held CAS expects, if oldKnown (for the late
	// crash, latecrash.go).
	old      uint64
	oldKnown bool
}

func newLate(seed uint64, p float64, r *pmem.Region) *late {
	return &late{dr: newDraws(seed, 0x1a7e), p: p, region: r, rehold: -1, solo: -1}
}

// isWrite says whether an access of kind writes what a key names.
func isWrite(kind pmem.AccessKind) bool {
	return kind == pmem.AccessStore || kind == pmem.AccessCAS || kind == pmem.AccessVolatile
}

// holdable says whether a worker (state ws) may be held before an access
// of kind and off: a CAS, which acts on a value read before; a step on
// volatile state; or a plain store to a word the worker loaded in its
// operation (one of its last lateLoads loads), a read-modify-write made
// of a load and a store, whose store lands late on a word that moved on
// (a plain store where a CAS belongs: a lost update, a pointer moved
// backwards). Not the other stores: most fill memory nobody else writes
// yet (a new descriptor, a new node), and a hold there would wait out its
// bound for nothing.
func holdable(ws *wstate, kind pmem.AccessKind, off uint64) bool {
	return kind == pmem.AccessCAS || kind == pmem.AccessVolatile || kind == pmem.AccessStore && ws.loadedInOp(off)
}

// lateLoads is how many of its last loads in an operation a worker
// remembers (wstate.loaded) for the holds at a store.
const lateLoads = 4

// noteLoad remembers a load of off in the worker's operation.
func (ws *wstate) noteLoad(off uint64) {
	ws.loaded[ws.nLoaded%lateLoads] = off
	ws.nLoaded++
}

// loadedInOp says whether the worker loaded off among its last lateLoads
// loads in its operation.
func (ws *wstate) loadedInOp(off uint64) bool {
	for i := range min(int(ws.nLoaded), lateLoads) {
		if ws.loaded[i] == off {
			return true
		}
	}
	return false
}

// AccessCAS implements pmem.CASHook: the late-write policy learns the
// value a CAS expects, so that a hold there can wait for the word to hold
// it again (an ABA) and the CAS to land.
func (s *detSched) AccessCAS(w int, off, old uint64) error {
	if s.late != nil {
		s.late.casOld, s.late.casKnown = old, true
	}
	return s.Access(w, pmem.AccessCAS, off)
}

// holding says whether the late-write policy holds a worker.
func (s *detSched) holding() bool { return s.late != nil && len(s.late.held) > 0 }

// changed says whether the held word has now changed value for the last
// of the times h waits for.
func (h *hold) changed(r *pmem.Region) bool {
	if !h.byValue || h.need == 0 {
		return false
	}
	v := r.Peek(h.key.off)
	if h.aba {
		if v != h.expect {
			h.away = true
			return false
		}
		return h.away
	}
	if v != h.last {
		h.last = v
		h.need--
	}
	return h.need == 0
}

// lateStep is the policy at worker w's access of kind and off (state ws,
// which waited by design before it if was), after the crash and stall
// rules. It reports whether the access's
// scheduling point was taken here (the worker held and back, or the turn
// handed to a worker whose hold ended): then the access is made at once.
func (s *detSched) lateStep(w int, ws *wstate, was bool, kind pmem.AccessKind, off uint64) bool {
	l := s.late
	casOld, casKnown := l.casOld, l.casKnown && kind == pmem.AccessCAS
	l.casKnown = false
	if l.solo >= 0 {
		if w == l.solo && s.soloGoes(ws, kind) {
			return false // no hold of its own, and none of the others ticks
		}
		if l.solo >= 0 && w != l.solo {
			if !slices.Contains(s.live, l.solo) {
				s.soloNext() // it left (finished, crashed, or stalled)
			}
			if l.solo >= 0 {
				s.handOver(w, l.solo) // back once the solo run ended
				return true
			}
		}
	}
	allWait := false
	if len(l.held) > 0 {
		allWait = l.waitStep(was, kind, len(s.live))
	}
	for i := 0; i < len(l.held); i++ {
		h := l.held[i]
		if h.wake || h.changed(l.region) {
			s.unhold(i)
			s.handOver(w, s.lateReturn(h))
			return true
		}
		if allWait || h.wait == 1 {
			// The others all wait by design, maybe for the held worker;
			// or a hold waited out its bound.
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
			s.soloAfter(w)
			s.holdAt(w, kind, off, &hold{old: casOld, oldKnown: casKnown})
		}
		return ok
	}
	if !ok || !holdable(ws, kind, off) {
		return false // no hold, and no draw
	}
	p := l.p
	if kind == pmem.AccessVolatile || kind == pmem.AccessStore {
		p = max(p, lateVolatile)
	}
	stale := casKnown && l.region != nil && l.region.Peek(off) != casOld
	if stale {
		p = min(1, p*lateStale)
	}
	if l.dr.float64() >= p {
		return false
	}
	h := &hold{need: 1 + l.dr.intN(lateMaxWrites), wait: 1 + int64(l.dr.intN(lateMaxWait)), again: l.dr.float64() < lateAgain,
		old: casOld, oldKnown: casKnown}
	if stale || casKnown && l.region != nil && l.dr.float64() < lateABA {
		h.aba, h.expect = true, casOld
	}
	if kind == pmem.AccessStore {
		// A plain store lands whatever the word holds: what it undoes
		// grows with how far the others went meanwhile (a tail stored
		// back behind a head that moved past it), not with the word's
		// changes alone. The hold ends by its bound, or when the others
		// all finished or wait.
		h.need = 0
	}
	s.holdAt(w, kind, off, h)
	return true
}

// holdAt holds worker w, which holds the turn, before its access of kind
// and off, as h says (its need, wait and again; need 0: for good, until
// the others finish or wait by design); it returns once w runs again.
func (s *detSched) holdAt(w int, kind pmem.AccessKind, off uint64, h *hold) {
	d, l := s.d, s.late
	ws := &d.ws[w]
	okind, addrs, op := d.curOp(w)
	h.w, h.key = w, lateKey{kind == pmem.AccessVolatile, off}
	h.byValue = !h.key.volatile && l.region != nil
	if h.byValue {
		h.last = l.region.Peek(off)
		h.away = h.last != h.expect
	}
	h.st = &Stall{Proc: d.pids[w], Kind: okind, Addrs: addrs, Op: op,
		Access: ws.opAcc, AtKind: kind, AtOff: off, Late: true, Until: h.need, ABA: h.aba, Expect: h.expect, worker: w}
	l.held = append(l.held, h)
	l.holds++
	l.waits = 0
	s.drop(w)
	for _, x := range s.live {
		// Counted from the first hold: a count reset at every new hold
		// would let a spin go on forever while the holds come and go.
		if o := &d.ws[x]; o.inOp && (len(l.held) == 1 || o.limit != d.stallBound) {
			o.opAcc, o.limit, o.round = 0, d.stallBound, 0
		}
		if len(l.held) == 1 && s.stalled < 0 {
			// What the workers did before the hold is no wait of its
			// rule (a stall's rule keeps its own).
			d.ws[x].waiting = false
		}
	}
	s.handOver(w, s.pick(-1))
	if s.lc != nil && h.oldKnown && !d.aborted.Load() {
		s.lc.resumed(l.region, off, h.old) // w makes its CAS now
	}
}

// unhold puts the i-th held worker back among the live ones.
func (s *detSched) unhold(i int) {
	l := s.late
	h := l.held[i]
	h.st.Released = true
	l.held = append(l.held[:i], l.held[i+1:]...)
	s.live = append(s.live, h.w)
	s.d.ws[h.w].waiting = false // it was held at a write or a volatile step
	if s.stalled < 0 && len(l.held) == 0 {
		for _, x := range s.live {
			s.d.ws[x].limit = s.d.cfg.StuckAccesses
		}
	}
}

// waitStep counts the declared waits (Worker.Wait) of the live workers
// (live of them) in a row while a worker is held, and says whether they
// all wait by design now: lateAllWait waits each in a row, with no access
// in between but the loads of a worker that waits by design (was: the
// worker making this access, of kind, did), which are the rounds of its
// wait loop (a waiting worker hands the turn to another, so a worker
// that does not wait breaks the row soon). A step on volatile state
// neither counts nor breaks the row: a wait loop may step on volatile
// state (pmwcas's allocator tries to advance the epoch before each wait).
// The waits and their rounds do not count towards the stuck rule, as
// while a worker is stalled (wstate.declared): a worker that waits for
// memory the held one keeps from being reclaimed is not stuck, an
// operation that spins instead of helping is.
func (l *late) waitStep(was bool, kind pmem.AccessKind, live int) bool {
	switch {
	case kind == pmem.AccessVolatile, kind == pmem.AccessLoad && was:
		return false
	case kind == pmem.AccessWait:
		l.waits++
		return l.waits >= int64(lateAllWait*live)
	}
	l.waits = 0
	return false
}

// soloAfter draws, as worker w is held for good, whether another worker
// in an operation runs alone from now on, and which: an obstruction-free
// operation (Herlihy, Luchangco and Moir, "Obstruction-free
// synchronization: double-ended queues as an example", ICDCS 2003) must
// finish when it runs alone, whatever state w left, and a lock-free one is
// obstruction-free. With the others running too, one of them may finish
// what w left (a reader that undoes w's late write) and hide an operation
// that would wait for w forever.
func (s *detSched) soloAfter(w int) {
	l := s.late
	var in []int
	for _, x := range s.live {
		if x != w && s.d.ws[x].inOp {
			in = append(in, x)
		}
	}
	l.dr.shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	l.soloQ = in
	s.soloNext()
}

// soloNext makes the next worker of the solo queue that is still live and
// in an operation run alone (none left: nobody).
func (s *detSched) soloNext() {
	l := s.late
	l.solo = -1
	for len(l.soloQ) > 0 {
		x := l.soloQ[0]
		l.soloQ = l.soloQ[1:]
		if slices.Contains(s.live, x) && s.d.ws[x].inOp {
			l.solo, l.soloOp = x, s.d.ws[x].opStart
			return
		}
	}
}

// soloGoes is the solo worker's access of kind (state ws): it says
// whether it still runs alone; once its operation returned, or it waits by
// design, the solo run ends.
func (s *detSched) soloGoes(ws *wstate, kind pmem.AccessKind) bool {
	if ws.opStart == s.late.soloOp && kind != pmem.AccessWait {
		return true
	}
	s.soloNext()
	return false
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
			s.cur = s.lateReturn(h)
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
	s.cur = s.live[len(s.live)-1]
}

// idle says whether lateStep has nothing to do at worker w's access of
// kind: nobody held, nobody running alone, w not to be held again, and an
// access the policy never holds at. lateStep would then only forget the
// expected value of a CAS (which a CAS sets again); Access skips the call,
// most of the accesses of a late-write run.
func (l *late) idle(w int, ws *wstate, kind pmem.AccessKind, off uint64) bool {
	return len(l.held) == 0 && l.solo < 0 && l.rehold != w && !holdable(ws, kind, off)
}
