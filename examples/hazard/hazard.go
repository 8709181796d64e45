// Package hazard is a lock-free persistent multi-word CAS written as a
// pmlin target: the lock-free example of docs/your-primitive.md, beside
// the lock-based shadow. The data words live in immutable blocks; a
// durable root word names the current one. A CAS copies the current block
// into a free block of its own with its new values, persists that block,
// and swings the root to it with one region CAS; whoever loses the CAS
// retries, so some operation always completes (lock-free). A block is
// reused only when no reader may still be reading it: each worker
// publishes the block it reads in a hazard slot (Michael, "Hazard
// pointers", IEEE TPDS 2004) kept in the region, and a worker whose own
// blocks are all the root or protected waits, declaring each round of its
// scan with pmem.Worker.Wait, for the reader to move on. That wait is by
// design: a reader stopped for good keeps its block, and the progress
// check lets it go once every live worker waits so.
package hazard

import (
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Region words: the magic and the geometry, the root (on a cache line of
// its own), a hazard slot per worker (a line each), then the blocks:
// block 0 holds the initial values (zeros: a new region is all zero) and
// is never reused; worker w owns blocks 1+w*pool .. pool+w*pool.
const (
	magicWord, wordsWord, workersWord = 0, 1, 2
	rootWord                          = 8
	hazards                           = 16
	pool                              = 2              // blocks a worker owns
	magic                             = 0x48415a415244 // "HAZARD"
)

// The planted bugs.
const (
	// ignoreHazards: a worker reuses a block the root has left without
	// looking at the hazard slots, under a reader that still reads it.
	ignoreHazards = "reuse-ignores-hazards"
	// undeclaredWait: the wait for a protected block spins on its loads
	// without pmem.Worker.Wait, which the progress check reports stuck.
	undeclaredWait = "wait-undeclared"
	// rootUnpersisted: an operation acts on the root it read without
	// persisting it, so what it returns may not survive a crash.
	rootUnpersisted = "root-unpersisted"
)

// Target is the hazard-slot MwCAS as a pmlin target, with three planted
// bugs.
func Target() *target.Target {
	return &target.Target{
		Name:        "hazard",
		Description: "a lock-free MwCAS that swings a durable root to a copied block, reclaimed with hazard slots",
		Mutants: []target.Mutant{
			{Name: ignoreHazards, Description: "a block is reused without a look at the hazard slots, under its reader"},
			{Name: undeclaredWait, Description: "the wait for a protected block spins without pmem.Worker.Wait"},
			{Name: rootUnpersisted, Description: "an operation acts on the root it read without persisting it first"},
		},
		Size: func(c target.Config) (uint64, error) {
			return blockAt(c.Workers, c.Words, uint64(1+c.Workers*pool)), nil
		},
		New:  newMwCAS,
		Open: openMwCAS,
		// Blocking is false: pmlin checks that it is lock-free (the
		// progress check and late writes).
	}
}

// stride is the size of a block: whole cache lines.
func stride(words uint64) uint64 { return (words + 7) / 8 * 8 }

// blockAt is the region offset of block b.
func blockAt(workers int, words, b uint64) uint64 {
	return hazards + 8*uint64(workers) + b*stride(words)
}

// mwcas is the MwCAS on a region.
type mwcas struct {
	r       *pmem.Region
	words   uint64
	workers int
	mutant  string
	root    uint64 // the current block, as Recover found it
}

// newMwCAS formats an all-zero region: the geometry, then the magic, durable.
func newMwCAS(r *pmem.Region, c target.Config) (target.Instance, error) {
	s := pmem.Steps{W: r.Worker(0)}
	s.Store(wordsWord, c.Words)
	s.Store(workersWord, uint64(c.Workers))
	s.Store(magicWord, magic)
	s.Persist(magicWord)
	return &mwcas{r: r, words: c.Words, workers: c.Workers, mutant: c.Mutant}, s.Err
}

// openMwCAS checks what New wrote; Recover comes next.
func openMwCAS(r *pmem.Region, c target.Config) (target.Instance, error) {
	s := pmem.Steps{W: r.Worker(0)}
	if s.Load(magicWord) != magic || s.Load(wordsWord) != c.Words || s.Load(workersWord) != uint64(c.Workers) {
		return nil, errors.Join(s.Err, errors.New("hazard: not a hazard MwCAS of this size"))
	}
	return &mwcas{r: r, words: c.Words, workers: c.Workers, mutant: c.Mutant}, nil
}

func (m *mwcas) block(b uint64) uint64 { return blockAt(m.workers, m.words, b) }

func hazard(w int) uint64 { return hazards + 8*uint64(w) }

// protect publishes the current block in the worker's hazard slot and
// checks that it is still current (else a reuse may have begun before the
// slot was seen), then persists the root: what the operation reads there
// must survive a crash before the operation returns.
func (m *mwcas) protect(s *pmem.Steps, w int) uint64 {
	for s.Err == nil {
		b := s.Load(rootWord)
		s.Store(hazard(w), b+1)
		if s.Load(rootWord) == b {
			if m.mutant != rootUnpersisted {
				s.Persist(rootWord)
			}
			return b
		}
	}
	return 0
}

// alloc returns a block of the worker's own that is not the root and
// that no other worker's hazard slot names. A round loads the root and
// the slots; when every block is taken the worker waits for a reader it
// cannot help, and says so with one Wait per round.
func (m *mwcas) alloc(s *pmem.Steps, w int) uint64 {
	for s.Err == nil {
		if b, ok := m.freeBlock(s, w); ok {
			// The root has left b for good (only w installs its
			// blocks): once that is durable, b may be overwritten.
			s.Persist(rootWord)
			return b
		}
		if m.mutant != undeclaredWait {
			s.Wait() // one per round: the loads of this round are a wait
		}
	}
	return 0
}

// freeBlock is one round of the scan: loads only.
func (m *mwcas) freeBlock(s *pmem.Steps, w int) (uint64, bool) {
	root := s.Load(rootWord)
	for i := range pool {
		b := uint64(1 + w*pool + i)
		if b == root {
			continue
		}
		held := false
		for h := 0; h < m.workers && m.mutant != ignoreHazards; h++ {
			if h != w && s.Load(hazard(h)) == b+1 {
				held = true
			}
		}
		if !held && s.Err == nil {
			return b, true
		}
	}
	return 0, false
}

// CAS compares in the protected current block, copies it with the new
// values into a free block, persists that, and swings the root to it;
// a lost swing starts over.
func (m *mwcas) CAS(worker int, words []target.Word) (bool, uint64, error) {
	s := pmem.Steps{W: m.r.Worker(worker)}
	defer s.Store(hazard(worker), 0)
	for s.Err == nil {
		b := m.protect(&s, worker)
		from := m.block(b)
		for _, x := range words {
			if v := s.Load(from + x.Addr); s.Err == nil && v != x.Old {
				return false, x.Addr, s.Err
			}
		}
		n := m.alloc(&s, worker)
		to := m.block(n)
		for a := range m.words {
			v := s.Load(from + a)
			for _, x := range words {
				if x.Addr == a {
					v = x.New
				}
			}
			s.Store(to+a, v)
		}
		for off := to; off < to+m.words; off += 8 {
			s.Flush(off)
		}
		s.Fence() // the new block is durable before the root names it
		if s.Err == nil {
			s.W.MarkLinearization()
		}
		if s.CAS(rootWord, b, n) {
			s.Persist(rootWord)
			return s.Err == nil, 0, s.Err
		}
	}
	return false, 0, s.Err
}

// Read reads the protected current block.
func (m *mwcas) Read(worker int, addrs []uint64, out []uint64) error {
	s := pmem.Steps{W: m.r.Worker(worker)}
	from := m.block(m.protect(&s, worker))
	for i, a := range addrs {
		out[i] = s.Load(from + a)
	}
	s.Store(hazard(worker), 0)
	return s.Err
}

// Recover clears the hazard slots (their readers are gone) and finds the
// current block. Recover runs alone, so nothing is waited for.
func (m *mwcas) Recover(worker int) (string, error) {
	s := pmem.Steps{W: m.r.Worker(worker)}
	for w := range m.workers {
		s.Store(hazard(w), 0)
	}
	m.root = s.Load(rootWord)
	return fmt.Sprintf("block %d is current", m.root), s.Err
}

// DataOffset is where data word a is after Recover: in the current block.
func (m *mwcas) DataOffset(a uint64) uint64 { return m.block(m.root) + a }
