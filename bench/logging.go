package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"gonum.org/v1/plot"

	"github.com/pmlin/pmlin/driver"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/internal/directio"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/pmem"
)

// LoggingPoint is the driver's throughput at one thread count, without
// recording and recorded in each format, the history written to a file.
// Rates and overheads are medians over the rounds; an overhead is taken
// within one round (1 - recorded rate / unrecorded rate), so that load on
// the machine that changes between rounds cancels out.
type LoggingPoint struct {
	Threads int  `json:"threads"`
	Emulate bool `json:"emulate"`
	// Clock is the recorded runs' timestamp source (tsc or monotonic).
	Clock     string `json:"clock"`
	OpsPlain  int64  `json:"ops_plain"`
	OpsLogged int64  `json:"ops_logged"`
	// The binary recording (pmlin run --format binary): the workers' logs
	// go to the file as they fill, with no merge.
	OpsPerSecPlain  float64 `json:"ops_per_sec_plain"`
	OpsPerSecLogged float64 `json:"ops_per_sec_logged"`
	Overhead        float64 `json:"overhead"`
	OverheadMin     float64 `json:"overhead_min"`
	OverheadMax     float64 `json:"overhead_max"`
	// OverheadCPU compares the process's CPU time per operation (user and
	// system, every goroutine: workers, dumper, writes): what the overhead
	// would be on cores of its own, whatever else the machine runs.
	OverheadCPU float64 `json:"overhead_cpu"`
	// OpsPerSecLoggedWork counts the workers' time only (not what is
	// written after they stop); OverheadWork likewise.
	OpsPerSecLoggedWork float64 `json:"ops_per_sec_logged_work"`
	OverheadWork        float64 `json:"overhead_work"`
	HistoryBytes        int64   `json:"history_bytes"`
	// The text recording (the default of pmlin run): the logs merged by
	// timestamp into text when the workers stop.
	OpsPerSecText   float64 `json:"ops_per_sec_text"`
	OverheadText    float64 `json:"overhead_text"`
	OverheadTextMin float64 `json:"overhead_text_min"`
	OverheadTextMax float64 `json:"overhead_text_max"`
	OverheadTextCPU float64 `json:"overhead_text_cpu"`
	TextBytes       int64   `json:"text_bytes"`
	SecondsPlain    float64 `json:"seconds_plain"`
	SecondsLogged   float64 `json:"seconds_logged"`
	// SecondsMerge is, of SecondsLogged, the time after the workers
	// stopped (the end of each segment: writing what is left, closing).
	SecondsMerge float64 `json:"seconds_merge"`
	SecondsText  float64 `json:"seconds_text"`
}

// LoggingReport is the logging suite's result. Its top-level
// ops_per_sec_plain, ops_per_sec_logged and overhead (a fraction: 0.1 is
// 10 % fewer operations per second when recording) are those of the
// binary recording at the headline point: the most threads, persistence
// emulation as measured first.
type LoggingReport struct {
	Meta
	OpsPerSecPlain  float64 `json:"ops_per_sec_plain"`
	OpsPerSecLogged float64 `json:"ops_per_sec_logged"`
	Overhead        float64 `json:"overhead"`
	// OverheadWork leaves out what is written after the workers stop.
	OverheadWork    float64 `json:"overhead_work"`
	OverheadText    float64 `json:"overhead_text"`
	HeadlineThreads int     `json:"headline_threads"`
	K               int     `json:"k"`
	Words           int     `json:"words"`
	// Reps is the rounds of each point, each running every side once.
	Reps int `json:"reps"`
	// Seconds is the measuring time of one run.
	Seconds float64        `json:"seconds_per_run"`
	Points  []LoggingPoint `json:"points"`
	// TargetMet: the binary recording's median overhead is at most 10 %
	// at every point.
	TargetMet bool `json:"target_met"`
	// Worst is the point of the largest median overhead.
	Worst LoggingPoint `json:"worst"`
}

// loggingTarget is the overhead the suite aims at (the OPODIS paper: about
// 10 %).
const loggingTarget = 0.10

