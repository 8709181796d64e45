package mwcas

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/pmem"
)

// singlePlans are the one-worker plans of the systematic crash test.
func singlePlans() []plan {
	return []plan{
		{name: "cas k=1", words: 24, workers: [][]step{{cas([]uint64{3}, []uint64{0}, []uint64{100})}}},
		{name: "cas k=2", words: 24, workers: [][]step{{cas([]uint64{9, 0}, []uint64{0, 0}, []uint64{100, 200})}}},
		{name: "cas k=4", words: 24, workers: [][]step{{cas([]uint64{0, 9, 17, 3}, []uint64{0, 0, 0, 0}, []uint64{1, 2, 3, 4})}}},
		{name: "failing cas k=3", words: 24, workers: [][]step{{cas([]uint64{0, 9, 17}, []uint64{0, 0, 5}, []uint64{1, 2, 3})}}},
		{name: "two cas, one descriptor", words: 24, perWorker: 1, workers: [][]step{{
			cas([]uint64{0, 9}, []uint64{0, 0}, []uint64{1, 2}),
			cas([]uint64{0, 17}, []uint64{1, 0}, []uint64{3, 4}),
		}}},
		{name: "swap k=1", words: 24, workers: [][]step{{swap(3)}}},
		{name: "swap k=3, cas, swap, one descriptor", words: 24, perWorker: 1, workers: [][]step{{
			swap(17, 0, 9),
			cas([]uint64{0}, []uint64{0}, []uint64{5}), // fails: the swap's value is there
			swap(9, 0),
		}}},
		{name: "failing cas k=3, reporting", words: 24, workers: [][]step{{
			reporting(cas([]uint64{0, 9, 17}, []uint64{0, 0, 5}, []uint64{1, 2, 3})),
		}}},
	}
}

// concurrentPlans are the two-worker plans of the systematic crash test,
// each run under a few schedule seeds.
func concurrentPlans() []plan {
	return []plan{
		{name: "cas and a helping read", words: 24, workers: [][]step{
			{cas([]uint64{0, 9}, []uint64{0, 0}, []uint64{1, 2})},
			{read(0, 9)},
		}},
		{name: "contending read-modify-writes", words: 24, perWorker: 1, workers: [][]step{
			{rmw(0, 9)},
			{rmw(9, 17)},
		}},
		{name: "contending swaps", words: 24, perWorker: 1, workers: [][]step{
			{swap(0, 9)},
			{swap(9, 17)},
		}},
		{name: "swap and a reporting read-modify-write", words: 24, perWorker: 1, workers: [][]step{
			{swap(9, 0)},
			{reporting(rmw(0, 9))},
		}},
	}
}

// TestSystematicCrashes crashes after each region access in turn, under each
// policy (random with three image seeds), recovers, and checks durable
// linearizability, which includes all-or-nothing and the durability of
// completed operations.
func TestSystematicCrashes(t *testing.T) {
	total := 0
	for _, p := range singlePlans() {
		res := sweep(run{plan: p}, 3)
		total += res.points
		if res.violations > 0 {
			t.Errorf("%d violations; first: %s", res.violations, res.first)
		}
		t.Logf("%-32s %5d crash points", p.name, res.points)
	}
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, p := range concurrentPlans() {
		for _, seed := range seeds {
			res := sweep(run{plan: p, seed: seed}, 2)
			total += res.points
			if res.violations > 0 {
				t.Errorf("%d violations; first: %s", res.violations, res.first)
			}
			t.Logf("%-32s %5d crash points (schedule seed %d)", p.name, res.points, seed)
		}
	}
	t.Logf("systematic crash points covered: %d", total)
}

// TestCrashDuringRecovery crashes a k=2 MwCAS, and a k=2 swap, at each
// access under min and random, then crashes the recovery (of the image
// reopened as a new process would) at each of its accesses under min or
// max and two random images, reopens and recovers again, and wants the
// state a single recovery gives.
func TestCrashDuringRecovery(t *testing.T) {
	for _, p := range []plan{
		{name: "cas k=2", words: 24, workers: [][]step{{cas([]uint64{9, 0}, []uint64{0, 0}, []uint64{100, 200})}}},
		{name: "swap k=2", words: 24, workers: [][]step{{swap(9, 0)}}},
	} {
		crashDuringRecovery(t, p)
	}
}

func crashDuringRecovery(t *testing.T, p plan) {
	base := execute(run{plan: p}, false)
	points, recoveryPoints := 0, 0
	stride := 1
	if testing.Short() {
		stride = 5
	}
	for c := 1; c <= base.accesses; c += stride {
		for _, pol := range []pmem.Policy{pmem.PolicyMin, pmem.PolicyRandom} {
			img := crashedImage(t, p, c, pol)
			ref := recoverClone(t, img, 0, pmem.PolicyMin, 0)
			points++
			// At each access of the recovery: min or max, and two random
			// images, which can keep a later line (a freed status) and lose
			// an earlier one (a fixed word) when a fence is missing.
		points:
			for j := 1; ; j++ {
				for i, rp := range []pmem.Policy{pmem.Policy(j % 2), pmem.PolicyRandom, pmem.PolicyRandom} {
					got := recoverClone(t, img, j, rp, uint64(i))
					if got == nil {
						break points // the recovery had fewer than j accesses
					}
					recoveryPoints++
					if !slices.Equal(got, ref) {
						t.Fatalf("crash at %d (%s), recovery crashed at %d (%s): %v, a single recovery gives %v", c, pol, j, rp, got, ref)
					}
				}
			}
			img.Close()
		}
	}
	t.Logf("%s: %d crash images, %d crashes during recovery", p.name, points, recoveryPoints)
}

