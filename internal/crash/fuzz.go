package crash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/pmem"
)

// FuzzConfig is a fuzzing campaign: runs of Run with fresh seeds.
type FuzzConfig struct {
	// Run is the template of every run; its Driver.Seed is replaced.
	Run Config
	// Exec, if set, is the program every run runs instead of Run's target
	// (pmlin fuzz --exec): Run is then not used, and neither are
	// Systematic and Mix.
	Exec *Exec
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
	// Shard and Shards select a disjoint slice of the campaign: run i (its
	// 0-based index in the campaign, whose seed is RunSeed(Seed, i)) is
	// run only if i mod Shards = Shard. MaxRuns bounds the index, not the
	// shard's count, so the Shards shards of a campaign with MaxRuns M run
	// exactly its M runs between them, each once. Shards 0 or 1: the whole
	// campaign.
	Shard, Shards int64
	// Ignore lists anomaly kinds that do not count as violations (for
	// instance Corrupt, to measure what the history alone exposes).
	Ignore []analyzer.Kind
	// Mix varies the runs (not the systematic ones): their shapes, a
	// stalled thread, recoveries under fire, the target's optional
	// operations. The zero Mix runs every run as Run says; pmlin fuzz uses
	// DefaultMix.
	Mix Mix
	// Progress, if not nil, is called about every ProgressEvery (default
	// 250 ms) from a goroutine of its own.
	Progress      func(FuzzStats)
	ProgressEvery time.Duration
}

// FuzzStats are the totals of a campaign so far.
type FuzzStats struct {
	Runs       int64 `json:"runs"`
	Operations int64 `json:"operations"`
	Crashes    int64 `json:"crashes"`
	Violations int64 `json:"violations"`
	Undecided  int64 `json:"undecided"`
	Accesses   int64 `json:"accesses"`
	// Mix counts what the runs drew from the campaign's Mix.
	Mix     MixStats      `json:"mix"`
	Elapsed time.Duration `json:"-"`
}

// Finding is a run with a violation.
type Finding struct {
	// Index is the run's number in the campaign.
	Index int64
	// Config replays the run (pmlin run + Config.Args()); for a run of
	// FuzzConfig.Exec, Exec does, and Config is the zero Config.
	Config  Config
	Exec    *ExecFinding
	Verdict *Verdict
	// History is the recorded history.
	History []byte
	// After is the campaign time when the run was started.
	After time.Duration
}

// ExecFinding is a run of FuzzConfig.Exec with a violation: pmlin run +
// Exec.Args(Seed) replays it, as far as Exec.Replays says.
type ExecFinding struct {
	Exec  Exec
	Seed  uint64
	Kills []ExecKill
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
	c := fc.Run
	if fc.Exec != nil {
		if err := fc.Exec.Check(); err != nil {
			return FuzzStats{}, nil, err
		}
		if fc.Systematic {
			return FuzzStats{}, nil, errors.New("systematic crashes are not possible when a program is killed (--exec)")
		}
		fc.Mix = Mix{}
	} else if err := c.Check(); err != nil {
		return FuzzStats{}, nil, err
	}
	switch {
	case fc.Systematic && c.Driver.Sched != driver.Deterministic:
		return FuzzStats{}, nil, errors.New("systematic crashes need the deterministic scheduler")
	case fc.Systematic && c.CrashMode != Emulated:
		return FuzzStats{}, nil, errors.New("systematic crashes are not possible when a process is killed")
	case fc.Duration <= 0 && fc.MaxRuns <= 0:
		return FuzzStats{}, nil, errors.New("fuzz: neither a duration nor a number of runs")
	case fc.Shards < 0 || fc.Shard < 0 || (fc.Shard > 0 && fc.Shard >= fc.Shards):
		return FuzzStats{}, nil, fmt.Errorf("fuzz: shard %d of %d: a shard is 0 to N-1 of N >= 1", fc.Shard, fc.Shards)
	}
	if err := fc.Mix.Check(); err != nil {
		return FuzzStats{}, nil, err
	}
	if err := checkKinds(fc.Ignore); err != nil {
		return FuzzStats{}, nil, fmt.Errorf("fuzz: ignore: %w", err)
	}
	jobs := fc.Jobs
	if jobs <= 0 {
		jobs = 1
		if c.Scheduler() == driver.Deterministic && fc.Exec == nil {
			jobs = runtime.GOMAXPROCS(0)
		}
	}
	gen, err := newGenerator(fc, c)
	if err != nil {
		return FuzzStats{}, nil, err
	}
	cp := &campaign{fc: fc, start: time.Now(), gen: gen}
	cp.st.Mix.OptionalOps = gen.mix.String()
	if fc.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, cp.start.Add(fc.Duration))
		defer cancel()
	}
	ctx, cp.stop = context.WithCancel(ctx)
	defer cp.stop()
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cp.work(ctx)
		}()
	}
	done := make(chan struct{})
	ticking := cp.tick(done)
	wg.Wait()
	close(done)
	<-ticking // no Progress call runs concurrently with the last one
	s := cp.snapshot()
	if fc.Progress != nil {
		fc.Progress(s)
	}
	return s, cp.found, cp.err
}

