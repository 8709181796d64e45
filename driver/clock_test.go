package driver

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// crossCore plays ping-pong between two threads pinned to CPUs 0 and 1
// (when the machine lets it pin them) for about d: a thread stamps, then
// publishes its stamp; the other waits for it, then stamps. Its stamp is
// causally after the first (it read what was written after the first
// stamp), so it must not be lower. It returns the round trips, the
// violations and whether the threads were pinned.
func crossCore(t *testing.T, stamp func() int64, d time.Duration) (trips, bad int, pinned bool) {
	t.Helper()
	var (
		turn  atomic.Int64 // even: A's move, odd: B's
		slot  atomic.Int64 // the stamp published by the last mover
		stop  atomic.Bool
		wg    sync.WaitGroup
		fails [2]int
		pins  [2]bool
		moves [2]int
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
			if n > 0 && stamp() < slot.Load() {
				fails[me]++ // stamped after reading the other's stamp, yet lower
			}
			slot.Store(stamp())
			turn.Store(n + 1)
			moves[me]++
		}
	}
	wg.Add(2)
	go player(0)
	go player(1)
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return min(moves[0], moves[1]), fails[0] + fails[1], pins[0] && pins[1]
}

// TestTSCOrdersAcrossCores checks the driver's clock the way the merge
// relies on it: a step on one core that is causally after a step on
// another gets a timestamp no lower.
func TestTSCOrdersAcrossCores(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	for _, src := range []ClockSource{ClockTSC, ClockMonotonic} {
		t.Run(src.String(), func(t *testing.T) {
			c, err := newClock(src)
			if err != nil {
				ok, why := TSCUsable()
				if ok {
					t.Fatal(err)
				}
				t.Skip(why)
			}
			c.start(time.Now())
			trips, bad, pinned := crossCore(t, c.now, 200*time.Millisecond)
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

func TestClockSource(t *testing.T) {
	for _, s := range []string{"auto", "monotonic", "tsc"} {
		if c, err := ParseClockSource(s); err != nil || c.String() != s {
			t.Fatalf("%s: %v %v", s, c, err)
		}
	}
	if _, err := ParseClockSource("hpet"); err == nil {
		t.Fatal("hpet accepted")
	}
	ok, why := TSCUsable()
	t.Logf("TSC usable: %v (%s)", ok, why)
	c, err := newClock(ClockAuto)
	if err != nil || c.tsc != ok {
		t.Fatalf("auto: %+v, %v", c, err)
	}
	if ok {
		// The calibration: a sleep measured in ticks is the sleep.
		c.start(time.Now())
		t0 := c.now()
		time.Sleep(20 * time.Millisecond)
		el := c.nanos(c.now() - t0)
		if el < 19*time.Millisecond || el > 200*time.Millisecond {
			t.Fatalf("20ms measured as %v", el)
		}
	}
}