func runLogging(ctx context.Context, o *Options) (Report, error) {
	threads := orInts(o.Threads, []int{1, 2, 4, 8})
	d := o.Duration
	if d <= 0 {
		d = time.Second / 2
	}
	var emus []bool
	switch o.Emulate {
	case "off":
		emus = []bool{false}
	case "on":
		emus = []bool{true}
	case "", "both":
		emus = []bool{false, true}
	default:
		return nil, fmt.Errorf("unknown emulation %q (off, on or both)", o.Emulate)
	}
	clock, err := driver.ParseClockSource(orString(o.Clock, "auto"))
	if err != nil {
		return nil, err
	}
	r := &LoggingReport{K: o.k(), Words: logWords, Reps: o.reps(5), Seconds: d.Seconds()}
	for _, emu := range emus {
		for _, th := range threads {
			p, err := measureLogging(ctx, o, loggingSetup{threads: th, k: r.K, emulate: emu, clock: clock}, d, r.Reps)
			if err != nil {
				return nil, err
			}
			r.Points = append(r.Points, p)
			o.progress("logging: %d threads, emulation %v: plain %.0f ops/s; binary %.0f ops/s, overhead %.1f %% (%.1f to %.1f; CPU %.1f %%); text %.0f ops/s, overhead %.1f %%",
				th, emu, p.OpsPerSecPlain, p.OpsPerSecLogged, 100*p.Overhead, 100*p.OverheadMin, 100*p.OverheadMax, 100*p.OverheadCPU, p.OpsPerSecText, 100*p.OverheadText)
		}
	}
	h := r.Points[0]
	r.TargetMet, r.Worst = true, r.Points[0]
	for _, p := range r.Points {
		if p.Emulate == r.Points[0].Emulate && p.Threads >= h.Threads {
			h = p
		}
		if p.Overhead > r.Worst.Overhead {
			r.Worst = p
		}
		r.TargetMet = r.TargetMet && p.Overhead <= loggingTarget
	}
	r.OpsPerSecPlain, r.OpsPerSecLogged, r.Overhead, r.OverheadWork, r.OverheadText, r.HeadlineThreads = h.OpsPerSecPlain, h.OpsPerSecLogged, h.Overhead, h.OverheadWork, h.OverheadText, h.Threads
	return r, nil
}

// loggingSetup is one point's workload and how it is recorded.
type loggingSetup struct {
	threads, k int
	emulate    bool
	clock      driver.ClockSource
}

// loggingRound is one round's runs: unrecorded, binary and text.
type loggingRound struct {
	plain        run
	binary, text loggedRun
}

// run is one run's operations, time and CPU time.
type run struct {
	ops     int64
	elapsed time.Duration
	cpu     time.Duration
}

func (r run) rate() float64     { return float64(r.ops) / r.elapsed.Seconds() }
func (r run) cpuPerOp() float64 { return float64(r.cpu) / float64(r.ops) }

// measureLogging runs the driver's workload with s.threads workers for
// about d, unrecorded and recorded in both formats, in reps rounds (the
// order of the three turning from round to round), each run on a fresh
// PMwCAS.
func measureLogging(ctx context.Context, o *Options, s loggingSetup, d time.Duration, reps int) (LoggingPoint, error) {
	p := LoggingPoint{Threads: s.threads, Emulate: s.emulate}
	// The quota: what the unrecorded workload does in d, from a tenth of it.
	cal, err := runPlain(ctx, s.threads, s.k, s.emulate, 0, d/10, o.seed())
	if err != nil {
		return p, err
	}
	quota := max(1, int(cal.rate()*d.Seconds())/s.threads)
	rounds := make([]loggingRound, reps)
	for i := range rounds {
		rd := &rounds[i]
		sides := []func() error{
			func() (err error) {
				rd.plain, err = runPlain(ctx, s.threads, s.k, s.emulate, quota, 0, o.seed())
				return err
			},
			func() (err error) { rd.binary, err = runLogged(ctx, o, s, quota, true); return err },
			func() (err error) { rd.text, err = runLogged(ctx, o, s, quota, false); return err },
		}
		for j := range sides {
			if err := sides[(i+j)%len(sides)](); err != nil {
				return p, err
			}
		}
	}
	p.summarize(rounds)
	return p, nil
}

