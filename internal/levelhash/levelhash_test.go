package levelhash

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pmlin/pmlin/internal/targetkit"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

func config(mutant string, keys uint64, buckets, slots int) target.Config {
	return target.Config{Workers: 2, Keys: keys, Mutant: mutant, Params: map[string]string{
		"buckets": fmt.Sprint(buckets), "slots": fmt.Sprint(slots)}}
}

func newTable(t *testing.T, c target.Config) (*pmem.Region, *table) {
	t.Helper()
	n, err := Target().Size(c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	o, err := create(r, c)
	if err != nil {
		t.Fatal(err)
	}
	return r, o.(*table)
}

// op is one map operation of a workload.
type op struct {
	name string
	k, v uint64
}

// workload draws n operations over keys keys, every value new.
func workload(rng *rand.Rand, n int, keys uint64) []op {
	names := []string{"put", "put", "put", "get", "remove", "putifabsent"}
	ops := make([]op, n)
	for i := range ops {
		ops[i] = op{names[rng.IntN(len(names))], rng.Uint64N(keys), uint64(i + 100)}
	}
	return ops
}

// apply is the map model of docs/history-format.md on a Go map: the
// result (0, false for nil) and the change.
func apply(m map[uint64]uint64, o op) (uint64, bool) {
	old, ok := m[o.k]
	switch {
	case o.name == "put", o.name == "putifabsent" && !ok:
		m[o.k] = o.v
	case o.name == "remove":
		delete(m, o.k)
	}
	return old, ok
}

func do(obj target.Object, worker int, o op) (model.Value, error) {
	args := []model.Value{model.Number(o.k)}
	if o.name == "put" || o.name == "putifabsent" {
		args = append(args, model.Number(o.v))
	}
	res, err := obj.Do(worker, o.name, args, nil)
	if err != nil {
		return model.Value{}, err
	}
	if len(res) != 1 {
		return model.Value{}, fmt.Errorf("%d results", len(res))
	}
	return res[0], nil
}

func want(v uint64, ok bool) model.Value {
	if !ok {
		return model.Sym(model.Nil)
	}
	return model.Number(v)
}

// stateOf reads the object's state as a Go map, checking the keys ascend.
func stateOf(obj target.Object) (map[uint64]uint64, error) {
	s, err := obj.State(0, nil)
	if err != nil {
		return nil, err
	}
	m := map[uint64]uint64{}
	for i := 0; i+1 < len(s); i += 2 {
		if i > 0 && s[i].N <= s[i-2].N {
			return nil, fmt.Errorf("state %v: keys not ascending", s)
		}
		m[s[i].N] = s[i+1].N
	}
	return m, nil
}

// TestSequential runs random workloads against the map model, on tables
// small enough to move items and resize, and checks every result and the
// state after every operation.
func TestSequential(t *testing.T) {
	for _, geo := range [][3]int{{8, 2, 4}, {8, 2, 1}, {8, 4, 2}, {40, 2, 1}, {200, 8, 4}} {
		c := config("", uint64(geo[0]), geo[1], geo[2])
		_, tb := newTable(t, c)
		ref := map[uint64]uint64{}
		rng := rand.New(rand.NewPCG(uint64(geo[0]), uint64(geo[2])))
		for i, o := range workload(rng, 3000, c.Keys) {
			got, err := do(tb, i%2, o)
			if err != nil {
				t.Fatalf("%v op %d %v: %v", geo, i, o, err)
			}
			if w := want(apply(ref, o)); got != w {
				t.Fatalf("%v op %d %v: got %v, want %v", geo, i, o, got, w)
			}
			st, err := stateOf(tb)
			if err != nil || !maps.Equal(st, ref) {
				t.Fatalf("%v after op %d %v: state %v (%v), want %v", geo, i, o, st, err, ref)
			}
		}
		lv, _ := tb.levels(&pmem.Steps{W: tb.r.Worker(0)})
		t.Logf("keys %d buckets %d slots %d: levels of generations %d and %d (at most %d)", geo[0], geo[1], geo[2], lv.top, lv.bot, tb.l.maxGen)
		if geo[2] == 1 && lv.top == 1 {
			t.Errorf("%v: no resize", geo)
		}
	}
}

// crashRun runs ops as worker 0 and crashes at access at (an access past
// the last: no crash, done false), recovers on a reopened region under
// policy p, and checks what durable linearizability requires: the state
// recovered is the model's before the cut-off operation or after it; then
// the rest of the workload (which resizes again over what a cut-off resize
// left; skipped if early) and a removal and a read of every
// key behave as that state says
// (a duplicate item left behind shows there), and a second crash keeps
// those removals. It returns what went wrong.
func crashRun(t *testing.T, c target.Config, ops []op, at int, p pmem.Policy, rng *rand.Rand, early bool) (problem string, done bool) {
	r, tb := newTable(t, c)
	ref := map[uint64]uint64{}
	h := &targetkit.CrashAt{N: at}
	r.SetHook(h)
	var cut *op
	var rest []op
	for i := range ops {
		_, err := do(tb, 0, ops[i])
		if errors.Is(err, pmem.ErrCrashed) {
			cut, rest = &ops[i], ops[i+1:]
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		apply(ref, ops[i])
	}
	r.SetHook(nil)
	if cut == nil {
		return "", false
	}
	if err := r.Crash(p, rng); err != nil {
		t.Fatal(err)
	}
	r2, err := r.Reopen(pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r2.Close() })
	obj, err := open(r2, c)
	if err != nil {
		return "open: " + err.Error(), true
	}
	// Far more accesses than the rest of the workload makes: an operation
	// that spins on a lock nobody holds ends with an error instead.
	r2.SetHook(&targetkit.CrashAt{N: 1 << 20})
	if _, err := obj.Recover(0); err != nil {
		return "recover: " + err.Error(), true
	}
	st, err := stateOf(obj)
	if err != nil {
		return "state: " + err.Error(), true
	}
	after := maps.Clone(ref)
	apply(after, *cut)
	switch {
	case maps.Equal(st, ref):
	case maps.Equal(st, after):
		ref = after
	default:
		return fmt.Sprintf("cut off in %v: recovered %v, want %v or %v", *cut, st, ref, after), true
	}
	if early {
		// The removals come right after recovery, so that the second
		// crash finds recovery's repairs as recovery left them.
		rest = nil
	}
	for _, o := range rest {
		got, err := do(obj, 1, o)
		if errors.Is(err, pmem.ErrCrashed) {
			return fmt.Sprintf("%v after recovery: stuck", o), true
		}
		if err != nil {
			return fmt.Sprintf("%v after recovery: %v", o, err), true
		}
		if w := want(apply(ref, o)); got != w {
			return fmt.Sprintf("cut off in %v: after recovery %v returned %v, want %v", *cut, o, got, w), true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ref)) {
		for _, o := range []op{{name: "remove", k: k}, {name: "get", k: k}} {
			got, err := do(obj, 1, o)
			if errors.Is(err, pmem.ErrCrashed) {
				return fmt.Sprintf("%v after recovery: stuck", o), true
			}
			if err != nil {
				return fmt.Sprintf("%v after recovery: %v", o, err), true
			}
			if w := want(apply(ref, o)); got != w {
				return fmt.Sprintf("cut off in %v: after recovery %v returned %v, want %v", *cut, o, got, w), true
			}
		}
	}
	// Everything since recovery returned, so it is durable: a second crash
	// that keeps nothing else (min) must leave the map empty, as the
	// removals did (a copy that recovery removed without making it durable
	// comes back here).
	r2.SetHook(nil)
	if err := r2.Crash(pmem.PolicyMin, rng); err != nil {
		t.Fatal(err)
	}
	r3, err := r2.Reopen(pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r3.Close() })
	if obj, err = open(r3, c); err == nil {
		_, err = obj.Recover(0)
	}
	if err != nil {
		return "second recovery: " + err.Error(), true
	}
	if st, err := stateOf(obj); err != nil || len(st) != 0 {
		return fmt.Sprintf("cut off in %v: after a second crash, recovered %v (%v), want the empty map", *cut, st, err), true
	}
	return "", true
}

