package driver

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
)

// settle waits (up to 30 s: a loaded machine runs them late, a leak never ends) for the goroutines that end after
// their segment (conductors, rescues, closers) to be gone, and returns
// how many goroutines are left.
func settle(want int) int {
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return runtime.NumGoroutine()
}

// TestHandoffCancelAndNoLeak: under the deterministic scheduler, segments
// canceled from outside at random moments (the hand-off's abort: a rescue
// drains the workers while the one holding the turn runs on) return with
// every worker's goroutine returned (the driver is not broken), a well
// formed history, and no goroutine left behind, as segments that end
// normally leave none. With kept workers (one driver after another, each
// taking the last one's workers) the workers stay, parked, until the last
// driver is closed.
func TestHandoffCancelAndNoLeak(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprint("keep ", keep), func(t *testing.T) {
			c := cfg(4, 6, 2, 11)
			var last *Driver
			segment := func(i int) (SegmentResult, *Driver, string) {
				var d *Driver
				var rec *record.Recorder
				buf := new(bytes.Buffer)
				if keep && i%3 != 0 {
					// The last driver again (three segments a driver, as a
					// run has several), recording into a history of its
					// own: a canceled segment leaves operations pending.
					d, rec = last, record.NewRecorder(history.NewWriter(buf))
					d.rec = rec
				} else {
					d, rec, buf = textDriver(t, c)
					if keep {
						d.KeepWorkers()
						d.Recycle(last)
					}
				}
				last = d
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if i%2 == 1 {
					go func() {
						time.Sleep(time.Duration(i%7) * 50 * time.Microsecond)
						cancel()
					}()
				}
				seg, err := d.Segment(ctx, []int{500, 500, 500, 500}, CrashPoint{})
				if err != nil {
					t.Fatalf("segment %d: %v", i, err)
				}
				if err := rec.Flush(); err != nil {
					t.Fatal(err)
				}
				return seg, d, buf.String()
			}
			base := runtime.NumGoroutine()
			canceled := 0
			for i := range 60 {
				seg, d, hist := segment(i)
				if seg.Stuck != nil || seg.Failed != nil || seg.Blocked != nil || d.broken != nil {
					t.Fatalf("segment %d: %+v (%v)", i, seg, d.broken)
				}
				if seg.Invoked < 2000 {
					canceled++
				}
				if !keep || i%3 == 0 { // (the others go on from the region's state)
					check(t, hist)
				}
				want := base
				if keep {
					want += c.Threads // parked, idle
				}
				if n := settle(want); n > want {
					t.Fatalf("%d goroutines after segment %d (keep %v), %d before the first", n, i, keep, base)
				}
			}
			if canceled == 0 {
				t.Fatal("no segment was cut short by its cancellation: the test tests nothing")
			}
			if spawns := last.turns.spawns; keep && spawns != c.Threads {
				t.Fatalf("%d coroutines made for 60 segments of %d workers: not kept", spawns, c.Threads)
			}
			last.Close()
			if n := settle(base); n > base {
				t.Fatalf("%d goroutines after 60 segments (%d canceled) and Close, %d before", n, canceled, base)
			}
		})
	}
}

// TestKeptWorkersSameHistory: a driver that keeps its workers between
// segments (and hands them to the next driver) records the histories of
// one that makes them anew for each segment, byte for byte: through
// segments where some workers have nothing to do, stalls and crashes, and
// drivers of more workers than the last one had.
func TestKeptWorkersSameHistory(t *testing.T) {
	run := func(keep bool, seed uint64) string {
		var out bytes.Buffer
		var prev *Driver
		for _, threads := range []int{3, 2, 4} { // drivers of three runs of a fuzz job
			c := cfg(threads, 6, 2, seed)
			c.Late = 0.3
			d, rec, buf := textDriver(t, c)
			if keep {
				d.KeepWorkers()
				d.Recycle(prev)
			}
			for i := range 6 {
				quota := make([]int, threads)
				for w := range quota {
					quota[w] = 40
				}
				quota[1] = 40 * (i % 2)
				cp := CrashPoint{}
				switch i % 3 {
				case 1:
					cp.Stall = 50
				case 2:
					cp.Access = 300
				}
				seg, err := d.Segment(context.Background(), quota, cp)
				if err != nil || seg.Stuck != nil || seg.Failed != nil || seg.Blocked != nil {
					t.Fatalf("segment %d: %+v, %v", i, seg, err)
				}
				if seg.Crashed {
					rec.Crash()
					if err := d.region.Crash(pmem.PolicyMax, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := rec.Flush(); err != nil {
				t.Fatal(err)
			}
			out.Write(buf.Bytes())
			prev = d
		}
		prev.Close()
		return out.String()
	}
	base := runtime.NumGoroutine()
	for seed := range uint64(4) {
		if a, b := run(false, seed), run(true, seed); a != b {
			t.Fatalf("seed %d: the histories differ with kept workers:\n%s\n----\n%s", seed, a, b)
		}
	}
	if n := settle(base); n > base {
		t.Fatalf("%d goroutines, %d before", n, base)
	}
}

// TestKeptWorkersAbandoned: a kept worker that blocks in Go is abandoned
// with its driver, never reused; the driver's other workers end, and once
// the blocked one comes back, it ends too: no goroutine is left.
func TestKeptWorkersAbandoned(t *testing.T) {
	base := runtime.NumGoroutine()
	// The region is not closed: nothing orders its closing after the
	// abandoned worker's last access (-race).
	r, err := pmem.NewMemory(8, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tgt := locked{r: r, ops: &atomic.Int64{}} // no mutex: it blocks only on wait
	d, _, _ := lockedDriver(t, tgt)
	d.KeepWorkers()
	for range 3 {
		if seg, err := d.Segment(context.Background(), []int{5, 5, 5}, CrashPoint{}); err != nil || seg.Blocked != nil {
			t.Fatalf("%+v, %v", seg, err)
		}
	}
	tgt.wait = make(chan struct{})
	if err := d.Rebind(tgt, r); err != nil {
		t.Fatal(err)
	}
	seg, err := d.Segment(context.Background(), []int{50, 50, 50}, CrashPoint{})
	if err != nil || seg.Blocked == nil {
		t.Fatalf("not blocked: %+v, %v", seg, err)
	}
	if _, err := d.Segment(context.Background(), []int{1, 1, 1}, CrashPoint{}); err == nil {
		t.Fatal("a driver that abandoned a worker ran another segment")
	}
	d.Close() // nothing to do: its workers are being closed
	// The blocked worker and one goroutine parked for it stay.
	if n := settle(base + 2); n > base+2 {
		t.Fatalf("%d goroutines while a worker is abandoned, %d before", n, base)
	}
	close(tgt.wait)
	if n := settle(base); n > base {
		t.Fatalf("%d goroutines after the abandoned worker came back, %d before", n, base)
	}
}