// summarize sets the point's medians and spreads from its rounds.
func (p *LoggingPoint) summarize(rounds []loggingRound) {
	var plain, bin, binWork, text, ov, ovCPU, ovWork, ovText, ovTextCPU []float64
	for _, rd := range rounds {
		plain = append(plain, rd.plain.rate())
		bin = append(bin, rd.binary.rate())
		binWork = append(binWork, rd.binary.workRate())
		text = append(text, rd.text.rate())
		ov = append(ov, 1-rd.binary.rate()/rd.plain.rate())
		ovWork = append(ovWork, 1-rd.binary.workRate()/rd.plain.rate())
		ovCPU = append(ovCPU, 1-rd.plain.cpuPerOp()/rd.binary.cpuPerOp())
		ovText = append(ovText, 1-rd.text.rate()/rd.plain.rate())
		ovTextCPU = append(ovTextCPU, 1-rd.plain.cpuPerOp()/rd.text.cpuPerOp())
	}
	p.OpsPerSecPlain, p.OpsPerSecLogged, p.OpsPerSecLoggedWork, p.OpsPerSecText = median(plain), median(bin), median(binWork), median(text)
	p.Overhead, p.OverheadCPU, p.OverheadWork = median(ov), median(ovCPU), median(ovWork)
	p.OverheadText, p.OverheadTextCPU = median(ovText), median(ovTextCPU)
	p.OverheadMin, p.OverheadMax = slices.Min(ov), slices.Max(ov)
	p.OverheadTextMin, p.OverheadTextMax = slices.Min(ovText), slices.Max(ovText)
	last := rounds[len(rounds)-1]
	p.Clock = last.binary.clock
	p.OpsPlain, p.OpsLogged, p.HistoryBytes, p.TextBytes = last.plain.ops, last.binary.ops, last.binary.bytes, last.text.bytes
	p.SecondsPlain, p.SecondsLogged, p.SecondsText = last.plain.elapsed.Seconds(), last.binary.elapsed.Seconds(), last.text.elapsed.Seconds()
	p.SecondsMerge = (last.binary.elapsed - last.binary.work).Seconds()
}

// median is the middle value (the mean of the two middle ones).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newLoggingPMwCAS is the PMwCAS both sides run on: logWords words on a
// fresh region.
func newLoggingPMwCAS(threads int, emulate bool) (*mwcas.PMwCAS, func(), error) {
	c := mwcas.Config{Words: logWords, MaxWorkers: threads}
	n, err := mwcas.RegionWords(c)
	if err != nil {
		return nil, nil, err
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: emulate})
	if err != nil {
		return nil, nil, err
	}
	m, err := mwcas.New(r, c)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return m, func() { r.Close() }, nil
}

// loggingSegment is the operations of one segment of the recorded side.
const loggingSegment = 100_000

type loggedRun struct {
	run
	work  time.Duration // the workers' time, of elapsed
	bytes int64
	clock string
}

func (r loggedRun) workRate() float64 { return float64(r.ops) / r.work.Seconds() }

