package mwcas

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/pmlin/pmlin/pmem"
)

// This file is a small test driver: a deterministic scheduler on the region's
// access hook, scripted workloads, crash injection at a chosen access, and a
// brute-force durable-linearizability check of the recorded history.

// step is one thing a worker does.
type step struct {
	read   bool
	rmw    bool     // a read of addrs, then a CAS of them to fresh values
	swap   bool     // a swap of addrs to fresh values
	report bool     // the CAS is a CASReport: a failure reports the values
	addrs  []uint64 // distinct
	olds   []uint64 // CAS only
	news   []uint64 // CAS only
}

func cas(addrs, olds, news []uint64) step { return step{addrs: addrs, olds: olds, news: news} }
func read(addrs ...uint64) step           { return step{read: true, addrs: addrs} }
func rmw(addrs ...uint64) step            { return step{rmw: true, addrs: addrs} }
func swap(addrs ...uint64) step           { return step{swap: true, addrs: addrs} }

// reporting makes a CAS or read-modify-write report the values on failure.
func reporting(st step) step { st.report = true; return st }

// plan is a workload: one script per worker.
type plan struct {
	name       string
	words      uint64
	perWorker  int
	stride     uint64 // data layout (Config.Stride, Config.LineOffset)
	lineOffset uint64
	workers    [][]step
}

// hop is a recorded operation.
type hop struct {
	worker   int
	read     bool
	swap     bool // vals: the values it replaced
	report   bool // a CASReport: vals, if it failed, the values reported
	addrs    []uint64
	olds     []uint64
	news     []uint64
	inv, ret int // ret < 0: pending (cut by the crash)
	ok       bool
	failed   uint64
	vals     []uint64
}

// sched runs one worker at a time; at every access a seeded choice (or the
// script, while it lasts) picks the next one. With stick > 0 the running
// worker keeps running with that probability, which makes the long solo runs
// that deep interleavings need likely. It can crash the region at a given
// access.
type sched struct {
	rng      *rand.Rand
	stick    float64
	cur      int
	script   []int
	turn     []chan struct{}
	live     []bool
	done     chan struct{}
	accesses int
	crashAt  int // 0: never
	limit    int
	clock    int
	hist     []*hop
	limitHit bool
}

var errStepLimit = errors.New("step limit reached (livelock?)")

func (s *sched) Access(w int, kind pmem.AccessKind, off uint64) error {
	s.accesses++
	if s.accesses == s.crashAt {
		return pmem.ErrCrashed
	}
	if s.accesses > s.limit {
		s.limitHit = true
		return fmt.Errorf("%w: %w", errStepLimit, pmem.ErrCrashed)
	}
	s.switchFrom(w)
	return nil
}

func (s *sched) next() int {
	for len(s.script) > 0 {
		c := s.script[0]
		s.script = s.script[1:]
		if c < len(s.live) && s.live[c] {
			return c
		}
	}
	if s.stick > 0 && s.live[s.cur] && s.rng.Float64() < s.stick {
		return s.cur
	}
	var live []int
	for i, l := range s.live {
		if l {
			live = append(live, i)
		}
	}
	return live[s.rng.IntN(len(live))]
}

func (s *sched) switchFrom(w int) {
	s.cur = w
	if n := s.next(); n != w {
		s.turn[n] <- struct{}{}
		<-s.turn[w]
	}
}

func (s *sched) finish(w int) {
	s.live[w] = false
	s.cur = w
	if !slices.Contains(s.live, true) {
		close(s.done)
		return
	}
	s.turn[s.next()] <- struct{}{}
}

// run is the configuration of one execution.
type run struct {
	plan     plan
	mutant   string
	hidden   mutant // a variant no name selects (mutants.go); overrides mutant
	reopen   bool   // recover as a new process: reopen the crash image, Open, Recover
	dir      string // if set, the region is a file in dir (else anonymous)
	seed     uint64 // scheduling
	script   []int
	crashAt  int // 0: no crash
	policy   pmem.Policy
	imgSeed  uint64 // for the random policy
	maxSteps int
}

