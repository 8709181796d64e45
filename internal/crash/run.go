package crash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Anomaly kinds a run finds by itself, beside the analyzer's.
const (
	// Stuck: an operation made no progress while the scheduler could run
	// it (Lawrence and Lowe's progressibility).
	Stuck analyzer.Kind = "stuck"
	// Corrupt: an operation or a recovery failed with an error (for the
	// PMwCAS, a region state that no run of the correct code produces).
	Corrupt analyzer.Kind = "corrupt"
	// Blocked: under the deterministic scheduler, the target waited
	// outside region accesses (a Go mutex, a channel), where the scheduler
	// cannot switch workers (driver.Blocked).
	Blocked analyzer.Kind = "blocked"
)

// Kinds lists every anomaly kind a run's verdict can carry: the analyzer's
// and the run's own. FuzzConfig.Ignore must name only these.
func Kinds() []analyzer.Kind {
	return []analyzer.Kind{analyzer.Cycle, analyzer.Dangling, analyzer.UnexplainedFailure,
		analyzer.Fork, analyzer.UnreachableWrite, Stuck, Corrupt, Blocked}
}

// checkKinds refuses a kind that no verdict carries, so a typo in an
// ignore list does not silently ignore nothing.
func checkKinds(ks []analyzer.Kind) error {
	known := Kinds()
	for _, k := range ks {
		if !slices.Contains(known, k) {
			names := make([]string, len(known))
			for i, x := range known {
				names[i] = string(x)
			}
			return fmt.Errorf("unknown anomaly kind %q (known: %s)", k, strings.Join(names, ", "))
		}
	}
	return nil
}

// Result is what a run did.
type Result struct {
	// Seed is a JSON string, as every 64-bit identifier pmlin writes
	// (internal/jsonid: a reader whose numbers are doubles rounds it).
	Seed uint64 `json:"seed,string"`
	// Operations are the workload operations invoked (Reads + CASes +
	// Swaps); the full reads after recovery and at the end are not counted.
	Operations int64 `json:"operations"`
	Reads      int64 `json:"reads"`
	CASes      int64 `json:"cas"`
	Swaps      int64 `json:"swaps"`
	Returned   int64 `json:"returned"`
	Crashes    int   `json:"crashes"`
	// RecoveryCrashes counts the crashes of recoveries (each then run
	// again on the new image).
	RecoveryCrashes int `json:"recovery_crashes"`
	// Stalls counts the segments in which the progress check stopped a
	// worker (driver.Stall).
	Stalls int `json:"stalls"`
	// Holds counts the threads the late-write policy held
	// (driver.Config.Late).
	Holds int64 `json:"holds"`
	// LateCrashes counts the segments that crashed where a late write's
	// change was not yet durable (Config.LateCrash).
	LateCrashes int `json:"late_crashes"`
	// RareCrashes counts the segments that crashed at a site the run had
	// not met before (Config.RareCrash).
	RareCrashes int `json:"rare_crashes"`
	// Accesses are the region accesses of the workload.
	Accesses int64 `json:"accesses"`
	// Lines is the length of the history.
	Lines int64 `json:"lines"`
	// Anomalies found by the run itself (stuck, corrupt, blocked).
	Anomalies []analyzer.Anomaly `json:"anomalies"`
	// Canceled: the context ended the run early.
	Canceled bool `json:"canceled,omitempty"`
}

// rngs are the run's random streams, all from its seed. Each choice has a
// stream of its own, so that a new kind of choice leaves the others, and
// the histories of runs that do not make it, as they were.
type rngs struct {
	crash, policy, image *rand.Rand
	stall, fire, late    *rand.Rand
}

func newRNGs(seed uint64) rngs {
	return rngs{
		crash:  rand.New(rand.NewPCG(seed, 0xc4a5)),
		policy: rand.New(rand.NewPCG(seed, 0x9011)),
		image:  rand.New(rand.NewPCG(seed, 0x1a6e)),
		stall:  rand.New(rand.NewPCG(seed, 0x57a1)),
		fire:   rand.New(rand.NewPCG(seed, 0xf12e)),
		late:   rand.New(rand.NewPCG(seed, 0x1a7ec)),
	}
}

// rounds is where a run's segments run and what a crash is: in this
// process on an emulated region (emulated), or in child processes killed
// with SIGKILL (killer). Run's round loop is the same for every one: it
// owns the history's crash lines, comments and full reads, the run's
// counts and its anomalies.
type rounds interface {
	// segment runs quota[w] operations on each worker w (merged into the
	// history) and, unless last, crashes at a seeded point, unless the
	// workload finishes first.
	segment(ctx context.Context, quota []int, last bool) (segment, error)
	// crash makes the crash image after seg and says how the crash came
	// (the history's comment after "crash N: ").
	crash(seg segment) (string, error)
	// recover recovers the target from the image and reads every data word
	// directly on the region (rawRead). An error is the run's; a failed
	// recovery is a finding, in recovery.err.
	recover(ctx context.Context) (recovery, error)
	// final reads every word through the target at the end of the run. An
	// error is the run's; a failed read is a finding, in recovery.err.
	final(ctx context.Context) (recovery, error)
	// close releases what the run holds (regions, files).
	close()
}