// campaign is the state of Fuzz that its jobs share.
type campaign struct {
	fc    FuzzConfig
	start time.Time
	gen   *generator
	stop  context.CancelFunc

	mu    sync.Mutex
	st    FuzzStats
	found *Finding
	err   error
}

// work is one job: runs until the generator or the campaign stops.
func (cp *campaign) work(ctx context.Context) {
	if cp.fc.Exec != nil {
		cp.workExec(ctx)
		return
	}
	var sc scratch // the history in memory and the region, reused run after run
	defer sc.close()
	for ctx.Err() == nil {
		i, rc, d, ok, err := cp.gen.next(ctx)
		if err != nil && ctx.Err() == nil {
			cp.fail(err)
			return
		}
		if !ok {
			return
		}
		began := time.Since(cp.start)
		v, err := checkRecording(ctx, rc, cp.fc.Mode, &sc)
		if ctx.Err() != nil || (v != nil && v.Run.Canceled) {
			return
		}
		if err != nil {
			cp.fail(err)
			return
		}
		keep := func() *Finding {
			var text bytes.Buffer
			sc.rec.WriteTo(&text) // cannot fail
			return &Finding{Index: i, Config: rc, Verdict: v, History: text.Bytes(), After: began}
		}
		if !cp.count(i, v, func(s *MixStats) { s.add(rc, d, v.Run) }, keep) {
			sc.done = v.Analysis // the verdict is not kept
		}
	}
}

// workExec is one job of a campaign of FuzzConfig.Exec: each run a run
// of the program (RunExec), in a directory of its own.
func (cp *campaign) workExec(ctx context.Context) {
	x := *cp.fc.Exec
	for ctx.Err() == nil {
		i, rc, _, ok, err := cp.gen.next(ctx)
		if err != nil && ctx.Err() == nil {
			cp.fail(err)
			return
		}
		if !ok {
			return
		}
		began := time.Since(cp.start)
		seed := rc.Driver.Seed
		out, err := RunExec(ctx, x, seed)
		if ctx.Err() != nil || (out != nil && out.Run.Canceled) {
			return
		}
		var v *Verdict
		if err == nil {
			v, err = out.Decide(ctx, cp.fc.Mode)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			cp.fail(err)
			return
		}
		cp.count(i, v, nil, func() *Finding {
			return &Finding{Index: i, Exec: &ExecFinding{Exec: x, Seed: seed, Kills: out.Kills}, Verdict: v, History: out.History, After: began}
		})
	}
}

// fail records an error and stops the campaign.
func (cp *campaign) fail(err error) {
	cp.mu.Lock()
	cp.err = errors.Join(cp.err, err)
	cp.mu.Unlock()
	cp.stop()
}

// count adds run i to the totals (mix, if not nil, adds what it drew from
// the campaign's mix); a violation stops the campaign and is kept (the
// Finding keep makes) if it is the earliest run found. It reports whether
// v violates (and may have been kept).
func (cp *campaign) count(i int64, v *Verdict, mix func(*MixStats), keep func() *Finding) bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if mix != nil {
		mix(&cp.st.Mix)
	}
	cp.st.Runs++
	cp.st.Operations += v.Run.Operations
	cp.st.Crashes += int64(v.Run.Crashes)
	cp.st.Accesses += v.Run.Accesses
	if v.Undecided != nil {
		cp.st.Undecided++
	}
	if v.violates(cp.fc.Ignore) {
		cp.st.Violations++
		if cp.found == nil || i < cp.found.Index {
			cp.found = keep()
		}
		cp.stop()
		return true
	}
	return false
}

