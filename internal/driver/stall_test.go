package driver

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// lockTarget is a MwCAS under one lock, region word 0, taken with a region
// CAS: it blocks by design. Its waits load the lock word (a spin the
// progress check must catch, like a PMwCAS that waits for a descriptor's
// owner instead of helping it) or, with declared, are declared waits.
type lockTarget struct {
	r        *pmem.Region
	declared bool
}

func (l lockTarget) lock(s *pmem.Steps, w int) {
	for s.Err == nil && !s.CAS(0, 0, uint64(w)+1) {
		if l.declared {
			s.Wait()
		} else {
			s.Load(0)
		}
	}
}

func (l lockTarget) CAS(w int, words []target.Word) (bool, uint64, error) {
	s := &pmem.Steps{W: l.r.Worker(w)}
	l.lock(s, w)
	for _, x := range words {
		if v := s.Load(1 + x.Addr); s.Err == nil && v != x.Old {
			s.Store(0, 0)
			return false, x.Addr, s.Err
		}
	}
	for _, x := range words {
		s.Store(1+x.Addr, x.New)
	}
	s.Store(0, 0)
	return s.Err == nil, 0, s.Err
}

func (l lockTarget) Read(w int, addrs, out []uint64) error {
	s := &pmem.Steps{W: l.r.Worker(w)}
	l.lock(s, w)
	for i, a := range addrs {
		out[i] = s.Load(1 + a)
	}
	s.Store(0, 0)
	return s.Err
}

