// Package lockmwcas is a persistent multi-word CAS built on locks and a
// redo log: the second target that comes with pmlin, written only against
// the public contract of package target (and package pmem), and unlike the
// lock-free PMwCAS of package mwcas in every way that matters to a tester:
// it blocks, it logs before it writes, and its recovery replays a log.
//
// # Algorithm
//
// Every data word belongs to a stripe (its address modulo the number of
// stripes), and every stripe has a lock: a region word that holds 0 when
// free and the owner's worker id plus one when taken, taken with a region
// CAS in a loop (so a waiting worker keeps making region accesses, which
// is what pmlin's deterministic scheduler needs to switch to the owner).
// A multi-word CAS takes the locks of its words' stripes in increasing
// order (no deadlock), compares each word with its expected value, and on
// a mismatch releases the locks and fails, blaming that word. Otherwise,
// in the worker's own redo log:
//
//  1. it writes the log entries (address, new value), flushes and fences
//     them;
//  2. it writes the commit record (the number of entries) on a line of its
//     own, flushes and fences it: the operation is now decided;
//  3. it writes the new values into the data words, flushes and fences
//     them;
//  4. it retires the log (the commit record back to 0), flushes and fences
//     it, and only then releases the locks.
//
// A multi-word swap takes the same locks, reads the old values and commits
// the new ones the same way; a failed CAS that reports what it read
// (CASReport) reads every word before it releases the locks. A
// multi-word read takes the same locks and reads the words. Whatever a
// worker can read under a lock is durable: values become visible to others
// only when the locks are released, after step 4.
//
// Recovery replays every committed log (writes its entries' values, flushes
// and fences them, then retires the log), and releases every lock, which a
// crash can leave taken. Run again after a crash of its own, it replays the
// same logs: the entries change only while no commit record is durable.
//
// # Planted bugs
//
// Six, each one step of the above done carelessly (Mutants): no fence
// between the log entries and the commit record, new values not flushed
// before the log is retired, the retired log not fenced before the locks
// are released, a failed CAS that leaks its locks, a multi-word read that
// takes no lock, and a recovery that leaves the locks taken.
package lockmwcas

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"slices"

	"github.com/pmlin/pmlin/internal/targetkit"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// defaultStripes is the number of lock stripes of the --stripes parameter:
// with pmlin's default 8 words, two words share each lock.
const defaultStripes = 4

// Target is the lock-striped MwCAS as a target of pmlin's harness.
func Target() *target.Target {
	muts := make([]target.Mutant, 0, len(mutants)-1)
	for _, m := range mutants[1:] {
		muts = append(muts, m)
	}
	return &target.Target{
		Name:        "lockmwcas",
		Description: "a lock-striped persistent MwCAS with a redo log per worker (locks made of region CAS; package lockmwcas)",
		Mutants:     muts,
		Params: []target.Param{{Name: "stripes", Default: fmt.Sprint(defaultStripes), Fuzz: []string{"1", "2", "3", "4", "4", "16"},
			Usage: "lock stripes: data word a is guarded by lock a mod stripes (1 to 4096)"}},
		Blocking: true, // an operation waits for the owner of a lock
		Size: func(c target.Config) (uint64, error) {
			l, err := newLayout(c)
			return l.total, err
		},
		New:  create,
		Open: open,
	}
}

// mutant is a planted bug; 0 is the correct code.
type mutant uint8

const (
	correct mutant = iota
	logUnfenced
	dataUnflushed
	retireUnfenced
	lockLeakedOnFailure
	readSkipsLock
	recoveryKeepsLocks
)

var mutants = [...]target.Mutant{
	correct:             {},
	logUnfenced:         {Name: "log-unfenced", Description: "no fence between the log entries and the commit record: the commit can be durable while its entries are not"},
	dataUnflushed:       {Name: "data-unflushed", Description: "the new values are not flushed before the log is retired: a crash can lose a cas that returned"},
	retireUnfenced:      {Name: "retire-unfenced", Description: "the retired log is not fenced before the locks are released: recovery can replay a cas over a later one"},
	lockLeakedOnFailure: {Name: "lock-leaked-on-failure", Description: "a cas that fails returns without releasing its locks"},
	readSkipsLock:       {Name: "read-skips-lock", Description: "the multi-word read takes no lock: it can see half of a cas"},
	recoveryKeepsLocks:  {Name: "recovery-keeps-locks", Description: "recovery leaves the locks of the operations a crash cut off taken"},
}

func parseMutant(name string) (mutant, error) {
	i, err := targetkit.MutantIndex("lockmwcas", mutants[:], name)
	return mutant(i), err
}

