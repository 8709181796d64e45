package driver

import (
	"context"
	"sync/atomic"
	"time"
)

// The watchdogs. A segment's workers run target code, which may loop or
// wait forever outside region accesses, where no access hook can stop it:
// the goroutine that waits for the segment to end (wait, waitFree) also
// watches them, every tick.
//
// Deterministic scheduler: one worker runs at a time and hands the turn on
// only at region accesses. If the turn has not changed hands and no
// operation was invoked for StuckAfter, the worker holding it is found in
// the goroutine profile (Tag.Locate): running Go code that never touches
// the region, it is Stuck (Stuck.Quiet); parked by the Go runtime (a mutex,
// a channel, a sleep: waiting for another worker, which never gets the
// turn), it is Blocked.
//
// Free scheduler: every worker publishes its progress (accesses and
// invocations) every beatEvery accesses, and whether it runs the target's
// code or the driver's; one whose progress has not moved for StuckAfter
// in the target's code, while its goroutine has not returned, is Stuck,
// spinning or waiting in Go (its Stuck.Where says which and where).
//
// Either way the finding aborts the segment (every later access fails)
// and wakes the other workers; ctx ending aborts it too. Healthy workers
// return at their next access; the watchdog gives up on the others
// StuckAfter later (at least abandonAfter; cancelGrace after ctx ended, so
// that a campaign ends on time): their goroutines are abandoned (Go cannot
// stop a goroutine: one that spins keeps a CPU busy until the process
// ends), and so is the driver. A free worker is given up on only while it
// runs the target's code, its log taken from it (wstate.claim); one in the
// driver's own code, starved of CPU, is waited for: it returns at once
// when it runs.

// abandonAfter is the least time the watchdog gives the workers of an
// aborted segment to return (their next region access fails: healthy ones
// return within microseconds). cancelGrace is that time when the segment
// was aborted because ctx ended.
const (
	abandonAfter = time.Second
	cancelGrace  = 250 * time.Millisecond
)

// crew is what a watchdog knows of a segment's worker goroutines.
type crew struct {
	// returned[w] is set when worker w's goroutine returns; the last one
	// to return closes done.
	returned []atomic.Bool
	running  atomic.Int32
	done     chan struct{}
}

func newCrew(threads int, workers []int) *crew {
	c := &crew{returned: make([]atomic.Bool, threads), done: make(chan struct{})}
	c.running.Store(int32(len(workers)))
	return c
}

// exit is the last thing worker w's goroutine does.
func (c *crew) exit(w int) {
	c.returned[w].Store(true)
	if c.running.Add(-1) == 0 {
		close(c.done)
	}
}

// onlySilent reports whether every worker but silent (a worker the
// watchdog found silent, which will never return; -1: none) returned.
func (c *crew) onlySilent(workers []int, silent int) bool {
	if silent < 0 {
		return false
	}
	for _, w := range workers {
		if w != silent && !c.returned[w].Load() {
			return false
		}
	}
	return true
}

// claim takes the logs of the free workers that did not return (see
// wstate.claim); false if one of them runs the driver's own code.
func (d *Driver) claim(running []bool) bool {
	for w, r := range running {
		if r && !d.ws[w].claim() {
			return false
		}
	}
	return true
}

// tickEvery is the watchdogs' tick for the bound StuckAfter.
func tickEvery(bound time.Duration) time.Duration {
	return min(max(bound/4, time.Millisecond), 100*time.Millisecond)
}

// silence is how long a sign of progress has not changed: since a time, and
// in ticks of the watchdog that saw it unchanged. A worker is silent only
// after StuckAfter by the clock during most of which the watchdog ran
// (three quarters of it in ticks): a process that gets no CPU for a while
// on a busy machine (its workers as well as its watchdog) would otherwise
// be taken, at the watchdog's first tick afterwards, for a worker silent
// all along. The Go ticker drops the ticks its reader misses, so a pause
// counts as one tick.
type silence struct {
	since time.Time
	ticks int64
}

func (q *silence) reset(now time.Time) { *q = silence{since: now} }

// over counts one more tick without progress and reports whether the
// silence is over the bound.
func (q *silence) over(now time.Time, bound time.Duration) bool {
	q.ticks++
	return now.Sub(q.since) >= bound && time.Duration(q.ticks)*tickEvery(bound) >= bound*3/4
}

