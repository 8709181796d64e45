package crash

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/target"
)

// replayAlways annotates the flags that Args always writes, default or
// not: the shape of the run, readable at a glance and independent of the
// defaults of the build that replays it. Args writes the others only when
// they differ from their default.
const replayAlways = "pmlin-replay-always"

// RegisterFlags binds c's fields to flags of fs (pmlin run and fuzz), each
// flag's default being the field's present value: so a field is a flag in
// this one place, and Args renders a configuration from the same flags.
// --target chooses among targets, and each parameter of any of them is a
// flag of its name (Check refuses one the chosen target does not have).
// Child is no flag (see Config).
func (c *Config) RegisterFlags(fs *pflag.FlagSet, targets []*target.Target) {
	find := func(name string) (*target.Target, error) { return FindTarget(targets, name) }
	fs.Var(newValue(&c.Target, find, targetName), "target", "the primitive under test (see pmlin targets)")
	d := &c.Driver
	fs.IntVar(&d.Threads, "threads", d.Threads, "worker threads (processes of the history)")
	fs.IntVar(&c.Ops, "ops", c.Ops, "operations per run, over all threads")
	fs.Uint64Var(&c.Keys, "keys", c.Keys, "data-structure targets of a map or set model: keys (set members) of the workload, 0 .. keys-1")
	fs.Uint64Var(&d.Words, "words", d.Words, "words of the address space")
	fs.IntVar(&d.K, "k", d.K, "words per operation (distinct, random order)")
	fs.Float64Var(&d.Reads, "reads", d.Reads, "probability that an operation is a read (the rest are cas, or swaps: --swaps)")
	fs.Float64Var(&d.Swaps, "swaps", d.Swaps, "probability that an operation is a swap, its new values unique tags as a cas's (reads + swaps <= 1; the target must have a swap, see pmlin targets)")
	fs.BoolVar(&d.FailValues, "fail-values", d.FailValues, "a failed cas reports the values it read, \"ret fail A V1 ... VK\" (the target must support it, see pmlin targets)")
	fs.IntVar(&c.Crashes, "crashes", c.Crashes, "crashes per run, each at a seeded random region access (with --exec: kills of the program)")
	fs.Int64Var(&c.CrashAt, "crash-at", c.CrashAt, "crash once, at this region access (deterministic scheduler; for systematic replays)")
	fs.Var(newValue(&c.Policies, ParsePolicies, PolicyNames), "policy", "crash image policy: min, max, random, targeted, a comma-separated list, or mix (all four, one drawn per crash)")
	fs.Float64Var(&c.RecoveryCrash, "recovery-crash", c.RecoveryCrash, "probability that a recovery is itself crashed at a random access and run again")
	always := []string{"target", "threads", "ops", "words", "k", "reads", "crashes", "policy", "recovery-crash", "sched", "seed"}
	fs.IntVar(&c.RecoveryCrashes, "recovery-crashes", c.RecoveryCrashes, "the most times one recovery is crashed (each run again with probability --recovery-crash)")
	fs.BoolVar(&c.RecoverySweep, "recovery-sweep", c.RecoverySweep, "crash every recovery right after each of its flushes and fences in turn, until a run of it makes fewer")
	fs.Float64Var(&c.Stall, "stall", c.Stall, "probability that a segment stops one thread for good inside an operation (right after one of its writes, from a seeded region access on), to check that the others still finish theirs (progress check; deterministic scheduler)")
	for _, p := range params(targets) {
		fs.Var(&paramValue{m: &c.Params, name: p.Name, def: p.Default}, p.Name, p.Usage)
		always = append(always, p.Name)
	}
	fs.Var(newValue(&d.Sched, driver.ParseSched, driver.Sched.String), "sched", "scheduler: deterministic (one thread at a time, seeded choices: replays byte for byte) or free (goroutines)")
	fs.Float64Var(&d.Yield, "yield", d.Yield, "free scheduler: probability of a seeded yield at each region access")
	fs.Float64Var(&d.Stick, "stick", d.Stick, "deterministic scheduler: probability that the running thread keeps running (-1: chosen by the seed among 0, 0.8 and 0.95)")
	fs.Int64Var(&d.StuckAccesses, "stuck-accesses", d.StuckAccesses, "an operation that makes this many region accesses without returning is reported stuck")
	fs.Float64Var(&d.Late, "late", d.Late, "deterministic scheduler: probability that a thread's CAS inside an operation is held back until the others have changed that word (late-write policy; also switches at the target's volatile scheduling points)")
	fs.Float64Var(&c.LateCrash, "late-crash", c.LateCrash, "with --late: probability that a segment crashes where a late write was changed and the change is not yet durable (right before the fence that would make it durable), instead of at a random access")
	fs.BoolVar(&c.RareCrash, "rare-crash", c.RareCrash, "from a run's second segment on (its last included), crash a segment also right before the first flush or fence (each with probability 0.25) at a site the run has not met before, a site being the kinds of the thread's last four accesses in its operation (deterministic scheduler, emulated crashes)")
	fs.Int64Var(&d.StallAccesses, "stall-accesses", d.StallAccesses, "while --stall has stopped a thread (or --late holds one), an operation of another that makes this many region accesses while no other operation returns is reported stuck (declared waits and the loads of their rounds not counted); 0: 10,000 or 16 k^2, whichever is larger")
	fs.DurationVar(&d.StuckAfter, "stuck-after", d.StuckAfter, "free scheduler: an operation is stuck only once this much time has also passed since its invocation; deterministic: a thread that keeps the turn this long without a region access that hands it on, or a new operation, is blocked")
	fs.Var(newValue(&c.CrashMode, ParseCrashMode, CrashMode.String), "crash-mode", "emulated (crash images of the emulated persistence domain), kill (a child process on a region file kills itself with SIGKILL at a seeded region access) or kill-async (its parent kills it at a random moment)")
	fs.StringVar(&c.Mutant, "mutant", c.Mutant, "planted bug of the target to run instead of its correct code (see pmlin mutants)")
	fs.Uint64Var(&d.Seed, "seed", d.Seed, "seed of every random choice (decimal or 0x hex)")
	for _, name := range always {
		fs.SetAnnotation(name, replayAlways, nil)
	}
}

