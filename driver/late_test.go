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
// releasing CAS, a worker keeps the lock: the others spin.
type casLock struct{ r *pmem.Region }

func (l casLock) CAS(w int, words []target.Word) (bool, uint64, error) {
	s := &pmem.Steps{W: l.r.Worker(w)}
	for s.Err == nil && !s.CAS(0, 0, uint64(w)+1) {
		s.Load(0)
	}
	ok := true
	for _, x := range words {
		if s.Load(1+x.Addr) != x.Old {
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
// another takes it) leave the segment clean.
func TestLateHoldCatchesWaiting(t *testing.T) {
	caught, clean := 0, 0
	for seed := range uint64(30) {
		r, err := pmem.NewMemory(16, pmem.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := cfg(3, 4, 2, seed)
		c.Late, c.StallAccesses = 0.05, 500
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
