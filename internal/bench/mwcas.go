package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot"

	"github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/pmem"
)

// The implementations the mwcas suite compares.
const (
	implPMwCAS    = "pmwcas"     // persistence emulation off: flushes and fences are no-ops
	implPMwCASEmu = "pmwcas+emu" // the emulated persistence domain (store logs, flush, fence)
	implMutex     = "mutex"      // a plain array under one mutex, volatile
)

// MwCASPoint is one throughput measurement: each operation is a k-word
// read followed by a k-word CAS of the same words from the values read to
// fresh ones.
type MwCASPoint struct {
	Impl      string  `json:"impl"`
	K         int     `json:"k"`
	Threads   int     `json:"threads"`
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// Succeeded is the fraction of CAS that succeeded.
	Succeeded float64 `json:"succeeded"`
}

// MwCASReport is the mwcas suite's result.
type MwCASReport struct {
	Meta
	Words  int          `json:"words"`
	Points []MwCASPoint `json:"points"`
}

// mwcasWords is the address space, as in package mwcas's benchmarks.
const mwcasWords = 1024

type mwTarget interface {
	read(worker int, addrs, out []uint64) error
	cas(worker int, ws []mwcas.Word) (bool, error)
}

type pmwcasTarget struct{ m *mwcas.PMwCAS }

func (p pmwcasTarget) read(w int, addrs, out []uint64) error { return p.m.Read(w, addrs, out) }
func (p pmwcasTarget) cas(w int, ws []mwcas.Word) (bool, error) {
	ok, _, err := p.m.CAS(w, ws)
	return ok, err
}

// mutexTarget is the baseline: a k-word CAS and read under one mutex, on
// volatile memory.
type mutexTarget struct {
	mu    sync.Mutex
	words []uint64
}

func (x *mutexTarget) read(_ int, addrs, out []uint64) error {
	x.mu.Lock()
	for i, a := range addrs {
		out[i] = x.words[a]
	}
	x.mu.Unlock()
	return nil
}

func (x *mutexTarget) cas(_ int, ws []mwcas.Word) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, w := range ws {
		if x.words[w.Addr] != w.Old {
			return false, nil
		}
	}
	for _, w := range ws {
		x.words[w.Addr] = w.New
	}
	return true, nil
}

func newTarget(impl string, threads, k int) (mwTarget, func(), error) {
	if impl == implMutex {
		return &mutexTarget{words: make([]uint64, mwcasWords)}, func() {}, nil
	}
	c := mwcas.Config{Words: mwcasWords, MaxWorkers: threads, MaxK: max(k, 8), DescriptorsPerWorker: 16}
	n, err := mwcas.RegionWords(c)
	if err != nil {
		return nil, nil, err
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: impl == implPMwCASEmu})
	if err != nil {
		return nil, nil, err
	}
	m, err := mwcas.New(r, c)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return pmwcasTarget{m}, func() { r.Close() }, nil
}

// measureMwCAS runs threads workers on t for d and counts their
// operations.
func measureMwCAS(ctx context.Context, t mwTarget, k, threads int, d time.Duration, seed uint64) (MwCASPoint, error) {
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		ops, ok = make([]int64, threads), make([]int64, threads)
		errs    = make([]error, threads)
	)
	start := time.Now()
	for id := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(id)))
			addrs, vals := make([]uint64, k), make([]uint64, k)
			ws := make([]mwcas.Word, k)
			tag := uint64(id+1) << 32
			for !stop.Load() {
				for i := range addrs {
				again:
					addrs[i] = rng.Uint64N(mwcasWords)
					for _, a := range addrs[:i] {
						if a == addrs[i] {
							goto again
						}
					}
				}
				if err := t.read(id, addrs, vals); err != nil {
					errs[id] = err
					return
				}
				for i := range ws {
					tag++
					ws[i] = mwcas.Word{Addr: addrs[i], Old: vals[i], New: tag}
				}
				s, err := t.cas(id, ws)
				if err != nil {
					errs[id] = err
					return
				}
				ops[id]++
				if s {
					ok[id]++
				}
			}
		}()
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	stop.Store(true)
	wg.Wait()
	p := MwCASPoint{K: k, Threads: threads, Seconds: time.Since(start).Seconds()}
	var succ int64
	for i := range threads {
		if errs[i] != nil {
			return p, errs[i]
		}
		p.Ops += ops[i]
		succ += ok[i]
	}
	p.OpsPerSec = float64(p.Ops) / p.Seconds
	if p.Ops > 0 {
		p.Succeeded = float64(succ) / float64(p.Ops)
	}
	return p, ctx.Err()
}

