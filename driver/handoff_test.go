package driver

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestHandoffCancelAndNoLeak: under the deterministic scheduler, segments
// canceled from outside at random moments (the hand-off's abort: a rescue
// drains the workers while the one holding the turn runs on) return with
// every worker's goroutine returned (the driver is not broken), a well
// formed history, and no goroutine left behind, as segments that end
// normally leave none.
func TestHandoffCancelAndNoLeak(t *testing.T) {
	c := cfg(4, 6, 2, 11)
	segment := func(i int) (SegmentResult, *Driver, string) {
		d, rec, buf := textDriver(t, c)
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
	segment(0)
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
		check(t, hist)
	}
	if canceled == 0 {
		t.Fatal("no segment was cut short by its cancellation: the test tests nothing")
	}
	// The conductors and rescues end once their segment has: allow them
	// a moment, then count.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Fatalf("%d goroutines after 60 segments (%d canceled), %d before", n, canceled, base)
	}
}
