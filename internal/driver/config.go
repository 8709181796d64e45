package driver

import (
	"errors"
	"fmt"
	"time"

	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/target"
)

// Sched is a scheduler: how the workers' steps interleave.
type Sched uint8

const (
	// Deterministic runs one worker at a time and picks the next by a
	// seeded choice at every region access: same seed, same history.
	Deterministic Sched = iota
	// Free lets the workers run as goroutines, with optional seeded yields.
	Free
)

func (s Sched) String() string {
	switch s {
	case Deterministic:
		return "deterministic"
	case Free:
		return "free"
	}
	return fmt.Sprintf("Sched(%d)", uint8(s))
}

// ParseSched parses "deterministic" (or "det") and "free".
func ParseSched(s string) (Sched, error) {
	switch s {
	case "deterministic", "det":
		return Deterministic, nil
	case "free":
		return Free, nil
	}
	return 0, fmt.Errorf("unknown scheduler %q (free or deterministic)", s)
}

// Limits of a configuration.
const (
	MaxThreads = 1024
	// MaxWords bounds the address space (Words).
	MaxWords = 1 << 30
	// MaxTag is the largest per-process tag counter: new values are
	// (process+1)<<32 | counter (the recorder reads them back so:
	// record.MergeStats.MaxTag).
	MaxTag = record.MaxTag
)

// Defaults of a configuration (DefaultConfig).
const (
	DefaultThreads       = 4
	DefaultWords         = 8
	DefaultK             = 2
	DefaultReads         = 0.5
	DefaultSeed          = 1
	DefaultStuckAccesses = 100_000
	DefaultStuckAfter    = 2 * time.Second
	// DefaultStallAccesses is the least stall bound of a run that sets
	// none (Config.StallBound).
	DefaultStallAccesses = 10_000
	// StallPerK2 is the stall bound of a run that sets none, per k^2
	// (Config.StallBound): a correct operation may cost O(k^2) region
	// accesses (a read that scans a descriptor's k entries, three words
	// each, for each of its k words makes 3k^2), and the bound leaves it
	// five times that.
	StallPerK2 = 16
)

// StickBySeed, as Config.Stick (any negative value), lets the seed choose
// the deterministic scheduler's stick probability among 0, 0.8 and 0.95.
const StickBySeed = -1

// Config is a workload and how to schedule it. Every field means what it
// says: 0 is zero, not "the default". Start from DefaultConfig.
type Config struct {
	// Threads is the number of workers; worker i is process i of the
	// history and worker i of the target.
	Threads int
	// Words is the address space: addresses 0 .. Words-1.
	Words uint64
	// K is the number of words of every operation (distinct, random order).
	K int
	// Reads is the probability that an operation is a read, Swaps that it
	// is a swap (the rest are CAS; Reads + Swaps <= 1). A process that has
	// read nothing a CAS can expect yet (Assumption 2) reads instead of a
	// CAS; with Reads 0, those are the only reads. Swaps need a target
	// whose instance is a target.Swapper.
	Reads float64
	Swaps float64
	// FailValues makes a failed CAS report the values it read ("ret fail
	// a v1 ... vk"): the target's instance must be a target.FailReporter.
	// A process remembers them as it remembers what it read.
	FailValues bool
	// Seed seeds every random choice: workload, schedule, yields.
	Seed uint64
	// Sched is the scheduler.
	Sched Sched
	// Yield (free scheduler) is the probability of a runtime.Gosched at a
	// region access.
	Yield float64
	// Stick (deterministic scheduler) is the probability that the running
	// worker keeps running at a scheduling point; a negative value
	// (StickBySeed) lets the seed choose one of 0, 0.8 and 0.95.
	Stick float64
	// StuckAccesses: an operation that has made this many region accesses
	// without returning is stuck (free: also StuckAfter must have passed).
	StuckAccesses int64
	// StuckAfter is the wall-clock bound of the free scheduler.
	StuckAfter time.Duration
	// StallAccesses replaces StuckAccesses for the operations of the other
	// workers while the progress check has stopped one (CrashPoint.Stall)
	// or the late-write policy holds one: an operation that makes this
	// many accesses (the rounds of declared waits not counted) while no
	// other operation returns waits for the stopped worker (stall.go). 0
	// sets the bound by the run's shape (StallBound).
	StallAccesses int64
	// Late (deterministic scheduler) is the late-write policy's
	// probability that a worker's CAS inside an operation is held back
	// until the others have changed that word (late.go); 0 is off.
	// With it on, the targets' scheduling points on volatile state
	// (pmem.Worker.Volatile) are switching points too.
	Late float64
}

