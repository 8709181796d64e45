package driver

import (
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/pmlin/pmlin/pmem"
)

// The late crash (CrashPoint.Late; deterministic scheduler, late-write
// policy on).
//
// A late write is where persistence bugs hide. A CAS that lands late (a
// helper's RDCSS after its operation was decided, a pop on a stale next
// pointer) puts a value in a word that the others did not expect; the
// target must then clean it up, and make the cleanup durable before it
// acts on the belief that the word is clean (before it reuses what the
// late value points to, say). A cleanup left unflushed, or flushed and
// not fenced, is harmless until a crash falls after the target moved on
// and before anyone happens to persist that cache line again: a window
// that a crash point drawn uniformly over the segment rarely hits, since
// the line of a busy word is flushed again within a few operations.
//
// So a late-crash segment crashes at the end of such a window, not at a
// random access:
//
//  1. a worker held by the late-write policy before a CAS comes back
//     (late.go) while the word holds the value its CAS expects, so the CAS
//     lands: a late write;
//  2. another write then changes that word (its cleanup, or anything
//     else);
//  3. from then on the scheduler follows the persistence of the word's
//     cache line as the region defines it (package pmem: a flush records
//     the line's position for its worker, that worker's next fence makes
//     it durable): the window ends at the first fence of a worker that has
//     flushed the line since the change, and the crash falls right before
//     that fence, where the target has moved on the furthest while the
//     change is still not durable (a crash image policy may then drop it);
//  4. a window in which no other fence was made (the change flushed and
//     fenced at once, as a correct cleanup does, with nothing made durable
//     meanwhile) is passed over: the crash image it would give, the change
//     lost with nothing else durable since, is the one a crash right after
//     the late write gives. The watch starts again at the next late write.
//
// If no window ends within the segment, it crashes at its end (as when
// the workload finishes before a random crash point). The rule draws
// nothing: where the crash falls follows from the schedule, itself seeded,
// so a run replays byte for byte.
type lateCrash struct {
	rng   *rand.Rand // whether a closing fence is held first
	phase lcPhase
	// w is the late writer (phase lcLanding); off the word, line its
	// cache line.
	w         int
	off, line uint64
	// val is the value the late CAS expects (lcLanding), then the late
	// value (lcLanded).
	val uint64
	// flushed says, per worker, whether it flushed the line since the
	// change (lcChanged), made by worker by, the upto-th store to its line
	// (pmem.Region.LineStores); others counts the accesses of the other
	// workers since.
	flushed []bool
	by      int
	upto    uint64
	others  int
	last    int // the worker of the access before
	// held: the worker whose fence closes the window was held there
	// (a late fence); the crash falls when it comes back.
	held bool
	// at is where the crash fell (nil: not yet).
	at *LateCrash
}

type lcPhase uint8

const (
	lcIdle    lcPhase = iota
	lcLanding         // a held worker's CAS is about to land
	lcLanded          // it landed: the word holds val
	lcChanged         // another write changed it: the window is open
)

// What the late crash does at an access.
type lcAction uint8

const (
	lcGo    lcAction = iota // nothing: the access is made
	lcCrash                 // the segment crashes before it
	lcHold                  // its worker is held before it (a late fence), then the segment crashes
)

// lateFence is the share of the windows' closing fences that are held
// before the crash: the worker that would persist the change is kept out
// while the others go on (up to lateMaxWait of their accesses, as any
// hold of the late-write policy), so that what they do in that time is
// in the image too, and the change still is not.
const lateFence = 0.5

// LateCrash is where a late-crash segment crashed (CrashPoint.Late).
type LateCrash struct {
	// Off is the region word the late CAS wrote, Late the value it put
	// there, Now the value a later write replaced it with (not durable
	// when the crash fell). The change was the (Keep+1)-th store to the
	// word's cache line (pmem.Region.LineStores): the crash image keeps
	// the Keep before it and every other store (pmem.Region.CrashKeeping).
	Off, Late, Now, Keep uint64
	// Proc is the process whose fence would have made the change durable;
	// Others counts the accesses of the workers other than the one that
	// made the change since; Held says that Proc was held before that
	// fence while the others went on.
	Proc   int32
	Others int
	Held   bool
}

