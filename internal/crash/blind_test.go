package crash

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// wrapped is the PMwCAS with a header line of its own at the end of the
// region, written by New (made durable only if persist) and checked by
// Open; and, if set, a Recover that precedes the PMwCAS's with a hook of
// the test's (a loop, a panic).
type wrapped struct {
	target.Instance
	before func(r *pmem.Region) error
	r      *pmem.Region
}

func (w wrapped) Recover(worker int) (string, error) {
	if w.before != nil {
		if err := w.before(w.r); err != nil {
			return "", err
		}
	}
	return w.Instance.Recover(worker)
}

const headerMagic = 0x5244484e45505257

func wrappedTarget(persist bool, before func(*pmem.Region) error) *target.Target {
	t := mwcas.Target()
	inner := *t
	t.Name = "wrapped"
	t.Mutants = nil
	t.Size = func(c target.Config) (uint64, error) {
		n, err := inner.Size(c)
		return n + 8, err
	}
	t.New = func(r *pmem.Region, c target.Config) (target.Instance, error) {
		in, err := inner.New(r, c)
		if err != nil {
			return nil, err
		}
		s := pmem.Steps{W: r.Worker(0)}
		s.Store(r.Words()-8, headerMagic)
		if persist {
			s.Persist(r.Words() - 8)
		}
		return wrapped{in, before, r}, s.Err
	}
	t.Open = func(r *pmem.Region, c target.Config) (target.Instance, error) {
		s := pmem.Steps{W: r.Worker(0)}
		if v := s.Load(r.Words() - 8); s.Err == nil && v != headerMagic {
			return nil, fmt.Errorf("no header: word %d holds %#x", r.Words()-8, v)
		}
		if s.Err != nil {
			return nil, s.Err
		}
		in, err := inner.Open(r, c)
		if err != nil {
			return nil, err
		}
		return wrapped{in, before, r}, nil
	}
	return t
}

// TestReopenFindsUnpersistedNew: a New that does not make what Open needs
// durable is found at the first crash that drops it, because recovery
// starts from the image reopened and opened as after a restart.
func TestReopenFindsUnpersistedNew(t *testing.T) {
	for _, persist := range []bool{false, true} {
		c := pmwcasRun()
		c.Target, c.Ops = wrappedTarget(persist, nil), 200
		_, f, err := Fuzz(context.Background(), FuzzConfig{Run: c, Seed: 3, MaxRuns: 20, Mix: DefaultMix()})
		switch {
		case err != nil:
			t.Fatal(err)
		case persist && f != nil:
			t.Fatalf("persisted header: %+v", f.Verdict.Anomalies)
		case !persist && (f == nil || f.Verdict.Anomalies[0].Kind != Corrupt ||
			!strings.Contains(f.Verdict.Anomalies[0].Explanation, "the target's Open refused the crash image, reopened as a new process would: no header")):
			t.Fatalf("unpersisted header: %+v", f)
		}
	}
}

// TestRecoveryUnderFire: recoveries crashed many times, and right after
// each of their flushes and fences in turn, said so in the history, leave
// the correct PMwCAS linearizable, and replay byte for byte.
func TestRecoveryUnderFire(t *testing.T) {
	for _, sweep := range []bool{false, true} {
		c := config(3, 6, 3, 5)
		c.Ops, c.Crashes = 300, 4
		if sweep {
			c.RecoverySweep = true
		} else {
			c.RecoveryCrash, c.RecoveryCrashes = FireCrash, FireCrashes
		}
		v := mustCheck(t, c, history.Strict)
		res, h := mustRun(t, c)
		if _, h2 := mustRun(t, c); h2 != h {
			t.Fatal("does not replay")
		}
		if v.Violated() || res.RecoveryCrashes < c.Crashes {
			t.Fatalf("sweep %v: %d recovery crashes, %+v", sweep, res.RecoveryCrashes, v.Anomalies)
		}
		if sweep && !strings.Contains(h, "(right after its flush or fence 1), image policy") ||
			sweep && !strings.Contains(h, "(right after its flush or fence 2), image policy") {
			t.Fatalf("sweep: the crashes after each flush and fence are not in the history:\n%s", h)
		}
		if !strings.Contains(h, "; recovery crashed at its access") {
			t.Fatalf("sweep %v: the recovery crashes are not in the history", sweep)
		}
	}
}

// reentrantRecover is a recovery that breaks the image if it is crashed
// midway: it makes a bad header durable, then the good one again, so a
// crash right after the first Persist leaves an image Open refuses.
func reentrantRecover(r *pmem.Region) error {
	s := pmem.Steps{W: r.Worker(0)}
	s.Store(r.Words()-8, 0xbad)
	s.Persist(r.Words() - 8)
	s.Store(r.Words()-8, headerMagic)
	s.Persist(r.Words() - 8)
	return s.Err
}