// segment is what a segment did.
type segment struct {
	record.MergeStats
	accesses int64 // region accesses of the workload, where counted
	crashed  bool  // at its crash point (else the workload finished first)
	failed   bool  // stopped by an operation's error (afterAssertion)
	stalled  bool  // the progress check stopped a worker (driver.Stall)
	holds    int64 // the late-write policy held workers
	// late is where a late crash fell (nil: none did).
	late *driver.LateCrash
	rare bool // crashed at a site the run had not met (Config.RareCrash)
	// anomaly, if set, stopped the segment (stuck, corrupt).
	anomaly *analyzer.Anomaly
}

// recovery is what a recovery after a crash did, or the final read.
type recovery struct {
	said    string // what the target's Recover said it did
	note    string // what happened on the way, added to the crash comment
	crashes int    // times the recovery itself was crashed
	err     error  // the recovery failed: a finding
	// kind is the finding's kind: Corrupt (the zero value) or Stuck.
	kind analyzer.Kind
	// addrs and vals are the read of every data word afterwards; state,
	// a data-structure target's state (target.Object.State).
	addrs, vals []uint64
	state       []model.Value
}

// Run records one run of c as a history written to w, as text.
func Run(ctx context.Context, c Config, w io.Writer) (*Result, error) {
	return RunTo(ctx, c, record.NewRecorder(history.NewWriter(w)))
}

// RunTo records one run of c with rec (text or a binary history).
func RunTo(ctx context.Context, c Config, rec *record.Recorder) (*Result, error) {
	return runTo(ctx, c, rec, nil)
}

// runTo is RunTo, with an emulated run's region renewed from sc's spare
// and left there afterwards (sc nil: made and closed).
func runTo(ctx context.Context, c Config, rec *record.Recorder, sc *scratch) (*Result, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.isObject() {
		w, err := c.ObjectWorkload()
		if err == nil {
			err = rec.SetObject(w)
		}
		if err != nil {
			return nil, err
		}
	}
	var rs rounds
	var err error
	if c.CrashMode == Emulated {
		rs, err = newEmulated(ctx, c, rec, sc)
	} else {
		rs, err = newKiller(c, rec)
	}
	if err != nil {
		return nil, err
	}
	defer rs.close()
	rec.Header()
	rec.Comment("pmlin run " + sc.flags(c))
	if c.CrashMode != Emulated {
		rec.Comment(c.Replays())
	}
	// The history says whether it is complete: its last line is "end",
	// or "interrupted ..." when the run was stopped; a history cut short
	// otherwise (a killed process, a broken pipe) has neither.
	rec.Promise(uint64(c.Ops))
	res := &Result{Seed: c.Driver.Seed, Anomalies: []analyzer.Anomaly{}} // a list in JSON, never null
	if err := loop(ctx, c, rs, rec, res); err != nil {
		return res, err
	}
	if res.Canceled {
		rec.Interrupted(uint64(res.Operations), uint64(c.Ops))
	} else {
		rec.End()
	}
	res.Lines = rec.Lines()
	return res, rec.Flush()
}

// loop is the round loop: segments, each but the last ended by a crash,
// recovery and the read of what recovery left, then the final read.
func loop(ctx context.Context, c Config, rs rounds, rec *record.Recorder, res *Result) error {
	crashes := c.crashes()
	rem := split(c.Ops, c.Driver.Threads)
	reader := int32(c.Driver.Threads) // the full reads' process
	for round := 0; round <= crashes; round++ {
		last := round == crashes
		quota := make([]int, len(rem))
		for i := range rem {
			quota[i] = ceilDiv(rem[i], crashes+1-round)
		}
		if c.CrashAt > 0 && !last {
			quota = append(quota[:0], rem...) // the crash point may be anywhere
		}
		seg, err := rs.segment(ctx, quota, last)
		if err != nil {
			return err
		}
		res.add(seg.MergeStats)
		res.Accesses += seg.accesses
		if seg.stalled {
			res.Stalls++
		}
		res.Holds += seg.holds
		if seg.late != nil {
			res.LateCrashes++
		}
		if seg.rare {
			res.RareCrashes++
		}
		for i := range rem {
			rem[i] = max(0, rem[i]-int(seg.InvokedBy[i]))
		}
		switch {
		case seg.anomaly != nil && seg.anomaly.Kind == Corrupt && c.CrashMode == Emulated:
			return afterAssertion(ctx, rs, seg, rec, reader, res)
		case seg.anomaly != nil:
			res.Anomalies = append(res.Anomalies, *seg.anomaly)
			return nil
		case ctx.Err() != nil:
			res.Canceled = true
			return nil
		case last && !seg.crashed:
		default:
			if ok, err := crashRound(ctx, rs, seg, rec, reader, res); !ok || err != nil {
				return err
			}
			if last {
				// The last segment crashed at a rare site
				// (Config.RareCrash): one more runs what it cut off.
				crashes++
			}
		}
	}
	rv, err := rs.final(ctx)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		res.Canceled = true
		return nil
	}
	if rv.err != nil {
		res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: rv.findingKind(), Ops: []int64{rec.Lines() + 1}, Words: []uint64{},
			Explanation: fmt.Sprintf("the final read of every word failed: %v", rv.err)})
		return nil
	}
	if err := recordRead(rec, reader, rv); err != nil {
		res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: Corrupt, Ops: []int64{rec.Lines() + 1}, Words: []uint64{},
			Explanation: fmt.Sprintf("the final read of the state: %v", err)})
	}
	return nil
}