func (cp *campaign) snapshot() FuzzStats {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	s := cp.st
	s.Mix = s.Mix.clone() // its maps go on counting
	s.Elapsed = time.Since(cp.start)
	return s
}

// tick calls Progress every ProgressEvery until done is closed; the
// returned channel is closed when it no longer calls it.
func (cp *campaign) tick(done <-chan struct{}) <-chan struct{} {
	ticking := make(chan struct{})
	if cp.fc.Progress == nil {
		close(ticking)
		return ticking
	}
	every := cp.fc.ProgressEvery
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
				cp.fc.Progress(cp.snapshot())
			}
		}
	}()
	return ticking
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
	// mix adds the target's optional operations to runs (Mix.Optional).
	mix mixer
}

// newGenerator is the generator of campaign fc whose template is c.
func newGenerator(fc FuzzConfig, c Config) (*generator, error) {
	g := &generator{fc: fc, c: c}
	if fc.Mix.Optional && !fc.Systematic && c.Driver.Swaps == 0 && !c.Driver.FailValues && !fc.Mix.Keep["swaps"] && !fc.Mix.Keep["fail-values"] {
		var err error
		if g.mix, err = newMixer(c); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// next hands out the next run of the campaign that falls in the
// generator's shard.
func (g *generator) next(ctx context.Context) (int64, Config, drawn, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	shards := max(g.fc.Shards, 1)
	for {
		if g.fc.MaxRuns > 0 && g.i >= g.fc.MaxRuns {
			return 0, Config{}, drawn{}, false, nil
		}
		i := g.i
		g.i++
		if !g.fc.Systematic {
			// Run i's seed, and what it draws from the mix, depend on i
			// alone: skip to the shard's next.
			if r := i % shards; r != g.fc.Shard {
				g.i = i + (g.fc.Shard-r+shards)%shards
				continue
			}
			rc := g.c
			rc.Driver.Seed = RunSeed(g.fc.Seed, i)
			if g.fc.Exec != nil {
				return i, rc, drawn{}, true, nil // the seed is all it needs
			}
			d := g.fc.Mix.draw(&rc)
			d.optional = g.mix.apply(&rc, i)
			return i, rc, d, true, nil
		}
		// A systematic run depends on the runs before it (a seed yields
		// as many runs as its crash-free run makes accesses): walk them
		// all, keep the shard's.
		rc, ok, err := g.systematic(ctx)
		if err != nil || !ok {
			return 0, Config{}, drawn{}, false, err
		}
		if i%shards == g.fc.Shard {
			return i, rc, drawn{}, true, nil
		}
	}
}

// systematic is the configuration of the next run of a systematic sweep:
// the current seed crashed at its next access under its next policy.
func (g *generator) systematic(ctx context.Context) (Config, bool, error) {
	rc := g.c
	for g.at >= g.accesses {
		// Next seed: count the accesses of its crash-free run.
		g.seed = RunSeed(g.fc.Seed, g.seedIdx)
		g.seedIdx++
		free := g.c
		free.Driver.Seed = g.seed
		free.Crashes, free.CrashAt = 0, 0
		res, err := Run(ctx, free, io.Discard)
		if err != nil {
			return Config{}, false, err
		}
		if ctx.Err() != nil {
			return Config{}, false, nil
		}
		g.accesses, g.at, g.pol = res.Accesses, 0, 0
	}
	rc.Driver.Seed = g.seed
	rc.Crashes, rc.CrashAt = 1, g.at+1
	rc.Policies = []pmem.Policy{g.c.Policies[g.pol]}
	g.pol++
	if g.pol == len(g.c.Policies) {
		g.pol = 0
		g.at++
	}
	return rc, true, nil
}

func (v *Verdict) violates(ignore []analyzer.Kind) bool {
	for _, a := range v.Anomalies {
		if !slices.Contains(ignore, a.Kind) {
			return true
		}
	}
	return false
}
