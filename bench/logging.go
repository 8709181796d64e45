package bench

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot"

	"github.com/pmlin/pmlin/driver"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/pmem"
)

// LoggingPoint is the driver's throughput at one thread count, with and
// without recording.
type LoggingPoint struct {
	Threads         int     `json:"threads"`
	Emulate         bool    `json:"emulate"`
	OpsPlain        int64   `json:"ops_plain"`
	OpsLogged       int64   `json:"ops_logged"`
	OpsPerSecPlain  float64 `json:"ops_per_sec_plain"`
	OpsPerSecLogged float64 `json:"ops_per_sec_logged"`
	Overhead        float64 `json:"overhead"`
	// OpsPerSecLoggedWork counts the workers' time only (not the merge
	// and write of the history after they stop); OverheadWork likewise.
	OpsPerSecLoggedWork float64 `json:"ops_per_sec_logged_work"`
	OverheadWork        float64 `json:"overhead_work"`
	HistoryBytes        int64   `json:"history_bytes"`
	SecondsPlain        float64 `json:"seconds_plain"`
	SecondsLogged       float64 `json:"seconds_logged"`
	SecondsMerge        float64 `json:"seconds_merge"`
}

// LoggingReport is the logging suite's result. Its top-level
// ops_per_sec_plain, ops_per_sec_logged and overhead (a fraction: 0.1 is
// 10 % fewer operations per second when recording) are those of the
// headline point: the most threads, persistence emulation as measured
// first.
type LoggingReport struct {
	Meta
	OpsPerSecPlain  float64 `json:"ops_per_sec_plain"`
	OpsPerSecLogged float64 `json:"ops_per_sec_logged"`
	Overhead        float64 `json:"overhead"`
	// OverheadWork leaves out merging the logs into the history and
	// writing it (done after the workers stop).
	OverheadWork    float64 `json:"overhead_work"`
	HeadlineThreads int     `json:"headline_threads"`
	K               int     `json:"k"`
	Words           int     `json:"words"`
	Reps            int     `json:"reps"`
	// Seconds is the measuring time of one run.
	Seconds   float64        `json:"seconds_per_run"`
	Points    []LoggingPoint `json:"points"`
	TargetMet bool           `json:"target_met"`
}

