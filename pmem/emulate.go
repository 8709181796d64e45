package pmem

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Policy chooses which non-durable stores a crash image keeps.
type Policy uint8

// Crash policies (see the package documentation).
const (
	PolicyMin Policy = iota
	PolicyMax
	PolicyRandom
	PolicyTargeted
)

var policyNames = [...]string{"min", "max", "random", "targeted"}

// Policies lists every policy, in the order of their constants.
func Policies() []Policy { return []Policy{PolicyMin, PolicyMax, PolicyRandom, PolicyTargeted} }

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// ParsePolicy returns the policy with the given name (min, max, random,
// targeted).
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if n == s {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("pmem: unknown crash policy %q (want min, max, random or targeted)", s)
}

// errNoEmulation is returned by crash operations that need the emulated
// persistence domain on a region without it.
var errNoEmulation = errors.New("pmem: crash policy needs Options.Emulate")

// emulator is the emulated persistence domain of a region.
type emulator struct {
	lines []eline
	// gseq numbers every logged store, across lines, so the targeted policy
	// can compare a store with the latest linearization mark. Both are
	// read and written with sync/atomic, except under an ExclusiveHook,
	// which orders the accesses itself: there a plain increment spares a
	// locked instruction per store.
	gseq uint64
	mark uint64
}

// eline is one cache line of the persistence domain. The invariant: the
// visible words of the line equal durable with every log entry applied, in
// order. Stores to the line hold mu, so the log order is the coherence order.
type eline struct {
	mu      sync.Mutex
	seq     uint64 // stores logged on this line, ever
	durSeq  uint64 // the first durSeq of them are durable
	log     []entry
	durable [LineWords]uint64
}

type entry struct {
	gseq uint64
	val  uint64
	word uint8
}

func newEmulator(words []uint64) *emulator {
	n := (uint64(len(words)) + LineWords - 1) / LineWords
	e := &emulator{lines: make([]eline, n)}
	e.reset(words)
	return e
}

// reset makes e the emulator newEmulator(words) makes, keeping the
// capacity of its line logs: a region reopened after each crash, as fuzz
// does thousands of times a second, would otherwise grow every line's log
// again from nothing. e's lines must number those of words.
func (e *emulator) reset(words []uint64) {
	for i := range e.lines {
		l := &e.lines[i]
		l.seq, l.durSeq, l.log = 0, 0, l.log[:0]
		// Line by line, a whole line copied at once where it is whole:
		// a crash cycle reopens the region, and this runs over all of it.
		if base := i * LineWords; base+LineWords <= len(words) {
			l.durable = [LineWords]uint64(words[base : base+LineWords])
		} else {
			l.durable = [LineWords]uint64{}
			copy(l.durable[:], words[min(base, len(words)):])
		}
	}
	atomic.StoreUint64(&e.gseq, 0)
	atomic.StoreUint64(&e.mark, 0)
}

// resize gives e the lines of words, keeping their logs' capacity, if its
// line array has room for them (else it reports false).
func (e *emulator) resize(words []uint64) bool {
	n := (len(words) + LineWords - 1) / LineWords
	if n > cap(e.lines) {
		return false
	}
	e.lines = e.lines[:n]
	return true
}

// The methods below take the line's lock; their twins named ...Excl are
// for an access made under an ExclusiveHook, the only one under way (the
// deterministic scheduler's; a lock and an unlock per access were several
// percent of a fuzz run). These also write the words and the store
// sequence with plain instructions: the hook orders every access, and the
// locked instructions of sync/atomic (an exchange per store, a
// compare-and-swap per CAS, an add per logged store) were a few percent
// more. They are small enough to be inlined into the Worker's methods,
// which choose between the two: a call per store, CAS, flush and fence
// was a few percent more again.

func (e *emulator) store(words []uint64, off, v uint64) {
	l := &e.lines[off/LineWords]
	l.mu.Lock()
	atomic.StoreUint64(&words[off], v)
	e.log(l, off, v)
	l.mu.Unlock()
}

func (e *emulator) storeExcl(words []uint64, off, v uint64) {
	words[off] = v
	e.logExcl(&e.lines[off/LineWords], off, v)
}

func (e *emulator) cas(words []uint64, off, old, new uint64) bool {
	l := &e.lines[off/LineWords]
	l.mu.Lock()
	ok := atomic.CompareAndSwapUint64(&words[off], old, new)
	if ok {
		e.log(l, off, new)
	}
	l.mu.Unlock()
	return ok
}

func (e *emulator) casExcl(words []uint64, off, old, new uint64) bool {
	if words[off] != old {
		return false
	}
	words[off] = new
	e.logExcl(&e.lines[off/LineWords], off, new)
	return true
}

func (e *emulator) log(l *eline, off, v uint64) {
	l.seq++
	l.log = append(l.log, entry{gseq: atomic.AddUint64(&e.gseq, 1), val: v, word: uint8(off % LineWords)})
}

