package crash

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// emulated runs a run's segments in this process, on an emulated region:
// a crash stops every worker at its next region access, and the image is
// built by a policy drawn per crash. After each crash the image is opened
// as a new process would open it (pmem.Region.Reopen: the header checked,
// no volatile state kept), the target opened on it (Target.Open) and then
// recovered: what a target's New or recovery failed to make durable, and
// what its Open cannot read back, is found.
type emulated struct {
	c      Config
	tc     target.Config
	opts   pmem.Options // of every region of the run
	r      *pmem.Region
	in     target.Instance
	obj    target.Object // a data-structure target's, in place of in
	d      *driver.Driver
	rn     rngs
	sc     *scratch   // keeps the region for the next run (nil: closed)
	tag    driver.Tag // the goroutine of guarded calls
	caller caller     // runs them
	// perOp is the region accesses per operation: a first guess, then
	// what the run measured (accesses over ops); it scales the random
	// crash points to the segment.
	perOp         float64
	accesses, ops int64
	// perRecovery is the most accesses a whole recovery made so far (a
	// first guess before one is measured): the range of the points where
	// a recovery is crashed.
	perRecovery int64
	// abandoned: a guarded call never returned; its goroutine may still
	// touch the region, which is therefore never closed.
	abandoned bool
	// lastRare: a last segment was armed for a rare-site crash
	// (Config.RareCrash); the one after it, if it crashed, is not.
	lastRare bool
	// silent: a segment's worker was found silent (driver.Blocked, or a
	// Stuck one that spun outside the region).
	silent bool
}

func newEmulated(ctx context.Context, c Config, rec *record.Recorder, sc *scratch) (*emulated, error) {
	tc, err := c.targetConfig()
	if err != nil {
		return nil, err
	}
	n, err := c.Target.Size(tc)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", c.Target.Name, err)
	}
	emulate := false // the max policy alone needs no store logs
	for _, p := range c.Policies {
		emulate = emulate || p != pmem.PolicyMax
	}
	e := &emulated{c: c, tc: tc, opts: pmem.Options{Emulate: emulate}, rn: newRNGs(c.Driver.Seed), sc: sc,
		perOp: float64(8 + 6*c.Driver.K), perRecovery: int64(c.Driver.Words) + 8}
	e.tag = driver.NewTag(fmt.Sprintf("run %p", e))
	if e.r, err = newRegion(sc, n, e.opts); err != nil {
		return nil, err
	}
	err = e.call(ctx, 0, 0, func() (err error) {
		if c.isObject() {
			e.obj, err = c.Target.NewObject(e.r, tc)
			return err
		}
		e.in, err = c.Target.New(e.r, tc)
		return err
	})
	switch {
	case err != nil:
		err = fmt.Errorf("target %s: new: %w", c.Target.Name, err)
	case c.isObject():
		e.d, err = driver.NewObject(c.Driver, driver.Recorded(rec), e.obj, e.r, rec)
	default:
		e.d, err = driver.New(c.Driver, e.in, e.r, rec)
	}
	if err == nil {
		e.d.KeepWorkers() // closed by close, or handed on to the next run
		if c.RareCrash {
			e.d.CountSites(c.Driver.Seed)
		}
	}
	if err == nil && sc != nil {
		e.d.Recycle(sc.drv)
		sc.drv = nil
	}
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// call runs f, the target's code, guarded (guard.go) on the region, which
// it crashes at access at or right after its afterPersist-th flush or
// fence (0: never). It returns f's error, the guard's, or the crash.
func (e *emulated) call(ctx context.Context, at, afterPersist int64, f func() error) error {
	_, err := e.callOn(ctx, at, afterPersist, f)
	return err
}

