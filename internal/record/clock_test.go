package record

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// crossCore plays ping-pong between two threads pinned to CPUs 0 and 1
// (when the machine lets it pin them) for at least d, and on until each
// has moved minTrips times (at most crossCoreCap: on a busy machine the
// pinned threads may wait long for their CPUs, and a fixed duration made
// the round-trip floor below flaky): a thread stamps, then
// publishes its stamp; the other waits for it, then stamps. Its stamp is
// causally after the first (it read what was written after the first
// stamp), so it must not be lower. It returns the round trips, the
// violations and whether the threads were pinned.
func crossCore(t *testing.T, stamp func() int64, d time.Duration) (trips, bad int, pinned bool) {
	t.Helper()
	return crossCoreOf(t, func(int) int64 { return stamp() }, d)
}

// minTrips is the round trips a ping-pong plays at least, unless it has
// played for crossCoreCap.
const (
	minTrips     = 1000
	crossCoreCap = 20 * time.Second
)

// crossCoreOf is crossCore with a stamp that knows its thread (0 or 1).
func crossCoreOf(t *testing.T, stamp func(me int) int64, d time.Duration) (trips, bad int, pinned bool) {
	t.Helper()
	var (
		turn  atomic.Int64 // even: A's move, odd: B's
		slot  atomic.Int64 // the stamp published by the last mover
		stop  atomic.Bool
		wg    sync.WaitGroup
		fails [2]int
		pins  [2]bool
		moves [2]atomic.Int64
	)
	player := func(me int) {
		defer wg.Done()
		// Locked, and never unlocked: when the goroutine ends, its thread
		// (pinned to one CPU) ends with it instead of serving others.
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(me)
		pins[me] = unix.SchedSetaffinity(0, &set) == nil
		for spins := 0; !stop.Load(); {
			n := turn.Load()
			if int(n%2) != me {
				if spins++; spins%64 == 0 {
					runtime.Gosched() // the other may share our core with others
				}
				continue
			}
			spins = 0
			if n > 0 && stamp(me) < slot.Load() {
				fails[me]++ // stamped after reading the other's stamp, yet lower
			}
			slot.Store(stamp(me))
			turn.Store(n + 1)
			moves[me].Add(1)
		}
	}
	wg.Add(2)
	go player(0)
	go player(1)
	time.Sleep(d)
	for end := time.Now().Add(crossCoreCap); min(moves[0].Load(), moves[1].Load()) < minTrips && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	return int(min(moves[0].Load(), moves[1].Load())), fails[0] + fails[1], pins[0] && pins[1]
}

// TestTSCOrdersAcrossCores checks the recorder's clock the way the merge
// relies on it: a step on one core that is causally after a step on
// another gets a timestamp no lower.
func TestTSCOrdersAcrossCores(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	for _, src := range []ClockSource{ClockTSC, ClockMonotonic} {
		t.Run(src.String(), func(t *testing.T) {
			c, err := NewClock(src, 2)
			if err != nil {
				ok, why := TSCUsable()
				if ok {
					t.Fatal(err)
				}
				t.Skip(why)
			}
			c.Start(time.Now(), 0)
			trips, bad, pinned := crossCore(t, c.Now, 200*time.Millisecond)
			t.Logf("%d round trips, pinned to CPUs 0 and 1: %v", trips, pinned)
			if bad > 0 {
				t.Fatalf("%d of %d causally later stamps were lower", bad, trips)
			}
			if trips < 100 {
				t.Fatalf("only %d round trips", trips)
			}
		})
	}
}

// TestCrossCoreCatchesPerThreadClocks: the ping-pong catches timestamps
// that are per thread (each thread's own monotonic clock, started when the
// thread starts, as a recorder that stamped with time since its worker
// began would), so that TestTSCOrdersAcrossCores can fail. It needs no TSC
// and no pinning.
func TestCrossCoreCatchesPerThreadClocks(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	var starts [2]atomic.Int64 // per thread: its start, in ns since base
	base := time.Now()
	perThread := func(me int) int64 {
		if starts[me].Load() == 0 {
			// Thread 1 starts its clock a millisecond after thread 0.
			starts[me].Store(int64(time.Since(base)) + int64(me)*int64(time.Millisecond) + 1)
		}
		return int64(time.Since(base)) - starts[me].Load()
	}
	trips, bad, _ := crossCoreOf(t, perThread, 100*time.Millisecond)
	if bad == 0 {
		t.Fatalf("%d round trips on per-thread clocks, no violation seen", trips)
	}
}

