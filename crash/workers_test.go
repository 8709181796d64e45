package crash

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"
)

// driverGoroutines counts the goroutines with a frame of package driver
// (its workers' coroutines, conductors, rescues, closers), and returns
// their stacks.
func driverGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var out bytes.Buffer
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("github.com/pmlin/pmlin/driver.")) {
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
// fewer threads). (Counted: the goroutines of package driver. A guarded
// call's goroutine may be left by a campaign cut short, a matter of the
// crash harness's guard.)
func TestFuzzLeavesNoGoroutine(t *testing.T) {
	run := pmwcasRun()
	run.Ops = 200
	for _, fc := range []FuzzConfig{
		{Run: run, Seed: 5, MaxRuns: 40, Jobs: 2, Mix: DefaultMix()},
		{Run: run, Seed: 6, Duration: 150 * time.Millisecond, Jobs: 2, Mix: DefaultMix()},
	} {
		st, f, err := Fuzz(context.Background(), fc)
		if err != nil || f != nil {
			t.Fatalf("%v, %+v", err, f)
		}
		deadline := time.Now().Add(5 * time.Second)
		n, stacks := driverGoroutines()
		for n > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			n, stacks = driverGoroutines()
		}
		if n > 0 {
			t.Fatalf("%d goroutines of the driver after %d runs:\n%s", n, st.Runs, stacks)
		}
	}
}