func runMwCAS(ctx context.Context, o *Options) (Report, error) {
	threads := orInts(o.Threads, []int{1, 2, 4, 8})
	ks := orInts(o.Ks, []int{1, 2, 4})
	d := o.Duration
	if d <= 0 {
		d = 300 * time.Millisecond
	}
	r := &MwCASReport{Words: mwcasWords}
	for _, impl := range []string{implPMwCAS, implPMwCASEmu, implMutex} {
		for _, k := range ks {
			for _, th := range threads {
				t, done, err := newTarget(impl, th, k)
				if err != nil {
					return nil, err
				}
				p, err := measureMwCAS(ctx, t, k, th, d, o.seed())
				done()
				if err != nil {
					return nil, fmt.Errorf("%s k=%d threads=%d: %w", impl, k, th, err)
				}
				p.Impl = impl
				r.Points = append(r.Points, p)
				o.progress("mwcas: %s k=%d threads=%d: %.0f ops/s", impl, k, th, p.OpsPerSec)
			}
		}
	}
	return r, nil
}

func (r *MwCASReport) Table() *Table {
	t := &Table{Cols: []string{"impl", "k", "threads", "ops", "seconds", "ops_per_sec", "succeeded"}}
	for _, p := range r.Points {
		t.add(p.Impl, p.K, p.Threads, p.Ops, p.Seconds, p.OpsPerSec, p.Succeeded)
	}
	return t
}

func (r *MwCASReport) find(impl string, k, threads int) (MwCASPoint, bool) {
	for _, p := range r.Points {
		if p.Impl == impl && p.K == k && p.Threads == threads {
			return p, true
		}
	}
	return MwCASPoint{}, false
}

func (r *MwCASReport) Headlines() []string {
	var h []string
	seen := map[int]bool{}
	for _, p := range r.Points {
		if seen[p.K] {
			continue
		}
		seen[p.K] = true
		th := 0
		for _, q := range r.Points {
			if q.K == p.K && q.Impl == implPMwCAS {
				th = max(th, q.Threads)
			}
		}
		a1, _ := r.find(implPMwCAS, p.K, 1)
		e1, _ := r.find(implPMwCASEmu, p.K, 1)
		m1, _ := r.find(implMutex, p.K, 1)
		an, _ := r.find(implPMwCAS, p.K, th)
		mn, _ := r.find(implMutex, p.K, th)
		h = append(h, fmt.Sprintf("k=%d: one thread %.2f M ops/s (emulation off), %.2f M (on), mutex %.2f M; %d threads %.2f M (emulation off) against mutex %.2f M.",
			p.K, a1.OpsPerSec/1e6, e1.OpsPerSec/1e6, m1.OpsPerSec/1e6, th, an.OpsPerSec/1e6, mn.OpsPerSec/1e6))
	}
	return h
}

func (r *MwCASReport) Explain() string {
	return fmt.Sprintf(`Throughput of the PMwCAS (package mwcas) in the manner of the ICDE 2018
paper's micro-benchmarks: each operation is a k-word read (persistent,
double collect) followed by a k-word MwCAS of the same words from the values
read to fresh ones, on %d words with uniform addresses; threads run for a
fixed time and their operations are counted. pmwcas runs on a region
without the persistence emulation (flush and fence are no-ops), pmwcas+emu
with it (per-line store logs, flush and fence recorded: the cost of the
emulated persistence domain, not of real NVM); mutex is the baseline, a
plain array under one lock. Threads beyond the machine's cores share them.`, r.Words)
}

func (r *MwCASReport) Plot(dir string) ([]string, error) {
	var ks []int
	for _, p := range r.Points {
		found := false
		for _, k := range ks {
			found = found || k == p.K
		}
		if !found {
			ks = append(ks, p.K)
		}
	}
	if len(ks) == 0 {
		return nil, nil
	}
	row := make([]*plot.Plot, len(ks))
	for i, k := range ks {
		pl := newPlot(fmt.Sprintf("k = %d", k), "threads", "M operations/s (read + MwCAS)", false, true)
		countAxis(&pl.X)
		for j, impl := range []string{implPMwCAS, implPMwCASEmu, implMutex} {
			var xs, ys []float64
			for _, p := range r.Points {
				if p.Impl == impl && p.K == k {
					xs, ys = append(xs, float64(p.Threads)), append(ys, p.OpsPerSec/1e6)
				}
			}
			name := map[string]string{implPMwCAS: "PMwCAS", implPMwCASEmu: "PMwCAS, persistence emulated", implMutex: "mutex"}[impl]
			if err := add(pl, series{name: name, xs: xs, ys: ys, style: j}); err != nil {
				return nil, err
			}
		}
		row[i] = pl
	}
	n, err := saveGrid([][]*plot.Plot{row}, dir, "mwcas.png")
	if err != nil {
		return nil, err
	}
	return []string{n}, nil
}