// PrimitiveFlag reports whether a flag of pmlin run and fuzz shapes a
// primitive's workload of read, cas and swap: a data-structure target
// (target.Target.Model) has none of them, and refuses them when set.
func PrimitiveFlag(name string) bool {
	switch name {
	case "words", "k", "reads", "swaps", "fail-values":
		return true
	}
	return false
}

// params are the parameters of targets, each name once (the first
// target's declaration of it), with the targets that have it in the usage.
func params(targets []*target.Target) []target.Param {
	var out []target.Param
	have := map[string][]string{}
	for _, t := range targets {
		if t == nil {
			continue
		}
		for _, p := range t.Params {
			if have[p.Name] == nil {
				out = append(out, p)
			}
			have[p.Name] = append(have[p.Name], t.Name)
		}
	}
	for i, p := range out {
		out[i].Usage = p.Usage + " (target " + strings.Join(have[p.Name], ", ") + ")"
	}
	return out
}

func targetName(t *target.Target) string {
	if t == nil {
		return ""
	}
	return t.Name
}

// paramValue is the flag of a target parameter: its value goes to the map
// under its name, and the map's value (or the default) is what it shows.
type paramValue struct {
	m         *map[string]string
	name, def string
}

func (v *paramValue) String() string {
	if x, ok := (*v.m)[v.name]; ok {
		return x
	}
	return v.def
}

func (v *paramValue) Set(s string) error {
	if *v.m == nil {
		*v.m = map[string]string{}
	}
	(*v.m)[v.name] = s
	return nil
}

func (v *paramValue) Type() string { return "string" }