// TestSweepFindsFragileRecovery: a recovery that is correct when it runs
// to its end but not when crashed right after one of its fences is found
// in the first run of the sweep, and in no run without crashes of
// recoveries.
func TestSweepFindsFragileRecovery(t *testing.T) {
	for _, sweep := range []bool{false, true} {
		c := pmwcasRun()
		c.Target, c.Ops, c.Crashes = wrappedTarget(true, reentrantRecover), 200, 2
		c.RecoveryCrash, c.RecoverySweep = 0, sweep
		v := mustCheck(t, c, history.Strict)
		switch {
		case !sweep && v.Violated():
			t.Fatalf("no recovery crash: %+v", v.Anomalies)
		case sweep && (!v.Violated() || v.Anomalies[0].Kind != Corrupt ||
			!strings.Contains(v.Anomalies[0].Explanation, "refused the crash image, reopened as a new process would: no header: word")):
			t.Fatalf("sweep: %+v", v.Anomalies)
		}
	}
}

// TestMixReplays: a run the mix drew replays from the flags its Config
// renders (its replay command): the drawn words, k, layout, stall, late
// writes and recoveries under fire are all in them.
func TestMixReplays(t *testing.T) {
	fc := FuzzConfig{Run: pmwcasRun(), Seed: 12, MaxRuns: 60, Mix: Mix{Shapes: 0.6, Crowd: 0.5, Stall: 0.5, Lone: 0.5, Fire: 0.5, Late: 0.5, LateCrash: 0.5, Rare: 0.5, Optional: true}}
	fc.Run.Ops = 200
	g, err := newGenerator(fc, fc.Run)
	if err != nil {
		t.Fatal(err)
	}
	var seen drawn
	for {
		_, rc, d, ok, err := g.next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		seen.shaped, seen.stalled, seen.lone, seen.fire, seen.swept, seen.optional = seen.shaped || d.shaped, seen.stalled || d.stalled, seen.lone || d.lone, seen.fire || d.fire, seen.swept || d.swept, seen.optional || d.optional
		seen.late, seen.lateCrash, seen.crowded, seen.rare = seen.late || d.late, seen.lateCrash || d.lateCrash, seen.crowded || d.crowded, seen.rare || d.rare
		if d.crowded && (d.shaped || rc.Driver.K < 3 || rc.Driver.Words < uint64(rc.Driver.K) || rc.Driver.Words > 2*uint64(rc.Driver.K)) {
			t.Fatalf("a crowded run drew %s", rc.Flags())
		}
		if !d.shaped && !d.crowded && !d.stalled && !d.fire && !d.optional && !d.late && !d.rare {
			continue
		}
		replay := parseArgs(t, rc.Args())
		replay.Target, replay.Child = rc.Target, rc.Child
		ps, err := resolveParams(rc.Target, rc.Params) // Args renders every parameter
		if err != nil {
			t.Fatal(err)
		}
		rc.Params = ps
		if !reflect.DeepEqual(replay, rc) {
			t.Fatalf("the replay flags %q lose what was drawn:\n%+v\n%+v", rc.Flags(), rc, replay)
		}
		_, h1 := mustRun(t, rc)
		_, h2 := mustRun(t, replay)
		if h1 != h2 {
			t.Fatalf("%s: the replay records another history", rc.Flags())
		}
	}
	// (A filled shape is a keyed data structure's: none here.)
	if seen != (drawn{shaped: true, crowded: true, stalled: true, lone: true, fire: true, swept: true, late: true, lateCrash: true, rare: true, optional: true}) {
		t.Fatalf("the mix drew %+v in 60 runs", seen)
	}
	// What the user set is kept.
	fc.Mix.Keep = map[string]bool{"words": true, "k": true, "stride": true, "stall": true, "threads": true, "recovery-sweep": true, "swaps": true, "late": true}
	fc.Run.Driver.Words, fc.Run.Driver.K = 5, 3
	fc.Mix.Keep["stall"] = false // a stalled run keeps --threads
	if g, err = newGenerator(fc, fc.Run); err != nil {
		t.Fatal(err)
	}
	for range 40 {
		_, rc, d, _, _ := g.next(context.Background())
		if rc.Driver.Words != 5 || rc.Driver.K != 3 || rc.Params["stride"] != "" || d.crowded || d.lone || rc.Driver.Threads != fc.Run.Driver.Threads || d.fire || d.optional || rc.Driver.Swaps != 0 || d.late {
			t.Fatalf("the mix drew a kept flag: %s", rc.Flags())
		}
	}
}

// spinning holds spinRecover's loops until the (sub)test that started
// them ends: a goroutine the watchdog abandons cannot be killed, and one
// left spinning would starve the tests after it (on a small machine, long
// enough for their watchdogs to fire).
var spinning atomic.Bool

// spinRecover loops without a region access while spinning is set;
// panicRecover panics.
func spinRecover(*pmem.Region) error {
	x := uint64(1)
	for x != 0 && spinning.Load() {
		x = x*3 | 1
	}
	return nil
}

