package driver

import "github.com/pmlin/pmlin/pmem"

// The late crash (CrashPoint.Late; deterministic scheduler, late-write
// policy on, an emulated region).
//
// A late write is where persistence bugs hide. A CAS that lands late (a
// helper's RDCSS after its operation was decided, a pop on a stale next
// pointer) puts in a word a value the others did not expect; the target
// must then change it (clean it up), and make that change durable before
// it acts on the belief that the word is clean: before it reuses what the
// late value points to, say. A change left unflushed, or flushed and not
// fenced, is harmless until a crash falls after the target went on and
// before anyone happens to persist that cache line again: a window that a
// crash point drawn uniformly over the segment rarely hits, since the line
// of a busy word is flushed again within a few operations, and an image
// that loses the change but keeps what came after it needs the crash
// policies (package pmem) to cut that one line's stores right there.
//
// So a late-crash segment crashes at the end of such a window, not at a
// random access:
//
//  1. a worker held by the late-write policy before a CAS (late.go) comes
//     back while the word holds the value its CAS expects, so the CAS
//     lands: a late write;
//  2. another write then changes that word (its cleanup, or anything
//     else): the window opens; the change is the n-th store ever made to
//     the word's cache line (pmem.Region.LineStores);
//  3. from then on the scheduler follows the persistence of that line as
//     package pmem defines it (a flush records the line's position for its
//     worker, that worker's next fence makes it durable): the window ends
//     at the first fence of a worker that flushed the line since the
//     change, and the crash falls right before that fence, where the
//     target went on the furthest while the change is not yet durable;
//  4. the crash image keeps every store (everything written back) but the
//     change and the later stores to that one line
//     (pmem.Region.CrashKeeping): a legal image, each line keeping a prefix
//     of its stores, and the one that shows whether the target went on
//     relying on a change that was not durable;
//  5. a window in which no other worker made an access (the change
//     flushed and fenced at once by the worker that made it, as a correct
//     cleanup does) is passed over, and the watch starts again at the next
//     late write.
//
// If no window ends within the segment, it crashes at its end (as when
// the workload finishes before a random crash point). The rule draws
// nothing: where the crash falls follows from the schedule, itself seeded,
// so a run replays byte for byte.
type lateCrash struct {
	phase lcPhase
	// off is the late-written word, line its cache line; val the value
	// the late CAS expects (lcLanding), then the late value (lcLanded);
	// now the value the change put there.
	off, line, val, now uint64
	// Once the window is open (lcChanged): flushed says, per worker,
	// whether it flushed the line since the change, made by worker by,
	// the upto+1-th store to the line; others counts the accesses of the
	// other workers since.
	flushed []bool
	by      int
	upto    uint64
	others  int
	last    int // the worker of the access before this one
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

// LateCrash is where a late-crash segment crashed (CrashPoint.Late).
type LateCrash struct {
	// Off is the region word the late CAS wrote, Late the value it put
	// there, Now the value the next write to it put there (the change, not
	// durable when the crash fell). The change was the (Keep+1)-th store to the
	// word's cache line (pmem.Region.LineStores): the crash image keeps
	// the Keep before it and every other store (pmem.Region.CrashKeeping).
	Off, Late, Now, Keep uint64
	// Proc is the process whose fence would have made the change durable;
	// Others counts the accesses of the workers other than the one that
	// made the change, made since.
	Proc   int32
	Others int
}

func newLateCrash(workers int) *lateCrash {
	return &lateCrash{flushed: make([]bool, workers), last: -1}
}

// resumed is the late-write policy giving the turn back to a worker held
// before its CAS of off expecting old: if the word holds old, the CAS is
// about to land late, and the watch follows it (unless a window is open).
func (c *lateCrash) resumed(r *pmem.Region, off, old uint64) {
	if c.phase == lcChanged || r.Peek(off) != old {
		return
	}
	c.phase, c.off, c.line, c.val = lcLanding, off, off/pmem.LineWords, old
}

// step is worker w (process pid)'s access of kind and off, before it is
// made, while the watch is on: it says whether the segment crashes here,
// at the end of a late write's window.
func (c *lateCrash) step(r *pmem.Region, pid int32, w int, kind pmem.AccessKind, off uint64) bool {
	prev := c.last
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
			// The access before this one changed the word: it is the last
			// store to its line.
			c.phase, c.by, c.others, c.now = lcChanged, prev, 0, v
			c.upto = r.LineStores(c.off) - 1
			clear(c.flushed)
			return c.persistStep(r, pid, w, kind, off)
		}
	case lcChanged:
		return c.persistStep(r, pid, w, kind, off)
	}
	return false
}

// persistStep follows the persistence of the changed word's line at
// worker w's access of kind and off (lcChanged).
func (c *lateCrash) persistStep(r *pmem.Region, pid int32, w int, kind pmem.AccessKind, off uint64) bool {
	if w != c.by {
		c.others++
	}
	switch kind {
	case pmem.AccessFlush:
		if off/pmem.LineWords == c.line {
			c.flushed[w] = true
		}
	case pmem.AccessFence:
		switch {
		case !c.flushed[w]:
		case c.others == 0:
			c.phase = lcIdle // persisted at once, by the worker that changed it
		default:
			c.at = &LateCrash{Off: c.off, Late: c.val, Now: c.now, Keep: c.upto, Proc: pid, Others: c.others}
			return true
		}
	}
	return false
}
