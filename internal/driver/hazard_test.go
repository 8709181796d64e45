package driver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// cowTarget is a lock-free MwCAS for the progress check's tests: the data
// words live in immutable blocks, region word 0 names the current one, and
// a CAS copies it into a block of its own with its new values and swings
// word 0 to it (one region CAS). Blocks are reclaimed with hazard slots
// kept in the region (slots per worker, from word 1 on, a block+1 each;
// a worker publishes in its first, the others stand for the hazards of a
// design that protects more than one block at a time): a reader
// publishes the block it reads and checks word 0 again, and a worker
// reuses one of its own blocks only when word 0 does not name it and no
// hazard slot of the others does, reading all of them. So a worker stopped after publishing a hazard
// keeps that block from reuse, and its owner waits for it, by design: a
// wait loop that scans the hazard slots each round and, with declared,
// ends each round with one pmem.Worker.Wait (the lock-free designs of
// Guerraoui et al., DISC 2020, reuse descriptors so); without declared it
// spins on its loads, which the progress check must report.
//
// A block holds one entry per data word, three region words each
// (address, value, address^value, a check against a torn block), in an
// order that rotates with every copy, and an operation looks each of its
// addresses up by scanning the whole block and checking every entry: a
// correct operation of 3·k·words region accesses, O(k^2) when k = words,
// as a read that scans a descriptor's entries for each of its words is.
type cowTarget struct {
	r        *pmem.Region
	words    uint64
	threads  int
	pool     int    // blocks per worker
	slots    uint64 // hazard slots per worker
	declared bool
}