// spinUntilCleanup sets spinning for the rest of t.
func spinUntilCleanup(t *testing.T) {
	spinning.Store(true)
	t.Cleanup(func() { spinning.Store(false) })
}

func panicRecover(*pmem.Region) error {
	var m map[string]int
	m["x"]++
	return nil
}

// spinTarget is the PMwCAS whose CAS of address 0 spins without region
// accesses (under the free scheduler too).
func spinTarget() *target.Target {
	t := mwcas.Target()
	inner := t.New
	t.Name, t.Mutants = "spin", nil
	t.New = func(r *pmem.Region, c target.Config) (target.Instance, error) {
		in, err := inner(r, c)
		return spinInstance{in}, err
	}
	return t
}

type spinInstance struct{ target.Instance }

func (s spinInstance) CAS(w int, words []target.Word) (bool, uint64, error) {
	for _, x := range words {
		if x.Addr == 0 {
			spinRecover(nil)
		}
	}
	return s.Instance.CAS(w, words)
}

// TestBudgetsHold: target code that loops without region accesses, in an
// operation (either scheduler) or in recovery, is stopped by wall time and
// reported stuck, with where it was; one that panics is corrupt; and a
// campaign ends within its time plus a small bound, whatever it runs.
func TestBudgetsHold(t *testing.T) {
	recovering := func(before func(*pmem.Region) error) Config {
		c := pmwcasRun()
		c.Target = wrappedTarget(true, before)
		return c
	}
	spinner := func(s string) Config {
		c := pmwcasRun()
		c.Target = spinTarget()
		c.Driver.Sched, _ = driver.ParseSched(s)
		return c
	}
	for _, tc := range []struct {
		name string
		c    Config
		kind string
		says string
	}{
		{"recovery spins", recovering(spinRecover), "stuck", "recovery after the crash at line"},
		{"recovery panics", recovering(panicRecover), "corrupt", "panic: assignment to entry in nil map"},
		{"operation spins (deterministic)", spinner("deterministic"), "stuck", "without a region access"},
		{"operation spins (free)", spinner("free"), "stuck", "without a region access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spinUntilCleanup(t)
			c := tc.c
			// Well under the default (2 s), well over what a thread
			// waits for a CPU on a loaded machine.
			c.Driver.StuckAfter = 500 * time.Millisecond
			start := time.Now()
			_, f, err := Fuzz(context.Background(), FuzzConfig{Run: c, Seed: 1, Duration: 20 * time.Second, Jobs: 2})
			if err != nil || f == nil {
				t.Fatalf("%v %v", err, f)
			}
			a := f.Verdict.Anomalies[0]
			if string(a.Kind) != tc.kind || !strings.Contains(a.Explanation, tc.says) || !strings.Contains(a.Explanation, "blind_test.go") {
				t.Fatalf("%s: %s", a.Kind, a.Explanation)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("found after %v", took)
			}
		})
	}
	// A campaign whose runs all spin ends on time.
	spinUntilCleanup(t)
	c := spinner("deterministic")
	c.Driver.StuckAfter = time.Hour
	start := time.Now()
	if _, _, err := Fuzz(context.Background(), FuzzConfig{Run: c, Seed: 1, Duration: 300 * time.Millisecond, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	// The bound: the watchdog's grace after a cancel (250 ms) and a tick
	// (100 ms), plus generous room for a loaded machine under -race (2 s
	// was tight there); a campaign that does not end on time spins for
	// ever (StuckAfter is an hour), so 10 s still catches it.
	if took := time.Since(start); took > 300*time.Millisecond+10*time.Second {
		t.Fatalf("a 0.3 s campaign took %v", took)
	}
}

// TestMixLone: the lone share takes a stalled run to two threads and
// changes nothing else the run drew (its draw is a stream of its own, so
// the pinned runs that do not draw it keep their histories).
func TestMixLone(t *testing.T) {
	lone, stalled := 0, 0
	for i := range int64(400) {
		with, without := pmwcasRun(), pmwcasRun()
		with.Driver.Seed, without.Driver.Seed = RunSeed(3, i), RunSeed(3, i)
		m := DefaultMix()
		dw := m.draw(&with)
		m.Lone = 0
		dn := m.draw(&without)
		if dw.lone {
			lone++
			if !dw.stalled || with.Driver.Threads != 2 {
				t.Fatalf("run %d: lone with stalled %v, %d threads", i, dw.stalled, with.Driver.Threads)
			}
			with.Driver.Threads = without.Driver.Threads
		}
		dw.lone = false
		if dw != dn || !reflect.DeepEqual(with, without) {
			t.Fatalf("run %d: the lone draw moved another: %+v %s, %+v %s", i, dw, with.Flags(), dn, without.Flags())
		}
		if dn.stalled {
			stalled++
		}
	}
	if stalled == 0 || lone < stalled/3 || lone > 2*stalled/3 {
		t.Fatalf("%d lone runs of %d stalled (share %v)", lone, stalled, DefaultMixLone)
	}
}