// logExcl is log under an ExclusiveHook.
func (e *emulator) logExcl(l *eline, off, v uint64) {
	l.seq++
	e.gseq++
	l.log = append(l.log, entry{gseq: e.gseq, val: v, word: uint8(off % LineWords)})
}

// position is the line's log position, recorded by a flush.
func (e *emulator) position(line uint64) uint64 {
	l := &e.lines[line]
	l.mu.Lock()
	s := l.seq
	l.mu.Unlock()
	return s
}

func (e *emulator) positionExcl(line uint64) uint64 { return e.lines[line].seq }

// persist makes the line durable up to log position seq (words: the
// region's words).
func (e *emulator) persist(words []uint64, line, seq uint64) {
	l := &e.lines[line]
	l.mu.Lock()
	l.persist(seq, lineOf(words, line))
	l.mu.Unlock()
}

// lineOf is line's words of words, or nil if it is not whole (the
// region's last line may be cut short).
func lineOf(words []uint64, line uint64) []uint64 {
	if base := line * LineWords; base+LineWords <= uint64(len(words)) {
		return words[base : base+LineWords]
	}
	return nil
}

// persist makes l durable up to log position seq, its lock held (or under
// an ExclusiveHook); vis is the line's words as threads see them (nil if
// the line is not whole). Worker.Fence makes its two steps itself, under
// an ExclusiveHook, where both are inlined.
func (l *eline) persist(seq uint64, vis []uint64) {
	if !l.persistAll(seq, vis) {
		l.persistLog(seq)
	}
}

// persistAll is persist up to the last store logged, as a fence after the
// stores of an operation usually asks, on a whole line: the durable words
// are then the visible ones (the line's invariant), one copy instead of a
// store per log entry. It reports whether it applied (else persistLog
// does the work).
func (l *eline) persistAll(seq uint64, vis []uint64) bool {
	if seq != l.seq || seq <= l.durSeq || len(vis) != LineWords {
		return false
	}
	l.durable = [LineWords]uint64(vis)
	l.log, l.durSeq = l.log[:0], seq
	return true
}

// persistLog is persist from the log: each entry up to position seq
// applied to the durable words.
func (l *eline) persistLog(seq uint64) {
	if seq <= l.durSeq {
		return
	}
	n := int(seq - l.durSeq)
	d := &l.durable
	for _, en := range l.log[:n] {
		d[en.word%LineWords] = en.val
	}
	if n < len(l.log) { // else all of it: no call to copy nothing
		l.log = l.log[:copy(l.log, l.log[n:])]
	} else {
		l.log = l.log[:0]
	}
	l.durSeq = seq
}

// keep is how many of the line's non-durable stores a crash image keeps.
func (e *emulator) keep(l *eline, p Policy, rng *rand.Rand, mark uint64) int {
	switch p {
	case PolicyMin:
		return 0
	case PolicyMax:
		return len(l.log)
	case PolicyRandom:
		return rng.IntN(len(l.log) + 1)
	default: // PolicyTargeted: the prefix made before the latest mark
		n := 0
		for n < len(l.log) && l.log[n].gseq <= mark {
			n++
		}
		return n
	}
}

// image computes the crash image of line l keeping n log entries.
func (l *eline) image(n int) [LineWords]uint64 {
	img := l.durable
	for _, en := range l.log[:n] {
		img[en.word] = en.val
	}
	return img
}

func checkPolicy(p Policy, rng *rand.Rand, emulated bool) error {
	if int(p) >= len(policyNames) {
		return fmt.Errorf("pmem: unknown crash policy %d", p)
	}
	if p == PolicyRandom && rng == nil {
		return errors.New("pmem: the random crash policy needs a random generator")
	}
	if p != PolicyMax && !emulated {
		return fmt.Errorf("%w (policy %s)", errNoEmulation, p)
	}
	return nil
}

// Crash replaces the region's contents by a crash image built by policy p
// (rng, a math/rand/v2 generator, is used by PolicyRandom only, and may be
// nil otherwise), ends the
// crash state, and forgets the flushes every worker had pending. A
// file-backed region writes the image through to its file. The caller must
// make sure that no worker is inside an access: request the crash
// (RequestCrash or a hook returning ErrCrashed), then wait for the workers'
// operations to return. Crash may be called without a prior request.
func (r *Region) Crash(p Policy, rng *rand.Rand) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Load()&stClosed != 0 {
		return errClosed
	}
	if err := checkPolicy(p, rng, r.emu != nil); err != nil {
		return err
	}
	var keep func(i int, l *eline) int
	if e := r.emu; e != nil {
		mark := atomic.LoadUint64(&e.mark)
		keep = func(_ int, l *eline) int { return e.keep(l, p, rng, mark) }
	}
	return r.crash(keep)
}

