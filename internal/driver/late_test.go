package driver

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// counterTarget keeps a counter in Go memory, shared by its workers (the
// volatile state of package target's contract), and increments it with a
// load and a store at every CAS: a lost update when another worker
// increments in between. With points, it marks the store with a
// scheduling point (pmem.Worker.Volatile). Its data words are untouched:
// one load of word 0 per operation is its region access.
type counterTarget struct {
	r          *pmem.Region
	ctr, calls *atomic.Uint64
	points     bool
}

func (c counterTarget) CAS(w int, _ []target.Word) (bool, uint64, error) {
	pw := c.r.Worker(w)
	if _, err := pw.Load(0); err != nil {
		return false, 0, err
	}
	c.calls.Add(1)
	v := c.ctr.Load()
	if c.points {
		if err := pw.Volatile(7); err != nil {
			return false, 0, err
		}
	}
	c.ctr.Store(v + 1)
	return true, 0, nil
}

func (c counterTarget) Read(w int, addrs, out []uint64) error {
	for i := range addrs {
		out[i] = 0
	}
	_, err := c.r.Worker(w).Load(0)
	return err
}

// counterRun runs the counter target and returns its history, what the
// segment did and the updates lost.
func counterRun(t *testing.T, late float64, points bool, seed uint64) (string, SegmentResult, uint64) {
	t.Helper()
	r, err := pmem.NewMemory(4, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := cfg(3, 4, 1, seed)
	c.Reads, c.Late = 0, late
	var ctr, calls atomic.Uint64
	h, seg := stallSegment(t, c, counterTarget{r, &ctr, &calls, points}, r, 40, 0)
	return h, seg, calls.Load() - ctr.Load()
}

// TestVolatilePoints: a step on volatile state is a switching point in
// late-write runs only. Without the policy, a target with points records
// the history of the same target without them, byte for byte, and its
// load and store of the counter are never split; with it, the seeded
// holds at the points split them (lost updates) in some runs, and a seed
// replays its history.
func TestVolatilePoints(t *testing.T) {
	lost := 0
	for seed := range uint64(20) {
		with, _, l := counterRun(t, 0, true, seed)
		without, _, _ := counterRun(t, 0, false, seed)
		if with != without || l != 0 {
			t.Fatalf("seed %d: without the policy, points changed the history or lost %d updates", seed, l)
		}
		h1, seg, l := counterRun(t, 0.5, true, seed)
		h2, _, _ := counterRun(t, 0.5, true, seed)
		if h1 != h2 {
			t.Fatalf("seed %d: the late-write run does not replay", seed)
		}
		if seg.Holds == 0 {
			t.Fatalf("seed %d: no hold at 120 volatile points", seed)
		}
		if l > 0 {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("no late-write run split a load and a store of the counter")
	}
}

// casLock is a MwCAS under one lock, region word 0, taken and released
// with a region CAS; its waits load the lock word. Held before its
// releasing CAS, a worker keeps the lock: the others spin. It compares
// its words with their values peeked, not loaded: a store of a word
// loaded in the operation is held more often (TestLateStore), and under
// the lock every such hold would catch.
type casLock struct{ r *pmem.Region }

func (l casLock) CAS(w int, words []target.Word) (bool, uint64, error) {
	s := &pmem.Steps{W: l.r.Worker(w)}
	for s.Err == nil && !s.CAS(0, 0, uint64(w)+1) {
		s.Load(0)
	}
	ok := true
	for _, x := range words {
		if l.r.Peek(1+x.Addr) != x.Old {
			ok = false
		}
	}
	if ok {
		for _, x := range words {
			s.Store(1+x.Addr, x.New)
		}
	}
	s.CAS(0, uint64(w)+1, 0)
	return ok && s.Err == nil, words[0].Addr, s.Err
}

func (l casLock) Read(w int, addrs, out []uint64) error {
	s := &pmem.Steps{W: l.r.Worker(w)}
	for s.Err == nil && !s.CAS(0, 0, uint64(w)+1) {
		s.Load(0)
	}
	for i, a := range addrs {
		out[i] = s.Load(1 + a)
	}
	s.CAS(0, uint64(w)+1, 0)
	return s.Err
}

// TestLateHoldCatchesWaiting: a worker held before the CAS that releases
// its lock (or held for good right after its late CAS took it) is held
// until the lock word changes, which only it can do: the others spin, and
// the one that reaches StallAccesses is reported stuck, naming the held
// worker. Holds that end (before taking the lock: the word changes when
// another takes it) leave the segment clean. An ABA hold before taking the
// lock ends when the lock is free again, so its CAS takes it: when it is
// then held for good, the others are stuck too; and a spinning CAS on the
// taken lock is stale (held ten times as often): hence a low probability,
// for some clean segments.
func TestLateHoldCatchesWaiting(t *testing.T) {
	caught, clean := 0, 0
	for seed := range uint64(30) {
		r, err := pmem.NewMemory(16, pmem.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := cfg(3, 4, 2, seed)
		c.Late, c.StallAccesses = 0.005, 500
		h, seg := stallSegment(t, c, casLock{r}, r, 30, 0)
		r.Close()
		s := seg.Stuck
		if s == nil {
			if seg.Returned != 90 {
				t.Fatalf("seed %d: %d returned, none stuck", seed, seg.Returned)
			}
			clean++
			check(t, h)
			continue
		}
		caught++
		st := s.Stalled
		// Held before its releasing CAS, or for good right after its late
		// CAS took the lock.
		if st == nil || !st.Late || st.Proc == s.Proc || s.Accesses < c.StallAccesses ||
			!(st.AtKind == pmem.AccessCAS && st.AtOff == 0 || st.Until == 0) {
			t.Fatalf("seed %d: %+v held %+v", seed, s, st)
		}
		if msg := s.String(); !strings.Contains(msg, fmt.Sprintf("process %d was held by the late-write policy", st.Proc)) ||
			!strings.Contains(msg, "not lock-free") {
			t.Fatalf("seed %d: %s", seed, msg)
		}
	}
	if caught == 0 || clean == 0 {
		t.Fatalf("%d segments caught, %d clean: want some of each", caught, clean)
	}
}

// flipTarget turns region word 0 round 0, 1, 2, 3, 0: each MwCAS loads
// it and CASes it to the next value once. A CAS that lands after others
// turned the word in between (four times or a multiple: the word holds the
// value loaded again) is an ABA landing, counted in aba.
type flipTarget struct {
	r          *pmem.Region
	flips, aba *atomic.Uint64
}

func (f flipTarget) CAS(w int, words []target.Word) (bool, uint64, error) {
	pw := f.r.Worker(w)
	v, err := pw.Load(0)
	if err != nil {
		return false, 0, err
	}
	seen := f.flips.Load()
	ok, err := pw.CAS(0, v, (v+1)%4)
	if err != nil {
		return false, 0, err
	}
	if ok {
		if f.flips.Load()-seen >= 4 {
			f.aba.Add(1)
		}
		f.flips.Add(1)
	}
	return false, words[0].Addr, nil // fails as a MwCAS: the data words are untouched
}

func (f flipTarget) Read(w int, addrs, out []uint64) error {
	for i := range addrs {
		out[i] = 0
	}
	return nil
}

// TestLateABA: a hold at a CAS may wait for the word to hold the value the
// CAS expects again after another (pmem.CASHook tells the scheduler that
// value), and the held worker then runs next, so its CAS lands. On the
// flip target such landings are rare under the uniform scheduler (the
// others must turn the word four times between a load and a CAS) and many
// under the policy.
func TestLateABA(t *testing.T) {
	landed := func(late float64) (n uint64) {
		for seed := range uint64(10) {
			r, err := pmem.NewMemory(4, pmem.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := cfg(3, 4, 1, seed)
			c.Reads, c.Late = 0, late
			var flips, aba atomic.Uint64
			stallSegment(t, c, flipTarget{r, &flips, &aba}, r, 40, 0)
			r.Close()
			n += aba.Load()
		}
		return n
	}
	without, with := landed(0), landed(0.3)
	if with < 20 || with < 4*without {
		t.Fatalf("ABA landings: %d with the policy, %d without", with, without)
	}
	t.Logf("ABA landings in 10 segments: %d with the policy, %d without", with, without)
}

func TestHoldABA(t *testing.T) {
	r, err := pmem.NewMemory(2, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := r.Worker(0)
	for _, c := range []struct {
		start uint64
		steps []uint64
		wake  int // index of the step after which the hold ends (-1: never)
	}{
		{5, []uint64{6, 7, 5}, 2},  // away, then back
		{5, []uint64{5, 5, 6}, -1}, // never away until the last step
		{6, []uint64{7, 5, 9}, 1},  // away at the hold: back is enough
	} {
		if err := w.Store(0, c.start); err != nil {
			t.Fatal(err)
		}
		h := &hold{need: 1, byValue: true, aba: true, expect: 5, key: lateKey{off: 0}}
		h.away = r.Peek(0) != h.expect
		got := -1
		for i, v := range c.steps {
			if err := w.Store(0, v); err != nil {
				t.Fatal(err)
			}
			if h.changed(r) {
				got = i
				break
			}
		}
		if got != c.wake {
			t.Fatalf("start %d, steps %v: woke after step %d, want %d", c.start, c.steps, got, c.wake)
		}
	}
}

// flagTarget raises a flag in region word 0 for each MwCAS (a CAS from 0
// to its worker's number, then back) and waits while another's flag is
// up; a read lowers any flag it finds. Its MwCAS are not
// obstruction-free: one whose flag's owner stops waits until a read comes.
type flagTarget struct{ r *pmem.Region }

func (f flagTarget) CAS(w int, words []target.Word) (bool, uint64, error) {
	s := &pmem.Steps{W: f.r.Worker(w)}
	for s.Err == nil && !s.CAS(0, 0, uint64(w)+1) {
		s.Load(0)
	}
	s.CAS(0, uint64(w)+1, 0)
	return false, words[0].Addr, s.Err
}

func (f flagTarget) Read(w int, addrs, out []uint64) error {
	s := &pmem.Steps{W: f.r.Worker(w)}
	if v := s.Load(0); v != 0 {
		s.CAS(0, v, 0)
	}
	for i := range addrs {
		out[i] = 0
	}
	return s.Err
}

// TestLateSolo: a worker held for good right after its late CAS (here:
// it raised the flag) leaves a MwCAS that waits for the flag spinning:
// reported stuck, naming the held worker. The others in an operation run
// alone then, one at a time; with this small bound (500 accesses) the
// test does not tell that from interleaved runs (with solo runs off it
// catches about as many), it checks the hold for good and the report.
func TestLateSolo(t *testing.T) {
	caught := 0
	for seed := range uint64(20) {
		r, err := pmem.NewMemory(8, pmem.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := cfg(4, 4, 1, seed)
		c.Reads, c.Late, c.StallAccesses = 0.5, 0.05, 500
		_, seg := stallSegment(t, c, flagTarget{r}, r, 40, 0)
		r.Close()
		if s := seg.Stuck; s != nil {
			if st := s.Stalled; st == nil || !st.Late || st.Proc == s.Proc {
				t.Fatalf("seed %d: %+v held %+v", seed, s, st)
			}
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("no MwCAS stuck behind a flag held for good")
	}
	t.Logf("%d of 20 segments stuck", caught)
}

// rmwStore increments region word 0 with a load and a plain store (a
// read-modify-write that should be a CAS: updates are lost when another
// increments in between); with fresh, it stores to a word of its own that
// it never loads, after a load of word 0.
type rmwStore struct {
	r     *pmem.Region
	fresh bool
}

func (x rmwStore) CAS(w int, _ []target.Word) (bool, uint64, error) {
	s := &pmem.Steps{W: x.r.Worker(w)}
	v := s.Load(0)
	if x.fresh {
		s.Store(1+uint64(w), v+1)
	} else {
		s.Store(0, v+1)
	}
	return s.Err == nil, 0, s.Err
}

func (x rmwStore) Read(w int, addrs, out []uint64) error {
	for i := range addrs {
		out[i] = 0
	}
	_, err := x.r.Worker(w).Load(0)
	return err
}

// TestLateStore: the late-write policy holds a worker before a plain
// store to a word it loaded in its operation (at least with probability
// lateVolatile), until its bound: the increments it then overwrites are
// lost, more of them than the scheduler's switches alone lose. A store
// to a word the operation did not load is never held. A seed replays.
func TestLateStore(t *testing.T) {
	run := func(seed uint64, late float64, fresh bool) (string, SegmentResult, uint64) {
		r, err := pmem.NewMemory(8, pmem.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c := cfg(3, 4, 1, seed)
		c.Reads, c.Late = 0, late
		h, seg := stallSegment(t, c, rmwStore{r, fresh}, r, 40, 0)
		return h, seg, r.Peek(0)
	}
	var lostLate, lostPlain uint64
	for seed := range uint64(20) {
		h, seg, v := run(seed, 0.02, false)
		if seg.Holds == 0 {
			t.Fatalf("seed %d: no hold at 120 plain stores of a word just loaded", seed)
		}
		if again, _, _ := run(seed, 0.02, false); again != h {
			t.Fatalf("seed %d: the late-write run does not replay", seed)
		}
		lostLate += 120 - v
		_, _, v = run(seed, 0, false)
		lostPlain += 120 - v
		if _, seg, _ := run(seed, 0.02, true); seg.Holds != 0 {
			t.Fatalf("seed %d: %d holds at stores to words not loaded", seed, seg.Holds)
		}
	}
	if lostLate <= lostPlain {
		t.Fatalf("late stores lost %d increments, the scheduler alone %d", lostLate, lostPlain)
	}
}
