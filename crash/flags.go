package crash

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/pmlin/pmlin/driver"
)

// replayAlways annotates the flags that Args always writes, default or
// not: the shape of the run, readable at a glance and independent of the
// defaults of the build that replays it. Args writes the others only when
// they differ from their default.
const replayAlways = "pmlin-replay-always"

// RegisterFlags binds c's fields to flags of fs (pmlin run and fuzz), each
// flag's default being the field's present value: so a field is a flag in
// this one place, and Args renders a configuration from the same flags.
// Child is no flag (see Config).
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	d := &c.Driver
	fs.IntVar(&d.Threads, "threads", d.Threads, "worker threads (processes of the history)")
	fs.IntVar(&c.Ops, "ops", c.Ops, "operations per run, over all threads")
	fs.Uint64Var(&d.Words, "words", d.Words, "words of the address space")
	fs.IntVar(&d.K, "k", d.K, "words per operation (distinct, random order)")
	fs.Float64Var(&d.Reads, "reads", d.Reads, "probability that an operation is a read (the rest are cas)")
	fs.IntVar(&c.Crashes, "crashes", c.Crashes, "crashes per run, each at a seeded random region access")
	fs.Int64Var(&c.CrashAt, "crash-at", c.CrashAt, "crash once, at this region access (deterministic scheduler; for systematic replays)")
	fs.Var(newValue(&c.Policies, ParsePolicies, PolicyNames), "policy", "crash image policy: min, max, random, targeted, a comma-separated list, or mix (all four, one drawn per crash)")
	fs.Float64Var(&c.RecoveryCrash, "recovery-crash", c.RecoveryCrash, "probability that a recovery is itself crashed at a random access and run again")
	fs.IntVar(&c.Descriptors, "descriptors", c.Descriptors, "PMwCAS descriptors per thread (small pools reuse descriptors often)")
	fs.Var(newValue(&d.Sched, driver.ParseSched, driver.Sched.String), "sched", "scheduler: deterministic (one thread at a time, seeded choices: replays byte for byte) or free (goroutines)")
	fs.Float64Var(&d.Yield, "yield", d.Yield, "free scheduler: probability of a seeded yield at each region access")
	fs.Float64Var(&d.Stick, "stick", d.Stick, "deterministic scheduler: probability that the running thread keeps running (-1: chosen by the seed among 0, 0.8 and 0.95)")
	fs.Int64Var(&d.StuckAccesses, "stuck-accesses", d.StuckAccesses, "an operation that makes this many region accesses without returning is reported stuck")
	fs.DurationVar(&d.StuckAfter, "stuck-after", d.StuckAfter, "free scheduler: an operation is stuck only once this much time has also passed since its invocation")
	fs.Var(newValue(&c.CrashMode, ParseCrashMode, CrashMode.String), "crash-mode", "emulated (crash images of the emulated persistence domain), kill (a child process on a region file kills itself with SIGKILL at a seeded region access) or kill-async (its parent kills it at a random moment)")
	fs.StringVar(&c.Mutant, "mutant", c.Mutant, "planted bug to run instead of the correct PMwCAS (see pmlin mutants)")
	fs.Uint64Var(&d.Seed, "seed", d.Seed, "seed of every random choice (decimal or 0x hex)")
	for _, name := range []string{"threads", "ops", "words", "k", "reads", "crashes", "policy", "recovery-crash", "descriptors", "sched", "seed"} {
		fs.SetAnnotation(name, replayAlways, nil)
	}
}

// Args renders c as the flags of pmlin run that replay it, in the order
// RegisterFlags defines them: the shape of the run always, every other
// field that differs from DefaultConfig.
func (c Config) Args() []string {
	fs := pflag.NewFlagSet("replay", pflag.ContinueOnError)
	fs.SortFlags = false
	bound := DefaultConfig()
	bound.RegisterFlags(fs) // each flag's DefValue is now its default,
	bound = c               // and its Value reads c's field.
	var args []string
	fs.VisitAll(func(f *pflag.Flag) {
		v := f.Value.String()
		if _, always := f.Annotations[replayAlways]; !always && v == f.DefValue {
			return
		}
		if f.NoOptDefVal != "" { // a boolean: "--flag false" would not parse
			args = append(args, "--"+f.Name+"="+v)
		} else {
			args = append(args, "--"+f.Name, v)
		}
	})
	return args
}

// Flags is Args as one line, for the history's comment ("pmlin run
// FLAGS"). The values of a configuration that passes Check need no shell
// quoting.
func (c Config) Flags() string { return strings.Join(c.Args(), " ") }

// value is a flag bound to a field of type T that parse reads and format
// writes back. Its type shows as "string" in the usage, as the flag is
// typed by the user.
type value[T any] struct {
	p      *T
	parse  func(string) (T, error)
	format func(T) string
}

func newValue[T any](p *T, parse func(string) (T, error), format func(T) string) *value[T] {
	return &value[T]{p, parse, format}
}

func (v *value[T]) String() string { return v.format(*v.p) }
func (v *value[T]) Type() string   { return "string" }

func (v *value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err == nil {
		*v.p = x
	}
	return err
}