// runLogged is the driver, recording: quota operations per worker under
// the free scheduler, the history written to a file, in binary or text,
// timed until the file is closed. The driver is given no region, so it
// installs no access hook (the crash point and the stuck watch's access
// counter, which are not recording), like the driver's own
// BenchmarkLogging.
func runLogged(ctx context.Context, o *Options, s loggingSetup, quota int, binary bool) (loggedRun, error) {
	m, done, err := newLoggingPMwCAS(s.threads, s.emulate)
	if err != nil {
		return loggedRun{}, err
	}
	defer done()
	tmp, err := os.CreateTemp(o.work(), "pmlin-bench-logging-*.hist")
	if err != nil {
		return loggedRun{}, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cpu0, start := cpuTime(), time.Now()
	// As pmlin run -o writes its history: with direct I/O where the file
	// system allows it.
	f, err := directio.Create(tmp.Name(), 0o600)
	if err != nil {
		return loggedRun{}, err
	}
	defer f.Close()
	cw := &countWriter{w: f}
	rec := driver.NewRecorder(history.NewWriter(cw))
	if binary {
		rec = driver.NewBinaryRecorder(history.NewBinaryWriter(cw))
	}
	rec.Header()
	dc := driver.DefaultConfig()
	dc.Threads, dc.Words, dc.K, dc.Sched, dc.Seed = s.threads, logWords, s.k, driver.Free, o.seed()
	dr, err := driver.New(dc, mwcas.AsTarget(m), nil, rec)
	if err != nil {
		return loggedRun{}, err
	}
	if err := dr.SetClock(s.clock); err != nil {
		return loggedRun{}, err
	}
	// Segments of up to loggingSegment operations in all, as a long run
	// of the driver goes (its logs are reused from one to the next).
	run := loggedRun{clock: dr.Clock().String()}
	q := make([]int, s.threads)
	for left := quota; left > 0; {
		n := min(left, max(1, loggingSegment/s.threads))
		left -= n
		for i := range q {
			q[i] = n
		}
		seg, err := dr.Segment(ctx, q, driver.CrashPoint{})
		if err != nil {
			return loggedRun{}, err
		}
		if seg.Stuck != nil || seg.Failed != nil {
			return loggedRun{}, fmt.Errorf("the recorded workload stopped: stuck %v, failed %v", seg.Stuck, seg.Failed)
		}
		run.ops += seg.Invoked
		run.work += seg.Work
	}
	if err := rec.Flush(); err != nil {
		return loggedRun{}, err
	}
	if err := f.Close(); err != nil {
		return loggedRun{}, err
	}
	run.elapsed, run.cpu = time.Since(start), cpuTime()-cpu0
	run.bytes = cw.n
	return run, ctx.Err()
}

// runPlain is the same workload unrecorded: threads goroutines, each
// running quota operations (or, with quota 0, for d) of a replica of the
// driver's workload generator on the PMwCAS, with no log. It returns the
// operations and the time they took.
func runPlain(ctx context.Context, threads, k int, emulate bool, quota int, d time.Duration, seed uint64) (run, error) {
	m, done, err := newLoggingPMwCAS(threads, emulate)
	if err != nil {
		return run{}, err
	}
	defer done()
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
		ops  = make([]int64, threads)
		errs = make([]error, threads)
	)
	cpu0, start := cpuTime(), time.Now()
	for w := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := newWorkloadProc(int32(w), k, seed)
			for i := 0; (quota == 0 || i < quota) && !stop.Load(); i++ {
				var err error
				if p.next() {
					err = m.Read(w, p.addrs, p.vals)
				} else {
					_, _, err = m.CAS(w, p.casWords())
				}
				if err != nil {
					errs[w] = err
					return
				}
				p.done()
				ops[w]++
			}
		}()
	}
	if quota == 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		stop.Store(true)
	}
	wg.Wait()
	rn := run{elapsed: time.Since(start), cpu: cpuTime() - cpu0}
	for w := range threads {
		if errs[w] != nil {
			return run{}, errs[w]
		}
		rn.ops += ops[w]
	}
	return rn, ctx.Err()
}

// recentReads is how many of its reads a process of the workload
// remembers, as driver/workload.go does.
const recentReads = 4

// workloadProc replicates the driver's workload generator
// (driver/workload.go, which the driver does not export): a read of k
// distinct uniform words with probability driver.DefaultReads (and
// always first), otherwise a CAS of the words of one of the process's
// recentReads last reads (the last one, unless the last operation was a
// CAS, or one time in eight) from the values read, in shuffled order, to
// fresh tags.
type workloadProc struct {
	id                      int32
	rng                     *rand.Rand
	ctr                     uint64
	recentAddrs, recentVals [recentReads][]uint64
	nRecent, lastRecent     int
	lastWasRead, isRead     bool
	addrs, exp, new, vals   []uint64
	perm                    []int
	ws                      []mwcas.Word
}