// Args renders c as the flags of pmlin run that replay it, in the order
// RegisterFlags defines them: the target and the shape of the run (with
// every parameter of the target) always, every other field that differs
// from DefaultConfig.
func (c Config) Args() []string {
	var r replayFlags
	return r.args(c)
}

// replayFlags renders configurations as Args does, with one flag set,
// made for a target and bound to a Config of its own, for every
// configuration of that target: a fuzz job renders every run's flags (the
// history's "pmlin run" comment), and making the flag set per run was
// about 1.5 % of a run's CPU time.
type replayFlags struct {
	target *target.Target
	bound  Config
	fs     *pflag.FlagSet
}

func (r *replayFlags) args(c Config) []string {
	if r.fs == nil || r.target != c.Target {
		r.target = c.Target
		r.fs = pflag.NewFlagSet("replay", pflag.ContinueOnError)
		r.fs.SortFlags = false
		r.bound = DefaultConfig()
		r.bound.RegisterFlags(r.fs, []*target.Target{c.Target}) // each flag's DefValue is now its default,
	}
	r.bound = c // and its Value reads c's field.
	var args []string
	obj := c.isObject()
	r.fs.VisitAll(func(f *pflag.Flag) {
		v := f.Value.String()
		_, always := f.Annotations[replayAlways]
		switch {
		case obj && PrimitiveFlag(f.Name):
			return // not a data structure's: refused if set
		case f.Name == "keys":
			always = obj && driver.KeyedModel(c.objectModel())
		}
		if !always && v == f.DefValue {
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
// quoting, but for a parameter of a target that accepts any string (the
// replay command of a finding quotes every argument that needs it).
func (c Config) Flags() string {
	var r replayFlags
	return r.line(c)
}

// line is args as one line (Flags).
func (r *replayFlags) line(c Config) string { return strings.Join(r.args(c), " ") }

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

// RegisterFlags binds m's shares to flags of pmlin fuzz.
func (m *Mix) RegisterFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&m.Shapes, "mix-shapes", m.Shapes, "share of runs whose words, k and target layout parameters (e.g. one data word per cache line) are drawn from their seed, unless set by a flag")
	fs.Float64Var(&m.Crowd, "mix-crowd", m.Crowd, "share of the runs without a shape of their own that crowd k >= 3 words per operation (up to the descriptor capacity) onto k to 2k words, with the target's parameters drawn as for a shape")
	fs.Float64Var(&m.Stall, "mix-stall", m.Stall, "share of runs that stop a thread in each segment to check that the others still finish (progress check; see --stall)")
	fs.Float64Var(&m.Lone, "mix-lone", m.Lone, "share of the runs of --mix-stall that have two threads, the stopped one and one live (unless --threads is set): nobody else can finish the stopped one's work for the live one")
	fs.Float64Var(&m.Late, "mix-late", m.Late, "share of runs that hold writes back until others wrote the same word (late-write policy; see --late)")
	fs.Float64Var(&m.LateCrash, "mix-late-crash", m.LateCrash, "share of the runs of --mix-late whose segments crash where a late write's change is not yet durable (see --late-crash)")
	fs.Float64Var(&m.Fill, "mix-fill", m.Fill, "share of the runs of a map or set target without a shape of their own that fill it: --keys from a quarter to three quarters of --ops, so most inserts add a key (unless --keys is set)")
	fs.Float64Var(&m.Rare, "mix-rare", m.Rare, "share of runs whose segments, from the second on, also crash at a flush or fence of a path the run has not taken before (see --rare-crash)")
	fs.Float64Var(&m.Fire, "mix-fire", m.Fire, "share of runs whose recoveries are crashed often, or right after each of their flushes and fences (see --recovery-crashes, --recovery-sweep)")
}

// KeepSet makes m keep every run flag the user set on fs: the mix draws
// none of them.
func (m *Mix) KeepSet(fs *pflag.FlagSet) {
	m.Keep = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { m.Keep[f.Name] = true })
}
