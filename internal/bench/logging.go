package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot"

	"github.com/pmlin/pmlin/internal/directio"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
)

// LoggingPoint is the driver's throughput at one thread count, without
// recording and recorded in each format, the history written to a file.
// Rates and overheads are medians over the rounds; an overhead is taken
// within one round (1 - recorded rate / unrecorded rate), whose slices of
// each side run one after another, so that load on the machine that
// changes between rounds cancels out.
type LoggingPoint struct {
	Threads int  `json:"threads"`
	Emulate bool `json:"emulate"`
	// Clock is the recorded runs' timestamp source (count, tsc or
	// monotonic).
	Clock     string `json:"clock"`
	OpsPlain  int64  `json:"ops_plain"`
	OpsLogged int64  `json:"ops_logged"`
	// The binary recording (pmlin run --format binary): the workers' logs
	// go to the file as they fill, with no merge.
	OpsPerSecPlain  float64 `json:"ops_per_sec_plain"`
	OpsPerSecLogged float64 `json:"ops_per_sec_logged"`
	Overhead        float64 `json:"overhead"`
	// OverheadLow and OverheadHigh bound the median overhead with 95 %
	// confidence, whatever the rounds' distribution (medianInterval).
	OverheadLow  float64 `json:"overhead_ci_low"`
	OverheadHigh float64 `json:"overhead_ci_high"`
	OverheadMin  float64 `json:"overhead_min"`
	OverheadMax  float64 `json:"overhead_max"`
	// OverheadTotal compares the sides' whole times over every round
	// instead of taking the median round.
	OverheadTotal float64 `json:"overhead_total"`
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
	// OverheadTextTotal is OverheadTotal of the text.
	OverheadTextTotal float64 `json:"overhead_text_total"`
	OverheadTextCPU   float64 `json:"overhead_text_cpu"`
	TextBytes         int64   `json:"text_bytes"`
	// Seconds* are each side's time over every round.
	SecondsPlain  float64 `json:"seconds_plain"`
	SecondsLogged float64 `json:"seconds_logged"`
	// SecondsMerge is, of SecondsLogged, the time after the workers
	// stopped (the end of each segment: writing what is left; closing;
	// waiting for each slice's disk writes).
	SecondsMerge float64 `json:"seconds_merge"`
	// SecondsDrain is, of SecondsMerge, the waits at the end of each
	// slice for its disk writes (directio.File.Drain). A long run waits
	// so only once, at its end: the overhead overstates it by at most
	// SecondsDrain/SecondsLogged.
	SecondsDrain float64 `json:"seconds_drain"`
	SecondsText  float64 `json:"seconds_text"`
	// With Options.Split, the binary recording whose history is dropped
	// (no file: the workers' timestamps and records, their hand-over and
	// the stream's framing): its overhead against the unrecorded side,
	// taken within each round as Overhead is. Overhead minus it is what
	// writing the history to the file adds.
	OpsPerSecDropped     float64 `json:"ops_per_sec_dropped,omitempty"`
	OverheadDropped      float64 `json:"overhead_dropped,omitempty"`
	OverheadDroppedLow   float64 `json:"overhead_dropped_ci_low,omitempty"`
	OverheadDroppedHigh  float64 `json:"overhead_dropped_ci_high,omitempty"`
	OverheadDroppedCPU   float64 `json:"overhead_dropped_cpu,omitempty"`
	OverheadDroppedTotal float64 `json:"overhead_dropped_total,omitempty"`
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
	// Reps is the rounds of each point, each running a slice of every
	// side.
	Reps int `json:"reps"`
	// Seconds is the measuring time of one side at one point (a slice:
	// Seconds/Reps).
	Seconds float64        `json:"seconds_per_side"`
	Points  []LoggingPoint `json:"points"`
	// TargetMet: the binary recording's median overhead is at most 10 %
	// at every point.
	TargetMet bool `json:"target_met"`
	// Worst is the point of the largest median overhead.
	Worst LoggingPoint `json:"worst"`
	// TargetSure: at every point the median overhead's 95 % interval
	// (OverheadHigh) is at most 10 % too.
	TargetSure bool `json:"target_sure"`
	// Split: the points have the dropped side's figures (Options.Split).
	Split bool `json:"split,omitempty"`
}

