package crash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/driver"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/pmem"
)

// Anomaly kinds a run finds by itself, beside the analyzer's.
const (
	// Stuck: an operation made no progress while the scheduler could run
	// it (Lawrence and Lowe's progressibility).
	Stuck analyzer.Kind = "stuck"
	// Corrupt: an operation or a recovery failed with an error (for the
	// PMwCAS, a region state that no run of the correct code produces).
	Corrupt analyzer.Kind = "corrupt"
)

// Result is what a run did.
type Result struct {
	Seed uint64 `json:"seed"`
	// Operations are the workload operations invoked (Reads + CASes); the
	// full reads after recovery and at the end are not counted.
	Operations int64 `json:"operations"`
	Reads      int64 `json:"reads"`
	CASes      int64 `json:"cas"`
	Returned   int64 `json:"returned"`
	Crashes    int   `json:"crashes"`
	// RecoveryCrashes counts recoveries that were crashed and run again.
	RecoveryCrashes int `json:"recovery_crashes"`
	// Accesses are the region accesses of the workload.
	Accesses int64 `json:"accesses"`
	// Lines is the length of the history.
	Lines int64 `json:"lines"`
	// Anomalies found by the run itself (stuck, corrupt).
	Anomalies []analyzer.Anomaly `json:"anomalies"`
	// Canceled: the context ended the run early.
	Canceled bool `json:"canceled,omitempty"`
}

// rngs are the run's random streams, all from its seed.
type rngs struct {
	crash, policy, image *rand.Rand
}

func newRNGs(seed uint64) rngs {
	return rngs{
		crash:  rand.New(rand.NewPCG(seed, 0xc4a5)),
		policy: rand.New(rand.NewPCG(seed, 0x9011)),
		image:  rand.New(rand.NewPCG(seed, 0x1a6e)),
	}
}

// Run records one run of c as a history written to w.
func Run(ctx context.Context, c Config, w io.Writer) (*Result, error) {
	c = c.WithDefaults()
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.Kill != nil {
		return runKill(ctx, c, w)
	}
	mc := c.mwcasConfig()
	n, err := mwcas.RegionWords(mc)
	if err != nil {
		return nil, err
	}
	emulate := false
	for _, p := range c.Policies {
		emulate = emulate || p != pmem.PolicyMax
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: emulate})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	m, err := mwcas.New(r, mc)
	if err != nil {
		return nil, err
	}
	rec := driver.NewRecorder(history.NewWriter(w))
	rec.Header()
	rec.Comment("pmlin run " + c.Flags())
	d, err := driver.New(c.Driver, m, r, rec)
	if err != nil {
		return nil, err
	}
	res := &Result{Seed: c.Driver.Seed}
	rn := newRNGs(c.Driver.Seed)
	rem := split(c.Ops, c.Driver.Threads)
	reader := int32(c.Driver.Threads)
	// Accesses per operation: a first guess, then what the run measured.
	perOp := float64(8 + 6*c.Driver.K)
	for round := 0; round <= c.Crashes; round++ {
		last := round == c.Crashes
		quota := make([]int, len(rem))
		total := 0
		for i := range rem {
			quota[i] = ceilDiv(rem[i], c.Crashes+1-round)
			total += quota[i]
		}
		var cp driver.CrashPoint
		switch {
		case last:
		case c.CrashAt > 0:
			cp.Access = c.CrashAt
			quota = append([]int(nil), rem...)
		case c.Driver.Sched == driver.Deterministic:
			cp.Access = 1 + rn.crash.Int64N(max(1, int64(float64(total)*perOp)))
		default:
			cp.Worker = rn.crash.IntN(c.Driver.Threads)
			cp.Access = 1 + rn.crash.Int64N(max(1, int64(float64(quota[cp.Worker])*perOp)))
		}
		seg, err := d.Segment(ctx, quota, cp)
		if err != nil {
			return res, err
		}
		res.add(seg.MergeStats)
		res.Accesses += seg.Accesses
		for i := range rem {
			rem[i] -= quota[i] - seg.Left[i]
		}
		if seg.MergeStats.Invoked > 0 {
			perOp = float64(res.Accesses) / float64(res.Operations)
		}
		if stop := res.stopped(seg); stop {
			break
		}
		if ctx.Err() != nil {
			res.Canceled = true
			break
		}
		if last {
			break
		}
		// The crash: at the crash point, or at the end of the segment if
		// the workload finished first.
		crashLine := rec.Crash()
		res.Crashes++
		p := c.Policies[rn.policy.IntN(len(c.Policies))]
		if err := r.Crash(p, rn.image); err != nil {
			return res, err
		}
		note := fmt.Sprintf("crash %d: image policy %s", res.Crashes, p)
		if !seg.Crashed {
			note += " (at the end of the segment: the workload finished before the crash point)"
		}
		stats, rerr := recoverRegion(r, m, c, rn, &note, res)
		rec.Comment(note)
		if rerr != nil {
			res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: Corrupt, Ops: []int64{}, Words: []uint64{},
				Explanation: fmt.Sprintf("recovery after the crash at line %d failed: %v", crashLine, rerr)})
			break
		}
		rec.Comment(fmt.Sprintf("recovery: %d words rolled forward, %d rolled back, %d RDCSS undone, %d dirty bits cleared, %d descriptors freed",
			stats.RolledForward, stats.RolledBack, stats.RDCSSUndone, stats.DirtyCleared, stats.Descriptors))
		addrs, vals, err := rawRead(r, c.Driver.Words)
		if err != nil {
			return res, err
		}
		rec.Read(reader, addrs, vals)
	}
	if len(res.Anomalies) == 0 && !res.Canceled {
		addrs := iota(c.Driver.Words)
		vals := make([]uint64, len(addrs))
		if err := m.Read(0, addrs, vals); err != nil {
			res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: Corrupt, Ops: []int64{rec.Lines() + 1}, Words: []uint64{},
				Explanation: fmt.Sprintf("the final read of every word failed: %v", err)})
		} else {
			rec.Read(reader, addrs, vals)
		}
	}
	res.Lines = rec.Lines()
	return res, rec.Flush()
}