// crashedImage runs plan p, crashes at access c and returns the crash image
// by policy pol (before recovery).
func crashedImage(t *testing.T, p plan, c int, pol pmem.Policy) *pmem.Region {
	t.Helper()
	rn := run{plan: p, crashAt: c}
	cfg := rn.config()
	n, _ := RegionWords(cfg)
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := New(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &sched{rng: rand.New(rand.NewPCG(0, 7)), turn: []chan struct{}{make(chan struct{}, 1)}, live: []bool{true},
		done: make(chan struct{}), crashAt: c, limit: 100000}
	r.SetHook(s)
	go func() {
		<-s.turn[0]
		workerLoop(m, s, 0, p.workers[0])
		s.finish(0)
	}()
	s.turn[0] <- struct{}{}
	<-s.done
	r.SetHook(nil)
	img, err := r.CrashImage(pol, rand.New(rand.NewPCG(uint64(c), 1)), pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// countHook counts region accesses and crashes the region at the n-th (0:
// never).
type countHook struct{ n, count int }

func (h *countHook) Access(int, pmem.AccessKind, uint64) error {
	h.count++
	if h.count == h.n {
		return pmem.ErrCrashed
	}
	return nil
}

// recoverClone recovers a copy of img as a new process would (the image's
// bytes opened as a new region, then Open and Recover); if crashAt > 0 the
// first recovery (Open included) is crashed at that access, the copy crashed
// by pol (random: with image seed seed), reopened and recovered again. It
// returns the data words, or nil if the first recovery finished before
// crashAt.
func recoverClone(t *testing.T, img *pmem.Region, crashAt int, pol pmem.Policy, seed uint64) []uint64 {
	t.Helper()
	b, err := img.Image()
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.OpenImage(b, pmem.Options{Emulate: true, Hook: &countHook{n: crashAt}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Close() }()
	m, err := Open(r, Config{})
	if err == nil {
		_, err = m.Recover(0)
	}
	if crashAt > 0 {
		if err == nil {
			return nil
		}
		if !errors.Is(err, pmem.ErrCrashed) {
			t.Fatalf("recovery crashed at %d: %v", crashAt, err)
		}
		if err := r.Crash(pol, rand.New(rand.NewPCG(uint64(crashAt), seed))); err != nil {
			t.Fatal(err)
		}
		nr, nm, err := restart(r, mutNone)
		if nr != nil {
			r = nr
		}
		if err != nil {
			t.Fatalf("open after a crash during recovery: %v", err)
		}
		if _, err := nm.Recover(0); err != nil {
			t.Fatalf("second recovery: %v", err)
		}
		m = nm
	} else if err != nil {
		t.Fatalf("recovery: %v", err)
	}
	out := slices.Clone(dataWords(m))
	for a, v := range out {
		if v&flagBits != 0 {
			t.Fatalf("word %d holds %#x after recovery", a, v)
		}
	}
	return out
}

// randomPlan makes a small random workload of reads, read-modify-writes
// (some of them reporting the values on failure) and swaps over a few
// words spread on two lines.
func randomPlan(rng *rand.Rand, workers, steps int) plan {
	addrs := []uint64{0, 1, 9, 10}
	p := plan{name: "random", words: 16, perWorker: 1, workers: make([][]step, workers)}
	for w := range p.workers {
		for range steps {
			k := 1 + rng.IntN(3)
			perm := rng.Perm(len(addrs))[:k]
			as := make([]uint64, k)
			for i, j := range perm {
				as[i] = addrs[j]
			}
			switch rng.IntN(6) {
			case 0, 1:
				p.workers[w] = append(p.workers[w], read(as...))
			case 2:
				p.workers[w] = append(p.workers[w], swap(as...))
			case 3:
				p.workers[w] = append(p.workers[w], reporting(rmw(as...)))
			default:
				p.workers[w] = append(p.workers[w], rmw(as...))
			}
		}
	}
	return p
}

// TestRandomSchedules runs small random workloads under seeded schedules, with
// and without a crash at a random access, and checks each history.
func TestRandomSchedules(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	crashes := 0
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 11))
		p := randomPlan(rng, 2+rng.IntN(2), 2)
		rn := run{plan: p, seed: seed}
		o := execute(rn, false)
		if o.violation != "" {
			t.Fatalf("seed %d, no crash: %s", seed, o.violation)
		}
		rn.crashAt = 1 + rng.IntN(o.accesses)
		rn.policy = pmem.Policies()[rng.IntN(4)]
		rn.imgSeed = seed
		if o := execute(rn, false); o.violation != "" {
			t.Fatalf("seed %d, crash at %d, %s: %s", seed, rn.crashAt, rn.policy, o.violation)
		}
		crashes++
	}
	t.Logf("%d schedules, %d with a crash", n, crashes)
}

func ExampleMutants() {
	for _, m := range Mutants() {
		fmt.Println(m.Name)
	}
	// Output:
	// descriptor-reused-early
	// descriptor-unflushed
	// dirty-spurious-failure
	// phase2-unflushed
	// read-dirty-unpersisted
	// read-single-collect
	// recovery-skips-rdcss
	// recovery-wrong-way
	// status-unpersisted
	// status-without-cas
	// swap-stale-old
	// words-unpersisted
}

// TestInterleavings runs the interleaving plans (mutants_test.go), among
// them swaps contending for a word, under many schedule seeds without a
// crash: the races between helpers that record the value a swap displaces
// need none.
func TestInterleavings(t *testing.T) {
	seeds := uint64(1500)
	if testing.Short() {
		seeds = 300
	}
	for _, p := range interleavingPlans() {
		for seed := range seeds {
			if o := execute(run{plan: p, seed: seed}, false); o.violation != "" {
				t.Fatalf("%s, schedule seed %d: %s", p.name, seed, o.violation)
			}
		}
	}
}
