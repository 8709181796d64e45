package crash

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Defaults of a run (DefaultConfig).
const (
	DefaultOps           = 1000
	DefaultCrashes       = 6
	DefaultRecoveryCrash = 0.1
	// MaxRecoveryCrashes bounds Config.RecoveryCrashes, and the runs of a
	// recovery in a sweep (RecoverySweep).
	MaxRecoveryCrashes = 1000
	// DefaultRoundTimeout bounds one child process of the process-kill
	// modes.
	DefaultRoundTimeout = 20 * time.Second
)

// CrashMode is how a run crashes: where its segments run and what a crash
// is.
type CrashMode uint8

const (
	// Emulated runs the workload in this process on an emulated region and
	// crashes the emulated persistence domain at a region access; the image
	// is built by a policy (Config.Policies).
	Emulated CrashMode = iota
	// Kill runs each segment in a child process on a MAP_SHARED region
	// file; the child kills itself with SIGKILL at a seeded random region
	// access of a seeded thread, so the kill lands inside an operation, and
	// the other threads stop wherever they are.
	Kill
	// KillAsync is Kill with the parent killing the child when its logs
	// reach a random size, at whatever point its threads are then (the
	// kill lands between operations more often than not: a child runs a
	// few thousand operations in a millisecond).
	KillAsync
)

var crashModeNames = [...]string{Emulated: "emulated", Kill: "kill", KillAsync: "kill-async"}

func (m CrashMode) String() string {
	if int(m) < len(crashModeNames) {
		return crashModeNames[m]
	}
	return fmt.Sprintf("CrashMode(%d)", uint8(m))
}

// ParseCrashMode parses "emulated", "kill" and "kill-async".
func ParseCrashMode(s string) (CrashMode, error) {
	for m, name := range crashModeNames {
		if s == name {
			return CrashMode(m), nil
		}
	}
	return 0, fmt.Errorf("unknown crash mode %q (emulated, kill or kill-async)", s)
}

// Config is a run: the code under test (Target, Mutant, Params), a
// workload (Driver), and how often and how to crash it. Every field means
// what it says (0 crashes is none, a recovery-crash probability of 0 is
// never); start from DefaultConfig and choose a Target. RegisterFlags binds
// the fields to command-line flags, and Args renders a configuration back
// as those flags.
type Config struct {
	// Target is the primitive under test.
	Target *target.Target
	// Mutant names one of the target's planted bugs ("" is the correct
	// code).
	Mutant string
	// Params sets some of the target's parameters by name; the others
	// take their defaults (resolveParams).
	Params map[string]string
	Driver driver.Config
	// Ops is the number of workload operations, over all threads (the full
	// reads after recovery and at the end are not counted).
	Ops int
	// Keys is the number of keys of a data-structure target's workload
	// whose model has keys or members (map, set): 0 .. Keys-1.
	Keys uint64
	// Crashes is the number of crashes, each at a seeded random point.
	Crashes int
	// CrashAt, if positive, makes the run crash once, at that region access
	// of the workload (counted over all workers; deterministic scheduler
	// only): the systematic sweeps (FuzzConfig.Systematic). Crashes is then
	// not used.
	CrashAt int64
	// Policies are the crash image policies, one drawn per crash (at least
	// one; pmem.Policies() for all four). Process kills always behave as
	// PolicyMax.
	Policies []pmem.Policy
	// RecoveryCrash is the probability that a recovery is itself crashed at
	// a random access and run again (emulated mode), and RecoveryCrashes
	// the most times one recovery is: each run again is crashed with the
	// same probability, up to that many times (1: at most once).
	RecoveryCrash   float64
	RecoveryCrashes int
	// RecoverySweep crashes every recovery right after each of its flushes
	// and fences in turn (emulated mode): the first run of a recovery
	// right after its first flush or fence, the run on that image right
	// after its second, and so on, until a run makes fewer; then
	// RecoveryCrash does not apply.
	RecoverySweep bool
	// Stall is the probability that a segment stops one worker for good at
	// a seeded region access inside an operation, to check that the
	// others still finish theirs (the progress check, driver.Stall;
	// deterministic scheduler; never for a target that declares itself
	// Blocking).
	Stall float64
	// LateCrash is the probability that a segment (of a run with the
	// late-write policy on, Driver.Late) crashes not at a random access
	// but where a late write was changed and the change is not yet
	// durable: right before the fence that would make it durable
	// (driver.CrashPoint.Late), or at the segment's end if no such window
	// ends in it. Emulated crashes, deterministic scheduler.
	LateCrash float64
	// RareCrash aims the crashes of the run's segments, from its second
	// on, also at the paths it has rarely taken: a segment crashes right
	// before the first flush or fence, drawn with a fixed probability, at
	// a site (the kinds of the worker's last few accesses in its
	// operation) that the run has not met before, or at its random crash
	// point if that comes first (driver.CrashPoint.Rare); the last segment
	// too, which has no crash point of its own: if it crashes so, one more
	// segment runs what it cut off. Emulated crashes, deterministic
	// scheduler.
	RareCrash bool
	// CrashMode says where the segments run and what a crash is. The
	// process-kill modes run their children under the free scheduler,
	// whatever Driver.Sched says (see Scheduler).
	CrashMode CrashMode
	// Child says how the process-kill modes start and bound their child
	// processes. It depends on the program and the machine, not on what is
	// run: no flag sets it and Args leaves it out.
	Child ChildOptions
}