// recoverRegion recovers m after r.Crash, crashing the recovery itself
// first with probability c.RecoveryCrash.
func recoverRegion(r *pmem.Region, m *mwcas.PMwCAS, c Config, rn rngs, note *string, res *Result) (mwcas.RecoveryStats, error) {
	if c.RecoveryCrash > 0 && rn.crash.Float64() < c.RecoveryCrash {
		// Recovery loads every data word and every descriptor status.
		at := 1 + rn.crash.Int64N(int64(c.Driver.Words)+int64(c.Driver.Threads*c.Descriptors)+8)
		r.SetHook(&crashAfter{n: at})
		st, err := m.Recover(0)
		r.SetHook(nil)
		switch {
		case errors.Is(err, pmem.ErrCrashed):
			p := c.Policies[rn.policy.IntN(len(c.Policies))]
			if err := r.Crash(p, rn.image); err != nil {
				return mwcas.RecoveryStats{}, err
			}
			res.RecoveryCrashes++
			*note += fmt.Sprintf("; recovery crashed at its access %d, image policy %s, recovered again", at, p)
		default:
			// Finished (or failed) before its crash point.
			return st, err
		}
	}
	return m.Recover(0)
}

// crashAfter crashes the region at its n-th access.
type crashAfter struct{ n, seen int64 }

func (h *crashAfter) Access(int, pmem.AccessKind, uint64) error {
	h.seen++
	if h.seen == h.n {
		return pmem.ErrCrashed
	}
	return nil
}

// rawRead reads every data word directly (no PMwCAS read, which would help
// or clean what recovery left behind).
func rawRead(r *pmem.Region, words uint64) (addrs, vals []uint64, err error) {
	addrs = iota(words)
	vals = make([]uint64, words)
	w := r.Worker(0)
	for a := range words {
		if vals[a], err = w.Load(mwcas.DataOffset(a)); err != nil {
			return nil, nil, err
		}
	}
	return addrs, vals, nil
}

func iota(n uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i)
	}
	return out
}

func (res *Result) add(ms driver.MergeStats) {
	res.Operations += ms.Invoked
	res.Reads += ms.Reads
	res.CASes += ms.CASes
	res.Returned += ms.Returned
}

// stopped turns a segment's stuck or failed operation into an anomaly.
func (res *Result) stopped(seg driver.SegmentResult) bool {
	switch {
	case seg.Stuck != nil:
		s := seg.Stuck
		res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: Stuck, Ops: []int64{s.Line}, Words: append([]uint64{}, s.Addrs...),
			Explanation: s.String()})
		return true
	case seg.Failed != nil:
		f := seg.Failed
		res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: Corrupt, Ops: []int64{f.Line}, Words: []uint64{},
			Explanation: f.Error()})
		return true
	}
	return false
}

// split divides n operations among t workers.
func split(n, t int) []int {
	out := make([]int, t)
	for i := range out {
		out[i] = n / t
		if i < n%t {
			out[i]++
		}
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
