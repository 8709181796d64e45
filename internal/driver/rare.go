package driver

import "github.com/pmlin/pmlin/pmem"

// Rare-site crashes (CrashPoint.Rare; deterministic scheduler). A crash
// point drawn uniformly over a segment's accesses lands where the code
// spends its time: the common path of each operation. A bug on a path
// that a run takes once or twice (an item moved to make room, a helper
// finishing another's operation, a retry after a lost race) opens a
// window of a few accesses among thousands, and a uniform point hits it
// once in hundreds of such runs. So a run may aim some crashes at what it
// has rarely done. It names each access by a site: the kinds of the
// worker's last siteKinds accesses since its operation began (load,
// store, CAS, flush, fence; a repeat of the last kind, as in a scan or a
// spin, is the same site again, and declared waits are left out), a
// coarse signature of the code path that led there, in the spirit of
// AFL's edge coverage but without program counters. It counts the sites
// it met. From the run's second segment on (the first one learns the
// common paths), a flush or fence at a site the run has never met crashes
// the segment, right before it, with probability rareCrashP; the
// segment's drawn crash point still applies if it comes first. (The crash
// harness arms the run's last segment too, which has no drawn point.) Only a
// flush or a fence: a crash between two persist points leaves the stores
// made since the first pending, a subset of those pending right before
// the second, which the image policies choose among anyway. Every choice
// comes from the run's seed and the accesses it made, so a run replays
// byte for byte.
//
// An example: a movement of level hashing (internal/levelhash) whose
// token is stored before the moved item is flushed makes "store, load,
// store, flush", which no insert, update or removal makes; the crash
// right before that flush is the window of the bug. Measured on 64 keys
// (1,500 runs of the fuzz mix): 13 crashes in that window in 370 to 490
// runs (which found the bug), against 1 in 1,500 runs with crash points
// drawn uniformly alone (none found).
const (
	// siteKinds is how many of the worker's last access kinds make a site:
	// three would not tell "load, store, flush" of a movement's early
	// token from a removal's; more split the common paths into more sites
	// than one segment learns.
	siteKinds = 4
	// siteBits are the bits of the table of site counts (4,096 counters):
	// a collision only makes a new site look met.
	siteBits = 12
	// rareCrashP is the probability that a flush or fence at a new site
	// crashes: a rare path may make several new sites in a row, the bug's
	// window among the later ones (0.5 found as many windows; 0.25 leaves
	// more of the segment to its drawn point).
	rareCrashP = 0.25
)

// sites counts the sites a run met (the driver's, kept across its
// segments: a Driver records one run).
type sites struct {
	count [1 << siteBits]uint8
	dr    draws
}

// siteStart is a worker's site at its invocation of an operation: no
// access yet.
const siteStart = 1 << (3 * siteKinds)

// step counts worker state ws's access of kind at its site and says
// whether it crashes the segment there (armed: CrashPoint.Rare, from the
// run's second segment on).
func (s *sites) step(ws *wstate, kind pmem.AccessKind, armed bool) bool {
	const kindMask = siteStart - 1
	if kind == pmem.AccessWait || ws.site&7 == uint32(kind)+1 {
		return false // the same site again
	}
	ws.site = siteStart | (ws.site<<3|uint32(kind)+1)&kindMask
	h := ws.site * 0x9e3779b1 >> (32 - siteBits) // Fibonacci hashing
	n := s.count[h]
	if n < 255 {
		s.count[h] = n + 1
	}
	return n == 0 && armed && ws.inOp && (kind == pmem.AccessFlush || kind == pmem.AccessFence) && s.dr.float64() < rareCrashP
}

// CountSites makes the driver count the sites of its run's accesses from
// its next segment on, which arms CrashPoint.Rare from its second segment
// (deterministic scheduler). seed is the run's: the draws at new sites
// are a stream of their own.
func (d *Driver) CountSites(seed uint64) {
	if d.sites == nil {
		d.sites = &sites{dr: newDraws(seed, 0x5173)}
	}
}
