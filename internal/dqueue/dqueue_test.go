package dqueue

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

func config(mutant, stride string, workers, ops int) target.Config {
	return target.Config{Workers: workers, Mutant: mutant, Ops: ops, Params: map[string]string{"node-words": stride}}
}

func newQueue(t *testing.T, c target.Config, opts pmem.Options) (*pmem.Region, target.Object) {
	t.Helper()
	n, err := Target().Size(c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.NewMemory(n, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	o, err := create(r, c)
	if err != nil {
		t.Fatal(err)
	}
	return r, o
}

func TestTargetChecks(t *testing.T) {
	if err := Target().Check(); err != nil {
		t.Fatal(err)
	}
}

// TestSequential applies random enqs and deqs as alternating workers and
// compares each result, and State, with a queue kept in a slice.
func TestSequential(t *testing.T) {
	for _, stride := range []string{"4", "8"} {
		const ops = 400
		_, q := newQueue(t, config("", stride, 3, ops), pmem.Options{Emulate: true})
		rng := rand.New(rand.NewPCG(1, 2))
		var want []uint64
		res := make([]model.Value, 0, 2)
		var err error
		for i := range ops {
			w := i % 3
			if rng.IntN(2) == 0 {
				v := uint64(i) + 100
				res, err = q.Do(w, "enq", []model.Value{model.Number(v)}, res)
				want = append(want, v)
				if err != nil || len(res) != 1 || res[0] != model.Sym(model.OK) {
					t.Fatalf("stride %s, op %d: enq %d: %v %v", stride, i, v, res, err)
				}
			} else {
				res, err = q.Do(w, "deq", nil, res)
				exp := model.Sym(model.Empty)
				if len(want) > 0 {
					exp, want = model.Number(want[0]), want[1:]
				}
				if err != nil || len(res) != 1 || res[0] != exp {
					t.Fatalf("stride %s, op %d: deq: %v %v, want %v", stride, i, res, err, exp)
				}
			}
			st, err := q.State(0, nil)
			if err != nil || len(st) != len(want) {
				t.Fatalf("stride %s, op %d: state %v %v, want %v", stride, i, st, err, want)
			}
			for j := range st {
				if st[j] != model.Number(want[j]) {
					t.Fatalf("stride %s, op %d: state %v, want %v", stride, i, st, want)
				}
			}
		}
	}
}

// TestPools: Config.Ops enqs and Config.Ops deqs fit, one more does not.
func TestPools(t *testing.T) {
	_, q := newQueue(t, config("", "8", 1, 3), pmem.Options{})
	for i := range 4 {
		if _, err := q.Do(0, "enq", []model.Value{model.Number(uint64(i))}, nil); (err != nil) != (i == 3) || i == 3 && !strings.Contains(err.Error(), "out of nodes") {
			t.Fatalf("enq %d: %v", i, err)
		}
		if _, err := q.Do(0, "deq", nil, nil); (err != nil) != (i == 3) || i == 3 && !strings.Contains(err.Error(), "out of cells") {
			t.Fatalf("deq %d: %v", i, err)
		}
	}
}

// TestConcurrent runs workers on real goroutines, without a hook, and
// checks that every enqueued value comes out exactly once (by a deq or in
// the final state) and that each worker's values come out of each
// consumer in the order they went in.
func TestConcurrent(t *testing.T) {
	const workers, per = 4, 500
	_, q := newQueue(t, config("", "4", workers, workers*per), pmem.Options{})
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			res := make([]model.Value, 0, 2)
			next := uint64(0)
			for range per {
				var err error
				if rng.IntN(2) == 0 {
					res, err = q.Do(w, "enq", []model.Value{model.Number(uint64(w)<<32 | next)}, res)
					next++
				} else if res, err = q.Do(w, "deq", nil, res); err == nil && res[0].Sym == model.Num {
					got[w] = append(got[w], res[0].N)
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	st, err := q.State(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rest []uint64
	for _, v := range st {
		rest = append(rest, v.N)
	}
	seen := map[uint64]bool{}
	for _, vs := range append(got, rest) {
		last := map[uint64]uint64{}
		for _, v := range vs {
			if seen[v] {
				t.Fatalf("%#x came out twice", v)
			}
			seen[v] = true
			p, i := v>>32, v&(1<<32-1)
			if l, ok := last[p]; ok && l >= i {
				t.Fatalf("worker %d's %d came out after its %d", p, i, l)
			}
			last[p] = i
		}
	}
	t.Logf("%d values dequeued or left, %d left", len(seen), len(rest))
}

var policies = []pmem.Policy{pmem.PolicyMin, pmem.PolicyRandom, pmem.PolicyTargeted, pmem.PolicyMax}

// newTrial is the i-th trial of a campaign: two or three workers of five
// operations each, the nodes on lines of their own or two on a line, a
// crash point, a policy, and in two trials of three a worker stalled at
// some access, crashed when the others are done in one of them.
func newTrial(mutant string, i int) trial {
	tr := trial{mutant: mutant, stride: []string{"8", "4"}[i%2], workers: 2 + i%2, ops: 5, seed: uint64(i), crashAt: 1 + i*37%250, policy: policies[i%len(policies)]}
	switch i % 3 {
	case 1:
		tr.stallAt, tr.crashAlone, tr.crashAt = 1+i*13%120, true, 0
	case 2:
		tr.stallAt = 1 + i*13%120
	}
	return tr
}

// TestCrashClean crashes runs of the correct queue at many points under
// every policy (and some recoveries too), and checks each history, with
// the recovered states and a round of operations after the crash, for
// durable linearizability.
func TestCrashClean(t *testing.T) {
	n := testenv.Count(0, 1000, 20000)
	crashes := 0
	for i := range n {
		tr := newTrial("", i)
		if i%5 == 0 {
			tr.crashRecoveryAt = 1 + i%40
		}
		out := tr.run(t)
		if out.finding != "" {
			t.Fatalf("%+v: %s\n%s", tr, out.finding, describe(out.hist))
		}
		if out.crashed {
			crashes++
		}
	}
	if crashes < n/2 {
		t.Errorf("only %d of %d runs crashed inside the first round", crashes, n)
	}
}

// TestMutantsCaught: each planted bug shows, in some trial of a
// campaign, as a violation, a corrupt state or a stuck run. Those that
// need a thread descheduled at one exact point are shown by TestScripts
// instead (this test's random schedules find them only in thousands of
// trials).
func TestMutantsCaught(t *testing.T) {
	scripted := map[string]bool{"enq-help-unflushed": true, "deq-help-unflushed": true, "mark-help-unflushed": true, "tail-store": true}
	for _, m := range Target().Mutants {
		if scripted[m.Name] && !testenv.Long() {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			for i := range testenv.Count(0, 3000, 30000) {
				tr := newTrial(m.Name, i)
				if out := tr.run(t); out.finding != "" {
					t.Logf("trial %d (%s, crash at %d, %d workers, stride %s): %s", i, tr.policy, tr.crashAt, tr.workers, tr.stride, out.finding)
					return
				}
			}
			t.Errorf("%s: no trial shows it", m.Name)
		})
	}
}

func TestOpenChecksTheSuperblock(t *testing.T) {
	c := config("", "8", 2, 10)
	r, _ := newQueue(t, c, pmem.Options{})
	if _, err := open(r, c); err != nil {
		t.Fatal(err)
	}
	if _, err := open(r, config("", "4", 2, 10)); !errors.Is(err, errCorrupt) {
		t.Fatalf("another geometry: %v", err)
	}
	n, _ := Target().Size(c)
	blank, _ := pmem.NewMemory(n, pmem.Options{})
	defer blank.Close()
	if _, err := open(blank, c); !errors.Is(err, errCorrupt) {
		t.Fatalf("a blank region: %v", err)
	}
	o, err := open(r, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Do(0, "deq", nil, nil); err == nil || !strings.Contains(err.Error(), "Recover") {
		t.Fatalf("an operation before Recover: %v", err)
	}
}

func TestBadArguments(t *testing.T) {
	_, q := newQueue(t, config("", "8", 2, 10), pmem.Options{})
	for i, err := range []error{
		func() error { _, err := q.Do(2, "deq", nil, nil); return err }(),
		func() error { _, err := q.Do(0, "push", nil, nil); return err }(),
		func() error { _, err := q.Do(0, "enq", nil, nil); return err }(),
		func() error { _, err := q.Do(0, "enq", []model.Value{model.Sym(model.Nil)}, nil); return err }(),
		func() error { _, err := q.Do(0, "enq", []model.Value{model.Number(1 << 62)}, nil); return err }(),
		func() error { _, err := q.Do(0, "deq", []model.Value{model.Number(1)}, nil); return err }(),
		func() error { _, err := q.State(5, nil); return err }(),
	} {
		if err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	for _, c := range []target.Config{
		config("", "5", 2, 10), config("", "8", 2, 0), config("", "8", 0, 10), config("nope", "8", 2, 10),
		{Workers: 2, Ops: 10},
	} {
		if _, err := Target().Size(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if slices.ContainsFunc(Target().Mutants, func(m target.Mutant) bool { return m.Description == "" }) {
		t.Error("a mutant without a description")
	}
}