// outcome is what an execution did.
type outcome struct {
	accesses  int // region accesses of the workload (all of them if no crash)
	crashed   bool
	hist      []*hop
	final     []uint64 // data words after the run (after recovery if crashed)
	violation string   // "" if none
	region    *pmem.Region
	m         *PMwCAS
}

func (rn run) config() Config {
	return Config{Words: rn.plan.words, MaxWorkers: len(rn.plan.workers), DescriptorsPerWorker: max(rn.plan.perWorker, 1), MaxK: 8,
		Stride: rn.plan.stride, LineOffset: rn.plan.lineOffset, Mutant: rn.mutant}
}

func (rn run) variant() mutant {
	if rn.hidden != mutNone {
		return rn.hidden
	}
	mu, err := parseMutant(rn.mutant)
	if err != nil {
		panic(err)
	}
	return mu
}

var fileSeq atomic.Int64

// newRegion makes the region of an execution: anonymous, or a new file in
// rn.dir.
func (rn run) newRegion(words uint64) *pmem.Region {
	var r *pmem.Region
	var err error
	if rn.dir == "" {
		r, err = pmem.NewMemory(words, pmem.Options{Emulate: true})
	} else {
		r, err = pmem.Create(filepath.Join(rn.dir, fmt.Sprintf("r%d.pmem", fileSeq.Add(1))), words, pmem.Options{Emulate: true})
	}
	if err != nil {
		panic(err)
	}
	return r
}

// restart recovers after r.Crash as a new process would: it reopens the
// region and opens the PMwCAS in it. The returned region replaces r.
func restart(r *pmem.Region, mut mutant) (*pmem.Region, *PMwCAS, error) {
	nr, err := r.Reopen(pmem.Options{Emulate: true})
	if err != nil {
		return nil, nil, err
	}
	m, err := Open(nr, Config{})
	if err != nil {
		return nr, nil, err
	}
	m.mut = mut
	return nr, m, nil
}

// execute runs rn; it closes the region unless keep is set.
func execute(rn run, keep bool) (out outcome) {
	c := rn.config()
	n, err := RegionWords(c)
	if err != nil {
		panic(err)
	}
	r := rn.newRegion(n)
	out.region = r
	defer func() {
		if !keep {
			out.region.Close()
			if rn.dir != "" {
				os.Remove(out.region.Path())
			}
		}
	}()
	m, err := format(r, c.withDefaults(), rn.variant())
	if err != nil {
		panic(err)
	}
	out.m = m
	nw := len(rn.plan.workers)
	// Seeds cycle through three scheduling styles: uniform switching, and
	// sticky with mean solo runs of 5 and 20 accesses.
	s := &sched{rng: rand.New(rand.NewPCG(rn.seed, 7)), stick: [3]float64{0, 0.8, 0.95}[rn.seed%3], script: slices.Clone(rn.script), turn: make([]chan struct{}, nw),
		live: make([]bool, nw), done: make(chan struct{}), crashAt: rn.crashAt, limit: rn.maxSteps}
	if s.limit == 0 {
		s.limit = 100000
	}
	for i := range nw {
		s.turn[i] = make(chan struct{}, 1)
		s.live[i] = true
	}
	r.SetHook(s)
	errs := make([]error, nw)
	for id := range nw {
		go func() {
			<-s.turn[id]
			errs[id] = workerLoop(m, s, id, rn.plan.workers[id])
			s.finish(id)
		}()
	}
	s.turn[s.next()] <- struct{}{}
	<-s.done
	r.SetHook(nil)
	out.accesses = s.accesses
	out.hist = s.hist
	if s.limitHit {
		out.violation = "livelock: step limit reached"
		return out
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, pmem.ErrCrashed) {
			out.violation = "operation error: " + e.Error()
			return out
		}
	}
	out.crashed = r.Crashing()
	if out.crashed {
		if err := r.Crash(rn.policy, rand.New(rand.NewPCG(rn.imgSeed, 3))); err != nil {
			panic(err)
		}
		if rn.reopen {
			nr, nm, err := restart(r, m.mut)
			if nr != nil {
				out.region = nr
			}
			if err != nil {
				out.violation = "reopen: " + err.Error()
				return out
			}
			m, out.m = nm, nm
		}
		if _, err := m.Recover(0); err != nil {
			out.violation = "recovery: " + err.Error()
			return out
		}
	}
	out.final = slices.Clone(dataWords(m))
	out.violation = check(out.hist, out.final, out.crashed)
	return out
}

