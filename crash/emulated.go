package crash

import (
	"context"
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/driver"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// emulated runs a run's segments in this process, on an emulated region:
// a crash stops every worker at its next region access, and the image is
// built by a policy drawn per crash.
type emulated struct {
	c  Config
	r  *pmem.Region
	in target.Instance
	d  *driver.Driver
	rn rngs
	// perOp is the region accesses per operation: a first guess, then
	// what the run measured (accesses over ops); it scales the random
	// crash points to the segment.
	perOp         float64
	accesses, ops int64
	// perRecovery is the most accesses a whole recovery made so far (a
	// first guess before one is measured): the range of the points where
	// a recovery is crashed.
	perRecovery int64
}

func newEmulated(c Config, rec *driver.Recorder) (*emulated, error) {
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
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: emulate})
	if err != nil {
		return nil, err
	}
	e := &emulated{c: c, r: r, rn: newRNGs(c.Driver.Seed), perOp: float64(8 + 6*c.Driver.K), perRecovery: int64(c.Driver.Words) + 8}
	if e.in, err = c.Target.New(r, tc); err != nil {
		err = fmt.Errorf("target %s: new: %w", c.Target.Name, err)
	} else {
		e.d, err = driver.New(c.Driver, e.in, r, rec)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return e, nil
}

func (e *emulated) segment(ctx context.Context, quota []int, last bool) (segment, error) {
	var cp driver.CrashPoint
	switch {
	case last:
	case e.c.CrashAt > 0:
		cp.Access = e.c.CrashAt
	case e.c.Driver.Sched == driver.Deterministic:
		total := 0
		for _, q := range quota {
			total += q
		}
		cp.Access = 1 + e.rn.crash.Int64N(max(1, int64(float64(total)*e.perOp)))
	default:
		cp.Worker = e.rn.crash.IntN(e.c.Driver.Threads)
		cp.Access = 1 + e.rn.crash.Int64N(max(1, int64(float64(quota[cp.Worker])*e.perOp)))
	}
	res, err := e.d.Segment(ctx, quota, cp)
	if err != nil {
		return segment{}, err
	}
	e.accesses += res.Accesses
	e.ops += res.Invoked
	if res.Invoked > 0 {
		e.perOp = float64(e.accesses) / float64(e.ops)
	}
	return segment{MergeStats: res.MergeStats, accesses: res.Accesses, crashed: res.Crashed, anomaly: stopped(res)}, nil
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
	p := e.c.Policies[e.rn.policy.IntN(len(e.c.Policies))]
	if err := e.r.Crash(p, e.rn.image); err != nil {
		return "", err
	}
	how := "image policy " + p.String()
	if !seg.crashed {
		how += " (at the end of the segment: the workload finished before the crash point)"
	}
	return how, nil
}

// recover recovers the target, crashing the recovery itself first with
// probability RecoveryCrash, at a random one of the accesses a recovery
// makes (as measured so far).
func (e *emulated) recover() (recovery, error) {
	c, rn := e.c, e.rn
	var rv recovery
	if c.RecoveryCrash > 0 && rn.crash.Float64() < c.RecoveryCrash {
		at := 1 + rn.crash.Int64N(e.perRecovery)
		said, err := e.recoverOnce(at)
		if !errors.Is(err, pmem.ErrCrashed) { // finished (or failed) before its crash point
			return e.read(recovery{said: said, err: err})
		}
		p := c.Policies[rn.policy.IntN(len(c.Policies))]
		if err := e.r.Crash(p, rn.image); err != nil {
			return rv, err
		}
		rv.crashes++
		rv.note = fmt.Sprintf("; recovery crashed at its access %d, image policy %s, recovered again", at, p)
	}
	rv.said, rv.err = e.recoverOnce(0)
	return e.read(rv)
}

// recoverOnce runs the target's recovery, crashing the region at its
// access at (0: never), and keeps count of the accesses a whole recovery
// makes.
func (e *emulated) recoverOnce(at int64) (string, error) {
	h := &crashAfter{n: at}
	e.r.SetHook(h)
	said, err := e.in.Recover(0)
	e.r.SetHook(nil)
	if at == 0 || h.seen < at {
		e.perRecovery = max(e.perRecovery, h.seen)
	}
	return said, err
}

// read adds the direct read of every data word after a recovery that
// succeeded.
func (e *emulated) read(rv recovery) (recovery, error) {
	if rv.err != nil {
		return rv, nil
	}
	var err error
	rv.addrs, rv.vals, err = rawRead(e.r, e.in, e.c.Driver.Words)
	return rv, err
}

func (e *emulated) final() (recovery, error) {
	rv := recovery{addrs: allAddrs(e.c.Driver.Words)}
	rv.vals = make([]uint64, len(rv.addrs))
	rv.err = e.in.Read(0, rv.addrs, rv.vals)
	return rv, nil
}

func (e *emulated) close() { e.r.Close() }