// Region layout, in words: a superblock line, a line per lock, the data
// words (from a line boundary), then each worker's log: its commit record
// alone on a line, then its entries (address, new value) on lines of their
// own.
const (
	lineWords = pmem.LineWords
	sbMagic   = 0x315341434d4b4c50 // "PLKMCAS1"
	sbVersion = 1
)

type layout struct {
	words, workers, maxK, stripes uint64
	lockBase, dataBase, logBase   uint64
	logWords, total               uint64
}

func roundLine(n uint64) uint64 { return (n + lineWords - 1) / lineWords * lineWords }

func newLayout(c target.Config) (layout, error) {
	stripes, err := c.Int("stripes", 1, 4096)
	if err != nil {
		return layout{}, err
	}
	switch {
	case c.Words == 0 || c.Words > 1<<32:
		return layout{}, fmt.Errorf("lockmwcas: %d words (1..2^32)", c.Words)
	case c.Workers < 1 || c.Workers > 1<<16:
		return layout{}, fmt.Errorf("lockmwcas: %d workers (1..65536)", c.Workers)
	case c.MaxK < 1 || c.MaxK > target.MaxK:
		return layout{}, fmt.Errorf("lockmwcas: k = %d (1..%d)", c.MaxK, target.MaxK)
	}
	if _, err := parseMutant(c.Mutant); err != nil {
		return layout{}, err
	}
	l := layout{words: c.Words, workers: uint64(c.Workers), maxK: uint64(c.MaxK), stripes: uint64(stripes)}
	l.lockBase = lineWords
	l.dataBase = l.lockBase + l.stripes*lineWords
	l.logBase = l.dataBase + roundLine(l.words)
	l.logWords = lineWords + roundLine(2*l.maxK)
	l.total = l.logBase + l.workers*l.logWords
	return l, nil
}

func (l *layout) lock(stripe uint64) uint64 { return l.lockBase + stripe*lineWords }
func (l *layout) data(a uint64) uint64      { return l.dataBase + a }
func (l *layout) commit(w uint64) uint64    { return l.logBase + w*l.logWords }
func (l *layout) entry(w, i uint64) uint64  { return l.commit(w) + lineWords + 2*i } // address; +1 new value
func (l *layout) superblock() [lineWords]uint64 {
	sb := [lineWords]uint64{sbMagic, sbVersion, l.words, l.workers, l.maxK, l.stripes}
	h := fnv.New64a()
	for _, v := range sb[:lineWords-1] {
		h.Write(binary.LittleEndian.AppendUint64(nil, v))
	}
	sb[lineWords-1] = h.Sum64() // a checksum of the words before
	return sb
}

// lockMwCAS is the lock-striped MwCAS on a region.
type lockMwCAS struct {
	r   *pmem.Region
	l   layout
	mut mutant
	// ready is false from open until Recover.
	ready bool
	// scratch is each worker's: its words sorted by address and its
	// stripes.
	scratch []scratch
}

type scratch struct {
	words   []target.Word
	stripes []uint64
	_       [64]byte // workers apart on cache lines
}

// errCorrupt says that the region holds a state no crash of the correct
// code leaves.
var errCorrupt = errors.New("lockmwcas: region is corrupt")

// create formats r (all zero) for a lock-striped MwCAS with configuration c.
// It writes the superblock, magic last on its line, and makes it durable.
func create(r *pmem.Region, c target.Config) (target.Instance, error) {
	m, err := build(r, c)
	if err != nil {
		return nil, err
	}
	a := pmem.Steps{W: r.Worker(0)}
	sb := m.l.superblock()
	for i := lineWords - 1; i >= 0; i-- {
		a.Store(uint64(i), sb[i])
	}
	a.Flush(0)
	a.Fence()
	if a.Err != nil {
		return nil, a.Err
	}
	m.ready = true
	return m, nil
}

// open attaches to the lock-striped MwCAS that create made on r: its
// superblock must match c. Recover must run before any operation.
func open(r *pmem.Region, c target.Config) (target.Instance, error) {
	m, err := build(r, c)
	if err != nil {
		return nil, err
	}
	sb := m.l.superblock()
	if err := targetkit.CheckSuperblock(r, sb[:], "lockmwcas", errCorrupt); err != nil {
		return nil, err
	}
	return m, nil
}

func build(r *pmem.Region, c target.Config) (*lockMwCAS, error) {
	l, err := newLayout(c)
	if err != nil {
		return nil, err
	}
	if r.Words() < l.total {
		return nil, fmt.Errorf("lockmwcas: region of %d words, %d needed", r.Words(), l.total)
	}
	mut, _ := parseMutant(c.Mutant)
	m := &lockMwCAS{r: r, l: l, mut: mut, scratch: make([]scratch, c.Workers)}
	for i := range m.scratch {
		m.scratch[i].words = make([]target.Word, 0, c.MaxK)
		m.scratch[i].stripes = make([]uint64, 0, c.MaxK)
	}
	return m, nil
}