// CrashKeeping is Crash with an image that keeps every store not yet
// durable (as PolicyMax does) but on the line of word off, where it keeps
// only those among the first upto stores ever made to the line
// (LineStores): the later ones are lost. It is the image of a crash right
// after the upto-th store to that line, with everything else written back:
// a legal image (each line keeps a prefix of its stores), the one that
// shows whether a change to that line was made durable before the program
// went on. It needs Options.Emulate.
func (r *Region) CrashKeeping(off, upto uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Load()&stClosed != 0 {
		return errClosed
	}
	if r.emu == nil {
		return fmt.Errorf("%w (a crash keeping a prefix of a line)", errNoEmulation)
	}
	if off >= r.n {
		return fmt.Errorf("%w: word %d of %d", errOutOfRange, off, r.n)
	}
	line := int(off / LineWords)
	return r.crash(func(i int, l *eline) int {
		if i != line {
			return len(l.log)
		}
		return int(min(uint64(len(l.log)), max(upto, l.durSeq)-l.durSeq))
	})
}

// LineStores is the number of stores ever made to the line of word off
// (successful CAS included) since the region was made, renewed or
// reopened, or 0 without emulation. Not an access.
func (r *Region) LineStores(off uint64) uint64 {
	if r.emu == nil || off >= r.n {
		return 0
	}
	l := &r.emu.lines[off/LineWords]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// crash is Crash with keep(i, l) the number of line i's log entries the
// image keeps (nil: no emulation); r.mu held.
func (r *Region) crash(keep func(i int, l *eline) int) error {
	if e := r.emu; e != nil {
		for i := range e.lines {
			l := &e.lines[i]
			l.mu.Lock()
			if len(l.log) > 0 {
				img := l.image(keep(i, l))
				base := uint64(i) * LineWords
				for j := range img {
					if base+uint64(j) < r.n {
						atomic.StoreUint64(&r.words[base+uint64(j)], img[j])
					}
				}
				l.durable = img
				l.log = l.log[:0]
				l.durSeq = l.seq
			}
			l.mu.Unlock()
		}
		// Marks made before the crash say nothing about the next one.
		atomic.StoreUint64(&e.mark, atomic.LoadUint64(&e.gseq))
	}
	for _, w := range r.workers {
		if w != nil {
			w.pending = w.pending[:0]
		}
	}
	r.crashes++
	r.state.And(^uint32(stCrashing))
	if err := r.syncFile(); err != nil {
		return err
	}
	return nil
}

// CrashImage builds a crash image by policy p (rng as for Crash) as a new
// anonymous region with the given options, leaving r unchanged. In the new region every word is
// durable. The same precondition as for Crash applies.
func (r *Region) CrashImage(p Policy, rng *rand.Rand, opts Options) (*Region, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Load()&stClosed != 0 {
		return nil, errClosed
	}
	if err := checkPolicy(p, rng, r.emu != nil); err != nil {
		return nil, err
	}
	words := make([]uint64, r.n)
	for i := range words {
		words[i] = atomic.LoadUint64(&r.words[i])
	}
	if e := r.emu; e != nil {
		mark := atomic.LoadUint64(&e.mark)
		for i := range e.lines {
			l := &e.lines[i]
			l.mu.Lock()
			if len(l.log) > 0 {
				img := l.image(e.keep(l, p, rng, mark))
				base := uint64(i) * LineWords
				for j := range img {
					if base+uint64(j) < r.n {
						words[base+uint64(j)] = img[j]
					}
				}
			}
			l.mu.Unlock()
		}
	}
	return newFromWords(words, opts)
}

func newFromWords(words []uint64, opts Options) (*Region, error) {
	// Build without the emulator, fill, then attach it so its durable copy
	// starts equal to the contents.
	emulate := opts.Emulate
	opts.Emulate = false
	nr, err := NewMemory(uint64(len(words)), opts)
	if err != nil {
		return nil, err
	}
	copy(nr.words, words)
	if emulate {
		nr.emu = newEmulator(nr.words)
	}
	return nr, nil
}

// Snapshot copies what threads see into a new slice (not an access; no
// worker may be storing). For tests and for checking states after recovery.
func (r *Region) Snapshot() []uint64 {
	out := make([]uint64, r.n)
	for i := range out {
		out[i] = atomic.LoadUint64(&r.words[i])
	}
	return out
}

// Durable returns the durable value of word off: what PolicyMin would keep.
// Without emulation every visible value counts as durable. Not an access.
func (r *Region) Durable(off uint64) (uint64, error) {
	if off >= r.n {
		return 0, fmt.Errorf("%w: word %d of %d", errOutOfRange, off, r.n)
	}
	if r.state.Load()&stClosed != 0 {
		return 0, errClosed
	}
	if r.emu == nil {
		return atomic.LoadUint64(&r.words[off]), nil
	}
	l := &r.emu.lines[off/LineWords]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable[off%LineWords], nil
}

// Pending is the number of stores not yet durable, over all lines (0 without
// emulation). Not an access.
func (r *Region) Pending() int {
	if r.emu == nil {
		return 0
	}
	n := 0
	for i := range r.emu.lines {
		l := &r.emu.lines[i]
		l.mu.Lock()
		n += len(l.log)
		l.mu.Unlock()
	}
	return n
}
