package crash

import (
	"context"
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/driver"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/pmem"
)

// emulated runs a run's segments in this process, on an emulated region:
// a crash stops every worker at its next region access, and the image is
// built by a policy drawn per crash.
type emulated struct {
	c  Config
	r  *pmem.Region
	m  *mwcas.PMwCAS
	d  *driver.Driver
	rn rngs
	// perOp is the region accesses per operation: a first guess, then
	// what the run measured (accesses over ops); it scales the random
	// crash points to the segment.
	perOp         float64
	accesses, ops int64
}

func newEmulated(c Config, rec *driver.Recorder) (*emulated, error) {
	mc := c.mwcasConfig()
	n, err := mwcas.RegionWords(mc)
	if err != nil {
		return nil, err
	}
	emulate := false // the max policy alone needs no store logs
	for _, p := range c.Policies {
		emulate = emulate || p != pmem.PolicyMax
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: emulate})
	if err != nil {
		return nil, err
	}
	e := &emulated{c: c, r: r, rn: newRNGs(c.Driver.Seed), perOp: float64(8 + 6*c.Driver.K)}
	if e.m, err = mwcas.New(r, mc); err == nil {
		e.d, err = driver.New(c.Driver, e.m, r, rec)
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

// stopped turns a segment's stuck or failed operation into an anomaly.
func stopped(seg driver.SegmentResult) *analyzer.Anomaly {
	switch {
	case seg.Stuck != nil:
		s := seg.Stuck
		return &analyzer.Anomaly{Kind: Stuck, Ops: []int64{s.Line}, Words: append([]uint64{}, s.Addrs...), Explanation: s.String()}
	case seg.Failed != nil:
		f := seg.Failed
		return &analyzer.Anomaly{Kind: Corrupt, Ops: []int64{f.Line}, Words: []uint64{}, Explanation: f.Error()}
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

// recover recovers the PMwCAS, crashing the recovery itself first with
// probability RecoveryCrash (at a random access of the ones it makes:
// a load of every data word and every descriptor status, and a few more).
func (e *emulated) recover() (recovery, error) {
	c, rn := e.c, e.rn
	var rv recovery
	if c.RecoveryCrash > 0 && rn.crash.Float64() < c.RecoveryCrash {
		at := 1 + rn.crash.Int64N(int64(c.Driver.Words)+int64(c.Driver.Threads*c.Descriptors)+8)
		e.r.SetHook(&crashAfter{n: at})
		st, err := e.m.Recover(0)
		e.r.SetHook(nil)
		if !errors.Is(err, pmem.ErrCrashed) { // finished (or failed) before its crash point
			return e.read(recovery{stats: st, err: err})
		}
		p := c.Policies[rn.policy.IntN(len(c.Policies))]
		if err := e.r.Crash(p, rn.image); err != nil {
			return rv, err
		}
		rv.crashes++
		rv.note = fmt.Sprintf("; recovery crashed at its access %d, image policy %s, recovered again", at, p)
	}
	rv.stats, rv.err = e.m.Recover(0)
	return e.read(rv)
}

// read adds the direct read of every data word after a recovery that
// succeeded.
func (e *emulated) read(rv recovery) (recovery, error) {
	if rv.err != nil {
		return rv, nil
	}
	var err error
	rv.addrs, rv.vals, err = rawRead(e.r, e.c.Driver.Words)
	return rv, err
}

func (e *emulated) final() (recovery, error) {
	rv := recovery{addrs: allAddrs(e.c.Driver.Words)}
	rv.vals = make([]uint64, len(rv.addrs))
	rv.err = e.m.Read(0, rv.addrs, rv.vals)
	return rv, nil
}

func (e *emulated) close() { e.r.Close() }