// DataOffset is where data word a lives.
func (m *lockMwCAS) DataOffset(a uint64) uint64 { return m.l.data(a) }

// begin checks an operation's worker and returns its scratch space.
func (m *lockMwCAS) begin(worker int) (*scratch, pmem.Steps, error) {
	if !m.ready {
		return nil, pmem.Steps{}, errors.New("lockmwcas: Recover must run before operations")
	}
	if worker < 0 || worker >= len(m.scratch) {
		return nil, pmem.Steps{}, fmt.Errorf("lockmwcas: worker %d out of range (0..%d)", worker, len(m.scratch)-1)
	}
	return &m.scratch[worker], pmem.Steps{W: m.r.Worker(worker)}, nil
}

// stripesOf sets s.stripes to the sorted, distinct stripes of addrs.
func (m *lockMwCAS) stripesOf(s *scratch, addrs iter.Seq[uint64]) error {
	s.stripes = s.stripes[:0]
	for a := range addrs {
		if a >= m.l.words {
			return fmt.Errorf("lockmwcas: address %d out of range (0..%d)", a, m.l.words-1)
		}
		s.stripes = append(s.stripes, a%m.l.stripes)
	}
	slices.Sort(s.stripes)
	s.stripes = slices.Compact(s.stripes)
	return nil
}

// lock takes the locks of s.stripes in order, spinning on each with a
// region CAS (each attempt a region access: a point where another worker,
// the owner, may run).
func (m *lockMwCAS) lock(a *pmem.Steps, s *scratch, owner uint64) {
	for _, st := range s.stripes {
		for a.Err == nil && !a.CAS(m.l.lock(st), 0, owner) {
		}
	}
}

func (m *lockMwCAS) unlock(a *pmem.Steps, s *scratch) {
	for _, st := range slices.Backward(s.stripes) {
		a.Store(m.l.lock(st), 0)
	}
}

// CAS is the multi-word CAS (see the package documentation).
func (m *lockMwCAS) CAS(worker int, words []target.Word) (bool, uint64, error) {
	return m.cas(worker, words, nil)
}

// CASReport is CAS, and a failure reads every word under the locks it
// holds: a snapshot (target.FailReporter).
func (m *lockMwCAS) CASReport(worker int, words []target.Word, read []uint64) (bool, uint64, error) {
	if len(read) < len(words) {
		return false, 0, fmt.Errorf("lockmwcas: room for %d values, %d words", len(read), len(words))
	}
	return m.cas(worker, words, read)
}

// cas is CAS, and CASReport when read is not nil.
func (m *lockMwCAS) cas(worker int, words []target.Word, read []uint64) (bool, uint64, error) {
	s, a, err := m.lockWords(worker, words)
	if err != nil {
		return false, 0, err
	}
	for _, x := range s.words {
		v := a.Load(m.l.data(x.Addr))
		if a.Err != nil {
			return false, 0, a.Err
		}
		if v != x.Old {
			if read != nil {
				for i, y := range words {
					read[i] = a.Load(m.l.data(y.Addr))
				}
			}
			if m.mut != lockLeakedOnFailure {
				m.unlock(&a, s)
			}
			return false, x.Addr, a.Err
		}
	}
	m.commit(&a, uint64(worker), s.words)
	m.unlock(&a, s)
	return a.Err == nil, 0, a.Err
}

// Swap is the multi-word swap (target.Swapper): under the locks, it reads
// the old values and commits the new ones as a CAS does.
func (m *lockMwCAS) Swap(worker int, words []target.Word, old []uint64) error {
	if len(old) < len(words) {
		return fmt.Errorf("lockmwcas: room for %d values, %d words", len(old), len(words))
	}
	s, a, err := m.lockWords(worker, words)
	if err != nil {
		return err
	}
	for i, x := range words {
		old[i] = a.Load(m.l.data(x.Addr))
	}
	m.commit(&a, uint64(worker), s.words)
	m.unlock(&a, s)
	return a.Err
}