// afterAssertion ends a run whose operation failed with an error of the
// target's own (an assertion, a corrupt descriptor: seg.anomaly, Corrupt)
// as a crash would: the region crashes where the error stopped the
// segment, recovers, and what recovery left is read back and recorded.
// So the history is judged, with --ignore corrupt too, up to that point
// and with the state the failed operation left (cut off, as by a crash),
// not only by the error; the anomaly says so.
func afterAssertion(ctx context.Context, rs rounds, seg segment, rec *record.Recorder, reader int32, res *Result) error {
	a := *seg.anomaly
	a.Explanation += fmt.Sprintf("; the run stopped there: the history up to line %d is judged, then the region crashed (line %d), recovered, and what recovery left was read back", rec.Lines(), rec.Lines()+1)
	res.Anomalies = append(res.Anomalies, a)
	seg.failed = true
	_, err := crashRound(ctx, rs, seg, rec, reader, res)
	return err
}

// crashRound records the crash that ends a segment (at its crash point,
// or at its end if the workload finished first), recovers, and records
// what recovery left. It reports whether the run goes on.
func crashRound(ctx context.Context, rs rounds, seg segment, rec *record.Recorder, reader int32, res *Result) (bool, error) {
	crashLine := rec.Crash()
	res.Crashes++
	how, err := rs.crash(seg)
	if err != nil {
		return false, err
	}
	rv, err := rs.recover(ctx)
	if err != nil {
		return false, err
	}
	if ctx.Err() != nil {
		res.Canceled = true
		return false, nil
	}
	res.RecoveryCrashes += rv.crashes
	rec.Comment(fmt.Sprintf("crash %d: %s%s", res.Crashes, how, rv.note))
	if rv.err != nil {
		res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: rv.findingKind(), Ops: []int64{}, Words: []uint64{},
			Explanation: fmt.Sprintf("recovery after the crash at line %d failed: %v", crashLine, rv.err)})
		return false, nil
	}
	if rv.said != "" {
		rec.Comment("recovery: " + rv.said)
	}
	if err := recordRead(rec, reader, rv); err != nil {
		res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: Corrupt, Ops: []int64{}, Words: []uint64{},
			Explanation: fmt.Sprintf("the state read back after recovery from the crash at line %d: %v", crashLine, err)})
		return false, nil
	}
	return true, nil
}

// findingKind is the kind of the anomaly of a failed recovery or read.
func (rv recovery) findingKind() analyzer.Kind {
	if rv.kind != "" {
		return rv.kind
	}
	return Corrupt
}

// rawRead reads every data word directly, where the recovered instance
// says it is (no operation of the target, which could help or clean what
// recovery left behind), or through its Decode (target.Decoder), which may
// only load. A Decode that fails with an error of the target's own, or
// changes the region, is a finding (the recovery's err); err is the run's.
func rawRead(r *pmem.Region, in target.Instance, words uint64) (addrs, vals []uint64, finding, err error) {
	addrs = allAddrs(words)
	vals = make([]uint64, words)
	dec, decodes := in.(target.Decoder)
	var before []uint64
	if decodes {
		before = r.Snapshot()
	}
	w := r.Worker(0)
	for a := range words {
		if decodes {
			vals[a], err = dec.Decode(0, a)
			if err != nil && !errors.Is(err, pmem.ErrCrashed) {
				return nil, nil, fmt.Errorf("the target's Decode of data word %d after recovery failed: %w", a, err), nil
			}
		} else {
			vals[a], err = w.Load(in.DataOffset(a))
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	if decodes {
		after := r.Snapshot()
		for off := range before {
			if before[off] != after[off] {
				return nil, nil, fmt.Errorf("the target's Decode changed region word %d after recovery (%s to %s): it must only read what recovery left", off, history.FormatValue(before[off]), history.FormatValue(after[off])), nil
			}
		}
	}
	return addrs, vals, nil, nil
}

// allAddrs are the addresses 0 .. n-1.
func allAddrs(n uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i)
	}
	return out
}

func (res *Result) add(ms record.MergeStats) {
	res.Operations += ms.Invoked
	res.Reads += ms.Reads
	res.CASes += ms.CASes
	res.Swaps += ms.Swaps
	res.Returned += ms.Returned
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