// geometry is where each planted bug lives, and the seed of a workload
// that goes there: slots 1 makes movements and resizes frequent (workload
// 3 moves two items to their alternative buckets, 7 one and one bottom
// item up), slots 4 leaves free slots for the log-free update.
func geometry(mutant string) (target.Config, uint64) {
	switch mutant {
	case "update-token-early", "update-tokens-split", "insert-token-early":
		return config(mutant, 4, 2, 4), 7
	case "move-token-early":
		return config(mutant, 8, 2, 1), 3
	}
	return config(mutant, 8, 2, 1), 7
}

// movesAt runs ops as worker 0 without a crash and returns the accesses at
// which items started to move and resizes to publish.
func movesAt(t *testing.T, c target.Config, ops []op) []int {
	r, tb := newTable(t, c)
	h := &targetkit.CrashAt{}
	r.SetHook(h)
	var at []int
	tb.onStep = func(mutant) { at = append(at, h.Seen) }
	for _, o := range ops {
		if _, err := do(tb, 0, o); err != nil {
			t.Fatal(err)
		}
	}
	return at
}

// TestCrashPoints crashes a workload at many accesses under every policy
// (every few accesses, and every access in the first movements and
// resizes): the
// correct table always recovers a state the model allows, and every
// planted bug is shown wrong somewhere.
func TestCrashPoints(t *testing.T) {
	// The correct code runs in both geometries, as "" and as "4 slots".
	names := []string{"", "4 slots"}
	for _, m := range Target().Mutants {
		names = append(names, m.Name)
	}
	for _, name := range names {
		mutant := name
		c, seed := geometry(mutant)
		if name == "4 slots" {
			mutant = ""
			c, seed = geometry("update-token-early")
			c.Mutant = ""
		}
		ops := workload(rand.New(rand.NewPCG(seed, 7)), 60, c.Keys)
		found := ""
		try := func(p pmem.Policy, at int, rng *rand.Rand, early bool) bool {
			problem, done := crashRun(t, c, ops, at, p, rng, early)
			if problem != "" && mutant == "" {
				t.Fatalf("correct code, %s, crash at access %d: %s", p, at, problem)
			}
			if problem != "" && found == "" {
				found = fmt.Sprintf("%s, crash at access %d: %s", p, at, problem)
			}
			return done
		}
		moves := movesAt(t, c, ops)
		// The other policies draw nothing: once with the rest of the workload
		// after recovery, once without.
		draws := map[pmem.Policy]int{pmem.PolicyRandom: 12}
		if c.Params["slots"] == "1" && len(moves) == 0 {
			t.Fatalf("%s: the workload moves no item", mutant)
		}
		for _, p := range pmem.Policies() {
			rng := rand.New(rand.NewPCG(1, uint64(p)))
			for at := 1; try(p, at, rng, at%2 == 0); at += 3 + rng.IntN(6) {
			}
			for _, m := range moves[:min(len(moves), 6)] {
				for at := m; at < m+16; at++ {
					for d := range max(2, draws[p]) {
						try(p, at, rng, d%2 == 1)
					}
				}
			}
		}
		switch {
		case mutant != "" && found == "":
			t.Errorf("%s: no crash point shows it", mutant)
		case mutant != "":
			t.Logf("%s: %s", mutant, found)
		}
	}
}