// watch waits for the crew's goroutines to return, calling check every
// tick while the segment is not aborted (check may abort it). It returns
// the workers whose goroutines it gave up on (nil if all returned).
func (d *Driver) watch(ctx context.Context, c *crew, workers []int, check func(now time.Time)) []bool {
	bound := d.cfg.StuckAfter
	tick := time.NewTicker(tickEvery(bound))
	defer tick.Stop()
	var aborted time.Time
	grace := max(bound, abandonAfter)
	ctxDone := ctx.Done()
	for {
		select {
		case <-c.done:
			return nil
		case <-ctxDone:
			ctxDone = nil
			if !d.aborted.Load() {
				grace = cancelGrace
				d.mu.Lock()
				d.abort()
				d.mu.Unlock()
			}
		case now := <-tick.C:
			switch {
			case !d.aborted.Load():
				check(now)
			case aborted.IsZero():
				aborted = now
			case now.Sub(aborted) >= grace || c.onlySilent(workers, d.silent):
				running := make([]bool, len(c.returned))
				for _, w := range workers {
					running[w] = !c.returned[w].Load()
				}
				if d.det == nil && !d.claim(running) {
					continue // one is in the driver's code: it returns soon
				}
				return running
			}
		}
	}
}

// wait is the deterministic scheduler's watchdog (see above).
func (s *detSched) wait(ctx context.Context, workers []int) []bool {
	d := s.d
	last, lastTaken := s.beat.Load(), int64(-1)
	var q silence
	q.reset(time.Now())
	return d.watch(ctx, s.crew, workers, func(now time.Time) {
		b := s.beat.Load()
		taken, holder, busy := s.turnsTaken()
		switch {
		case b != last || taken != lastTaken || busy:
			last, lastTaken = b, taken
			q.reset(now)
		case q.over(now, d.cfg.StuckAfter):
			spot, found := d.tags[holder].Locate()
			d.setSilent(holder, now.Sub(q.since), true, spot, found)
		}
	})
}

// waitFree is the free scheduler's watchdog (see above).
func (d *Driver) waitFree(ctx context.Context, c *crew, workers []int) []bool {
	last := make([]int64, len(c.returned))
	q := make([]silence, len(c.returned))
	start := time.Now()
	for _, w := range workers {
		last[w] = d.ws[w].beat.Load()
		q[w].reset(start)
	}
	return d.watch(ctx, c, workers, func(now time.Time) {
		var silent []int
		for _, w := range workers {
			switch b := d.ws[w].beat.Load(); {
			case c.returned[w].Load():
			case b != last[w] || b&3 == inDriver:
				// Progress, or the driver's own code (logging, an
				// allocation waiting for the GC, not yet started on a
				// busy machine): only the target's code can be stuck.
				last[w] = b
				q[w].reset(now)
			case q[w].over(now, d.cfg.StuckAfter):
				silent = append(silent, w)
			}
		}
		if w, spot, ok := d.culprit(silent); ok {
			d.setSilent(w, now.Sub(q[w].since), false, spot, true)
		}
	})
}

// culprit is, of the silent workers (free scheduler), the one to blame
// and where it was found: one found running first (a worker that spins
// starves the others of CPU, and one starved while it waits in the
// runtime, a GC assist or an allocation, looks as silent as the spinner,
// but it is its victim), else one found waiting. A worker not found in the
// goroutine profile has not labelled itself yet: its goroutine has not
// run at all, starved of CPU on a busy machine, and is nobody's culprit
// (ok false if no silent worker was found; the watchdog asks again at its
// next tick).
func (d *Driver) culprit(silent []int) (w int, s Spot, ok bool) {
	for _, v := range silent {
		spot, found := d.tags[v].Locate()
		switch {
		case found && !spot.Waiting:
			return v, spot, true
		case found && !ok:
			w, s, ok = v, spot, true
		}
	}
	return w, s, ok
}

// setSilent is a watchdog finding worker w silent for quiet: no region
// access that handed the turn on, nor an invocation (deterministic), or
// no progress at all (free); spot is where it was found in the goroutine
// profile, if found. It runs on the watchdog's goroutine: what it reads of
// worker w was published by w's last heartbeat. Found running, the worker
// spins outside the region: Stuck. Found parked by the Go runtime, or not
// found, under the deterministic scheduler: Blocked (it waits for a worker
// that cannot get the turn); under the free scheduler, Stuck.
func (d *Driver) setSilent(w int, quiet time.Duration, det bool, spot Spot, found bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.silent = w // the watchdog waits no more for it
	if !d.stopping() {
		kind, addrs, op := d.curOp(w)
		where := "not found in the goroutine profile"
		if found {
			where = spot.String()
		}
		if det && (!found || spot.Waiting) {
			d.blocked = &Blocked{Proc: d.pids[w], Kind: kind, Addrs: addrs, Op: op, Quiet: quiet, Where: where, worker: w}
		} else {
			d.stuck = &Stuck{Proc: d.pids[w], Kind: kind, Addrs: addrs, Op: op, Quiet: quiet, Where: where, worker: w}
		}
	}
	d.abort()
}
