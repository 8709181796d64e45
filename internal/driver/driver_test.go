package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// setup builds a PMwCAS for c on an emulated region.
func setup(t testing.TB, c Config, mutant string) (*pmem.Region, target.Instance) {
	t.Helper()
	mc := mwcas.Config{Words: c.Words, MaxWorkers: c.Threads, DescriptorsPerWorker: 4, MaxK: c.K, Mutant: mutant}
	n, err := mwcas.RegionWords(mc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	m, err := mwcas.New(r, mc)
	if err != nil {
		t.Fatal(err)
	}
	return r, mwcas.AsTarget(m)
}

// cfg is the default configuration with the given workload shape.
func cfg(threads int, words uint64, k int, seed uint64) Config {
	c := DefaultConfig()
	c.Threads, c.Words, c.K, c.Seed = threads, words, k, seed
	return c
}

// record runs one segment of ops operations per worker and returns the
// history.
func recordRun(t testing.TB, c Config, ops int, cp CrashPoint) (string, SegmentResult) {
	t.Helper()
	d, rec, buf := textDriver(t, c)
	quota := make([]int, d.Config().Threads)
	for i := range quota {
		quota[i] = ops
	}
	seg, err := d.Segment(context.Background(), quota, cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.String(), seg
}

// textDriver is a driver of configuration c on a fresh PMwCAS, recording
// its history as text into the returned buffer (after rec.Flush).
func textDriver(t testing.TB, c Config) (*Driver, *record.Recorder, *bytes.Buffer) {
	t.Helper()
	r, m := setup(t, c, "")
	buf := new(bytes.Buffer)
	rec := record.NewRecorder(history.NewWriter(buf))
	rec.Header()
	d, err := New(c, m, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	return d, rec, buf
}

func check(t testing.TB, hist string) *analyzer.Result {
	t.Helper()
	res, err := analyzer.Check(context.Background(), history.NewReader(strings.NewReader(hist), "<test>", history.Options{}), analyzer.Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, hist)
	}
	return res
}

func TestDeterministicSchedulerReplays(t *testing.T) {
	for _, stick := range []float64{0, -1, 0.5, 0.95} {
		t.Run(fmt.Sprint("stick ", stick), func(t *testing.T) {
			c := cfg(4, 6, 2, 42)
			c.Stick = stick
			h1, s1 := recordRun(t, c, 60, CrashPoint{})
			h2, s2 := recordRun(t, c, 60, CrashPoint{})
			if h1 != h2 {
				t.Fatalf("same seed, different histories:\n%s\n---\n%s", h1, h2)
			}
			if s1.Accesses != s2.Accesses || s1.Invoked != 240 || s1.Returned != 240 {
				t.Fatalf("accesses %d vs %d, invoked %d, returned %d", s1.Accesses, s2.Accesses, s1.Invoked, s1.Returned)
			}
			c.Seed = 43
			h3, _ := recordRun(t, c, 60, CrashPoint{})
			if h3 == h1 {
				t.Fatal("different seeds, same history")
			}
			if res := check(t, h1); !res.Linearizable {
				t.Fatalf("correct PMwCAS not linearizable: %+v", res.Anomalies)
			}
		})
	}
}

func TestDeterministicCrashReplays(t *testing.T) {
	c := cfg(3, 4, 2, 7)
	h1, s1 := recordRun(t, c, 40, CrashPoint{Access: 500})
	h2, _ := recordRun(t, c, 40, CrashPoint{Access: 500})
	if h1 != h2 {
		t.Fatal("same crash point, different histories")
	}
	if !s1.Crashed || s1.Accesses < 500 {
		t.Fatalf("crashed %v after %d accesses", s1.Crashed, s1.Accesses)
	}
	// Up to the crash, the run is the crash-free run (after it, the
	// scheduler's choices differ: the workers stop one by one).
	full, _ := recordRun(t, c, 40, CrashPoint{})
	lines := strings.SplitAfter(h1, "\n")
	prefix := strings.Join(lines[:len(lines)-2*c.Threads], "")
	if !strings.HasPrefix(full, prefix) {
		t.Fatal("the crashed history does not start as the crash-free one")
	}
}

func TestFreeScheduler(t *testing.T) {
	for _, y := range []float64{0, 0.2} {
		c := cfg(4, 6, 3, 3)
		c.Sched, c.Yield = Free, y
		h, seg := recordRun(t, c, 300, CrashPoint{})
		if seg.Invoked != 1200 || seg.Returned != 1200 {
			t.Fatalf("invoked %d returned %d", seg.Invoked, seg.Returned)
		}
		if res := check(t, h); !res.Linearizable {
			t.Fatalf("yield %v: correct PMwCAS not linearizable: %+v", y, res.Anomalies)
		}
	}
	// A crash at a worker's access.
	c := cfg(4, 6, 2, 3)
	c.Sched = Free
	_, seg := recordRun(t, c, 300, CrashPoint{Worker: 2, Access: 100})
	if !seg.Crashed || seg.Left[2] == 0 {
		t.Fatalf("crashed %v, left %v", seg.Crashed, seg.Left)
	}
}

// TestAssumptions checks, on a recorded history, the two assumptions the
// driver promises: unique new values (of cas and swaps), and expected
// values that the same process read before (a read, or a failure that
// reported values). With swaps and failures that report values, the
// history has both, each well formed, and is linearizable.
func TestAssumptions(t *testing.T) {
	for _, mix := range []bool{false, true} {
		for _, sched := range []Sched{Deterministic, Free} {
			c := cfg(4, 5, 2, 11)
			c.Sched = sched
			if mix {
				c.Swaps, c.FailValues = 0.3, true
			}
			h, seg := recordRun(t, c, 200, CrashPoint{})
			if mix && (seg.Swaps == 0 || !strings.Contains(h, "inv swap")) {
				t.Fatalf("no swap recorded: %+v", seg.MergeStats)
			}
			checkAssumptions(t, h, mix)
			if res := check(t, h); !res.Linearizable {
				t.Fatalf("not linearizable: %+v", res.Anomalies)
			}
		}
	}
}

func checkAssumptions(t *testing.T, h string, mix bool) {
	t.Helper()
	hist, err := history.ReadAll(strings.NewReader(h), "<test>")
	if err != nil {
		t.Fatal(err)
	}
	written := map[[2]uint64]bool{}
	read := map[int32]map[[2]uint64]bool{}
	reported := 0
	for _, o := range hist.Ops {
		if read[o.Proc] == nil {
			read[o.Proc] = map[[2]uint64]bool{}
		}
		if o.Kind == history.Read || o.Kind == history.CAS && o.Values != nil {
			for i, a := range o.Addrs {
				read[o.Proc][[2]uint64{a, o.Values[i]}] = true
			}
		}
		if o.Kind == history.Read {
			continue
		}
		if o.Kind == history.CAS && o.Values != nil {
			reported++
		}
		for i, a := range o.Addrs {
			key := [2]uint64{a, o.New[i]}
			if written[key] || o.New[i] == 0 || o.New[i]&^mwcas.ValueMask != 0 || o.New[i]>>32 != uint64(o.Proc)+1 {
				t.Fatalf("line %d: value %#x at %d breaks Assumption 1", o.Line, o.New[i], a)
			}
			written[key] = true
			if o.Kind == history.CAS && !read[o.Proc][[2]uint64{a, o.Expected[i]}] {
				t.Fatalf("line %d: process %d expects %#x at %d without having read it", o.Line, o.Proc, o.Expected[i], a)
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(o.Addrs)), slices.Compact(slices.Sorted(slices.Values(o.Addrs)))) {
			t.Fatalf("line %d: repeated address", o.Line)
		}
	}
	if mix != (reported > 0) {
		t.Fatalf("%d failures report values (mix %v)", reported, mix)
	}
}

// spinner is a target whose CAS of address 0 never returns: it loads a
// region word forever.
type spinner struct {
	r *pmem.Region
}

func (s spinner) CAS(w int, words []target.Word) (bool, uint64, error) {
	// The handle is taken once: Region.Worker takes the region's mutex,
	// which a spinner taking it at every access would keep from the other
	// workers (under -race on a busy machine, for longer than StuckAfter).
	k := s.r.Worker(w)
	for _, x := range words {
		if x.Addr == 0 {
			for {
				if _, err := k.Load(0); err != nil {
					return false, 0, err
				}
			}
		}
	}
	_, err := k.Load(1)
	return err == nil, 0, err
}

func (s spinner) Read(w int, addrs, out []uint64) error {
	for i := range addrs {
		if _, err := s.r.Worker(w).Load(1); err != nil {
			return err
		}
		out[i] = 0
	}
	return nil
}

func TestStuck(t *testing.T) {
	for _, tc := range []struct {
		sched   Sched
		clock   record.ClockSource
		threads int
	}{{Deterministic, record.ClockAuto, 3}, {Free, record.ClockAuto, 3}, {Free, record.ClockMonotonic, 3}, {Free, record.ClockAuto, 1}, {Free, record.ClockTSC, 1}} {
		sched := tc.sched
		t.Run(fmt.Sprintf("%v-%v-%d", sched, tc.clock, tc.threads), func(t *testing.T) {
			r, err := pmem.NewMemory(8, pmem.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var d *Driver
			defer func() {
				// Not under a worker abandoned while it was starved of
				// CPU (a busy machine): it may still access the region.
				if d == nil || d.broken == nil {
					r.Close()
				}
			}()
			var buf bytes.Buffer
			rec := record.NewRecorder(history.NewWriter(&buf))
			rec.Header()
			c := cfg(tc.threads, 2, 1, 5)
			// Under the free scheduler a worker that gets no CPU for
			// StuckAfter is silent: 50 ms was too short under -race at a
			// load of 11 on 2 cores (the spinner was found "silent" after
			// 0 accesses).
			c.Sched, c.StuckAccesses, c.StuckAfter = sched, 5000, time.Second
			if sched == Deterministic {
				// The access count finds the spinner; the watchdog's clock
				// must not (a busy machine, -race: a lone worker's 5000
				// accesses may take longer than 50 ms by the clock). A
				// missed hand-off would still be found, as Blocked.
				c.StuckAfter = 30 * time.Second
			}
			d, err = New(c, spinner{r}, r, rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.SetClock(tc.clock); err != nil {
				if ok, why := record.TSCUsable(); tc.clock == record.ClockTSC && !ok {
					t.Skip(why)
				}
				t.Fatal(err)
			}
			// One free worker counts (record.ClockAuto), and its watch times
			// the operation from its first look at it.
			if want := tc.threads == 1 && tc.clock == record.ClockAuto && sched == Free; (d.Clock() == record.ClockCount) != want {
				t.Fatalf("clock %v", d.Clock())
			}
			start := time.Now()
			quota := make([]int, tc.threads)
			for i := range quota {
				quota[i] = 1000
			}
			seg, err := d.Segment(context.Background(), quota, CrashPoint{})
			if err != nil {
				t.Fatal(err)
			}
			rec.Flush()
			if time.Since(start) > 20*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			s := seg.Stuck
			if s == nil {
				t.Fatal("no stuck operation reported")
			}
			lines := strings.Split(buf.String(), "\n")
			inv := lines[s.Line-1]
			if !strings.HasPrefix(inv, fmt.Sprintf("%d inv cas 0:", s.Proc)) {
				t.Fatalf("stuck op at line %d is %q", s.Line, inv)
			}
			if s.Accesses < 5000 || s.Quiet != 0 || !strings.Contains(s.String(), "without returning") {
				t.Fatalf("%+v", s)
			}
			// Under the free scheduler the watch measured the time since
			// the invocation from its timestamp, in whatever clock.
			if el := s.Elapsed; sched == Free && (el < c.StuckAfter || el > time.Since(start)) {
				t.Fatalf("stuck for %v by the %v clock; the segment took %v", el, d.Clock(), time.Since(start))
			}
			// The history is still well formed, the stuck op pending.
			check(t, buf.String())
		})
	}
}

// failer is a target whose second operation of worker 1 fails.
type failer struct {
	r *pmem.Region
	n *int
}

var errBroken = errors.New("broken")

func (f failer) CAS(w int, words []target.Word) (bool, uint64, error) {
	err := f.op(w)
	return err == nil, 0, err
}
func (f failer) Read(w int, addrs, out []uint64) error {
	clear(out)
	return f.op(w)
}
func (f failer) op(w int) error {
	if _, err := f.r.Worker(w).Load(0); err != nil {
		return err
	}
	if w == 1 {
		*f.n++
		if *f.n == 2 {
			return errBroken
		}
	}
	return nil
}

func TestOperationError(t *testing.T) {
	var buf bytes.Buffer
	rec := record.NewRecorder(history.NewWriter(&buf))
	rec.Header()
	n := 0
	c := cfg(2, 2, 1, 1)
	c.Reads = 1
	r, err := pmem.NewMemory(8, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := New(c, failer{r, &n}, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	seg, err := d.Segment(context.Background(), []int{5, 5}, CrashPoint{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	if seg.Failed == nil || !errors.Is(seg.Failed, errBroken) || seg.Failed.Proc != 1 {
		t.Fatalf("%+v", seg.Failed)
	}
	lines := strings.Split(buf.String(), "\n")
	if !strings.HasPrefix(lines[seg.Failed.Line-1], "1 inv read") {
		t.Fatalf("failed op at line %d: %q", seg.Failed.Line, lines[seg.Failed.Line-1])
	}
}

// goMemory is a target that keeps its words in Go memory: it makes no
// region access at all.
type goMemory struct{ words []uint64 }

func (g goMemory) CAS(w int, words []target.Word) (bool, uint64, error) {
	for _, x := range words {
		if g.words[x.Addr] != x.Old {
			return false, x.Addr, nil
		}
	}
	for _, x := range words {
		g.words[x.Addr] = x.New
	}
	return true, 0, nil
}

func (g goMemory) Read(w int, addrs, out []uint64) error {
	for i, a := range addrs {
		out[i] = g.words[a]
	}
	return nil
}

// TestRefusesTargetWithoutRegion: the deterministic scheduler has nothing
// to interleave without region accesses, and says so.
func TestRefusesTargetWithoutRegion(t *testing.T) {
	c := cfg(2, 4, 2, 1)
	rec := record.NewRecorder(history.NewWriter(io.Discard))
	if _, err := New(c, goMemory{make([]uint64, 4)}, nil, rec); err == nil || !strings.Contains(err.Error(), "no interleaving") {
		t.Fatalf("no region: %v", err)
	}
	r, err := pmem.NewMemory(8, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := New(c, goMemory{make([]uint64, 4)}, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Segment(context.Background(), []int{5, 5}, CrashPoint{}); err == nil || !strings.Contains(err.Error(), "made no region access") {
		t.Fatalf("a region it does not use: %v", err)
	}
	// The free scheduler runs it (the logging benchmarks do).
	c.Sched = Free
	d, err = New(c, goMemory{make([]uint64, 4)}, nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Segment(context.Background(), []int{1, 0}, CrashPoint{}); err != nil {
		t.Fatal(err)
	}
}

// locked is a target that guards the region with a Go mutex (wait nil) or
// makes every operation but the first wait on a channel nobody sends on
// (wait set): both block outside region accesses. Without either (mu nil,
// wait nil) it never blocks.
type locked struct {
	r    *pmem.Region
	mu   *sync.Mutex
	wait chan struct{}
	ops  *atomic.Int64
}

func (l locked) op(w int) error {
	if l.wait != nil && l.ops.Add(1) > 1 {
		<-l.wait
	}
	if l.mu != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
	}
	for range 3 {
		if _, err := l.r.Worker(w).Load(0); err != nil {
			return err
		}
	}
	return nil
}

func (l locked) CAS(w int, words []target.Word) (bool, uint64, error) {
	err := l.op(w)
	return err == nil, 0, err
}

func (l locked) Read(w int, addrs, out []uint64) error {
	clear(out)
	return l.op(w)
}

// lockedDriver is a driver of three workers, found blocked after 100 ms,
// of tgt, recording into the buffer it returns.
func lockedDriver(t *testing.T, tgt locked) (*Driver, *record.Recorder, *bytes.Buffer) {
	t.Helper()
	buf := new(bytes.Buffer)
	rec := record.NewRecorder(history.NewWriter(buf))
	rec.Header()
	c := cfg(3, 2, 1, 7)
	c.Stick, c.StuckAfter = 0, 100*time.Millisecond
	d, err := New(c, tgt, tgt.r, rec)
	if err != nil {
		t.Fatal(err)
	}
	return d, rec, buf
}

// TestBlocked: a target that blocks outside region accesses under the
// deterministic scheduler is reported, not a deadlock of the process.
func TestBlocked(t *testing.T) {
	for _, leak := range []bool{false, true} {
		t.Run(fmt.Sprint("never returns ", leak), func(t *testing.T) {
			r, err := pmem.NewMemory(8, pmem.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tgt := locked{r: r, mu: &sync.Mutex{}, ops: &atomic.Int64{}}
			if leak {
				tgt.wait = make(chan struct{})
			}
			d, rec, buf := lockedDriver(t, tgt)
			start := time.Now()
			seg, err := d.Segment(context.Background(), []int{50, 50, 50}, CrashPoint{})
			if err != nil {
				t.Fatal(err)
			}
			rec.Flush()
			b := seg.Blocked
			if b == nil || time.Since(start) > 10*time.Second {
				t.Fatalf("not reported as blocked: %+v after %v", seg, time.Since(start))
			}
			lines := strings.Split(buf.String(), "\n")
			if inv := lines[b.Line-1]; !strings.HasPrefix(inv, fmt.Sprintf("%d inv ", b.Proc)) {
				t.Fatalf("blocked op at line %d is %q", b.Line, inv)
			}
			if !strings.Contains(b.String(), "--sched free") || !strings.Contains(b.String(), "region CAS") {
				t.Fatalf("no advice: %s", b)
			}
			check(t, buf.String()) // well formed, the blocked op pending
			_, err = d.Segment(context.Background(), []int{1, 1, 1}, CrashPoint{})
			if leak != (err != nil) {
				t.Fatalf("next segment after an abandoned worker (%v): %v", leak, err)
			}
			if leak {
				// The abandoned goroutine never touches the region again.
				close(tgt.wait)
			}
		})
	}
}

func TestSharedLogs(t *testing.T) {
	const threads, k, ops = 2, 2, 3
	mem := make([]uint64, record.SharedLogWords(threads, k, ops))
	if err := record.LayoutSharedLogs(mem, threads, k, ops); err != nil {
		t.Fatal(err)
	}
	r, m := setup(t, cfg(threads, 4, k, 0), "")
	rec := record.NewRecorder(history.NewWriter(&bytes.Buffer{}))
	c := cfg(threads, 4, k, 9)
	c.Sched = Free
	d, err := New(c, m, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UseSharedLogs(mem); err != nil {
		t.Fatal(err)
	}
	// Each log has room for at least ops operations (more if they are
	// reads): a quota of 10 stops early.
	seg, err := d.Segment(context.Background(), []int{10, 10}, CrashPoint{})
	if err != nil {
		t.Fatal(err)
	}
	if !seg.Full || seg.Invoked < 2*ops || seg.Invoked >= 20 || seg.Returned != seg.Invoked {
		t.Fatalf("%+v", seg)
	}
	logs, err := record.ReadSharedLogs(mem, threads)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec2 := record.NewRecorder(history.NewWriter(&buf))
	rec2.Header()
	if _, err := rec2.MergeLogs(logs, []int32{0, 1}, k); err != nil {
		t.Fatal(err)
	}
	rec2.Flush()
	if res := check(t, buf.String()); !res.Linearizable || res.Operations != seg.Invoked {
		t.Fatalf("%+v", res)
	}
	if record.SharedLogEvents(mem, threads) == 0 {
		t.Fatal("no progress seen")
	}
	if _, err := record.ReadSharedLogs(mem[:10], threads); err == nil {
		t.Fatal("a truncated mapping was accepted")
	}
}

func TestConfig(t *testing.T) {
	for _, change := range []func(*Config){
		func(c *Config) { c.Threads = -1 }, func(c *Config) { c.K = 65 }, func(c *Config) { c.Words, c.K = 1, 2 },
		func(c *Config) { c.Reads = 2 }, func(c *Config) { c.Yield = -1 }, func(c *Config) { c.Stick = 2 },
		func(c *Config) { c.Swaps = -0.1 }, func(c *Config) { c.Reads, c.Swaps = 0.6, 0.5 },
	} {
		c := DefaultConfig()
		change(&c)
		if err := c.Check(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := DefaultConfig().Check(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"free", "deterministic", "det"} {
		if _, err := ParseSched(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ParseSched("fair"); err == nil {
		t.Fatal("unknown scheduler accepted")
	}
}

// BenchmarkLogging measures what recording costs the driver's free
// scheduler in process, the history written to io.Discard: three drivers
// on PMwCAS instances of their own (unrecorded, binary, text) run slices of
// 30000 operations in turn, in an order that turns from one iteration (a
// round) to the next, and the overheads reported are medians over the
// rounds of 1 - recorded rate / unrecorded rate within a round (slices
// this short see the same load on a shared machine). Run it with
// -benchtime 80x or so: each iteration is one round.
func BenchmarkLogging(b *testing.B) {
	for _, threads := range []int{1, 2, 8} {
		b.Run(fmt.Sprint("threads=", threads), func(b *testing.B) {
			c := cfg(threads, 1000, 3, 1)
			c.Sched = Free
			var ds [3]*Driver
			for i := range ds {
				mc := mwcas.Config{Words: c.Words, MaxWorkers: threads}
				n, err := mwcas.RegionWords(mc)
				if err != nil {
					b.Fatal(err)
				}
				r, err := pmem.NewMemory(n, pmem.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { r.Close() })
				m, err := mwcas.New(r, mc)
				if err != nil {
					b.Fatal(err)
				}
				rec := []*record.Recorder{nil, record.NewBinaryRecorder(history.NewBinaryWriter(io.Discard)), record.NewRecorder(history.NewWriter(io.Discard))}[i]
				if ds[i], err = New(c, mwcas.AsTarget(m), nil, rec); err != nil {
					b.Fatal(err)
				}
			}
			q := make([]int, threads)
			for i := range q {
				q[i] = 30000 / threads
			}
			var bin, txt []float64
			var el [3]time.Duration
			b.ResetTimer()
			for round := range b.N {
				for j := range ds {
					i := (round + j) % len(ds)
					start := time.Now()
					if _, err := ds[i].Segment(context.Background(), q, CrashPoint{}); err != nil {
						b.Fatal(err)
					}
					el[i] = time.Since(start)
				}
				bin = append(bin, 1-float64(el[0])/float64(el[1]))
				txt = append(txt, 1-float64(el[0])/float64(el[2]))
			}
			slices.Sort(bin)
			slices.Sort(txt)
			b.ReportMetric(100*bin[len(bin)/2], "binary-overhead-%")
			b.ReportMetric(100*txt[len(txt)/2], "text-overhead-%")
		})
	}
}

// TestUnrecorded checks that a driver with no recorder runs the very
// workload a recording driver runs (the baseline of pmlin bench logging):
// on one thread, where nothing interleaves, the same operations make the
// same region accesses and leave the target with the same values.
func TestUnrecorded(t *testing.T) {
	c := cfg(1, 64, 3, 7)
	c.Sched = Free
	c.Swaps, c.FailValues = 0.1, true
	var words [2][]uint64
	var segs [2]SegmentResult
	for i, recorded := range []bool{true, false} {
		r, m := setup(t, c, "")
		var rec *record.Recorder
		if recorded {
			rec = record.NewRecorder(history.NewWriter(io.Discard))
		}
		d, err := New(c, m, r, rec)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			seg, err := d.Segment(context.Background(), []int{700}, CrashPoint{})
			if err != nil || seg.Stuck != nil || seg.Failed != nil {
				t.Fatalf("recorded %v: %v %+v", recorded, err, seg)
			}
			segs[i].Invoked += seg.Invoked
			segs[i].Returned += seg.Returned
			segs[i].Accesses += seg.Accesses
		}
		addrs := make([]uint64, c.Words)
		for a := range addrs {
			addrs[a] = uint64(a)
		}
		words[i] = make([]uint64, c.Words)
		if err := m.Read(0, addrs, words[i]); err != nil {
			t.Fatal(err)
		}
	}
	if segs[0].Invoked != 2100 || segs[1].Invoked != 2100 || segs[1].Returned != 2100 || segs[0].Accesses != segs[1].Accesses {
		t.Errorf("recorded %+v, unrecorded %+v", segs[0], segs[1])
	}
	if !slices.Equal(words[0], words[1]) {
		t.Errorf("the target's words differ: recorded %v, unrecorded %v", words[0], words[1])
	}
	c.Sched = Deterministic
	r, m := setup(t, c, "")
	if _, err := New(c, m, r, nil); err == nil {
		t.Error("the deterministic scheduler took no recorder")
	}
}