func TestOpenChecksTheSuperblock(t *testing.T) {
	c := config("", 8, 2, 4)
	r, _ := newTable(t, c)
	if _, err := open(r, c); err != nil {
		t.Fatal(err)
	}
	if _, err := open(r, config("", 7, 2, 4)); !errors.Is(err, errCorrupt) {
		t.Fatalf("another geometry: %v", err)
	}
	n, _ := Target().Size(c)
	blank, _ := pmem.NewMemory(n, pmem.Options{})
	defer blank.Close()
	if _, err := open(blank, c); !errors.Is(err, errCorrupt) {
		t.Fatalf("a blank region: %v", err)
	}
	obj, _ := open(r, c)
	if _, err := obj.Do(0, "get", []model.Value{model.Number(1)}, nil); err == nil || !strings.Contains(err.Error(), "Recover") {
		t.Fatalf("an operation before Recover: %v", err)
	}
}

func TestBadArguments(t *testing.T) {
	_, tb := newTable(t, config("", 8, 2, 4))
	for i, tc := range []struct {
		worker int
		name   string
		args   []model.Value
	}{
		{0, "get", []model.Value{model.Number(8)}},
		{0, "get", nil},
		{0, "put", []model.Value{model.Number(1)}},
		{0, "put", []model.Value{model.Number(1), model.Sym(model.Nil)}},
		{0, "enq", []model.Value{model.Number(1)}},
		{2, "get", []model.Value{model.Number(1)}},
	} {
		if _, err := tb.Do(tc.worker, tc.name, tc.args, nil); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	for _, c := range []target.Config{
		config("", 8, 3, 4), config("", 8, 2, 0), config("", 8, 2, 5), config("", 0, 2, 4),
		config("nope", 8, 2, 4), config("", 1<<17, 2, 4),
	} {
		if _, err := Target().Size(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := Target().Check(); err != nil {
		t.Fatal(err)
	}
}

// TestFuzzValuesFit: every value pmlin fuzz draws for a parameter sizes a
// table for any number of keys the harness allows.
func TestFuzzValuesFit(t *testing.T) {
	tg := Target()
	for _, p := range tg.Params {
		for _, v := range p.Fuzz {
			for _, keys := range []uint64{1, 8, 4096} {
				c := config("", keys, 2, 4)
				c.Params[p.Name] = v
				if _, err := tg.Size(c); err != nil {
					t.Errorf("--%s %s, %d keys: %v", p.Name, v, keys, err)
				}
			}
		}
	}
}

// TestConcurrent runs workers on disjoint keys that share buckets, locks
// and resizes: each worker's results follow its own keys' model exactly.
func TestConcurrent(t *testing.T) {
	const workers = 4
	for _, slots := range []int{1, 4} {
		c := config("", 32, 2, slots)
		c.Workers = workers
		_, tb := newTable(t, c)
		errs := make(chan error, workers)
		for w := range workers {
			go func() {
				ref := map[uint64]uint64{}
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for i, o := range workload(rng, 2000, c.Keys/workers) {
					o.k = o.k*workers + uint64(w)
					o.v += uint64(w) << 20
					got, err := do(tb, w, o)
					if err != nil {
						errs <- err
						return
					}
					if want := want(apply(ref, o)); got != want {
						errs <- fmt.Errorf("worker %d op %d %v: got %v, want %v", w, i, o, got, want)
						return
					}
				}
				errs <- nil
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkDo is the table's throughput without recording: the map
// workload's operations (put 3, get 3, remove 2, putifabsent 1) over 8
// keys, from parallel workers, on a region without persistence emulation
// (flushes and fences cost a call each) or with it (-emulate).
func BenchmarkDo(b *testing.B) {
	for _, emulate := range []bool{false, true} {
		b.Run(fmt.Sprintf("emulate=%v", emulate), func(b *testing.B) {
			workers := runtime.GOMAXPROCS(0) // RunParallel's goroutines: a worker id each
			c := config("", 8, 2, 4)
			c.Workers = workers
			n, err := Target().Size(c)
			if err != nil {
				b.Fatal(err)
			}
			r, err := pmem.NewMemory(n, pmem.Options{Emulate: emulate})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			obj, err := create(r, c)
			if err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				w := int(next.Add(1) - 1)
				rng := rand.New(rand.NewPCG(uint64(w), 3))
				ops := workload(rng, 1024, c.Keys)
				res := make([]model.Value, 0, 2)
				args := make([]model.Value, 2)
				for i := 0; pb.Next(); i++ {
					o := ops[i%len(ops)]
					args[0], args[1] = model.Number(o.k), model.Number(o.v)
					nargs := 1
					if o.name == "put" || o.name == "putifabsent" {
						nargs = 2
					}
					if _, err := obj.Do(w, o.name, args[:nargs], res); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
