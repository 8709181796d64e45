package crash

import (
	"fmt"
	"strings"
	"time"

	"github.com/pmlin/pmlin/driver"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/pmem"
)

// Defaults of a run.
const (
	DefaultOps           = 1000
	DefaultCrashes       = 6
	DefaultDescriptors   = 4
	DefaultRecoveryCrash = 0.1
)

// Config is a run: a workload (Driver), how often and how to crash it, and
// the code under test.
type Config struct {
	Driver driver.Config
	// Ops is the number of workload operations, over all threads (the full
	// reads after recovery and at the end are not counted).
	Ops int
	// Crashes is the number of crashes. 0 means DefaultCrashes; a negative
	// value means none.
	Crashes int
	// CrashAt, if positive, makes the run crash once, at that region access
	// of the workload (counted over all workers; deterministic scheduler
	// only): the systematic sweeps. Crashes is then ignored.
	CrashAt int64
	// Policies are the crash image policies, one drawn per crash (nil: all
	// four). Process kills always behave as PolicyMax.
	Policies []pmem.Policy
	// RecoveryCrash is the probability that a recovery is itself crashed at
	// a random access and run again (0 means DefaultRecoveryCrash, a
	// negative value never).
	RecoveryCrash float64
	// Mutant names a planted bug of package mwcas ("" is the correct code).
	Mutant string
	// Descriptors is each worker's share of the PMwCAS descriptor pool;
	// small pools reuse descriptors often (0 means DefaultDescriptors).
	Descriptors int
	// Kill, if set, runs every segment in a child process killed with
	// SIGKILL (see KillConfig).
	Kill *KillConfig
}

// WithDefaults fills in the zero fields.
func (c Config) WithDefaults() Config {
	c.Driver = c.Driver.WithDefaults()
	if c.Ops == 0 {
		c.Ops = DefaultOps
	}
	if c.Crashes == 0 {
		c.Crashes = DefaultCrashes
	} else if c.Crashes < 0 {
		c.Crashes = 0
	}
	if c.CrashAt > 0 {
		c.Crashes = 1
	}
	if len(c.Policies) == 0 {
		c.Policies = pmem.Policies()
	}
	if c.RecoveryCrash == 0 {
		c.RecoveryCrash = DefaultRecoveryCrash
	} else if c.RecoveryCrash < 0 {
		c.RecoveryCrash = 0
	}
	if c.Descriptors == 0 {
		c.Descriptors = DefaultDescriptors
	}
	if c.Kill != nil {
		c.Driver.Sched = driver.Free
		k := *c.Kill
		if k.RoundTimeout == 0 {
			k.RoundTimeout = DefaultRoundTimeout
		}
		c.Kill = &k
	}
	return c
}

// Check reports a configuration that cannot run.
func (c Config) Check() error {
	if err := c.Driver.Check(); err != nil {
		return err
	}
	switch {
	case c.Ops < 0:
		return fmt.Errorf("ops = %d", c.Ops)
	case c.CrashAt > 0 && c.Driver.Sched != driver.Deterministic:
		return fmt.Errorf("a crash at a given access needs the deterministic scheduler")
	case c.CrashAt > 0 && c.Kill != nil:
		return fmt.Errorf("a crash at a given access is not possible when a process is killed")
	case c.RecoveryCrash > 1:
		return fmt.Errorf("recovery crash probability %v", c.RecoveryCrash)
	case c.Descriptors < 1 || c.Descriptors > 1<<16:
		return fmt.Errorf("descriptors = %d (1..65536)", c.Descriptors)
	}
	for _, p := range c.Policies {
		if p.String() == fmt.Sprintf("Policy(%d)", uint8(p)) {
			return fmt.Errorf("unknown crash policy %d", p)
		}
	}
	return mwcas.CheckMutant(c.Mutant)
}

// mwcasConfig is the PMwCAS geometry of the run.
func (c Config) mwcasConfig() mwcas.Config {
	return mwcas.Config{Words: c.Driver.Words, MaxWorkers: c.Driver.Threads, DescriptorsPerWorker: c.Descriptors,
		MaxK: c.Driver.K, Mutant: c.Mutant}
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

// Flags renders c as the flags of pmlin run that replay it (defaults
// filled in, so the command does not depend on the defaults of the build
// that runs it).
func (c Config) Flags() string {
	c = c.WithDefaults()
	d := c.Driver
	var b strings.Builder
	fmt.Fprintf(&b, "--threads %d --ops %d --words %d --k %d --reads %g", d.Threads, c.Ops, d.Words, d.K, d.Reads)
	if c.CrashAt > 0 {
		fmt.Fprintf(&b, " --crash-at %d", c.CrashAt)
	} else {
		fmt.Fprintf(&b, " --crashes %d", c.Crashes)
	}
	fmt.Fprintf(&b, " --policy %s --recovery-crash %g --descriptors %d --sched %s", PolicyNames(c.Policies), c.RecoveryCrash, c.Descriptors, d.Sched)
	switch {
	case d.Sched == driver.Free:
		fmt.Fprintf(&b, " --yield %g", d.Yield)
	case d.Stick < 0:
		b.WriteString(" --stick 0")
	case d.Stick > 0:
		fmt.Fprintf(&b, " --stick %g", d.Stick)
	}
	if d.StuckAccesses != driver.DefaultStuckAccesses {
		fmt.Fprintf(&b, " --stuck-accesses %d", d.StuckAccesses)
	}
	switch {
	case c.Kill != nil && c.Kill.Async:
		b.WriteString(" --crash-mode kill-async")
	case c.Kill != nil:
		b.WriteString(" --crash-mode kill")
	}
	if c.Mutant != "" {
		fmt.Fprintf(&b, " --mutant %s", c.Mutant)
	}
	fmt.Fprintf(&b, " --seed %d", d.Seed)
	return b.String()
}

// DefaultRoundTimeout bounds one child process of the process-kill mode.
const DefaultRoundTimeout = 20 * time.Second