// loggingTarget is the overhead the suite aims at (the OPODIS paper: about
// 10 %).
const loggingTarget = 0.10

// loggingDuration and loggingReps are the default measuring time of each
// side at a point and its rounds: slices of half a second. Each recorded
// slice ends by waiting for its disk writes (the last buffer's write,
// a few milliseconds, which a long run waits for only once): slices of
// 50 ms, the default before, overstated the recording by that wait, up
// to a tenth of their time, or, without it, left the writes to slow the
// unrecorded slice after them, and understated it by about half (at 8
// threads here, 10-15 % against 22 % with slices of 1 s).
const (
	loggingDuration = 6 * time.Second
	loggingReps     = 12
)

func runLogging(ctx context.Context, o *Options) (Report, error) {
	threads := orInts(o.Threads, []int{1, 2, 4, 8})
	d := o.Duration
	if d <= 0 {
		d = loggingDuration
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
	clock, err := record.ParseClockSource(orString(o.Clock, "auto"))
	if err != nil {
		return nil, err
	}
	r := &LoggingReport{K: o.k(), Words: logWords, Reps: o.reps(loggingReps), Seconds: d.Seconds(), Split: o.Split}
	for _, emu := range emus {
		for _, th := range threads {
			p, err := measureLogging(ctx, o, loggingSetup{threads: th, k: r.K, emulate: emu, clock: clock}, d, r.Reps)
			if err != nil {
				return nil, err
			}
			r.Points = append(r.Points, p)
			o.progress("logging: %d threads, emulation %v: plain %.0f ops/s; binary %.0f ops/s, overhead %.1f %% (95 %% interval %.1f to %.1f; rounds %.1f to %.1f; CPU %.1f %%); text %.0f ops/s, overhead %.1f %%%s",
				th, emu, p.OpsPerSecPlain, p.OpsPerSecLogged, 100*p.Overhead, 100*p.OverheadLow, 100*p.OverheadHigh, 100*p.OverheadMin, 100*p.OverheadMax, 100*p.OverheadCPU, p.OpsPerSecText, 100*p.OverheadText, p.droppedText(o.Split))
		}
	}
	h := r.Points[0]
	r.TargetMet, r.TargetSure, r.Worst = true, true, r.Points[0]
	for _, p := range r.Points {
		if p.Emulate == r.Points[0].Emulate && p.Threads >= h.Threads {
			h = p
		}
		if p.Overhead > r.Worst.Overhead {
			r.Worst = p
		}
		r.TargetMet = r.TargetMet && p.Overhead <= loggingTarget
		r.TargetSure = r.TargetSure && p.OverheadHigh <= loggingTarget
	}
	r.OpsPerSecPlain, r.OpsPerSecLogged, r.Overhead, r.OverheadWork, r.OverheadText, r.HeadlineThreads = h.OpsPerSecPlain, h.OpsPerSecLogged, h.Overhead, h.OverheadWork, h.OverheadText, h.Threads
	return r, nil
}

// loggingSetup is one point's workload and how it is recorded.
type loggingSetup struct {
	threads, k int
	emulate    bool
	clock      record.ClockSource
}

// run is what one side did: operations, time (wall clock and the
// workers' part of it) and CPU time.
type run struct {
	ops     int64
	elapsed time.Duration
	work    time.Duration // the workers' time, of elapsed
	drain   time.Duration // waiting for the slice's disk writes, of elapsed
	cpu     time.Duration
}

func (r run) rate() float64     { return float64(r.ops) / r.elapsed.Seconds() }
func (r run) workRate() float64 { return float64(r.ops) / r.work.Seconds() }
func (r run) cpuPerOp() float64 { return float64(r.cpu) / float64(r.ops) }

func (r *run) add(o run) {
	r.ops += o.ops
	r.elapsed += o.elapsed
	r.work += o.work
	r.drain += o.drain
	r.cpu += o.cpu
}

// The sides of a point, in the order of loggingRound (sideDropped only
// with Options.Split).
const (
	sidePlain = iota
	sideBinary
	sideText
	sideDropped
	nSides
)

// loggingRound is one round's slices, by side.
type loggingRound [nSides]run

// loggingSide is one side of a point: a driver on a PMwCAS of its own,
// recording into a file (binary or text), recording into nothing
// (dropped) or not recording (plain).
type loggingSide struct {
	dr    *driver.Driver
	rec   *record.Recorder // nil: plain
	f     *directio.File   // nil: plain or dropped
	cw    *countWriter
	path  string
	close func()
	q     []int
}

// newLoggingSide makes a side: the driver's workload (free scheduler,
// seed o.seed()) on a fresh PMwCAS, its history (if any) written as
// pmlin run -o writes it, with direct I/O where the file system allows.
// The driver is given no region, so that it installs no access hook (the
// crash point and the stuck watch's access counter, which are not
// recording), on either side.
func newLoggingSide(o *Options, s loggingSetup, side int) (sd *loggingSide, err error) {
	m, closeRegion, err := newLoggingPMwCAS(s.threads, s.emulate)
	if err != nil {
		return nil, err
	}
	sd = &loggingSide{close: closeRegion, q: make([]int, s.threads)}
	defer func() {
		if err != nil {
			sd.finish()
		}
	}()
	switch side {
	case sidePlain:
	case sideDropped:
		sd.cw = &countWriter{w: io.Discard}
		sd.rec = record.NewBinaryRecorder(history.NewBinaryWriter(sd.cw))
		sd.rec.Header()
	default:
		tmp, err := os.CreateTemp(o.work(), "pmlin-bench-logging-*.hist")
		if err != nil {
			return sd, err
		}
		tmp.Close()
		sd.path = tmp.Name()
		if sd.f, err = directio.Create(sd.path, 0o600); err != nil {
			return sd, err
		}
		sd.cw = &countWriter{w: sd.f}
		sd.rec = record.NewRecorder(history.NewWriter(sd.cw))
		if side == sideBinary {
			sd.rec = record.NewBinaryRecorder(history.NewBinaryWriter(sd.cw))
		}
		sd.rec.Header()
	}
	dc := driver.DefaultConfig()
	dc.Threads, dc.Words, dc.K, dc.Sched, dc.Seed = s.threads, logWords, s.k, driver.Free, o.seed()
	if sd.dr, err = driver.New(dc, mwcas.AsTarget(m), nil, sd.rec); err != nil {
		return sd, err
	}
	return sd, sd.dr.SetClock(s.clock)
}

// slice runs quota operations per worker, in segments of up to
// loggingSegment operations in all, as a long run of the driver goes (its
// logs reused from one to the next); a recorded segment ends with its
// history written (text: merged and handed to the file's buffer).
func (sd *loggingSide) slice(ctx context.Context, quota int) (run, error) {
	var r run
	cpu0, start := cpuTime(), time.Now()
	for left := quota; left > 0; {
		n := min(left, max(1, loggingSegment/len(sd.q)))
		left -= n
		for i := range sd.q {
			sd.q[i] = n
		}
		seg, err := sd.dr.Segment(ctx, sd.q, driver.CrashPoint{})
		if err != nil {
			return r, err
		}
		if seg.Stuck != nil || seg.Failed != nil {
			return r, fmt.Errorf("the workload stopped: stuck %v, failed %v", seg.Stuck, seg.Failed)
		}
		r.ops += seg.Invoked
		r.work += seg.Work
	}
	if sd.f != nil {
		// The slice's disk writes are its own: done before the next
		// slice, of another side, starts (see loggingDuration).
		d := time.Now()
		if err := sd.f.Drain(); err != nil {
			return r, err
		}
		r.drain = time.Since(d)
	}
	r.elapsed, r.cpu = time.Since(start), cpuTime()-cpu0
	return r, ctx.Err()
}

// end writes what the side's history holds back and closes its file: the
// time it takes is the recording's too.
func (sd *loggingSide) end() (run, error) {
	if sd.rec == nil {
		return run{}, nil
	}
	cpu0, start := cpuTime(), time.Now()
	err := sd.rec.Flush()
	if sd.f != nil {
		if e := sd.f.Close(); err == nil {
			err = e
		}
		sd.f = nil
	}
	return run{elapsed: time.Since(start), cpu: cpuTime() - cpu0}, err
}

// finish lets go of the side's PMwCAS and file.
func (sd *loggingSide) finish() {
	if sd.f != nil {
		sd.f.Close()
	}
	if sd.path != "" {
		os.Remove(sd.path)
	}
	sd.close()
}

// measureLogging measures one point within one run: the three sides (each
// a driver on a PMwCAS of its own, alive together) run in slices of the
// same number of operations per worker, about d/reps each, interleaved:
// a round runs one slice of each side (in sliceOrder), so that load on the
// machine that comes and goes falls on every side alike. A warm-up round first is not counted. The recorded
// sides' last writes and the closing of their files, after the rounds,
// are shared out over the rounds.
func measureLogging(ctx context.Context, o *Options, s loggingSetup, d time.Duration, reps int) (p LoggingPoint, err error) {
	p = LoggingPoint{Threads: s.threads, Emulate: s.emulate}
	var sides [nSides]*loggingSide
	defer func() {
		for _, sd := range sides {
			if sd != nil {
				sd.finish()
			}
		}
	}()
	for i := range sides {
		if i == sideDropped && !o.Split {
			continue
		}
		if sides[i], err = newLoggingSide(o, s, i); err != nil {
			return p, err
		}
	}
	p.Clock = sides[sideBinary].dr.Clock().String()
	// The quota of a slice: what the unrecorded side does in d/reps, from
	// a run of a tenth of that (which also warms it up).
	slice := d / time.Duration(reps)
	cal, err := sides[sidePlain].slice(ctx, 1000)
	if err != nil {
		return p, err
	}
	cal, err = sides[sidePlain].slice(ctx, max(1, int(cal.rate()*slice.Seconds()/10)/s.threads))
	if err != nil {
		return p, err
	}
	quota := max(1, int(cal.rate()*slice.Seconds())/s.threads)
	rounds := make([]loggingRound, reps+1)
	for i := range rounds {
		for _, side := range sliceOrder(i) {
			if sides[side] == nil {
				continue
			}
			if rounds[i][side], err = sides[side].slice(ctx, quota); err != nil {
				return p, err
			}
		}
	}
	rounds = rounds[1:] // the warm-up round
	for _, side := range []int{sideBinary, sideText, sideDropped} {
		if sides[side] == nil {
			continue
		}
		e, err := sides[side].end()
		if err != nil {
			return p, err
		}
		for i := range rounds {
			rounds[i][side].elapsed += e.elapsed / time.Duration(len(rounds))
			rounds[i][side].cpu += e.cpu / time.Duration(len(rounds))
		}
	}
	p.HistoryBytes, p.TextBytes = sides[sideBinary].cw.n, sides[sideText].cw.n
	p.summarize(rounds, o.Split)
	return p, nil
}

// sliceOrder is the order of round i's slices: the unrecorded and the
// binary slice next to each other, whose ratio is the headline, each of
// the two first in every other round, then the dropped slice (with
// Options.Split; it leaves no disk writes behind) and the text slice
// last. So a change of the machine's load within a round, and what a
// slice leaves behind for the next one (the text side's garbage above
// all, which the next slice's collector marks), fall on the unrecorded
// and the binary side alike. (Rounds that turned the three sides in a cycle put the
// unrecorded slice before the binary one in two rounds of three, and
// after the text slice in two of three.)
func sliceOrder(i int) [nSides]int {
	if i%2 == 0 {
		return [nSides]int{sidePlain, sideBinary, sideDropped, sideText}
	}
	return [nSides]int{sideBinary, sidePlain, sideDropped, sideText}
}

// summarize sets the point's medians and spreads from its rounds (and
// the dropped side's, if split).
func (p *LoggingPoint) summarize(rounds []loggingRound, split bool) {
	var plain, bin, binWork, text, ov, ovWork, ovText []float64
	var total loggingRound
	for _, rd := range rounds {
		pl, b, t := rd[sidePlain], rd[sideBinary], rd[sideText]
		plain = append(plain, pl.rate())
		bin = append(bin, b.rate())
		binWork = append(binWork, b.workRate())
		text = append(text, t.rate())
		ov = append(ov, 1-b.rate()/pl.rate())
		ovWork = append(ovWork, 1-b.workRate()/pl.rate())
		ovText = append(ovText, 1-t.rate()/pl.rate())
		for i := range total {
			total[i].add(rd[i])
		}
	}
	p.OpsPerSecPlain, p.OpsPerSecLogged, p.OpsPerSecLoggedWork, p.OpsPerSecText = median(plain), median(bin), median(binWork), median(text)
	p.Overhead, p.OverheadWork, p.OverheadText = median(ov), median(ovWork), median(ovText)
	p.OverheadMin, p.OverheadMax = slices.Min(ov), slices.Max(ov)
	p.OverheadLow, p.OverheadHigh = medianInterval(ov)
	p.OverheadTextMin, p.OverheadTextMax = slices.Min(ovText), slices.Max(ovText)
	pl, b, t := total[sidePlain], total[sideBinary], total[sideText]
	p.OverheadTotal, p.OverheadTextTotal = 1-b.rate()/pl.rate(), 1-t.rate()/pl.rate()
	p.OverheadCPU, p.OverheadTextCPU = 1-pl.cpuPerOp()/b.cpuPerOp(), 1-pl.cpuPerOp()/t.cpuPerOp()
	p.OpsPlain, p.OpsLogged = pl.ops, b.ops
	p.SecondsPlain, p.SecondsLogged, p.SecondsText = pl.elapsed.Seconds(), b.elapsed.Seconds(), t.elapsed.Seconds()
	p.SecondsMerge = (b.elapsed - b.work).Seconds()
	p.SecondsDrain = b.drain.Seconds()
	if split {
		var rate, ov []float64
		for _, rd := range rounds {
			rate = append(rate, rd[sideDropped].rate())
			ov = append(ov, 1-rd[sideDropped].rate()/rd[sidePlain].rate())
		}
		dr := total[sideDropped]
		p.OpsPerSecDropped, p.OverheadDropped = median(rate), median(ov)
		p.OverheadDroppedLow, p.OverheadDroppedHigh = medianInterval(ov)
		p.OverheadDroppedTotal, p.OverheadDroppedCPU = 1-dr.rate()/pl.rate(), 1-pl.cpuPerOp()/dr.cpuPerOp()
	}
}

// droppedText is the progress line's figures of the dropped side, if
// split.
func (p *LoggingPoint) droppedText(split bool) string {
	if !split {
		return ""
	}
	return fmt.Sprintf("; history dropped %.0f ops/s, overhead %.1f %% (95 %% interval %.1f to %.1f; CPU %.1f %%)",
		p.OpsPerSecDropped, 100*p.OverheadDropped, 100*p.OverheadDroppedLow, 100*p.OverheadDroppedHigh, 100*p.OverheadDroppedCPU)
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

// medianInterval returns a 95 % confidence interval of the median of the
// distribution that xs are independent draws of, from their order alone
// (the sign test's interval, at least 95 % for any continuous
// distribution): the (j+1)-th least and the (j+1)-th greatest of the n
// values, j the largest count such that at most j of n draws fall below
// the median with probability at most 2.5 % (a binomial count, n draws of
// one half), and likewise above. The rounds' overheads scatter far from
// normal (a slice that a burst of load hits): no mean and deviation
// describe them. Below 6 values no j qualifies; the interval is then
// their whole range.
func medianInterval(xs []float64) (lo, hi float64) {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n == 0 {
		return 0, 0
	}
	b := distuv.Binomial{N: float64(n), P: 0.5}
	j := 0
	for j+1 < n/2 && b.CDF(float64(j+1)) <= 0.025 {
		j++
	}
	return s[j], s[n-1-j]
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newLoggingPMwCAS is the PMwCAS a side runs on: logWords words on a
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

// loggingSegment is the operations of one segment of a side.
const loggingSegment = 100_000

func (r *LoggingReport) Table() *Table {
	t := &Table{Cols: []string{"threads", "emulate", "clock", "ops_per_sec_plain", "ops_per_sec_logged", "overhead", "overhead_min", "overhead_max",
		"overhead_total", "overhead_cpu", "overhead_work", "seconds_merge", "history_mib", "ops_per_sec_text", "overhead_text", "overhead_text_total", "overhead_text_cpu", "text_mib"}}
	if r.Split {
		t.Cols = append(t.Cols, "ops_per_sec_dropped", "overhead_dropped", "overhead_dropped_cpu")
	}
	for _, p := range r.Points {
		row := []any{p.Threads, p.Emulate, p.Clock, p.OpsPerSecPlain, p.OpsPerSecLogged, p.Overhead, p.OverheadMin, p.OverheadMax,
			p.OverheadTotal, p.OverheadCPU, p.OverheadWork, p.SecondsMerge, float64(p.HistoryBytes) / (1 << 20), p.OpsPerSecText, p.OverheadText, p.OverheadTextTotal, p.OverheadTextCPU, float64(p.TextBytes) / (1 << 20)}
		if r.Split {
			row = append(row, p.OpsPerSecDropped, p.OverheadDropped, p.OverheadDroppedCPU)
		}
		t.add(row...)
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
		h = append(h, fmt.Sprintf("%d threads, %s: %.2f M ops/s unrecorded; recorded as a binary history %.2f M ops/s: %.1f %% overhead (95 %% interval %.1f to %.1f %%; rounds %.1f to %.1f %%; in CPU time %.1f %%); as text %.2f M ops/s: %.1f %%.",
			p.Threads, emu, p.OpsPerSecPlain/1e6, p.OpsPerSecLogged/1e6, 100*p.Overhead, 100*p.OverheadLow, 100*p.OverheadHigh, 100*p.OverheadMin, 100*p.OverheadMax, 100*p.OverheadCPU, p.OpsPerSecText/1e6, 100*p.OverheadText))
	}
	lo, hi, tlo, thi, clo, chi := 1.0, -1.0, 1.0, -1.0, 1.0, -1.0
	for _, p := range r.Points {
		lo, hi = min(lo, p.Overhead), max(hi, p.Overhead)
		clo, chi = min(clo, p.OverheadCPU), max(chi, p.OverheadCPU)
		tlo, thi = min(tlo, p.OverheadText), max(thi, p.OverheadText)
	}
	if r.Split {
		for _, p := range r.Points {
			h = append(h, fmt.Sprintf("%d threads, emulation %v: the history dropped instead of written costs %.1f %% (95 %% interval %.1f to %.1f %%; CPU %.1f %%) of the %.1f %% that writing it costs.",
				p.Threads, p.Emulate, 100*p.OverheadDropped, 100*p.OverheadDroppedLow, 100*p.OverheadDroppedHigh, 100*p.OverheadDroppedCPU, 100*p.Overhead))
		}
	}
	h = append(h, fmt.Sprintf("Over every thread count and setting, the binary recording costs %.1f %% to %.1f %% (in CPU time %.1f %% to %.1f %%), the text %.1f %% to %.1f %%. The paper: about 10 %%.",
		100*lo, 100*hi, 100*clo, 100*chi, 100*tlo, 100*thi), r.verdict())
	return h
}

// verdict is the target's sentence, with one verdict, that of
// target_met: met (every point's median overhead at most 10 %) or MISSED.
// Whether the rounds make a met target sure (target_sure: every point's
// 95 % interval at most 10 % too) qualifies it; it is no second verdict.
func (r *LoggingReport) verdict() string {
	at := func(p LoggingPoint) string {
		return fmt.Sprintf("%d threads, emulation %v, %.1f %% (95 %% interval %.1f to %.1f %%)", p.Threads, p.Emulate, 100*p.Overhead, 100*p.OverheadLow, 100*p.OverheadHigh)
	}
	const target = "Target (a median overhead of at most 10 % at every point): "
	switch {
	case !r.TargetMet:
		return target + "MISSED; the worst point: " + at(r.Worst) + "."
	case r.TargetSure:
		return target + "met, every point's 95 % interval below 10 % too; the worst point: " + at(r.Worst) + "."
	}
	widest := r.Worst
	for _, p := range r.Points {
		if p.OverheadHigh > widest.OverheadHigh {
			widest = p
		}
	}
	return target + "met, though not surely: the 95 % interval of " + at(widest) + " reaches above 10 % (more --reps narrow the intervals)."
}

func (r *LoggingReport) Explain() string {
	return fmt.Sprintf(`The cost of recording, counted the way a user feels it (the OPODIS paper
reports about 10 %% slowdown): the driver's PMwCAS workload (free
scheduler, %d words, k=%d, half reads; the PMwCAS's region without and with
the persistence emulation) run unrecorded and recorded, the history written
to a file (with direct I/O where the file system allows, as pmlin run -o
writes it) and closed. Each side is a driver on a PMwCAS of its own, the
three alive together: unrecorded (driver.New with no recorder: the same
workload generator, seed, tags and target calls, no log and no timestamps),
recorded as a binary history (the workers' logs go to the file as they
fill, written by a goroutine while they run; what is left when they stop)
and recorded as text (the logs merged by timestamp into text when the
workers stop). Timestamps come from the clock column (tsc: RDTSCP, where
the kernel's clocksource is the TSC; count: one worker counts its steps,
which orders them all). No side is given a region, so none
installs an access hook (the crash point and the stuck watch, which are
not recording). The sides run in slices of the same operations per worker
(about %.2f s each, in segments of %d operations), interleaved within one
run: %d rounds (after a warm-up round), each running one slice of every
side: the unrecorded and the binary slice next to each other, each
first in every other round, then the text slice. A recorded slice ends
when its disk writes are done (seconds_drain: the waits for them, which
a long run has once), so that none runs beside the next slice. An
overhead is 1 - recorded rate / unrecorded rate within one round, and
the figures are medians over the rounds (min and max: the rounds'
spread; overhead_ci_low
and overhead_ci_high: the median's 95 %% confidence interval from the
rounds' order, which assumes no distribution); overhead_total
takes the sides' whole times instead. The recorded sides' final writes and
the closing of their files are shared out over the rounds. overhead_cpu
compares the process's CPU time per operation over every round (workers,
writer goroutine, system calls): what recording costs on cores of its own,
whatever else the machine runs. overhead_work leaves out the time after
the workers stop. The headline is the first emulation setting at the most
threads; the target is met when every point's median is at most 10 %%.%s`, r.Words, r.K, r.Seconds/float64(r.Reps), loggingSegment, r.Reps, r.splitText())
}

// splitText is what Explain says of the dropped side, if run.
func (r *LoggingReport) splitText() string {
	if !r.Split {
		return ""
	}
	return `
With --split a fourth side runs in every round, after the unrecorded
and the binary slice: the binary recording with its history dropped
instead of written (the workers' timestamps and records, their hand-over
and the stream's framing, no file). Its overhead (overhead_dropped,
taken within each round as the others are) is what recording costs the
process; overhead minus it is what writing the history to the file adds.`
}

func (r *LoggingReport) Plot(dir string) ([]string, error) {
	if len(r.Points) == 0 {
		return nil, nil
	}
	pl := newPlot("Driver throughput, unrecorded and recorded", "threads", "M operations/s", false, false)
	countAxis(&pl.X)
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