var lateFenceP = func() float64 {
	if v := os.Getenv("LCHOLD"); v != "" {
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return lateFence
}()

func newLateCrash(seed uint64, workers int) *lateCrash {
	return &lateCrash{rng: rand.New(rand.NewPCG(seed, 0x1a7ec)), flushed: make([]bool, workers), last: -1}
}

// resumed is the late-write policy giving the turn back to worker w,
// held before its CAS of off expecting old: if the word holds old, the CAS
// is about to land late.
func (c *lateCrash) resumed(r *pmem.Region, w int, off, old uint64) {
	if c.phase == lcChanged || r.Peek(off) != old {
		return
	}
	c.phase, c.w, c.off, c.line, c.val = lcLanding, w, off, off/pmem.LineWords, old
}

// step is worker w's access of kind and off, before it is made: at the
// end of a late write's window it says to crash, or to hold w first.
func (c *lateCrash) step(r *pmem.Region, pid int32, w int, kind pmem.AccessKind, off uint64) lcAction {
	prev := c.last // made the access before this one
	c.last = w
	switch c.phase {
	case lcLanding:
		// Any access after the resumed worker's comes after its CAS: one
		// worker runs at a time, and it ran first.
		if v := r.Peek(c.off); v != c.val {
			c.phase, c.val = lcLanded, v
		} else {
			c.phase = lcIdle // the CAS did not land after all (new == old)
		}
	case lcLanded:
		if v := r.Peek(c.off); v != c.val {
			// The access before this one changed the word: the last store
			// to its line.
			c.phase, c.by, c.others, c.held = lcChanged, prev, 0, false
			c.upto = r.LineStores(c.off) - 1
			clear(c.flushed)
			return c.persistStep(r, pid, w, kind, off)
		}
	case lcChanged:
		return c.persistStep(r, pid, w, kind, off)
	}
	return lcGo
}

// persistStep follows the persistence of the changed word's line at
// worker w's access of kind and off (lcChanged).
func (c *lateCrash) persistStep(r *pmem.Region, pid int32, w int, kind pmem.AccessKind, off uint64) lcAction {
	if w != c.by {
		c.others++
	}
	switch kind {
	case pmem.AccessFlush:
		if off/pmem.LineWords == c.line {
			c.flushed[w] = true
		}
	case pmem.AccessFence:
		if !c.flushed[w] {
			return lcGo
		}
		if c.others == 0 {
			c.phase = lcIdle // persisted at once, by the worker that changed it
			return lcGo
		}
		c.at = &LateCrash{Off: c.off, Late: c.val, Now: r.Peek(c.off), Keep: c.upto, Proc: pid, Others: c.others, Held: c.held}
		if !c.held && c.rng.Float64() < lateFenceP {
			c.held = true
			return lcHold
		}
		return lcCrash
	}
	return lcGo
}

// lateCrashStep is the late crash at worker w's access of kind and off
// (s.lc set and watching): it says whether the segment crashes there.
func (s *detSched) lateCrashStep(w int, kind pmem.AccessKind, off uint64) bool {
	d := s.d
	switch s.lc.step(d.region, d.pids[w], w, kind, off) {
	case lcGo:
		return false
	case lcHold:
		if s.stalled < 0 && d.ws[w].inOp && len(s.live) > 1 && len(s.late.held) < lateMaxHeld {
			s.holdAt(w, kind, off, &hold{wait: 1 + s.lc.rng.Int64N(lateMaxWait), fence: true})
			if d.aborted.Load() || d.region.Crashing() {
				return false // the access fails as every access now does
			}
			s.lc.at.Others, s.lc.at.Held = s.lc.others, true // those made meanwhile too
		}
	}
	return true
}