func workerLoop(m *PMwCAS, s *sched, id int, steps []step) error {
	tag := uint64(0)
	fresh := func(n int) []uint64 {
		news := make([]uint64, n)
		for i := range news {
			tag++
			news[i] = uint64(id+1)<<32 | tag
		}
		return news
	}
	for _, st := range steps {
		if st.swap {
			news := fresh(len(st.addrs))
			h := &hop{worker: id, swap: true, addrs: st.addrs, news: news, inv: s.clock, ret: -1}
			s.clock++
			s.hist = append(s.hist, h)
			ws := make([]Word, len(st.addrs))
			for i := range ws {
				ws[i] = Word{Addr: st.addrs[i], New: news[i]}
			}
			old := make([]uint64, len(ws))
			if err := m.Swap(id, ws, old); err != nil {
				return err
			}
			h.vals, h.ret, h.ok = old, s.clock, true
			s.clock++
			continue
		}
		if st.read || st.rmw {
			h := &hop{worker: id, read: true, addrs: st.addrs, inv: s.clock, ret: -1}
			s.clock++
			s.hist = append(s.hist, h)
			vals := make([]uint64, len(st.addrs))
			if err := m.Read(id, st.addrs, vals); err != nil {
				return err
			}
			h.vals, h.ret = vals, s.clock
			s.clock++
			if st.read {
				continue
			}
			st.olds = vals
			st.news = fresh(len(vals))
		}
		h := &hop{worker: id, report: st.report, addrs: st.addrs, olds: st.olds, news: st.news, inv: s.clock, ret: -1}
		s.clock++
		s.hist = append(s.hist, h)
		ws := make([]Word, len(st.addrs))
		for i := range ws {
			ws[i] = Word{st.addrs[i], st.olds[i], st.news[i]}
		}
		var ok bool
		var failed uint64
		var err error
		if st.report {
			vals := make([]uint64, len(ws))
			ok, failed, err = m.CASReport(id, ws, vals)
			h.vals = vals
		} else {
			ok, failed, err = m.CAS(id, ws)
		}
		if err != nil {
			return err
		}
		h.ok, h.failed, h.ret = ok, failed, s.clock
		s.clock++
	}
	return nil
}

// check returns "" if the final data words carry no flags and the history is
// durably linearizable with that final state: every completed operation is
// linearized, in an order that respects real time, with results that match
// the sequential specification; each operation cut by the crash is linearized
// or dropped (a cut read is always dropped).
func check(hist []*hop, final []uint64, crashed bool) string {
	for a, v := range final {
		if v&flagBits != 0 {
			return fmt.Sprintf("word %d holds %#x after recovery: flags left behind", a, v)
		}
	}
	if len(hist) > 62 {
		panic("history too long for the brute-force checker")
	}
	var ops []*hop
	for _, h := range hist {
		if h.ret < 0 && h.read {
			continue
		}
		ops = append(ops, h)
	}
	seen := map[string]bool{}
	state := make([]uint64, len(final))
	var dfs func(done uint64) bool
	dfs = func(done uint64) bool {
		if done == 1<<len(ops)-1 {
			return slices.Equal(state, final)
		}
		key := fmt.Sprint(done, state)
		if seen[key] {
			return false
		}
		seen[key] = true
		minRet := int(^uint(0) >> 1)
		for i, h := range ops {
			if done&(1<<i) == 0 && h.ret >= 0 && h.ret < minRet {
				minRet = h.ret
			}
		}
		for i, h := range ops {
			if done&(1<<i) != 0 || h.inv > minRet {
				continue
			}
			bit := uint64(1) << i
			if h.ret < 0 {
				// A cut operation may never have happened...
				if dfs(done | bit) {
					return true
				}
			}
			// holds tells whether the state holds vals at the addresses.
			holds := func(vals []uint64) bool {
				for j, a := range h.addrs {
					if state[a] != vals[j] {
						return false
					}
				}
				return true
			}
			if h.read {
				if holds(h.vals) && dfs(done|bit) {
					return true
				}
				continue
			}
			// A swap replaced the values it returned (a cut one: whatever
			// was there); a MwCAS only the values it expected.
			takes := h.swap && (h.ret < 0 || holds(h.vals)) || !h.swap && holds(h.olds) && (h.ok || h.ret < 0)
			switch {
			case takes:
				// ... or took effect.
				saved := slices.Clone(state)
				for j, a := range h.addrs {
					state[a] = h.news[j]
				}
				if dfs(done | bit) {
					return true
				}
				copy(state, saved)
			case !h.swap && h.ret >= 0 && !h.ok:
				// A failure that reports values read them all at once.
				j := slices.Index(h.addrs, h.failed)
				if j >= 0 && state[h.failed] != h.olds[j] && (!h.report || holds(h.vals)) && dfs(done|bit) {
					return true
				}
			}
		}
		return false
	}
	if dfs(0) {
		return ""
	}
	return "not durably linearizable:\n" + formatHistory(hist, crashed, final)
}