// callOn is call, also returning the hook (its counts).
func (e *emulated) callOn(ctx context.Context, at, afterPersist int64, f func() error) (*callHook, error) {
	h := &callHook{at: at, afterPersist: afterPersist, bound: e.c.Driver.StuckAccesses + 16*int64(e.r.Words())}
	e.r.SetHook(h)
	err := guarded(ctx, &e.caller, e.tag, h, e.c.Driver.StuckAfter, f)
	if h.dead.Load() {
		e.abandoned = true // the hook stays: it fails every access
	} else {
		e.r.SetHook(nil)
	}
	return h, err
}

func (e *emulated) segment(ctx context.Context, quota []int, last bool) (segment, error) {
	var cp driver.CrashPoint
	total := 0
	for _, q := range quota {
		total += q
	}
	switch {
	case last:
	case e.c.CrashAt > 0:
		cp.Access = e.c.CrashAt
	case e.c.Driver.Sched == driver.Deterministic:
		cp.Access = 1 + e.rn.crash.Int64N(max(1, int64(float64(total)*e.perOp)))
	default:
		cp.Worker = e.rn.crash.IntN(e.c.Driver.Threads)
		cp.Access = 1 + e.rn.crash.Int64N(max(1, int64(float64(quota[cp.Worker])*e.perOp)))
	}
	if !last && e.c.CrashAt == 0 && e.c.LateCrash > 0 && e.c.Driver.Sched == driver.Deterministic && e.rn.late.Float64() < e.c.LateCrash {
		cp.Access, cp.Late = 0, true // at the end of a late write's window
	}
	// (Not with a late crash, aimed at its own window; the sites are
	// counted in every segment.) The last segment too, which has no crash
	// point of its own: it runs what the crashes of the others cut off
	// (a uniform point leaves half a segment's quota on average), often
	// the fullest part of the run, where a structure's rare paths are
	// (level hashing moves items once its table is full).
	// A last segment that crashes so is followed by one more (Run's loop),
	// which does not.
	cp.Rare = e.c.CrashAt == 0 && !cp.Late && e.c.RareCrash && !e.lastRare
	e.lastRare = e.lastRare || last && cp.Rare
	if e.c.Stall > 0 && !e.c.Target.Blocking && e.rn.stall.Float64() < e.c.Stall {
		// Before the crash point, if any: a stall stops its worker for the
		// rest of the segment.
		span := int64(float64(total) * e.perOp)
		if cp.Access > 0 {
			span = cp.Access - 1
		}
		cp.Stall = 1 + e.rn.stall.Int64N(max(1, span))
	}
	res, err := e.d.Segment(ctx, quota, cp)
	if err != nil {
		return segment{}, err
	}
	if res.Blocked != nil || (res.Stuck != nil && res.Stuck.Quiet > 0) {
		// A worker found silent by the watchdog may never return, and
		// touch the region late: it is not renewed for another run.
		e.silent = true
	}
	e.accesses += res.Accesses
	e.ops += res.Invoked
	if res.Invoked > 0 {
		e.perOp = float64(e.accesses) / float64(e.ops)
	}
	return segment{MergeStats: res.MergeStats, accesses: res.Accesses, crashed: res.Crashed, stalled: res.Stall != nil, holds: res.Holds, late: res.LateCrash, rare: res.RareCrash, anomaly: stopped(res)}, nil
}

// stopped turns a segment's stuck, failed or blocked operation into an
// anomaly.
func stopped(seg driver.SegmentResult) *analyzer.Anomaly {
	switch {
	case seg.Stuck != nil:
		s := seg.Stuck
		return &analyzer.Anomaly{Kind: Stuck, Ops: []int64{s.Line}, Words: append([]uint64{}, s.Addrs...), Explanation: s.String()}
	case seg.Failed != nil:
		f := seg.Failed
		return &analyzer.Anomaly{Kind: Corrupt, Ops: []int64{f.Line}, Words: []uint64{}, Explanation: f.Error()}
	case seg.Blocked != nil:
		b := seg.Blocked
		return &analyzer.Anomaly{Kind: Blocked, Ops: []int64{b.Line}, Words: append([]uint64{}, b.Addrs...), Explanation: b.String()}
	}
	return nil
}

