package record

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// ClockSource is where the free scheduler takes its log timestamps. The
// deterministic scheduler uses a logical clock whatever the source.
//
// A timestamp is only ever compared with another: the merge orders the
// workers' steps by it. So a source must order steps across cores: if one
// worker's step finishes before another's begins (in real time), the
// later step must not get an earlier stamp. The monotonic clock does
// (time.Since: a vDSO read of the kernel's clocksource). Where the kernel
// itself counts time with the TSC, the TSC read directly does too, and
// ordered on both sides (see tscOrdered): a stamp is after every memory
// access before it and before every one after it, which a lone free
// worker's one stamp per operation leans on (package driver's workers; beside other
// workers a worker takes two, since two equal shared stamps would leave
// their order unknown). RDTSCP
// waits for earlier loads, not for stores still in the store buffer; but
// every region write is an atomic store or CAS, a locked instruction on
// x86-64 that drains the buffer, so the writes are visible first. The
// accesses after the stamp wait for it through a load that depends on the
// value read, where the usual LFENCE would cost a quarter more. The vDSO's
// read is ordered after the accesses before it, and before those after it
// only by the instructions in between (as for any recorder that calls
// clock_gettime). The vDSO's read costs about 30 ns here, the TSC's about
// 21 ns, most of it the wait for the accesses in flight.
//
// With one worker there are no other cores to order with: the worker's
// own order is the order of every step, and a count of its stamps keeps
// it (ClockCount) at no cost: the ordered TSC read was 16 ns of the 40
// that a binary recording added to a 250 ns operation at one thread
// (BenchmarkSide with and without recording, and unrecorded with one TSC
// read per operation: the fastest of 30 interleaved runs each, on a
// loaded machine).
type ClockSource uint8

const (
	// ClockAuto counts (ClockCount) when the free scheduler runs one
	// worker, else takes the TSC where it is usable (see TSCUsable), else
	// the monotonic clock.
	ClockAuto ClockSource = iota
	// ClockMonotonic is the monotonic clock of package time.
	ClockMonotonic
	// ClockTSC is the TSC, read with RDTSCP and ordered with the accesses
	// after it (tscOrdered); a driver refuses it where it is not usable.
	ClockTSC
	// ClockCount counts the worker's stamps: each timestamp is one more
	// than the one before in the segment. It orders the steps of one
	// worker only: a driver of more workers refuses it. It measures no
	// time, so the stuck watch times an operation from the first time it
	// looks at it (see the driver's opElapsed).
	ClockCount
)

func (s ClockSource) String() string {
	switch s {
	case ClockAuto:
		return "auto"
	case ClockMonotonic:
		return "monotonic"
	case ClockTSC:
		return "tsc"
	case ClockCount:
		return "count"
	}
	return fmt.Sprintf("ClockSource(%d)", uint8(s))
}