// ChildOptions are the process-kill modes' ways to start and bound a child
// process.
type ChildOptions struct {
	// Command returns the command that runs ChildMain with the given spec
	// in a new process: pmlin re-executes itself with a hidden subcommand,
	// tests re-execute the test binary.
	Command func(spec string) *exec.Cmd
	// Dir holds the region and log files; "" means a temporary directory,
	// removed after the run.
	Dir string
	// RoundTimeout bounds one child process; a child still running then is
	// killed and reported stuck.
	RoundTimeout time.Duration
}

// DefaultConfig is the default run of no target yet: driver.DefaultConfig's
// workload of DefaultOps operations, DefaultCrashes emulated crashes with
// the four image policies, the correct code.
func DefaultConfig() Config {
	return Config{
		Driver: driver.DefaultConfig(), Ops: DefaultOps, Keys: DefaultKeys, Crashes: DefaultCrashes, Policies: pmem.Policies(),
		RecoveryCrash: DefaultRecoveryCrash, RecoveryCrashes: 1, CrashMode: Emulated,
		Child: ChildOptions{RoundTimeout: DefaultRoundTimeout},
	}
}

// Check reports a configuration that cannot run.
func (c Config) Check() error {
	if err := c.Driver.Check(); err != nil {
		return err
	}
	if c.Target == nil {
		return errors.New("crash: no target")
	}
	if err := c.Target.Check(); err != nil {
		return err
	}
	switch {
	case c.Ops < 1:
		return fmt.Errorf("ops = %d (at least 1)", c.Ops)
	case c.Crashes < 0:
		return fmt.Errorf("crashes = %d (not negative)", c.Crashes)
	case c.CrashAt < 0:
		return fmt.Errorf("crash-at = %d (not negative)", c.CrashAt)
	case c.CrashAt > 0 && c.Driver.Sched != driver.Deterministic:
		return errors.New("a crash at a given access needs the deterministic scheduler")
	case c.CrashAt > 0 && c.CrashMode != Emulated:
		return errors.New("a crash at a given access is not possible when a process is killed")
	case len(c.Policies) == 0:
		return errors.New("no crash image policy")
	case !(c.RecoveryCrash >= 0 && c.RecoveryCrash <= 1):
		return fmt.Errorf("recovery crash probability %v", c.RecoveryCrash)
	case c.RecoveryCrashes < 1 || c.RecoveryCrashes > MaxRecoveryCrashes:
		return fmt.Errorf("recovery-crashes = %d (1..%d allowed)", c.RecoveryCrashes, MaxRecoveryCrashes)
	case !(c.Stall >= 0 && c.Stall <= 1):
		return fmt.Errorf("stall probability %v", c.Stall)
	case c.Stall > 0 && c.Scheduler() != driver.Deterministic:
		return errors.New("the progress check (--stall) needs the deterministic scheduler, which stops a worker by never scheduling it")
	case !(c.LateCrash >= 0 && c.LateCrash <= 1):
		return fmt.Errorf("late-crash probability %v", c.LateCrash)
	case c.LateCrash > 0 && (c.Driver.Late == 0 || c.CrashMode != Emulated):
		return errors.New("a late crash (--late-crash) needs the late-write policy (--late) and emulated crashes")
	case c.RareCrash && (c.Scheduler() != driver.Deterministic || c.CrashMode != Emulated):
		return errors.New("crashes at rare sites (--rare-crash) need the deterministic scheduler and emulated crashes")
	case c.Driver.Late > 0 && c.Scheduler() != driver.Deterministic:
		return errors.New("the late-write policy (--late) needs the deterministic scheduler, which holds a thread back by not scheduling it")
	case int(c.CrashMode) >= len(crashModeNames):
		return fmt.Errorf("unknown crash mode %d", c.CrashMode)
	case c.CrashMode != Emulated && c.Child.Command == nil:
		return errors.New("crash: process-kill mode without a command to start a child")
	case c.CrashMode != Emulated && c.Child.RoundTimeout <= 0:
		return fmt.Errorf("round timeout %v (must be positive)", c.Child.RoundTimeout)
	}
	for _, p := range c.Policies {
		if p.String() == fmt.Sprintf("Policy(%d)", uint8(p)) {
			return fmt.Errorf("unknown crash policy %d", p)
		}
	}
	if c.isObject() {
		if err := c.checkObject(); err != nil {
			return err
		}
	}
	tc, err := c.targetConfig()
	if err != nil {
		return err
	}
	if _, err := c.Target.Size(tc); err != nil {
		return fmt.Errorf("target %s: %w", c.Target.Name, err)
	}
	return nil
}

