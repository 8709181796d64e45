package crash

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/pmem"
)

// Guarded calls. Outside segments the harness calls the target's code
// itself: New, Open, Recover, the final Read. Such a call may panic, loop
// with region accesses, or loop or wait outside the region, where no hook
// can stop it; run on the job's goroutine it would crash pmlin or hang the
// campaign past its budget. So each runs on a goroutine of its own,
// watched: a panic is a finding (driver.PanicError), so is a call that
// makes more than its bound of region accesses (errRunaway) or none for
// Driver.StuckAfter (a silentError, stuck); ctx ending abandons the call.
// An abandoned call's goroutine cannot be stopped: its hook fails every
// access it makes from then on, and the run ends.

// errRunaway is what every access of a guarded call returns past its
// bound: the call must end with it.
var errRunaway = errors.New("crash: the call made more region accesses than its bound")

// errAbandoned is what every access of an abandoned call returns.
var errAbandoned = errors.New("crash: the call was abandoned")

// callHook is the access hook of a guarded call: it counts its accesses
// (atomically: the watchdog reads the count), crashes the region at
// access at, or at the access right after the afterPersist-th flush or
// fence (0: never), and fails every access past bound or once abandoned.
type callHook struct {
	seen         atomic.Int64
	dead         atomic.Bool
	bound        int64
	at           int64
	afterPersist int64
	persists     int64
	armed        bool
	// crashedAt is the access the hook crashed (0: none).
	crashedAt int64
}

func (h *callHook) Access(_ int, kind pmem.AccessKind, _ uint64) error {
	n := h.seen.Add(1)
	switch {
	case h.dead.Load():
		return errAbandoned
	case n > h.bound:
		return errRunaway
	case h.armed || n == h.at:
		h.armed, h.crashedAt = false, n
		return pmem.ErrCrashed
	case kind == pmem.AccessFlush || kind == pmem.AccessFence:
		h.persists++
		h.armed = h.persists == h.afterPersist
	}
	return nil
}

// silentError is a guarded call that made no region access for a while.
type silentError struct {
	quiet    time.Duration
	accesses int64
	where    string
}

func (e *silentError) Error() string {
	return fmt.Sprintf("it made no region access for %v after %d (%s): it loops or waits outside the region",
		e.quiet.Round(time.Millisecond), e.accesses, e.where)
}

// runawayError is a guarded call that went on past its bound of accesses.
type runawayError struct{ bound int64 }

func (e *runawayError) Error() string {
	return fmt.Sprintf("it made more than %d region accesses without returning", e.bound)
}

// stuckCall reports whether err is a guarded call that got stuck (as
// opposed to one that failed).
func stuckCall(err error) bool {
	var s *silentError
	var r *runawayError
	return errors.As(err, &s) || errors.As(err, &r) || errors.Is(err, errRunaway)
}

// guarded runs f on a goroutine of its own labelled with tag, whose region
// accesses go through h, and waits for it as described above. quiet is
// how long the call may go without a region access.
// On caller c (nil: a goroutine of its own for this call).
func guarded(ctx context.Context, c *caller, tag driver.Tag, h *callHook, quiet time.Duration, f func() error) error {
	done := make(chan error, 1)
	defer func() {
		if h.dead.Load() {
			c.stop() // abandoned with the call: the next call gets a goroutine of its own
		}
	}()
	c.run(func() {
		var err error
		returned := false
		defer func() {
			p := recover()
			if p != nil {
				err = driver.NewPanicError(p, debug.Stack())
			}
			// Before the result is out: the caller's goroutine waits for
			// its next call untagged, never found for this tag.
			driver.Untag()
			if returned || p != nil { // not after a runtime.Goexit: f never ended
				done <- err
			}
		}()
		tag.Set()
		err = f()
		returned = true
	})
	select { // most calls are over in microseconds: no ticker for them
	case err := <-done:
		return guardedErr(err, h)
	default:
	}
	tick := time.NewTicker(min(max(quiet/4, time.Millisecond), 100*time.Millisecond))
	defer tick.Stop()
	last, since, over := h.seen.Load(), time.Now(), time.Time{}
	for {
		select {
		case err := <-done:
			return guardedErr(err, h)
		case <-ctx.Done():
			h.dead.Store(true)
			return ctx.Err()
		case now := <-tick.C:
			n := h.seen.Load()
			switch {
			case n > h.bound && over.IsZero():
				over = now
			case n > h.bound && now.Sub(over) >= quiet:
				h.dead.Store(true) // it ignores the errors of its accesses
				return &runawayError{h.bound}
			case n != last:
				last, since = n, now
			case now.Sub(since) >= quiet:
				h.dead.Store(true)
				spot, ok := tag.Locate()
				where := "not found in the goroutine profile"
				if ok {
					where = spot.String()
				}
				return &silentError{quiet: now.Sub(since), accesses: n, where: where}
			}
		}
	}
}

// caller is the goroutine that runs a run's guarded calls, one after the
// other, started at the first: a goroutine of its own per call (a run
// recovers after each of its crashes) grew a fresh stack each time, about
// 2 % of a fuzz campaign's CPU. Once a call is abandoned (dead), its
// goroutine may never come back, and each call gets a goroutine of its
// own again.
type caller struct {
	calls chan func()
}

// run runs g on c (c nil: on a new goroutine).
func (c *caller) run(g func()) {
	if c == nil {
		go g()
		return
	}
	if c.calls == nil {
		c.calls = make(chan func())
		go serve(c.calls)
	}
	c.calls <- g
}

// serve runs the calls that come on calls until it is closed.
func serve(calls chan func()) {
	for g := range calls {
		g()
	}
}

// stop ends c's goroutine once its call, if any, returns: its channel is
// closed (not dropped, so that a goroutine held by an abandoned call does
// not wait for a next call forever); a next call starts a goroutine of
// its own.
func (c *caller) stop() {
	if c != nil && c.calls != nil {
		close(c.calls)
		c.calls = nil
	}
}

// guardedErr is the error of a call that returned: one that ran past its
// bound is stuck, whatever error it returned.
func guardedErr(err error, h *callHook) error {
	if err != nil && h.seen.Load() > h.bound {
		return &runawayError{h.bound}
	}
	return err
}