// DefaultConfig is the default workload: DefaultThreads workers, each
// operation on DefaultK of DefaultWords words, half of them reads, under
// the deterministic scheduler with the stick probability chosen by the seed.
func DefaultConfig() Config {
	return Config{Threads: DefaultThreads, Words: DefaultWords, K: DefaultK, Reads: DefaultReads, Seed: DefaultSeed,
		Sched: Deterministic, Stick: StickBySeed, StuckAccesses: DefaultStuckAccesses, StuckAfter: DefaultStuckAfter}
}

// StallBound is the stall bound of the run (see StallAccesses): the one
// set, else DefaultStallAccesses or StallPerK2 k^2, whichever is larger
// (10,000 up to k = 25). Only k enters it: the other workers' steps that
// make an operation retry or help (more threads, more contention) end in
// operations of theirs that return, and each return restarts the count
// (stall.go); the number of words does not make an operation longer.
func (c Config) StallBound() int64 {
	if c.StallAccesses > 0 {
		return c.StallAccesses
	}
	return max(DefaultStallAccesses, StallPerK2*int64(c.K)*int64(c.K))
}

// Check reports a configuration that cannot run.
func (c Config) Check() error {
	switch {
	case c.Threads < 1 || c.Threads > MaxThreads:
		return fmt.Errorf("threads = %d (1..%d allowed)", c.Threads, MaxThreads)
	case c.K < 1 || c.K > target.MaxK:
		return fmt.Errorf("k = %d (1..%d allowed)", c.K, target.MaxK)
	case c.Words < uint64(c.K):
		return fmt.Errorf("words = %d: fewer than k = %d", c.Words, c.K)
	case c.Words > MaxWords:
		return fmt.Errorf("words = %d (at most 2^30)", c.Words)
	case !(c.Reads >= 0 && c.Reads <= 1):
		return fmt.Errorf("reads = %v (a probability)", c.Reads)
	case !(c.Swaps >= 0 && c.Swaps <= 1):
		return fmt.Errorf("swaps = %v (a probability)", c.Swaps)
	case c.Reads+c.Swaps > 1+1e-9:
		return fmt.Errorf("reads %v + swaps %v > 1: the rest of the operations are cas", c.Reads, c.Swaps)
	case !(c.Yield >= 0 && c.Yield <= 1):
		return fmt.Errorf("yield = %v (a probability)", c.Yield)
	case !(c.Late >= 0 && c.Late <= 1):
		return fmt.Errorf("late = %v (a probability)", c.Late)
	case !(c.Stick <= 1):
		return fmt.Errorf("stick = %v (a probability, or negative: chosen by the seed)", c.Stick)
	case c.StuckAccesses < 1 || c.StallAccesses < 0:
		return errors.New("the stuck bounds must be positive (the stall bound 0: by the run's shape)")
	case c.StuckAfter < 0:
		return fmt.Errorf("stuck-after = %v (not negative)", c.StuckAfter)
	case c.Sched != Deterministic && c.Sched != Free:
		return fmt.Errorf("unknown scheduler %d", c.Sched)
	}
	return nil
}

// stick is the stick probability the deterministic scheduler uses.
func (c Config) stick() float64 {
	if c.Stick < 0 {
		return [3]float64{0, 0.8, 0.95}[c.Seed%3]
	}
	return c.Stick
}
