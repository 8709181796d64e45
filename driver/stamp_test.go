package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/history"
)

// TestStampOverflow injects a clock that starts a segment's timestamps
// just below 2^52, the first a log record cannot hold, under every
// scheduler and clock: the segment stops with an error that says so, and
// what was recorded up to there is a well-formed history whose last
// stamps reach 2^52-1, the same in binary and in text (the deterministic
// scheduler).
func TestStampOverflow(t *testing.T) {
	type run struct {
		name    string
		sched   Sched
		clock   ClockSource
		threads int
		before  int64 // stamps below 2^52 the segment starts with
	}
	// The clocks of time leave the workers 50 ms of stamps: with 2 ms, a
	// loaded machine (go test -race ./... runs packages side by side)
	// sometimes started the workers after the last stamp, and the segment
	// ended before its first operation.
	const margin = 50 * time.Millisecond
	runs := []run{
		{"deterministic", Deterministic, ClockAuto, 3, 60},
		{"count", Free, ClockAuto, 1, 60},
		{"monotonic", Free, ClockMonotonic, 2, int64(margin)},
	}
	if ok, _ := TSCUsable(); ok {
		runs = append(runs, run{"tsc", Free, ClockTSC, 2, int64(float64(margin) / machineTSC().nsPerTick)})
	}
	for _, rn := range runs {
		t.Run(rn.name, func(t *testing.T) {
			c := cfg(rn.threads, 16, 2, 7)
			c.Sched = rn.sched
			var texts []string
			for _, binary := range []bool{false, true} {
				d, rec, buf := clockedDriver(t, c, rn.clock, binary)
				d.stampFrom = history.MaxStamp - rn.before
				quota := make([]int, rn.threads)
				for i := range quota {
					quota[i] = 1_000_000 // far more than the stamps left
				}
				seg, err := d.Segment(context.Background(), quota, CrashPoint{})
				if err == nil || !strings.Contains(err.Error(), "up to 2^52-1") {
					t.Fatalf("binary %v: the segment ends with error %v after %d operations", binary, err, seg.Invoked)
				}
				t.Log(err)
				var top uint64
				for i := range d.logs {
					top = max(top, d.logs[i].lastTS)
				}
				if rn.sched == Deterministic && top != history.MaxStamp {
					t.Fatalf("the last stamp logged is %d, not 2^52-1", top)
				}
				if top > history.MaxStamp || top < uint64(d.stampFrom) || seg.Invoked == 0 {
					t.Fatalf("the last stamp logged is %d, %d operations invoked", top, seg.Invoked)
				}
				if err := rec.Flush(); err != nil {
					t.Fatal(err)
				}
				txt := buf.String()
				if binary {
					txt = toText(t, buf.Bytes())
				}
				if res := check(t, txt); !res.Linearizable {
					t.Fatalf("not linearizable: %+v", res.Anomalies)
				}
				if n := int64(strings.Count(txt, " inv ")); n != seg.Invoked {
					t.Fatalf("%d invocations recorded, the segment counts %d", n, seg.Invoked)
				}
				texts = append(texts, txt)
			}
			if rn.sched == Deterministic && texts[0] != texts[1] {
				t.Fatalf("text\n%s\nbinary as text\n%s", texts[0], texts[1])
			}
			if rn.clock == ClockMonotonic || rn.clock == ClockTSC {
				return
			}
			// A logical clock or a count takes two stamps an operation at
			// most: a segment that cannot pass 2^52-1 is not checked
			// stamp by stamp (stampsBounded), and ends well.
			d, rec, _ := clockedDriver(t, c, rn.clock, true)
			quota := make([]int, rn.threads)
			for i := range quota {
				quota[i] = int(rn.before) / 2 / rn.threads
			}
			d.stampFrom = history.MaxStamp - 2*int64(quota[0]*rn.threads)
			seg, err := d.Segment(context.Background(), quota, CrashPoint{})
			if err != nil || d.checkStamps || seg.Invoked != int64(quota[0]*rn.threads) {
				t.Fatalf("a bounded segment: %v, checked %v, %d operations", err, d.checkStamps, seg.Invoked)
			}
			for i := range d.logs {
				if d.logs[i].lastTS > history.MaxStamp {
					t.Fatalf("stamp %d logged", d.logs[i].lastTS)
				}
			}
			if err := rec.Flush(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
