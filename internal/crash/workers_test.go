package crash

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"
)

// pmlinGoroutines counts the goroutines with a frame of package driver
// (its workers' coroutines, conductors, rescues, closers) or of crash (a
// guarded call's goroutine), and returns their stacks.
func pmlinGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var out bytes.Buffer
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("github.com/pmlin/pmlin/driver.")) || bytes.Contains(g, []byte("github.com/pmlin/pmlin/crash.")) && !bytes.Contains(g, []byte("testing.tRunner")) {
			n++
			out.Write(g)
			out.WriteString("\n\n")
		}
	}
	return n, out.String()
}

// TestFuzzLeavesNoGoroutine: a fuzz job keeps its drivers' workers from
// run to run (driver.Driver.KeepWorkers, Recycle); once the campaign is
// over, finished or cut short by its time bound in the middle of runs,
// none of them is left, whatever the mix of runs (stalls, late writes,
// fewer threads), and neither is the goroutine of a guarded call that the
// time bound abandoned (it ends once the call returns). Counted against
// the goroutines there were before: an earlier test's call that blocks
// forever outside the region is never over.
func TestFuzzLeavesNoGoroutine(t *testing.T) {
	run := pmwcasRun()
	run.Ops = 200
	for _, fc := range []FuzzConfig{
		{Run: run, Seed: 5, MaxRuns: 40, Jobs: 2, Mix: DefaultMix()},
		{Run: run, Seed: 6, Duration: 150 * time.Millisecond, Jobs: 2, Mix: DefaultMix()},
	} {
		n0, _ := pmlinGoroutines()
		st, f, err := Fuzz(context.Background(), fc)
		if err != nil || f != nil {
			t.Fatalf("%v, %+v", err, f)
		}
		deadline := time.Now().Add(30 * time.Second)
		n, stacks := pmlinGoroutines()
		for n > n0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			n, stacks = pmlinGoroutines()
		}
		if n > n0 {
			t.Fatalf("%d goroutines of the driver or the guard after %d runs (%d before):\n%s", n, st.Runs, n0, stacks)
		}
	}
}