func (e *emulated) crash(seg segment) (string, error) {
	if l := seg.late; l != nil {
		// A late crash: its own image, every store kept but the change and
		// what followed it on the word's line.
		if err := e.r.CrashKeeping(l.Off, l.Keep); err != nil {
			return "", err
		}
		return fmt.Sprintf("a late crash: region word %d, written late with %#x, then changed to %#x, not yet durable; right before the fence of process %d that would make it durable (%d accesses of the others since the change); image: every store kept but that change and the later ones to its cache line",
			l.Off, l.Late, l.Now, l.Proc, l.Others), nil
	}
	p := e.c.Policies[e.rn.policy.IntN(len(e.c.Policies))]
	if err := e.r.Crash(p, e.rn.image); err != nil {
		return "", err
	}
	how := "image policy " + p.String()
	switch {
	case seg.failed:
		how += " (where an operation's error stopped the run)"
	case !seg.crashed:
		how += " (at the end of the segment: the workload finished before the crash point)"
	case seg.rare:
		how += " (at a site the run had not met before: --rare-crash)"
	}
	return how, nil
}

// recover recovers the target from the crash image, as a new process
// would: the image reopened, the target opened on it, its recovery run;
// the recovery itself crashed per the configuration (plan), each time on a
// new image by a policy drawn as for any crash, then opened and recovered
// again, until a recovery runs to its end.
func (e *emulated) recover(ctx context.Context) (recovery, error) {
	var rv recovery
	var notes []string
	for n := 1; ; n++ {
		at, after := e.plan(n)
		said, h, err := e.reopenAndRecover(ctx, at, after)
		switch {
		case ctx.Err() != nil:
			return rv, nil // the run is canceled: Run's loop sees it
		case h != nil && h.crashedAt > 0 && errors.Is(err, pmem.ErrCrashed):
			p := e.c.Policies[e.rn.policy.IntN(len(e.c.Policies))]
			if err := e.r.Crash(p, e.rn.image); err != nil {
				return rv, err
			}
			rv.crashes++
			how := fmt.Sprintf("recovery crashed at its access %d", h.crashedAt)
			if after > 0 {
				how += fmt.Sprintf(" (right after its flush or fence %d)", after)
			}
			notes = append(notes, how+", image policy "+p.String())
			continue
		case h != nil && (at == 0 && after == 0 || h.crashedAt == 0):
			e.perRecovery = max(e.perRecovery, h.seen.Load())
		}
		if len(notes) > 0 {
			rv.note = "; " + strings.Join(notes, "; ") + ", recovered again"
		}
		rv.said, rv.err = said, err
		if err != nil {
			if stuckCall(err) {
				rv.kind = Stuck
			}
			return rv, nil
		}
		return e.read(ctx, rv)
	}
}

// plan says where the n-th run (1-based) of a recovery is crashed: at its
// access at, or right after its after-th flush or fence (0: not crashed).
// The first random draw is the one runs always made (same seed, same run).
func (e *emulated) plan(n int) (at, after int64) {
	c, rn := e.c, e.rn
	switch {
	case c.RecoverySweep:
		if n <= MaxRecoveryCrashes {
			return 0, int64(n)
		}
	case n > c.RecoveryCrashes || c.RecoveryCrash == 0:
	case n == 1 && rn.crash.Float64() < c.RecoveryCrash:
		return 1 + rn.crash.Int64N(e.perRecovery), 0
	case n > 1 && rn.fire.Float64() < c.RecoveryCrash:
		return 1 + rn.fire.Int64N(e.perRecovery), 0
	}
	return 0, 0
}

