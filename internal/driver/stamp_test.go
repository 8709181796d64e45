package driver

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/internal/wire"
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
		clock   record.ClockSource
		threads int
		before  int64 // stamps below 2^52 the segment starts with
	}
	// The clocks of time leave the workers 50 ms of stamps: with 2 ms, a
	// loaded machine (go test -race ./... runs packages side by side)
	// sometimes started the workers after the last stamp, and the segment
	// ended before its first operation.
	const margin = 50 * time.Millisecond
	runs := []run{
		{"deterministic", Deterministic, record.ClockAuto, 3, 60},
		{"count", Free, record.ClockAuto, 1, 60},
		{"monotonic", Free, record.ClockMonotonic, 2, int64(margin)},
	}
	if ok, _ := record.TSCUsable(); ok {
		runs = append(runs, run{"tsc", Free, record.ClockTSC, 2, tscTicks(t, margin)})
	}
	for _, rn := range runs {
		t.Run(rn.name, func(t *testing.T) {
			c := cfg(rn.threads, 16, 2, 7)
			c.Sched = rn.sched
			var texts []string
			for _, binary := range []bool{false, true} {
				d, rec, buf := clockedDriver(t, c, rn.clock, binary)
				d.stampFrom = wire.MaxStamp - rn.before
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
				for i := range c.Threads {
					top = max(top, d.logs.Log(i).LastStamp())
				}
				if rn.sched == Deterministic && top != wire.MaxStamp {
					t.Fatalf("the last stamp logged is %d, not 2^52-1", top)
				}
				if top > wire.MaxStamp || top < uint64(d.stampFrom) || seg.Invoked == 0 {
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
			if rn.clock == record.ClockMonotonic || rn.clock == record.ClockTSC {
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
			d.stampFrom = wire.MaxStamp - 2*int64(quota[0]*rn.threads)
			seg, err := d.Segment(context.Background(), quota, CrashPoint{})
			if err != nil || d.checkStamps || seg.Invoked != int64(quota[0]*rn.threads) {
				t.Fatalf("a bounded segment: %v, checked %v, %d operations", err, d.checkStamps, seg.Invoked)
			}
			for i := range c.Threads {
				if ts := d.logs.Log(i).LastStamp(); ts > wire.MaxStamp {
					t.Fatalf("stamp %d logged", ts)
				}
			}
			if err := rec.Flush(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// tscTicks is d in TSC ticks.
func tscTicks(t *testing.T, d time.Duration) int64 {
	c, err := record.NewClock(record.ClockTSC, 2)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 30
	return int64(float64(d) * n / float64(c.Nanos(n)))
}

// TestWorkersStampApart: beside other workers, a free worker never
// responds and invokes again at one timestamp (the merge would have to
// refuse two such workers with equal stamps: recorders/README.md, rule 4);
// alone, it stamps both with one read. Read off the streams of a binary
// recording, as the workers logged them.
func TestWorkersStampApart(t *testing.T) {
	clocks := []record.ClockSource{record.ClockMonotonic}
	if ok, _ := record.TSCUsable(); ok {
		clocks = append(clocks, record.ClockTSC)
	}
	for _, clock := range clocks {
		for _, threads := range []int{1, 3} {
			c := cfg(threads, 64, 2, 5)
			c.Sched = Free
			d, rec, buf := clockedDriver(t, c, clock, true)
			quota := make([]int, threads)
			for i := range quota {
				quota[i] = 20_000
			}
			if _, err := d.Segment(context.Background(), quota, CrashPoint{}); err != nil {
				t.Fatal(err)
			}
			if err := rec.Flush(); err != nil {
				t.Fatal(err)
			}
			pairs, shared := stampPairs(t, buf.Bytes())
			t.Logf("%v, %d workers: %d of %d responses share their stamp with the next invocation", clock, threads, shared, pairs)
			if threads > 1 && shared > 0 || threads == 1 && shared != pairs || pairs < 10_000 {
				t.Fatalf("%v, %d workers: %d of %d responses share their stamp with the next invocation", clock, threads, shared, pairs)
			}
		}
	}
}

// stampPairs walks the stream records of a binary history: it counts the
// responses followed in their stream by an invocation, and those of them
// with the invocation's timestamp.
func stampPairs(t *testing.T, b []byte) (pairs, shared int) {
	t.Helper()
	if !bytes.HasPrefix(b, []byte(wire.Magic)) || len(b)%8 != 0 {
		t.Fatal("not a version 2 binary history")
	}
	w := make([]uint64, (len(b)-len(wire.Magic))/8)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(b[len(wire.Magic)+8*i:])
	}
	type last struct {
		ret bool
		ts  uint64
	}
	var streams map[uint64]last
	for pos := 0; pos < len(w); {
		typ, field, n := w[pos]&0xff, w[pos]>>32, int(w[pos+1])
		payload := w[pos+2 : pos+2+n]
		pos += 2 + n
		switch typ {
		case wire.BlockSection:
			streams = map[uint64]last{}
		case wire.BlockStream:
			for r := 0; r < len(payload); {
				h := payload[r]
				kind, ts := wire.StreamKind(h), wire.StreamStamp(h)
				inv := wire.IsInvocation(kind)
				if l, ok := streams[field]; ok && l.ret && inv {
					pairs++
					if l.ts == ts {
						shared++
					}
				}
				streams[field] = last{ret: !inv, ts: ts}
				r += 1 + wire.RecWords(kind, wire.StreamK(h))
			}
		}
	}
	return pairs, shared
}