func runLogging(ctx context.Context, o *Options) (Report, error) {
	threads := orInts(o.Threads, []int{1, 2, 4, 8})
	d := o.Duration
	if d <= 0 {
		d = time.Second
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
	r := &LoggingReport{K: o.k(), Words: logWords, Reps: o.reps(3), Seconds: d.Seconds()}
	for _, emu := range emus {
		for _, th := range threads {
			p, err := measureLogging(ctx, o, th, r.K, emu, d, r.Reps)
			if err != nil {
				return nil, err
			}
			r.Points = append(r.Points, p)
			o.progress("logging: %d threads, emulation %v: plain %.0f ops/s, logged %.0f ops/s (workers only %.0f), overhead %.1f %%",
				th, emu, p.OpsPerSecPlain, p.OpsPerSecLogged, p.OpsPerSecLoggedWork, 100*p.Overhead)
		}
	}
	h := r.Points[0]
	for _, p := range r.Points {
		if p.Emulate == r.Points[0].Emulate && p.Threads >= h.Threads {
			h = p
		}
	}
	r.OpsPerSecPlain, r.OpsPerSecLogged, r.Overhead, r.OverheadWork, r.HeadlineThreads = h.OpsPerSecPlain, h.OpsPerSecLogged, h.Overhead, h.OverheadWork, h.Threads
	r.TargetMet = r.Overhead <= 0.10
	return r, nil
}

// measureLogging runs the driver's workload with threads workers for
// about d, unrecorded and recorded, reps times each in turn, on a fresh
// PMwCAS each time, and keeps each side's best.
func measureLogging(ctx context.Context, o *Options, threads, k int, emulate bool, d time.Duration, reps int) (LoggingPoint, error) {
	p := LoggingPoint{Threads: threads, Emulate: emulate}
	// The quota: what the unrecorded workload does in d, from a tenth of it.
	n, el, err := runPlain(ctx, threads, k, emulate, 0, d/10, o.seed())
	if err != nil {
		return p, err
	}
	quota := max(1, int(float64(n)*d.Seconds()/el.Seconds())/threads)
	for range reps {
		n, el, err := runPlain(ctx, threads, k, emulate, quota, 0, o.seed())
		if err != nil {
			return p, err
		}
		if rate := float64(n) / el.Seconds(); rate > p.OpsPerSecPlain {
			p.OpsPerSecPlain, p.OpsPlain, p.SecondsPlain = rate, n, el.Seconds()
		}
		lr, err := runLogged(ctx, o, threads, k, emulate, quota)
		if err != nil {
			return p, err
		}
		total := (lr.work + lr.merge).Seconds()
		if rate := float64(lr.ops) / total; rate > p.OpsPerSecLogged {
			p.OpsPerSecLogged, p.OpsLogged, p.SecondsLogged = rate, lr.ops, total
			p.OpsPerSecLoggedWork = float64(lr.ops) / lr.work.Seconds()
			p.SecondsMerge, p.HistoryBytes = lr.merge.Seconds(), lr.bytes
		}
	}
	p.Overhead = 1 - p.OpsPerSecLogged/p.OpsPerSecPlain
	p.OverheadWork = 1 - p.OpsPerSecLoggedWork/p.OpsPerSecPlain
	return p, nil
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
	ops         int64
	work, merge time.Duration
	bytes       int64
}

// runLogged is the driver, recording: quota operations per worker under
// the free scheduler, the history written to a file. The driver is given
// no region, so it installs no access hook (the crash point and the stuck
// watch's access counter, which are not recording), like the driver's own
// BenchmarkLogging.
func runLogged(ctx context.Context, o *Options, threads, k int, emulate bool, quota int) (loggedRun, error) {
	m, done, err := newLoggingPMwCAS(threads, emulate)
	if err != nil {
		return loggedRun{}, err
	}
	defer done()
	f, err := os.CreateTemp(o.work(), "pmlin-bench-logging-*.hist")
	if err != nil {
		return loggedRun{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cw := &countWriter{w: f}
	bw := bufio.NewWriterSize(cw, 1<<20)
	rec := driver.NewRecorder(history.NewWriter(bw))
	rec.Header()
	dc := driver.DefaultConfig()
	dc.Threads, dc.Words, dc.K, dc.Sched, dc.Seed = threads, logWords, k, driver.Free, o.seed()
	dr, err := driver.New(dc, mwcas.AsTarget(m), nil, rec)
	if err != nil {
		return loggedRun{}, err
	}
	// Segments of up to loggingSegment operations in all, as a long run
	// of the driver goes (its logs are reused from one to the next).
	var run loggedRun
	q := make([]int, threads)
	for left := quota; left > 0; {
		n := min(left, max(1, loggingSegment/threads))
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
		run.merge += seg.Merge
	}
	start := time.Now()
	if err := bw.Flush(); err != nil {
		return loggedRun{}, err
	}
	run.merge += time.Since(start)
	run.bytes = cw.n
	return run, ctx.Err()
}

// runPlain is the same workload unrecorded: threads goroutines, each
// running quota operations (or, with quota 0, for d) of a replica of the
// driver's workload generator on the PMwCAS, with no log. It returns the
// operations and the time they took.
func runPlain(ctx context.Context, threads, k int, emulate bool, quota int, d time.Duration, seed uint64) (int64, time.Duration, error) {
	m, done, err := newLoggingPMwCAS(threads, emulate)
	if err != nil {
		return 0, 0, err
	}
	defer done()
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
		ops  = make([]int64, threads)
		errs = make([]error, threads)
	)
	start := time.Now()
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
	el := time.Since(start)
	var n int64
	for w := range threads {
		if errs[w] != nil {
			return 0, 0, errs[w]
		}
		n += ops[w]
	}
	return n, el, ctx.Err()
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
	t := &Table{Cols: []string{"threads", "emulate", "ops_per_sec_plain", "ops_per_sec_logged", "overhead",
		"ops_per_sec_logged_work", "overhead_work", "seconds_merge", "history_mib"}}
	for _, p := range r.Points {
		t.add(p.Threads, p.Emulate, p.OpsPerSecPlain, p.OpsPerSecLogged, p.Overhead,
			p.OpsPerSecLoggedWork, p.OverheadWork, p.SecondsMerge, float64(p.HistoryBytes)/(1<<20))
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
		h = append(h, fmt.Sprintf("%d threads, %s: %.2f M ops/s unrecorded, %.2f M ops/s recorded (logs, then merge and write of the history): %.1f %% overhead; the workers alone (logs and timestamps, without the merge after they stop): %.1f %%.",
			p.Threads, emu, p.OpsPerSecPlain/1e6, p.OpsPerSecLogged/1e6, 100*p.Overhead, 100*p.OverheadWork))
	}
	lo, hi, wlo, whi := 1.0, -1.0, 1.0, -1.0
	for _, p := range r.Points {
		lo, hi = min(lo, p.Overhead), max(hi, p.Overhead)
		wlo, whi = min(wlo, p.OverheadWork), max(whi, p.OverheadWork)
	}
	h = append(h, fmt.Sprintf("Over every thread count and setting: %.1f %% to %.1f %% overhead (workers alone %.1f %% to %.1f %%). The paper: about 10 %%. Target (≤ 10 %%, headline %.1f %%): %s.",
		100*lo, 100*hi, 100*wlo, 100*whi, 100*r.Overhead, met(r.TargetMet)))
	return h
}

func (r *LoggingReport) Explain() string {
	return fmt.Sprintf(`The cost of recording (the OPODIS paper reports about 10 %% slowdown): the
driver's PMwCAS workload (free scheduler, %d words, k=%d, half reads; the
PMwCAS's region without and with the persistence emulation) run with and
without recording, the
same number of operations per thread (about %.1f s of work), best of %d,
alternating, each on a fresh PMwCAS. Recorded is the driver itself
(driver.Segment, in segments of %d operations): per-thread logs with
monotonic timestamps, then the merge of the logs into a history written to
a file; it is given no region, so it
installs no access hook (the crash point and stuck watch, which are not
recording), as in the driver's own BenchmarkLogging. Unrecorded is the same
workload generator (a replica of driver/workload.go's, which the driver does
not export) calling the same PMwCAS with no log. ops_per_sec_logged counts
the merge and write; ops_per_sec_logged_work only the workers' time. The
headline is the first emulation setting at the most threads.`, r.Words, r.K, r.Seconds, r.Reps, loggingSegment)
}

func (r *LoggingReport) Plot(dir string) ([]string, error) {
	if len(r.Points) == 0 {
		return nil, nil
	}
	pl := newPlot("Driver throughput with and without recording", "threads", "M operations/s", false, false)
	for _, emu := range []bool{false, true} {
		for _, logged := range []bool{false, true} {
			var xs, ys []float64
			for _, p := range r.Points {
				if p.Emulate != emu {
					continue
				}
				xs = append(xs, float64(p.Threads))
				if logged {
					ys = append(ys, p.OpsPerSecLogged/1e6)
				} else {
					ys = append(ys, p.OpsPerSecPlain/1e6)
				}
			}
			if len(xs) == 0 {
				continue
			}
			name := map[bool]string{false: "unrecorded", true: "recorded"}[logged]
			style := 0
			if emu {
				name += ", persistence emulated"
				style = 2
			}
			if err := add(pl, series{name: name, xs: xs, ys: ys, style: style, dashes: logged}); err != nil {
				return nil, err
			}
		}
	}
	pl.Y.Min = 0
	return savePlots(dir, map[string]*plot.Plot{"logging.png": pl}, "logging.png")
}
