package crash

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// flagTargets are the targets the flags choose among: the PMwCAS and one
// with two parameters, one of them the PMwCAS's too.
var flagTargets = []*target.Target{mwcas.Target(), {Name: "other", Params: []target.Param{
	{Name: "descriptors", Default: "9", Usage: "shared"}, {Name: "stripes", Default: "4", Usage: "its own"}}}}

// parseArgs parses flags as pmlin run does: onto the defaults.
func parseArgs(t *testing.T, args []string) Config {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	c := DefaultConfig()
	c.RegisterFlags(fs, flagTargets)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if fs.NArg() != 0 {
		t.Fatalf("%q: arguments left over: %q", args, fs.Args())
	}
	return c
}

// randomize sets every field of the struct v points to (but Child: no
// flag) to a random value, found by reflection, so that a field added
// without a flag fails the round trip below instead of going unnoticed.
func randomize(t *testing.T, rng *rand.Rand, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if sf.Type == reflect.TypeFor[ChildOptions]() {
			continue
		}
		switch f.Interface().(type) {
		case *target.Target:
			// Params follow: every parameter of the chosen target, as
			// Args renders them all.
			f.Set(reflect.ValueOf(flagTargets[rng.IntN(len(flagTargets))]))
		case map[string]string:
			var m map[string]string
			for _, p := range v.FieldByName("Target").Interface().(*target.Target).Params {
				if m == nil {
					m = map[string]string{}
				}
				m[p.Name] = fmt.Sprint(rng.IntN(100))
			}
			f.Set(reflect.ValueOf(m))
		case driver.Config:
			randomize(t, rng, f)
		case driver.Sched:
			f.Set(reflect.ValueOf([]driver.Sched{driver.Deterministic, driver.Free}[rng.IntN(2)]))
		case CrashMode:
			f.Set(reflect.ValueOf(CrashMode(rng.IntN(len(crashModeNames)))))
		case []pmem.Policy:
			all := pmem.Policies()
			ps := make([]pmem.Policy, 1+rng.IntN(5))
			for j := range ps {
				ps[j] = all[rng.IntN(len(all))]
			}
			f.Set(reflect.ValueOf(ps))
		case int, int64, time.Duration:
			f.SetInt([]int64{0, -1, 1, rng.Int64N(1 << 20), -rng.Int64(), rng.Int64()}[rng.IntN(6)])
		case bool:
			f.SetBool(rng.IntN(2) == 0)
		case uint64:
			f.SetUint([]uint64{0, 1, rng.Uint64N(1 << 20), rng.Uint64(), math.MaxUint64}[rng.IntN(5)])
		case float64:
			f.SetFloat([]float64{0, -1, 0.5, rng.Float64(), rng.NormFloat64() * 1e6, math.SmallestNonzeroFloat64}[rng.IntN(6)])
		case string:
			const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
			b := make([]byte, rng.IntN(12))
			for j := range b {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			}
			f.SetString(string(b))
		default:
			t.Fatalf("field %s of type %s: give it a flag in RegisterFlags and a random value here", sf.Name, sf.Type)
		}
	}
}

// TestFlagsRoundTrip: any configuration, rendered as flags (Args) and
// parsed back (RegisterFlags), is the same configuration.
func TestFlagsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		c := DefaultConfig()
		c.Target, c.Params = flagTargets[0], map[string]string{"descriptors": "4", "stride": "1", "line-offset": "0"}
		if i > 0 {
			randomize(t, rng, reflect.ValueOf(&c).Elem())
		}
		args := c.Args()
		got := parseArgs(t, args)
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip %d:\n%+v\n-> %s\n-> %+v", i, c, strings.Join(args, " "), got)
		}
	}
}

// TestArgs: the shape of the run always, other flags when they differ
// from their defaults, in the order RegisterFlags defines them.
func TestArgs(t *testing.T) {
	def := DefaultConfig()
	def.Target = flagTargets[0]
	want := "--target pmwcas --threads 4 --ops 1000 --words 8 --k 2 --reads 0.5 --crashes 6 --policy mix --recovery-crash 0.1 --descriptors 4 --stride 1 --line-offset 0 --sched deterministic --seed 1"
	if got := def.Flags(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	c := def
	c.Driver.Sched, c.Driver.Yield, c.Driver.StuckAfter, c.CrashMode = driver.Free, 0.25, time.Second, KillAsync
	want = "--target pmwcas --threads 4 --ops 1000 --words 8 --k 2 --reads 0.5 --crashes 6 --policy mix --recovery-crash 0.1 --descriptors 4 --stride 1 --line-offset 0 --sched free --yield 0.25 --stuck-after 1s --crash-mode kill-async --seed 1"
	if got := c.Flags(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Another target: its parameters, with their defaults unless set.
	c = def
	c.Target, c.Params = flagTargets[1], map[string]string{"stripes": "2"}
	want = "--target other --threads 4 --ops 1000 --words 8 --k 2 --reads 0.5 --crashes 6 --policy mix --recovery-crash 0.1 --descriptors 9 --stripes 2 --sched deterministic --seed 1"
	if got := c.Flags(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