func newWorkloadProc(id int32, k int, seed uint64) *workloadProc {
	p := &workloadProc{id: id, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(id)))}
	for i := range recentReads {
		p.recentAddrs[i], p.recentVals[i] = make([]uint64, k), make([]uint64, k)
	}
	p.addrs, p.exp, p.new, p.vals = make([]uint64, k), make([]uint64, k), make([]uint64, k), make([]uint64, k)
	p.perm, p.ws = make([]int, k), make([]mwcas.Word, k)
	return p
}

// next chooses the next operation; it reports whether it is a read.
func (p *workloadProc) next() bool {
	if p.nRecent == 0 || p.rng.Float64() < driver.DefaultReads {
		p.isRead = true
		for i := range p.addrs {
		again:
			x := p.rng.Uint64N(logWords)
			for _, y := range p.addrs[:i] {
				if x == y {
					goto again
				}
			}
			p.addrs[i] = x
		}
		return true
	}
	p.isRead = false
	src := p.lastRecent
	if !p.lastWasRead || p.rng.IntN(8) == 0 {
		src = p.rng.IntN(p.nRecent)
	}
	for i := range p.perm {
		p.perm[i] = i
	}
	p.rng.Shuffle(len(p.perm), func(i, j int) { p.perm[i], p.perm[j] = p.perm[j], p.perm[i] })
	for i, j := range p.perm {
		p.addrs[i], p.exp[i] = p.recentAddrs[src][j], p.recentVals[src][j]
		p.ctr++
		p.new[i] = uint64(p.id+1)<<32 | p.ctr
	}
	return false
}

func (p *workloadProc) casWords() []mwcas.Word {
	for i := range p.addrs {
		p.ws[i] = mwcas.Word{Addr: p.addrs[i], Old: p.exp[i], New: p.new[i]}
	}
	return p.ws
}

// done takes note of a returned operation.
func (p *workloadProc) done() {
	if !p.isRead {
		p.lastWasRead = false
		return
	}
	i := (p.lastRecent + 1) % recentReads
	if p.nRecent == 0 {
		i = 0
	}
	copy(p.recentAddrs[i], p.addrs)
	copy(p.recentVals[i], p.vals)
	p.lastRecent = i
	p.nRecent = min(p.nRecent+1, recentReads)
	p.lastWasRead = true
}

func (r *LoggingReport) Table() *Table {
	t := &Table{Cols: []string{"threads", "emulate", "clock", "ops_per_sec_plain", "ops_per_sec_logged", "overhead", "overhead_min", "overhead_max",
		"overhead_cpu", "overhead_work", "seconds_merge", "history_mib", "ops_per_sec_text", "overhead_text", "overhead_text_cpu", "text_mib"}}
	for _, p := range r.Points {
		t.add(p.Threads, p.Emulate, p.Clock, p.OpsPerSecPlain, p.OpsPerSecLogged, p.Overhead, p.OverheadMin, p.OverheadMax,
			p.OverheadCPU, p.OverheadWork, p.SecondsMerge, float64(p.HistoryBytes)/(1<<20), p.OpsPerSecText, p.OverheadText, p.OverheadTextCPU, float64(p.TextBytes)/(1<<20))
	}
	return t
}