// newCOW formats a region for the target: block 0 holds the initial
// values (all 0) and is never reused.
func newCOW(t testing.TB, threads int, words uint64, pool int, slots uint64, declared bool) cowTarget {
	t.Helper()
	c := cowTarget{words: words, threads: threads, pool: pool, slots: slots, declared: declared}
	r, err := pmem.NewMemory(c.block(uint64(1+threads*pool)), pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c.r = r
	s := &pmem.Steps{W: r.Worker(0)}
	for a := range words {
		s.Store(c.block(0)+3*a, a)
		s.Store(c.block(0)+3*a+2, a)
	}
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	return c
}

// block is the region offset of block b.
func (c cowTarget) block(b uint64) uint64 { return 1 + uint64(c.threads)*c.slots + 3*c.words*b }

// hazard is the region offset of worker w's first hazard slot.
func (c cowTarget) hazard(w int) uint64 { return 1 + uint64(w)*c.slots }

var errTorn = errors.New("cow: torn block")

// protect publishes worker w's hazard on the current block and returns it.
func (c cowTarget) protect(s *pmem.Steps, w int) uint64 {
	for s.Err == nil {
		b := s.Load(0)
		s.Store(c.hazard(w), b+1)
		if s.Load(0) == b {
			return b
		}
	}
	return 0
}

// lookup is the value of address a in block b: a scan of every entry.
func (c cowTarget) lookup(s *pmem.Steps, b, a uint64) uint64 {
	base, v := c.block(b), uint64(0)
	for e := range c.words {
		x, y, z := s.Load(base+3*e), s.Load(base+3*e+1), s.Load(base+3*e+2)
		if s.Err == nil && x^y != z {
			s.Err = fmt.Errorf("%w: block %d entry %d", errTorn, b, e)
		}
		if x == a {
			v = y
		}
	}
	return v
}

// alloc is one of worker w's blocks that neither word 0 nor a hazard
// slot names: it scans them, and waits a round (with declared, one
// declared wait per round) if all are taken.
func (c cowTarget) alloc(s *pmem.Steps, w int) uint64 {
	for s.Err == nil {
		root := s.Load(0)
		for i := range c.pool {
			b := uint64(1 + w*c.pool + i)
			if b == root {
				continue
			}
			held := false
			for h := range c.threads {
				for j := range c.slots {
					if h != w && s.Load(c.hazard(h)+j) == b+1 {
						held = true
					}
				}
			}
			if !held {
				return b
			}
		}
		if c.declared {
			s.Wait()
		}
	}
	return 0
}

func (c cowTarget) CAS(w int, words []target.Word) (bool, uint64, error) {
	s := &pmem.Steps{W: c.r.Worker(w)}
	defer s.Store(c.hazard(w), 0)
	for {
		b := c.protect(s, w)
		for _, x := range words {
			if v := c.lookup(s, b, x.Addr); s.Err == nil && v != x.Old {
				return false, x.Addr, s.Err
			}
		}
		n := c.alloc(s, w)
		from, to := c.block(b), c.block(n)
		for e := range c.words {
			src := from + 3*((e+1)%c.words)
			a, v := s.Load(src), s.Load(src+1)
			for _, x := range words {
				if x.Addr == a {
					v = x.New
				}
			}
			s.Store(to+3*e, a)
			s.Store(to+3*e+1, v)
			s.Store(to+3*e+2, a^v)
		}
		if s.CAS(0, b, n) || s.Err != nil {
			return s.Err == nil, 0, s.Err
		}
	}
}

func (c cowTarget) Read(w int, addrs, out []uint64) error {
	s := &pmem.Steps{W: c.r.Worker(w)}
	b := c.protect(s, w)
	for i, a := range addrs {
		out[i] = c.lookup(s, b, a)
	}
	s.Store(c.hazard(w), 0)
	return s.Err
}

// TestStallQuadraticRead: at the largest k, with k = words, an operation
// of cowTarget makes 3·64·64 = 12,288 region accesses; while a worker is
// stopped (or held by the late-write policy) that is no sign of a wait
// for it, and the stall bound, scaled by k, lets it finish: every
// operation returns, the history is linearizable. (With the fixed bound
// of 10,000 accesses an operation invoked during the stall was reported
// stuck in most seeds.)
func TestStallQuadraticRead(t *testing.T) {
	stalled := 0
	for seed := range uint64(4) {
		c := cfg(3, target.MaxK, target.MaxK, seed)
		c.Reads = 0.5
		if seed%2 == 1 {
			c.Late = 0.05
		}
		x := newCOW(t, c.Threads, c.Words, 2, 1, true)
		h, seg := stallSegment(t, c, x, x.r, 4, 1+int64(seed)*4001%30000)
		if seg.Stuck != nil || seg.Failed != nil || seg.Blocked != nil || seg.Returned != 12 {
			t.Fatalf("seed %d: stuck %v, failed %v, blocked %v, %d returned", seed, seg.Stuck, seg.Failed, seg.Blocked, seg.Returned)
		}
		if res := check(t, h); !res.Linearizable {
			t.Fatalf("seed %d: %+v", seed, res.Anomalies)
		}
		if seg.Stall != nil {
			stalled++
		}
	}
	if stalled < 3 {
		t.Fatalf("%d of 4 segments stalled a worker", stalled)
	}
}

// TestStallHazardWait: a worker whose free blocks are all held back by
// the hazard of a stopped worker (the progress check) or a held one (the
// late-write policy, whose hold on a CAS of word 0 lasts, with ABA, until
// word 0 names that worker's block again, which its hazard keeps from
// reuse) waits for it, scanning the hazard slots and declaring one wait
// per scan. That waits by design, whatever loads a scan makes, and every
// segment ends cleanly: with two threads the live one waits alone and
// the stopped or held one is released; with three, one waits while the
// other goes on. (The loads between the declared waits used to break the
// late-write policy's row of waits: in 7 of the 60 late segments the
// lone waiter was reported stuck.) The same loop without the declared
// wait spins on its loads, and is reported stuck, naming the stopped or
// held worker.
func TestStallHazardWait(t *testing.T) {
	for _, declared := range []bool{true, false} {
		for _, tc := range []struct {
			threads int
			late    bool
		}{{2, false}, {3, false}, {2, true}} {
			stalled, caught, segs := 0, 0, 30
			if tc.late {
				segs = 60
			}
			for seed := range uint64(segs) {
				c := cfg(tc.threads, 24, 8, seed)
				c.Reads = 0.3
				stall, n := 2000+int64(seed)*797%12000, 30
				if tc.late {
					c = cfg(tc.threads, 6, 2, seed)
					c.Reads, c.Late, stall, n = 0.2, 0.3, 0, 40
				}
				x := newCOW(t, c.Threads, c.Words, 2, 1, declared)
				h, seg := stallSegment(t, c, x, x.r, n, stall)
				if seg.Stall != nil || seg.Holds > 0 {
					stalled++
				}
				switch {
				case seg.Failed != nil || seg.Blocked != nil:
					t.Fatalf("declared %v, %+v, seed %d: failed %v, blocked %v", declared, tc, seed, seg.Failed, seg.Blocked)
				case declared && (seg.Stuck != nil || seg.Returned != int64(n*tc.threads)):
					t.Fatalf("%+v, seed %d: stuck %v, %d returned (stall %+v)", tc, seed, seg.Stuck, seg.Returned, seg.Stall)
				case declared:
					if res := check(t, h); !res.Linearizable {
						t.Fatalf("%+v, seed %d: %+v", tc, seed, res.Anomalies)
					}
				case seg.Stuck != nil:
					if st := seg.Stuck.Stalled; st == nil || st.Proc == seg.Stuck.Proc {
						t.Fatalf("%+v, seed %d: %+v stalled %+v", tc, seed, seg.Stuck, st)
					}
					caught++
				}
			}
			t.Logf("declared %v, %+v: %d of %d segments stopped or held a worker, %d stuck", declared, tc, stalled, segs, caught)
			if stalled < segs*5/6 || !declared && tc.threads == 2 && caught < 3 {
				t.Fatalf("declared %v, %+v: %d of %d segments stopped or held a worker, %d stuck", declared, tc, stalled, segs, caught)
			}
		}
	}
}
