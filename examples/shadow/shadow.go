// Package shadow is a persistent multi-word CAS in about a hundred lines,
// written as a pmlin target: the example of docs/your-primitive.md. It
// keeps two copies of the data words and a durable word that says which
// one is current; a CAS, under one lock, writes the other copy in full,
// persists it, and flips the current copy. A crash before the flip is
// durable keeps the old copy whole.
package shadow

import (
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Region words: the magic and the geometry, the lock, the current copy
// (each on a cache line of its own), then the two copies.
const (
	magicWord, wordsWord = 0, 1
	lockWord             = 8
	curWord              = 16
	copies               = 24
	magic                = 0x5748414453 // "SHADW"
)

// Target is the shadow-copy MwCAS as a pmlin target, with one planted bug.
func Target() *target.Target {
	return &target.Target{
		Name:        "shadow",
		Description: "a MwCAS under one lock that writes a shadow copy and flips a durable pointer",
		Mutants: []target.Mutant{{Name: "flip-unpersisted",
			Description: "the flip of the current copy is not persisted before the lock is released"}},
		Size:     func(c target.Config) (uint64, error) { return copies + 2*stride(c.Words), nil },
		New:      New,
		Open:     Open,
		Blocking: true, // one lock: an operation waits for its holder
	}
}

// stride is the size of a copy: whole cache lines.
func stride(words uint64) uint64 { return (words + 7) / 8 * 8 }

// Shadow is the MwCAS on a region.
type Shadow struct {
	r      *pmem.Region
	words  uint64
	mutant string
	cur    uint64 // the current copy, as Recover found it
}

// New formats an all-zero region: the geometry, then the magic, durable.
func New(r *pmem.Region, c target.Config) (target.Instance, error) {
	s := pmem.Steps{W: r.Worker(0)}
	s.Store(wordsWord, c.Words)
	s.Store(magicWord, magic)
	s.Persist(magicWord)
	return &Shadow{r: r, words: c.Words, mutant: c.Mutant}, s.Err
}

// Open checks what New wrote; Recover comes next.
func Open(r *pmem.Region, c target.Config) (target.Instance, error) {
	s := pmem.Steps{W: r.Worker(0)}
	if s.Load(magicWord) != magic || s.Load(wordsWord) != c.Words {
		return nil, errors.Join(s.Err, errors.New("shadow: not a shadow MwCAS of this size"))
	}
	return &Shadow{r: r, words: c.Words, mutant: c.Mutant}, nil
}

func (m *Shadow) copyAt(c uint64) uint64 { return copies + c*stride(m.words) }

// lock spins with a region CAS: every attempt is a region access, where
// pmlin's deterministic scheduler can run the owner.
func (m *Shadow) lock(s *pmem.Steps, worker int) {
	for s.Err == nil && !s.CAS(lockWord, 0, uint64(worker)+1) {
	}
}

// CAS writes the other copy in full, with the new values, persists it,
// then flips and persists the current copy, all under the lock.
func (m *Shadow) CAS(worker int, words []target.Word) (bool, uint64, error) {
	s := pmem.Steps{W: m.r.Worker(worker)}
	m.lock(&s, worker)
	cur := s.Load(curWord)
	from, to := m.copyAt(cur), m.copyAt(1-cur)
	for _, x := range words {
		if v := s.Load(from + x.Addr); s.Err == nil && v != x.Old {
			s.Store(lockWord, 0)
			return false, x.Addr, s.Err
		}
	}
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
	s.Fence() // the new copy is durable before the flip
	if s.Err == nil {
		s.W.MarkLinearization()
	}
	s.Store(curWord, 1-cur)
	if m.mutant != "flip-unpersisted" {
		s.Persist(curWord) // the flip is durable before anyone sees it
	}
	s.Store(lockWord, 0)
	return s.Err == nil, 0, s.Err
}

// Read reads the current copy under the lock.
func (m *Shadow) Read(worker int, addrs []uint64, out []uint64) error {
	s := pmem.Steps{W: m.r.Worker(worker)}
	m.lock(&s, worker)
	from := m.copyAt(s.Load(curWord))
	for i, a := range addrs {
		out[i] = s.Load(from + a)
	}
	s.Store(lockWord, 0)
	return s.Err
}

// Recover releases the lock that a crash may have left taken, and finds
// the current copy.
func (m *Shadow) Recover(worker int) (string, error) {
	s := pmem.Steps{W: m.r.Worker(worker)}
	s.Store(lockWord, 0)
	s.Persist(lockWord)
	m.cur = s.Load(curWord)
	return fmt.Sprintf("copy %d is current", m.cur), s.Err
}

// DataOffset is where data word a is after Recover: in the current copy.
func (m *Shadow) DataOffset(a uint64) uint64 { return m.copyAt(m.cur) + a }
