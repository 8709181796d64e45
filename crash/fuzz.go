package crash

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/driver"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/pmem"
)

// FuzzConfig is a fuzzing campaign: runs of Run with fresh seeds.
type FuzzConfig struct {
	// Run is the template of every run; its Driver.Seed is replaced.
	Run Config
	// Seed is the campaign's seed: run i gets RunSeed(Seed, i).
	Seed uint64
	// Mode is the analyzer's completion rule for crashed operations.
	Mode history.Mode
	// Duration bounds the campaign (0: no bound, then MaxRuns must be set).
	Duration time.Duration
	// MaxRuns bounds the number of runs (0: no bound).
	MaxRuns int64
	// Jobs is the number of runs at a time (0: GOMAXPROCS with the
	// deterministic scheduler, 1 otherwise).
	Jobs int
	// Systematic: for each seed, record the run without a crash, then once
	// with a crash at each of its region accesses in turn, under each
	// policy of Run.Policies (deterministic scheduler, small workloads).
	Systematic bool
	// Ignore lists anomaly kinds that do not count as violations (for
	// instance Corrupt, to measure what the history alone exposes).
	Ignore []analyzer.Kind
	// Progress, if not nil, is called about every ProgressEvery (default
	// 250 ms) from a goroutine of its own.
	Progress      func(FuzzStats)
	ProgressEvery time.Duration
}

// FuzzStats are the totals of a campaign so far.
type FuzzStats struct {
	Runs       int64         `json:"runs"`
	Operations int64         `json:"operations"`
	Crashes    int64         `json:"crashes"`
	Violations int64         `json:"violations"`
	Undecided  int64         `json:"undecided"`
	Accesses   int64         `json:"accesses"`
	Elapsed    time.Duration `json:"-"`
}

// Finding is a run with a violation.
type Finding struct {
	// Index is the run's number in the campaign.
	Index int64
	// Config replays the run (pmlin run + Config.Flags()).
	Config  Config
	Verdict *Verdict
	// History is the recorded history.
	History []byte
	// After is the campaign time when the run was started.
	After time.Duration
}

// RunSeed is the seed of run i of a campaign with seed base: distinct
// campaigns do not share runs.
func RunSeed(base uint64, i int64) uint64 {
	x := base*0x9e3779b97f4a7c15 + uint64(i) + 0x632be59bd9b4e019
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Fuzz runs the campaign until its time or runs are spent, ctx is done, or
// a violation is found (returned as the Finding).
func Fuzz(ctx context.Context, fc FuzzConfig) (FuzzStats, *Finding, error) {
	c := fc.Run.WithDefaults()
	if err := c.Check(); err != nil {
		return FuzzStats{}, nil, err
	}
	if fc.Systematic && c.Driver.Sched != driver.Deterministic {
		return FuzzStats{}, nil, errors.New("systematic crashes need the deterministic scheduler")
	}
	if fc.Systematic && c.Kill != nil {
		return FuzzStats{}, nil, errors.New("systematic crashes are not possible when a process is killed")
	}
	if fc.Duration <= 0 && fc.MaxRuns <= 0 {
		return FuzzStats{}, nil, errors.New("fuzz: neither a duration nor a number of runs")
	}
	jobs := fc.Jobs
	if jobs <= 0 {
		jobs = 1
		if c.Driver.Sched == driver.Deterministic && c.Kill == nil {
			jobs = runtime.GOMAXPROCS(0)
		}
	}
	start := time.Now()
	if fc.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(fc.Duration))
		defer cancel()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()

	var (
		mu      sync.Mutex
		st      FuzzStats
		found   *Finding
		firstEr error
	)
	gen := &generator{fc: fc, c: c}
	snapshot := func() FuzzStats {
		mu.Lock()
		defer mu.Unlock()
		s := st
		s.Elapsed = time.Since(start)
		return s
	}
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for ctx.Err() == nil {
				i, rc, ok, err := gen.next(ctx)
				if err != nil || !ok {
					if err != nil && ctx.Err() == nil {
						mu.Lock()
						firstEr = errors.Join(firstEr, err)
						mu.Unlock()
						stop()
					}
					return
				}
				began := time.Since(start)
				v, err := Check(ctx, rc, fc.Mode, &buf)
				if ctx.Err() != nil || (v != nil && v.Run.Canceled) {
					return
				}
				mu.Lock()
				if err != nil {
					firstEr = errors.Join(firstEr, err)
					mu.Unlock()
					stop()
					return
				}
				st.Runs++
				st.Operations += v.Run.Operations
				st.Crashes += int64(v.Run.Crashes)
				st.Accesses += v.Run.Accesses
				if v.Undecided != nil {
					st.Undecided++
				}
				if v.violates(fc.Ignore) {
					st.Violations++
					if found == nil || i < found.Index {
						found = &Finding{Index: i, Config: rc, Verdict: v, History: bytes.Clone(buf.Bytes()), After: began}
					}
					stop()
				}
				mu.Unlock()
			}
		}()
	}
	done, ticking := make(chan struct{}), make(chan struct{})
	if fc.Progress == nil {
		close(ticking)
	} else {
		every := fc.ProgressEvery
		if every <= 0 {
			every = 250 * time.Millisecond
		}
		go func() {
			defer close(ticking)
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					fc.Progress(snapshot())
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	<-ticking // no Progress call runs concurrently with the last one
	s := snapshot()
	if fc.Progress != nil {
		fc.Progress(s)
	}
	return s, found, firstEr
}

// generator hands out the runs of a campaign.
type generator struct {
	fc FuzzConfig
	c  Config
	mu sync.Mutex
	i  int64
	// systematic: the current seed's access count and position
	seedIdx  int64
	seed     uint64
	accesses int64
	at       int64
	pol      int
}

func (g *generator) next(ctx context.Context) (int64, Config, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fc.MaxRuns > 0 && g.i >= g.fc.MaxRuns {
		return 0, Config{}, false, nil
	}
	i := g.i
	g.i++
	rc := g.c
	if !g.fc.Systematic {
		rc.Driver.Seed = RunSeed(g.fc.Seed, i)
		return i, rc, true, nil
	}
	for g.at >= g.accesses {
		// Next seed: count the accesses of its crash-free run.
		g.seed = RunSeed(g.fc.Seed, g.seedIdx)
		g.seedIdx++
		free := g.c
		free.Driver.Seed = g.seed
		free.Crashes = -1
		res, err := Run(ctx, free, io.Discard)
		if err != nil {
			return 0, Config{}, false, err
		}
		if ctx.Err() != nil {
			return 0, Config{}, false, nil
		}
		g.accesses, g.at, g.pol = res.Accesses, 0, 0
	}
	rc.Driver.Seed = g.seed
	rc.CrashAt = g.at + 1
	rc.Policies = []pmem.Policy{g.c.Policies[g.pol]}
	g.pol++
	if g.pol == len(g.c.Policies) {
		g.pol = 0
		g.at++
	}
	return i, rc, true, nil
}

func (v *Verdict) violates(ignore []analyzer.Kind) bool {
	for _, a := range v.Anomalies {
		if !slices.Contains(ignore, a.Kind) {
			return true
		}
	}
	return false
}