func formatHistory(hist []*hop, crashed bool, final []uint64) string {
	var b strings.Builder
	for _, h := range hist {
		fmt.Fprintf(&b, "  [%d,%d] w%d ", h.inv, h.ret, h.worker)
		switch {
		case h.read:
			fmt.Fprintf(&b, "read %v -> %#x", h.addrs, h.vals)
		case h.swap:
			fmt.Fprintf(&b, "swap %v -> %#x", h.addrs, h.news)
			if h.ret >= 0 {
				fmt.Fprintf(&b, " replaced %#x", h.vals)
			}
		case h.report && h.ret >= 0 && !h.ok:
			fmt.Fprintf(&b, "cas %v %#x -> %#x fail %d, read %#x", h.addrs, h.olds, h.news, h.failed, h.vals)
		default:
			fmt.Fprintf(&b, "cas %v %#x -> %#x", h.addrs, h.olds, h.news)
			if h.ret >= 0 {
				if h.ok {
					b.WriteString(" ok")
				} else {
					fmt.Fprintf(&b, " fail %d", h.failed)
				}
			}
		}
		if h.ret < 0 {
			b.WriteString(" (cut)")
		}
		b.WriteByte('\n')
	}
	if crashed {
		b.WriteString("  crash, recovery\n")
	}
	fmt.Fprintf(&b, "  final %#x", final)
	return b.String()
}

// policyRuns lists the crash policies a sweep tries at each point: min, max,
// targeted, and random with several image seeds.
func policyRuns(randomSeeds int) []struct {
	p    pmem.Policy
	seed uint64
} {
	out := []struct {
		p    pmem.Policy
		seed uint64
	}{{pmem.PolicyMin, 0}, {pmem.PolicyMax, 0}, {pmem.PolicyTargeted, 0}}
	for s := range randomSeeds {
		out = append(out, struct {
			p    pmem.Policy
			seed uint64
		}{pmem.PolicyRandom, uint64(s)})
	}
	return out
}

// sweepResult summarizes a crash sweep.
type sweepResult struct {
	points     int // executions with a crash
	violations int
	first      string
	byPolicy   map[string]int // violations per policy
}

// sweep runs rn without a crash, then with a crash at each access in turn
// under each policy.
func sweep(rn run, randomSeeds int) sweepResult {
	res := sweepResult{byPolicy: map[string]int{}}
	base := execute(rn, false)
	if base.violation != "" {
		res.violations++
		res.first = fmt.Sprintf("%s, no crash: %s", rn.plan.name, base.violation)
	}
	for c := 1; c <= base.accesses; c++ {
		for _, pr := range policyRuns(randomSeeds) {
			x := rn
			x.crashAt, x.policy, x.imgSeed = c, pr.p, pr.seed
			o := execute(x, false)
			res.points++
			if o.violation != "" {
				res.violations++
				res.byPolicy[pr.p.String()]++
				if res.first == "" {
					res.first = fmt.Sprintf("%s, schedule seed %d, crash at access %d of %d, policy %s (image seed %d): %s",
						rn.plan.name, rn.seed, c, base.accesses, pr.p, pr.seed, o.violation)
				}
			}
		}
	}
	return res
}