// TestCrossCoreCatchesSkew: the ping-pong catches a clock that is wrong
// across cores (the TSC minus a millisecond's worth of ticks on odd CPUs),
// so that TestTSCOrdersAcrossCores can fail.
func TestCrossCoreCatchesSkew(t *testing.T) {
	if ok, why := TSCUsable(); !ok {
		t.Skip(why)
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	skew := uint64(1e6 / machineTSC().nsPerTick)
	trips, bad, pinned := crossCore(t, func() int64 { return int64(tscSkewed(skew)) }, 100*time.Millisecond)
	if !pinned {
		t.Skip("the threads cannot be pinned to CPUs 0 and 1")
	}
	if bad == 0 {
		t.Fatalf("%d round trips on a skewed clock, no violation seen", trips)
	}
}

// TestTSCFallback: the TSC is used only on an x86-64 CPU with RDTSCP and
// an invariant TSC whose kernel counts time with it; anywhere else auto
// takes the monotonic clock and tsc is refused, saying why.
func TestTSCFallback(t *testing.T) {
	dir := t.TempDir()
	cs := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := func() (bool, string) { return true, "" }
	variant := func() (bool, string) { return false, "the CPU's TSC is not invariant" }
	tsc, hpet := cs("tsc", "tsc\n"), cs("hpet", "hpet\n")
	for _, tc := range []struct {
		name string
		m    tscProbe
		why  string // "" if usable
	}{
		{"usable", tscProbe{true, good, tsc}, ""},
		{"not x86-64", tscProbe{false, good, tsc}, "not an x86-64 CPU"},
		{"not invariant", tscProbe{true, variant, tsc}, "not invariant"},
		{"kernel on hpet", tscProbe{true, good, hpet}, "clocksource is hpet, not tsc"},
		{"no sysfs", tscProbe{true, good, filepath.Join(dir, "missing")}, "clocksource is unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := detectTSC(tc.m)
			if info.usable != (tc.why == "") || !strings.Contains(info.why, tc.why) {
				t.Fatalf("usable %v (%s), want %q", info.usable, info.why, tc.why)
			}
			auto, err := clockOf(ClockAuto, info, 2)
			if err != nil || auto.tsc != info.usable {
				t.Fatalf("auto: tsc %v, %v", auto.tsc, err)
			}
			_, err = clockOf(ClockTSC, info, 2)
			if info.usable == (err != nil) || err != nil && !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("tsc: %v", err)
			}
			if mono, err := clockOf(ClockMonotonic, info, 2); err != nil || mono.tsc {
				t.Fatalf("monotonic: tsc %v, %v", mono.tsc, err)
			}
			// One worker counts, whatever the TSC; more refuse a count.
			if one, err := clockOf(ClockAuto, info, 1); err != nil || !one.count || one.tsc || one.Source() != ClockCount {
				t.Fatalf("auto, one worker: %+v, %v", one, err)
			}
			if _, err := clockOf(ClockCount, info, 2); err == nil || !strings.Contains(err.Error(), "one worker") {
				t.Fatalf("count, two workers: %v", err)
			}
			if one, err := clockOf(ClockTSC, info, 1); info.usable && (err != nil || !one.tsc) {
				t.Fatalf("tsc, one worker: %+v, %v", one, err)
			}
		})
	}
	// A monotonic clock counts nanoseconds from its start.
	c, _ := clockOf(ClockAuto, detectTSC(tscProbe{true, variant, tsc}), 2)
	w0 := time.Now()
	c.Start(w0, 0)
	time.Sleep(5 * time.Millisecond)
	// Bounded by the wall clock's measure, not by a fixed second, which a
	// loaded machine's sleep could pass.
	if el := c.Nanos(c.Now()); el < 5*time.Millisecond || el > time.Since(w0) || c.Source() != ClockMonotonic {
		t.Fatalf("5ms measured as %v by %v", el, c.Source())
	}
}

func TestClockSource(t *testing.T) {
	for _, s := range []string{"auto", "monotonic", "tsc", "count"} {
		if c, err := ParseClockSource(s); err != nil || c.String() != s {
			t.Fatalf("%s: %v %v", s, c, err)
		}
	}
	if _, err := ParseClockSource("hpet"); err == nil {
		t.Fatal("hpet accepted")
	}
	ok, why := TSCUsable()
	t.Logf("TSC usable: %v (%s)", ok, why)
	c, err := NewClock(ClockAuto, 2)
	if err != nil || c.tsc != ok {
		t.Fatalf("auto: %+v, %v", c, err)
	}
	if ok {
		// The calibration: a sleep measured in ticks is the sleep.
		// The ticks are compared with the wall clock's measures of an
		// interval just inside and one just outside them, not with 20 ms:
		// on a loaded machine a 20 ms sleep can last far longer (a fixed
		// upper bound could fail), and a preemption between two readings
		// widens only the outer interval.
		c.Start(time.Now(), 0)
		outer0 := time.Now()
		t0 := c.Now()
		inner0 := time.Now()
		time.Sleep(20 * time.Millisecond)
		inner := time.Since(inner0)
		t1 := c.Now()
		outer := time.Since(outer0)
		el := c.Nanos(t1 - t0)
		if el < 19*time.Millisecond || el < inner*9/10 || el > outer*11/10+time.Millisecond {
			t.Fatalf("%v to %v of wall clock (20ms asked) measured as %v", inner, outer, el)
		}
	}
}