// ParseClockSource parses "auto", "monotonic", "tsc" and "count".
func ParseClockSource(s string) (ClockSource, error) {
	for _, c := range []ClockSource{ClockAuto, ClockMonotonic, ClockTSC, ClockCount} {
		if s == c.String() {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown clock %q (auto, monotonic, tsc or count)", s)
}

// tscInfo is what this machine's TSC allows: computed once per process,
// since it is a property of the CPU and the kernel, not of a driver.
type tscInfo struct {
	usable    bool
	why       string  // why not, or what was checked
	nsPerTick float64 // calibrated against the monotonic clock
}

var machineTSC = sync.OnceValue(func() tscInfo {
	return detectTSC(tscProbe{instructions: tscInstructions, cpu: cpuHasInvariantTSC, clocksource: clocksourceFile})
})

// TSCUsable reports whether log timestamps may come from the TSC, and why
// (or why not). The TSC is usable when:
//   - the CPU is x86-64 with RDTSCP and an invariant TSC (CPUID: it ticks
//     at a constant rate in every power state; Linux shows constant_tsc
//     and nonstop_tsc in /proc/cpuinfo), and
//   - the kernel counts time with it (its current clocksource is "tsc"):
//     Linux checks at boot, and keeps watching, that the TSCs of all CPUs
//     are synchronised, and moves to another clocksource if they are not.
//     On such a machine the monotonic clock is itself the TSC, scaled:
//     reading it directly orders steps across cores exactly as the
//     monotonic clock does (TestTSCOrdersAcrossCores checks it).
func TSCUsable() (bool, string) {
	t := machineTSC()
	return t.usable, t.why
}

// clocksourceFile names the kernel's current clocksource (Linux).
const clocksourceFile = "/sys/devices/system/clocksource/clocksource0/current_clocksource"

// tscProbe is what detectTSC asks of the machine (a test gives others).
type tscProbe struct {
	instructions bool                  // RDTSCP and CPUID can be executed
	cpu          func() (bool, string) // the CPU's invariant TSC and RDTSCP
	clocksource  string                // the file naming the kernel's clocksource
}

func detectTSC(m tscProbe) tscInfo {
	if !m.instructions {
		return tscInfo{why: "not an x86-64 CPU"}
	}
	if ok, why := m.cpu(); !ok {
		return tscInfo{why: why}
	}
	b, err := os.ReadFile(m.clocksource)
	if err != nil {
		return tscInfo{why: "the kernel's clocksource is unknown: " + err.Error()}
	}
	if cs := strings.TrimSpace(string(b)); cs != "tsc" {
		return tscInfo{why: fmt.Sprintf("the kernel's clocksource is %s, not tsc (the kernel does not vouch for the TSCs' synchronisation across CPUs)", cs)}
	}
	return tscInfo{usable: true, why: "invariant TSC with RDTSCP, and the kernel's clocksource is tsc", nsPerTick: calibrateTSC()}
}

// calibrateTSC measures the TSC's period against the monotonic clock over
// a millisecond or so (the stuck watch needs durations from timestamps;
// an error of a fraction of a percent does not matter there).
func calibrateTSC() float64 {
	t0, c0 := time.Now(), tscOrdered()
	for time.Since(t0) < 2*time.Millisecond {
	}
	el, c1 := time.Since(t0), tscOrdered()
	if c1 <= c0 {
		return 1
	}
	return float64(el) / float64(c1-c0)
}

// Clock is a driver's timestamp source for the free scheduler, restarted
// at every segment.
type Clock struct {
	tsc       bool
	count     bool // ClockCount: the worker counts, no time
	base      time.Time
	baseTick  uint64
	nsPerTick float64
	from      int64 // the segment's first timestamp (start)
}

// NewClock returns the clock of source s for a free scheduler of workers
// workers, or an error if s is ClockTSC where the TSC is not usable, or
// ClockCount with more than one worker.
func NewClock(s ClockSource, workers int) (Clock, error) {
	return clockOf(s, machineTSC(), workers)
}

// clockOf is NewClock on a machine whose TSC is t.
func clockOf(s ClockSource, t tscInfo, workers int) (Clock, error) {
	switch s {
	case ClockMonotonic:
		return Clock{}, nil
	case ClockCount:
		if workers != 1 {
			return Clock{}, fmt.Errorf("driver: a count orders the steps of one worker, not of %d", workers)
		}
		return Clock{count: true}, nil
	case ClockTSC:
		if !t.usable {
			return Clock{}, fmt.Errorf("driver: the TSC cannot order steps across cores here: %s", t.why)
		}
	case ClockAuto:
		if workers == 1 {
			return Clock{count: true}, nil
		}
		if !t.usable {
			return Clock{}, nil
		}
	default:
		return Clock{}, fmt.Errorf("driver: unknown clock source %d", s)
	}
	return Clock{tsc: true, nsPerTick: t.nsPerTick}, nil
}

// Start begins a segment at base: timestamps count from there, starting
// at from (0 but in tests).
func (c *Clock) Start(base time.Time, from int64) {
	c.base, c.from = base.Add(-time.Duration(from)), from
	if c.tsc {
		c.baseTick = tscOrdered() - uint64(from)
	}
}

// Now is a timestamp: TSC ticks or nanoseconds since the start (a count
// is kept by the worker).
// It is ordered with the caller's memory accesses (see tscOrdered); the
// monotonic clock, read through the vDSO, is ordered as the kernel orders
// it.
func (c *Clock) Now() int64 {
	if c.tsc {
		return c.Tick()
	}
	return int64(time.Since(c.base))
}

// Tick is Now on the TSC (small enough to be inlined).
func (c *Clock) Tick() int64 { return int64(tscOrdered() - c.baseTick) }

// Nanos converts a timestamp of Now into nanoseconds since the start (not
// a count's).
func (c *Clock) Nanos(ts int64) time.Duration {
	if c.tsc {
		return time.Duration(float64(ts-c.from) * c.nsPerTick)
	}
	return time.Duration(ts - c.from)
}

// Source names the clock in use.
func (c *Clock) Source() ClockSource {
	if c.count {
		return ClockCount
	}
	if c.tsc {
		return ClockTSC
	}
	return ClockMonotonic
}

// TSC reports whether the clock reads the TSC (Tick).
func (c *Clock) TSC() bool { return c.tsc }

// Counts reports whether the clock is a count (ClockCount): the worker
// counts its stamps itself, and the clock measures no time.
func (c *Clock) Counts() bool { return c.count }