// stallSegment runs one segment of ops operations per worker on target
// ops over region r, stalling at access stall.
func stallSegment(t *testing.T, c Config, ops target.Ops, r *pmem.Region, n int, stall int64) (string, SegmentResult) {
	t.Helper()
	var buf bytes.Buffer
	rec := record.NewRecorder(history.NewWriter(&buf))
	rec.Header()
	d, err := New(c, ops, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	quota := make([]int, c.Threads)
	for i := range quota {
		quota[i] = n
	}
	seg, err := d.Segment(context.Background(), quota, CrashPoint{Stall: stall})
	if err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	return buf.String(), seg
}

// TestStallCatchesWaiting: a worker stopped while it holds the lock makes
// the others spin on it: stuck, naming the stopped process and where it
// stopped. With declared waits, the stopped worker is released once the
// others all wait, and the segment ends cleanly.
func TestStallCatchesWaiting(t *testing.T) {
	caught, stalled := 0, 0
	for seed := range uint64(40) {
		for _, declared := range []bool{false, true} {
			r, err := pmem.NewMemory(16, pmem.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := cfg(3, 4, 2, seed)
			c.StuckAccesses = 2000
			h, seg := stallSegment(t, c, lockTarget{r, declared}, r, 30, 1+int64(seed)*37%400)
			r.Close()
			if seg.Stall != nil {
				stalled++
			}
			s := seg.Stuck
			switch {
			case declared && (s != nil || seg.Stall != nil && !seg.Stall.Released || seg.Returned != 90):
				t.Fatalf("seed %d, declared waits: stuck %v, stall %+v, %d returned", seed, s, seg.Stall, seg.Returned)
			case declared:
				check(t, h)
			case s == nil && seg.Returned != 90:
				t.Fatalf("seed %d: %d returned, none stuck", seed, seg.Returned)
			case s != nil:
				caught++
				st := s.Stalled
				lines := strings.Split(h, "\n")
				if st == nil || st.Proc == s.Proc || !strings.HasPrefix(lines[st.Line-1], fmt.Sprintf("%d inv ", st.Proc)) ||
					!strings.HasPrefix(lines[s.Line-1], fmt.Sprintf("%d inv ", s.Proc)) || st.Access < 1 {
					t.Fatalf("seed %d: %+v stalled %+v\n%s", seed, s, st, h)
				}
				if msg := s.String(); !strings.Contains(msg, fmt.Sprintf("process %d was stopped for good inside its", st.Proc)) ||
					!strings.Contains(msg, "not lock-free") {
					t.Fatalf("seed %d: %s", seed, msg)
				}
			}
		}
	}
	// Where the stall falls while its worker holds the lock, the others
	// are caught waiting (elsewhere, at the lock CAS or in a spin, the
	// others finish).
	if stalled < 60 || caught < 5 {
		t.Fatalf("%d of 80 segments stalled a worker; the lock holder was caught in %d of 40 seeds", stalled, caught)
	}
	t.Logf("%d of 80 segments stalled a worker; the lock holder was caught in %d of 40 seeds", stalled, caught)
}

// TestStallPMwCAS: the correct PMwCAS finishes every operation of the
// others while a worker is stopped (its one wait, for reclamation, is
// declared), and a stalled run replays byte for byte.
func TestStallPMwCAS(t *testing.T) {
	stalled := 0
	for seed := range uint64(30) {
		c := cfg(4, 5, 2, seed)
		r, m := setup(t, c, "")
		h, seg := stallSegment(t, c, m, r, 80, 1+int64(seed)*61%2000)
		if seg.Stuck != nil || seg.Failed != nil || seg.Blocked != nil || seg.Returned != 320 {
			t.Fatalf("seed %d: %+v", seed, seg)
		}
		if res := check(t, h); !res.Linearizable {
			t.Fatalf("seed %d: %+v", seed, res.Anomalies)
		}
		if seg.Stall != nil {
			stalled++
			r2, m2 := setup(t, c, "")
			if h2, _ := stallSegment(t, c, m2, r2, 80, 1+int64(seed)*61%2000); h2 != h {
				t.Fatalf("seed %d: a stalled segment does not replay", seed)
			}
		}
	}
	if stalled < 25 {
		t.Fatalf("%d of 30 segments stalled a worker", stalled)
	}
}

// quiet is a target whose CAS spins in Go without region accesses (wait
// false) or waits on a channel nobody sends on (wait true).
// Its spin ends when stop is set (at the test's cleanup): abandoned
// spinners would otherwise pile up in the test binary and starve the
// later tests' workers of CPU.
type quiet struct {
	r    *pmem.Region
	wait bool
	stop *atomic.Bool
}

func (q quiet) CAS(w int, words []target.Word) (bool, uint64, error) {
	if _, err := q.r.Worker(w).Load(0); err != nil {
		return false, 0, err
	}
	if q.wait {
		<-make(chan struct{})
	}
	x := uint64(0)
	for !q.stop.Load() {
		x = spinStep(x)
	}
	// Back from the target after the watchdog took its log: the worker
	// must not touch it (-race).
	return false, x, nil
}

//go:noinline
func spinStep(x uint64) uint64 { return x*6364136223846793005 + 1 }

func (q quiet) Read(w int, addrs, out []uint64) error {
	clear(out)
	_, err := q.r.Worker(w).Load(0)
	return err
}

// TestSilentWorker: a worker that spins without region accesses is stuck
// (found running, where), under both schedulers; one that waits in Go is
// blocked under the deterministic scheduler, stuck under the free one; and
// a canceled segment returns soon even if a worker never does.
func TestSilentWorker(t *testing.T) {
	for _, tc := range []struct {
		sched  Sched
		wait   bool
		cancel bool
	}{{Deterministic, false, false}, {Free, false, false}, {Deterministic, true, false}, {Free, true, false}, {Deterministic, false, true}, {Free, false, true}} {
		t.Run(fmt.Sprintf("%s wait %v cancel %v", tc.sched, tc.wait, tc.cancel), func(t *testing.T) {
			r, err := pmem.NewMemory(8, pmem.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			rec := record.NewRecorder(history.NewWriter(&buf))
			rec.Header()
			c := cfg(2, 2, 1, 3)
			c.Sched, c.StuckAfter, c.Reads = tc.sched, 200*time.Millisecond, 0
			if tc.cancel {
				c.StuckAfter = time.Hour
			}
			var stop atomic.Bool
			t.Cleanup(func() { stop.Store(true) })
			d, err := New(c, quiet{r, tc.wait, &stop}, r, rec)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			if tc.cancel {
				ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
			}
			defer cancel()
			start := time.Now()
			seg, err := d.Segment(ctx, []int{5, 5}, CrashPoint{})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			switch {
			case tc.cancel:
				// Generous for a loaded -race machine; an uncanceled
				// segment stalls for ever.
				if took > 10*time.Second || seg.Stuck != nil || seg.Blocked != nil {
					t.Fatalf("canceled segment: %+v after %v", seg, took)
				}
			case tc.wait && tc.sched == Deterministic:
				if b := seg.Blocked; b == nil || !strings.Contains(b.Where, "it waits in") || !strings.Contains(b.Where, "stall_test.go") {
					t.Fatalf("%+v", seg)
				}
			default:
				s := seg.Stuck
				if s == nil || s.Quiet < c.StuckAfter || !strings.Contains(s.String(), "without a region access") || !strings.Contains(s.Where, "stall_test.go") {
					t.Fatalf("%+v", s)
				}
				if want := "it runs at"; !tc.wait && !strings.Contains(s.Where, want) {
					t.Fatalf("%q: not %q", s.Where, want)
				}
			}
			if took > 10*time.Second {
				t.Fatalf("took %v", took)
			}
			if _, err := d.Segment(context.Background(), []int{1, 1}, CrashPoint{}); err == nil {
				t.Fatal("a driver that abandoned a worker ran another segment")
			}
		})
	}
}

// panicker is a target whose CAS panics.
type panicker struct{ r *pmem.Region }

func (p panicker) CAS(w int, words []target.Word) (bool, uint64, error) {
	if _, err := p.r.Worker(w).Load(0); err != nil {
		return false, 0, err
	}
	var a []int
	return a[len(words)] == 0, 0, nil
}

func (p panicker) Read(w int, addrs, out []uint64) error {
	clear(out)
	_, err := p.r.Worker(w).Load(0)
	return err
}

// TestPanicIsAFinding: a panic of the target's code fails the operation,
// with where it panicked; the segment stops, the process goes on.
func TestPanicIsAFinding(t *testing.T) {
	for _, sched := range []Sched{Deterministic, Free} {
		r, err := pmem.NewMemory(8, pmem.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := cfg(3, 2, 1, 9)
		c.Sched, c.Reads = sched, 0
		h, seg := stallSegment(t, c, panicker{r}, r, 5, 0)
		f := seg.Failed
		if f == nil || !strings.Contains(f.Error(), "panic: runtime error: index out of range") || !strings.Contains(f.Error(), "stall_test.go") {
			t.Fatalf("%s: %+v", sched, seg)
		}
		check(t, h)
	}
}

// TestSilencePause: a worker is silent after StuckAfter by the clock during
// most of which the watchdog ticked, not at the first tick after a pause of
// the whole process (at most one tick pending: the ticker drops the rest).
func TestSilencePause(t *testing.T) {
	bound := 50 * time.Millisecond
	every := tickEvery(bound)
	t0 := time.Unix(1000, 0)
	var q silence
	q.reset(t0)
	now := t0.Add(2 * bound) // the process paused: one tick pending
	if q.over(now, bound) {
		t.Fatal("silent at the first tick after a pause")
	}
	ticks := 1
	for !q.over(now.Add(time.Duration(ticks)*every), bound) {
		ticks++
		if ticks > 100 {
			t.Fatal("never silent")
		}
	}
	if ticks+1 != 3 {
		t.Fatalf("silent after %d ticks of %v past the pause, want 3 (three quarters of the bound)", ticks+1, every)
	}
	q.reset(t0) // steady ticks: silent once the bound has passed
	for i := 1; ; i++ {
		now := t0.Add(time.Duration(i) * every)
		if q.over(now, bound) {
			if now.Sub(t0) != bound {
				t.Fatalf("silent %v after the last progress, want %v", now.Sub(t0), bound)
			}
			break
		}
	}
}

// TestClaim: the watchdog takes a free worker's log only while the worker
// runs the target's code; back from it, the worker finds the log taken and
// touches it no more. The concurrent half is for -race: the worker writes
// its "log" only in the driver's code, the watchdog reads it once claimed.
func TestClaim(t *testing.T) {
	var ws wstate
	if ws.claim() {
		t.Fatal("claimed a worker in the driver's code")
	}
	if !ws.publish(inTarget) || !ws.publish(inTarget) || !ws.publish(inDriver) || ws.claim() {
		t.Fatal("heartbeats, or a claim in the driver's code")
	}
	if !ws.publish(inTarget) || !ws.claim() || !ws.claim() {
		t.Fatal("not claimed in the target's code")
	}
	if ws.publish(inDriver) || ws.publish(inTarget) {
		t.Fatal("a claimed worker published")
	}
	for range 200 {
		var w wstate
		var log [4]int64
		done := make(chan int)
		go func() {
			n := 0
			for w.publish(inTarget) && w.publish(inDriver) {
				n++
				log[n%4] = int64(n)
			}
			done <- n
		}()
		for !w.claim() {
		}
		sum := log[0] + log[1] + log[2] + log[3]
		if n := <-done; sum < 0 || n < 0 {
			t.Fatal(sum, n)
		}
	}
}