// reopenAndRecover reopens the region (the crash image is in it) as a new
// process would, opens the target on it and recovers it, crashing the
// recovery at access at or right after its after-th flush or fence (0:
// never). It returns what Recover said, the hook of the guarded call (nil
// if it was not made), and the error of Open (wrapped: "the target's Open
// ..."), of Recover, of the guard, or the crash.
func (e *emulated) reopenAndRecover(ctx context.Context, at, after int64) (string, *callHook, error) {
	if e.abandoned {
		return "", nil, errors.New("crash: a call of the target never returned")
	}
	r, err := e.r.Reopen(e.opts)
	if err != nil {
		return "", nil, fmt.Errorf("crash: reopen the crash image: %w", err)
	}
	e.r = r
	var in target.Instance
	var obj target.Object
	var said string
	opened := false
	h, err := e.callOn(ctx, at, after, func() (err error) {
		if e.c.isObject() {
			if obj, err = e.c.Target.OpenObject(r, e.tc); err != nil {
				return err
			}
			opened = true
			said, err = obj.Recover(0)
			return err
		}
		if in, err = e.c.Target.Open(r, e.tc); err != nil {
			return err
		}
		opened = true
		said, err = in.Recover(0)
		return err
	})
	switch {
	case h.dead.Load():
		// Abandoned: its goroutine may still write in, said and opened.
		return "", h, err
	case err == nil && obj != nil:
		e.obj = obj
		e.d.RebindObject(obj, r)
	case err == nil:
		e.in = in
		err = e.d.Rebind(in, r)
	case !opened && !errors.Is(err, pmem.ErrCrashed) && !stuckCall(err):
		err = fmt.Errorf("the target's Open refused the crash image, reopened as a new process would: %w", err)
	}
	return said, h, err
}

// read adds the direct read of every data word after a recovery that
// succeeded.
func (e *emulated) read(ctx context.Context, rv recovery) (recovery, error) {
	var err error
	if e.obj != nil {
		// The state goes to rv only if the call was not abandoned (a
		// campaign cancelled, a stuck State): the abandoned goroutine may
		// still write it.
		var st []model.Value
		h, cerr := e.callOn(ctx, 0, 0, func() (err error) {
			var finding error
			st, finding, err = readState(e.r, e.obj)
			if finding != nil {
				return finding
			}
			return err
		})
		rv.err = cerr
		if !h.dead.Load() {
			rv.state = st
		}
		if stuckCall(rv.err) {
			rv.kind = Stuck
		}
		return rv, nil
	}
	rv.addrs, rv.vals, rv.err, err = rawRead(e.r, e.in, e.c.Driver.Words)
	return rv, err
}

// final reads every word through the target, guarded; a data-structure
// target's state as after a recovery.
func (e *emulated) final(ctx context.Context) (recovery, error) {
	if e.obj != nil {
		return e.read(ctx, recovery{})
	}
	rv := recovery{addrs: allAddrs(e.c.Driver.Words)}
	rv.vals = make([]uint64, len(rv.addrs))
	rv.err = e.call(ctx, 0, 0, func() error { return e.in.Read(0, rv.addrs, rv.vals) })
	if stuckCall(rv.err) {
		rv.kind = Stuck
	}
	return rv, nil
}

func (e *emulated) close() {
	e.caller.stop()
	switch {
	case e.abandoned:
	case e.sc != nil && !e.silent:
		e.sc.close()
		e.sc.spare, e.sc.drv = e.r, e.d
		return // the scratch keeps the driver, its workers parked, for the next run
	default:
		e.r.Close()
	}
	if e.d != nil {
		e.d.Close()
	}
}

// newRegion is a zeroed anonymous region of n words: sc's spare renewed,
// if there is one large enough, else a new one.
func newRegion(sc *scratch, n uint64, opts pmem.Options) (*pmem.Region, error) {
	if sc == nil || sc.spare == nil {
		return pmem.NewMemory(n, opts)
	}
	r, err := sc.spare.Renew(n, opts)
	if err != nil { // too small
		sc.close()
		return pmem.NewMemory(n, opts)
	}
	sc.spare = nil
	return r, nil
}