func (r *LoggingReport) Headlines() []string {
	var h []string
	for _, p := range r.Points {
		if p.Threads != r.HeadlineThreads {
			continue
		}
		emu := "no persistence emulation"
		if p.Emulate {
			emu = "persistence emulated"
		}
		h = append(h, fmt.Sprintf("%d threads, %s: %.2f M ops/s unrecorded; recorded as a binary history %.2f M ops/s: %.1f %% overhead (rounds %.1f to %.1f %%; in CPU time %.1f %%); as text %.2f M ops/s: %.1f %%.",
			p.Threads, emu, p.OpsPerSecPlain/1e6, p.OpsPerSecLogged/1e6, 100*p.Overhead, 100*p.OverheadMin, 100*p.OverheadMax, 100*p.OverheadCPU, p.OpsPerSecText/1e6, 100*p.OverheadText))
	}
	lo, hi, tlo, thi, clo, chi := 1.0, -1.0, 1.0, -1.0, 1.0, -1.0
	for _, p := range r.Points {
		lo, hi = min(lo, p.Overhead), max(hi, p.Overhead)
		clo, chi = min(clo, p.OverheadCPU), max(chi, p.OverheadCPU)
		tlo, thi = min(tlo, p.OverheadText), max(thi, p.OverheadText)
	}
	w := r.Worst
	h = append(h, fmt.Sprintf("Over every thread count and setting, the binary recording costs %.1f %% to %.1f %% (in CPU time %.1f %% to %.1f %%), the text %.1f %% to %.1f %%. The paper: about 10 %%. Target (≤ 10 %% at every point): %s; the worst point: %d threads, emulation %v, %.1f %%.",
		100*lo, 100*hi, 100*clo, 100*chi, 100*tlo, 100*thi, met(r.TargetMet), w.Threads, w.Emulate, 100*w.Overhead))
	return h
}

func (r *LoggingReport) Explain() string {
	return fmt.Sprintf(`The cost of recording, counted the way a user feels it (the OPODIS paper
reports about 10 %% slowdown): the driver's PMwCAS workload (free
scheduler, %d words, k=%d, half reads; the PMwCAS's region without and with
the persistence emulation), the same number of operations per thread
(about %.1f s of work), unrecorded and recorded until the history is
written to a file and closed. %d rounds, each running the three sides on a
fresh PMwCAS, in an order that turns from round to round; an overhead is 1 -
recorded rate / unrecorded rate within one round, and the figures are
medians over the rounds (min and max: the rounds' spread). overhead_cpu
takes the process's CPU time per operation instead of the wall clock: what
recording costs on cores of its own, whatever else the machine runs.
Recorded is the driver itself (driver.Segment, in segments of %d
operations), given no region, so that it installs no access hook (the
crash point and stuck watch, which are not recording), as in the driver's
BenchmarkLogging: timestamps from the clock column (tsc: RDTSCP, where the
kernel's clocksource is the TSC), per-thread logs, and either the binary
history (the logs go to the file as they fill, written by a goroutine
while the workers run; what is left is written when they stop) or text
(the logs merged by timestamp into text when the workers stop). overhead_work
leaves out the time after the workers stop. Unrecorded is the same workload
generator (a replica of driver/workload.go's, which the driver does not
export) calling the same PMwCAS with no log. The headline is the first
emulation setting at the most threads; the target is met when every point's
median is at most 10 %%.`, r.Words, r.K, r.Seconds, r.Reps, loggingSegment)
}

func (r *LoggingReport) Plot(dir string) ([]string, error) {
	if len(r.Points) == 0 {
		return nil, nil
	}
	pl := newPlot("Driver throughput, unrecorded and recorded", "threads", "M operations/s", false, false)
	sides := []struct {
		name string
		rate func(LoggingPoint) float64
	}{
		{"unrecorded", func(p LoggingPoint) float64 { return p.OpsPerSecPlain }},
		{"binary history", func(p LoggingPoint) float64 { return p.OpsPerSecLogged }},
		{"text", func(p LoggingPoint) float64 { return p.OpsPerSecText }},
	}
	for _, emu := range []bool{false, true} {
		for i, side := range sides {
			var xs, ys []float64
			for _, p := range r.Points {
				if p.Emulate == emu {
					xs, ys = append(xs, float64(p.Threads)), append(ys, side.rate(p)/1e6)
				}
			}
			if len(xs) == 0 {
				continue
			}
			name := side.name
			if emu {
				name += ", persistence emulated"
			}
			if err := add(pl, series{name: name, xs: xs, ys: ys, style: i + 3*map[bool]int{false: 0, true: 1}[emu], dashes: emu}); err != nil {
				return nil, err
			}
		}
	}
	pl.Y.Min = 0
	return savePlots(dir, map[string]*plot.Plot{"logging.png": pl}, "logging.png")
}