// lockWords checks an operation's words, sorts them into the worker's
// scratch space and takes their locks.
func (m *lockMwCAS) lockWords(worker int, words []target.Word) (*scratch, pmem.Steps, error) {
	s, a, err := m.begin(worker)
	if err != nil {
		return nil, a, err
	}
	if len(words) == 0 || uint64(len(words)) > m.l.maxK {
		return nil, a, fmt.Errorf("lockmwcas: %d words (1..%d)", len(words), m.l.maxK)
	}
	s.words = append(s.words[:0], words...)
	slices.SortFunc(s.words, func(x, y target.Word) int { return cmp.Compare(x.Addr, y.Addr) })
	for i := 1; i < len(s.words); i++ {
		if s.words[i].Addr == s.words[i-1].Addr {
			return nil, a, fmt.Errorf("lockmwcas: address %d twice", s.words[i].Addr)
		}
	}
	if err := m.stripesOf(s, addrsOf(s.words)); err != nil {
		return nil, a, err
	}
	m.lock(&a, s, uint64(worker)+1)
	return s, a, nil
}

func addrsOf(words []target.Word) iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		for _, x := range words {
			if !yield(x.Addr) {
				return
			}
		}
	}
}

// commit writes words through worker w's redo log, with the locks held:
// steps 1 to 4 of the package documentation.
func (m *lockMwCAS) commit(a *pmem.Steps, w uint64, words []target.Word) {
	l := &m.l
	for i, x := range words {
		a.Store(l.entry(w, uint64(i)), x.Addr)
		a.Store(l.entry(w, uint64(i))+1, x.New)
	}
	for off := l.entry(w, 0); off < l.entry(w, uint64(len(words))); off += lineWords {
		a.Flush(off)
	}
	if m.mut != logUnfenced {
		a.Fence()
	}
	if a.Err == nil {
		a.W.MarkLinearization() // the step that decides the operation
	}
	a.Store(l.commit(w), uint64(len(words)))
	a.Flush(l.commit(w))
	a.Fence()
	for _, x := range words {
		a.Store(l.data(x.Addr), x.New)
	}
	if m.mut != dataUnflushed {
		for _, x := range words {
			a.Flush(l.data(x.Addr))
		}
		a.Fence()
	}
	a.Store(l.commit(w), 0)
	a.Flush(l.commit(w))
	if m.mut != retireUnfenced {
		a.Fence()
	}
}

// Read is the multi-word read: under the locks of the words' stripes.
func (m *lockMwCAS) Read(worker int, addrs []uint64, out []uint64) error {
	s, a, err := m.begin(worker)
	if err != nil {
		return err
	}
	if len(out) < len(addrs) {
		return fmt.Errorf("lockmwcas: room for %d values, %d addresses", len(out), len(addrs))
	}
	if err := m.stripesOf(s, slices.Values(addrs)); err != nil {
		return err
	}
	locked := m.mut != readSkipsLock
	if locked {
		m.lock(&a, s, uint64(worker)+1)
	}
	for i, x := range addrs {
		out[i] = a.Load(m.l.data(x))
	}
	if locked {
		m.unlock(&a, s)
	}
	return a.Err
}

// Recover replays every committed log, retires it, and releases every
// lock (see the package documentation).
func (m *lockMwCAS) Recover(worker int) (string, error) {
	if worker < 0 || worker >= len(m.scratch) {
		return "", fmt.Errorf("lockmwcas: worker %d out of range (0..%d)", worker, len(m.scratch)-1)
	}
	m.ready = false
	l := &m.l
	a := pmem.Steps{W: m.r.Worker(worker)}
	logs, words, locks := 0, 0, 0
	for w := range l.workers {
		n := a.Load(l.commit(w))
		if n == 0 || a.Err != nil {
			continue
		}
		if n > l.maxK {
			return "", fmt.Errorf("%w: the commit record of worker %d's log says %d entries (at most %d)", errCorrupt, w, n, l.maxK)
		}
		for i := range n {
			addr, v := a.Load(l.entry(w, i)), a.Load(l.entry(w, i)+1)
			if a.Err == nil && addr >= l.words {
				return "", fmt.Errorf("%w: worker %d's log entry %d names address %d (of %d)", errCorrupt, w, i, addr, l.words)
			}
			a.Store(l.data(addr), v)
			a.Flush(l.data(addr))
		}
		a.Fence()
		a.Store(l.commit(w), 0)
		a.Flush(l.commit(w))
		a.Fence()
		logs++
		words += int(n)
	}
	for st := range l.stripes {
		if m.mut != recoveryKeepsLocks && a.Load(l.lock(st)) != 0 {
			a.Store(l.lock(st), 0)
			a.Flush(l.lock(st))
			locks++
		}
	}
	a.Fence()
	if a.Err != nil {
		return "", a.Err
	}
	m.ready = true
	return fmt.Sprintf("%d logs replayed (%d words), %d locks released", logs, words, locks), nil
}