// targetConfig is what the run asks of its target: the workload's shape,
// the mutant, and every parameter.
func (c Config) targetConfig() (target.Config, error) {
	if err := checkMutant(c.Target, c.Mutant); err != nil {
		return target.Config{}, err
	}
	ps, err := resolveParams(c.Target, c.Params)
	if err != nil {
		return target.Config{}, err
	}
	tc := target.Config{Words: c.Driver.Words, Workers: c.Driver.Threads, MaxK: c.Driver.K, Mutant: c.Mutant, Params: ps}
	if c.isObject() {
		// A data structure has no data words or k: its workload is its
		// model's operations, over Keys keys.
		tc.Words, tc.MaxK, tc.Ops = 0, 0, c.Ops
		if driver.KeyedModel(c.objectModel()) {
			tc.Keys = c.Keys
		}
	}
	return tc, nil
}

// Scheduler is the scheduler the workload runs under: Driver.Sched, or the
// free scheduler in the process-kill modes (a kill lands wherever the
// threads are at the time).
func (c Config) Scheduler() driver.Sched {
	if c.CrashMode != Emulated {
		return driver.Free
	}
	return c.Driver.Sched
}

// Replays says how far a replay of c (pmlin run with Args) reproduces
// its history.
func (c Config) Replays() string {
	switch {
	case c.CrashMode != Emulated:
		return "process kills depend on timing: the replay records a similar, not the same, history"
	case c.Driver.Sched == driver.Free:
		return "free scheduler: the replay runs the same workload and crash points, the interleaving may differ"
	}
	return "deterministic scheduler: the same history, byte for byte"
}

// crashes is the number of crashes of the run.
func (c Config) crashes() int {
	if c.CrashAt > 0 {
		return 1
	}
	return c.Crashes
}

// ParsePolicies parses a comma-separated list of policies; "mix" or ""
// means all four.
func ParsePolicies(s string) ([]pmem.Policy, error) {
	if s == "" || s == "mix" {
		return pmem.Policies(), nil
	}
	var out []pmem.Policy
	for _, f := range strings.Split(s, ",") {
		p, err := pmem.ParsePolicy(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// PolicyNames renders policies as ParsePolicies reads them.
func PolicyNames(ps []pmem.Policy) string {
	if len(ps) == 0 || (len(ps) == 4 && ps[0] == pmem.PolicyMin && ps[1] == pmem.PolicyMax && ps[2] == pmem.PolicyRandom && ps[3] == pmem.PolicyTargeted) {
		return "mix"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
