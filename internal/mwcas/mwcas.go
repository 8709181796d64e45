package mwcas

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/pmlin/pmlin/pmem"
)

// Word is one word of a MwCAS: at data address Addr, replace Old by New.
type Word struct {
	Addr, Old, New uint64
}

// PMwCAS is a persistent multi-word CAS over the data words of a region.
// Its methods may be called concurrently by different workers; one worker id
// must be used by one goroutine at a time.
type PMwCAS struct {
	r   *pmem.Region
	l   layout
	mut mutant
	ws  []*wstate
	// epoch is the global epoch of descriptor reclamation; on its own line,
	// because every operation reads it.
	_     [64]byte
	epoch atomic.Uint64
	_     [56]byte
	// ready is false between Open and Recover.
	ready atomic.Bool
}

// wstate is one worker's private state: its region handle, its epoch
// announcement, its share of the descriptor pool, and scratch space.
type wstate struct {
	m  *PMwCAS
	pw *pmem.Worker
	id int
	// announce is the epoch this worker entered, 0 while outside an operation.
	announce atomic.Uint64
	free     []uint64
	limbo    []retired
	sorted   []Word
	collect  []uint64
	addrs    []uint64
	_        [64]byte // keep announce words of different workers on different lines
}

type retired struct {
	d, epoch uint64
}

// unwind carries an access error from deep inside the algorithm to the public
// method, which turns it back into an error. It never leaves the package.
type unwind struct{ err error }

func catch(err *error) {
	if p := recover(); p != nil {
		u, ok := p.(unwind)
		if !ok {
			panic(p)
		}
		*err = u.err
	}
}

func corrupt(format string, args ...any) {
	panic(unwind{fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)})
}

// New formats region r for a PMwCAS with configuration c and returns it,
// ready for operations. All data words start at 0. The region must be large
// enough (RegionWords) and must not hold a PMwCAS already. Everything New
// writes is durable (flushed and fenced) when it returns, the superblock
// last, so a New cut short by a crash leaves a region that Open refuses with
// ErrNotFormatted and New accepts. New accesses the region as worker 0.
func New(r *pmem.Region, c Config) (*PMwCAS, error) {
	c = c.withDefaults()
	if err := c.check(); err != nil {
		return nil, err
	}
	mut, _ := parseMutant(c.Mutant)
	return format(r, c, mut)
}

// format is New with the mutant given, so that tests can plant variants of
// New that are not selectable by name.
func format(r *pmem.Region, c Config, mut mutant) (m *PMwCAS, err error) {
	l := newLayout(c)
	if r.Words() < l.total {
		return nil, fmt.Errorf("mwcas: region has %d words, this configuration needs %d", r.Words(), l.total)
	}
	m = newPMwCAS(r, l, mut)
	defer catch(&err)
	w := m.ws[0]
	if v := w.load(0); v != 0 {
		if v == sbMagic {
			return nil, ErrFormatted
		}
		return nil, fmt.Errorf("%w: word 0 holds %#x", ErrFormatted, v)
	}
	for off := l.dataBase; off < l.total; off++ {
		if w.load(off) != 0 {
			w.store(off, 0)
			w.flush(off)
		}
	}
	if mut != mutFormatUnfenced {
		// The zeroed words durable before the superblock: a durable
		// superblock must mean a durable, empty PMwCAS behind it.
		w.fence()
	}
	// The magic last, on the same line: lines persist in store order, so a
	// durable magic means a durable superblock.
	sb := superblock(l)
	for j := range sbWords {
		i := sbWords - 1 - j
		if mut == mutSuperblockMagicFirst {
			i = j
		}
		w.store(uint64(i), sb[i])
	}
	if mut != mutSuperblockUnflushed {
		w.flush(0)
	}
	w.fence()
	m.ready.Store(true)
	return m, nil
}

// An OpenError says that a region's contents cannot be opened or recovered
// as a PMwCAS: Open found no superblock (ErrNotFormatted), a damaged
// superblock or descriptor pool (ErrCorrupt), or a geometry other than the
// one asked for (ErrGeometry); Recover found a data word or a descriptor
// that breaks an invariant of the algorithm (ErrCorrupt). Once New has
// returned, no crash of the correct PMwCAS at any moment, under any crash
// policy, leaves such a region. So for a harness that crashes the PMwCAS
// and reopens its image, an OpenError is a finding about the code that
// wrote the region (a superblock never made durable, a descriptor pointer
// left dangling), not an error of the harness; errors.Is tells which kind.
// Errors of region accesses (pmem.ErrCrashed, pmem.ErrClosed) and of
// arguments are never OpenErrors.
type OpenError struct {
	Op  string // "open" or "recover"
	Err error  // wraps ErrNotFormatted, ErrCorrupt or ErrGeometry, with the details
}

func (e *OpenError) Error() string {
	return "mwcas: " + e.Op + ": " + strings.TrimPrefix(e.Err.Error(), "mwcas: ")
}

func (e *OpenError) Unwrap() error { return e.Err }

// Open opens the PMwCAS in a region formatted by New, as a new process does
// after a restart: it reads and checks the superblock, then checks every
// descriptor's status word. Fields of c that are not zero must match the
// region's geometry; c.Mutant chooses the planted bug. The PMwCAS is not
// usable until Recover has run: call Recover (or use the package function
// Recover). A region whose contents cannot be a PMwCAS gets an *OpenError.
// Open accesses the region as worker 0.
//
// To recover as a new process would, reopen the region first
// (pmem.Region.Reopen after pmem.Region.Crash) and open the PMwCAS on the
// new region: recovering the object that crashed keeps volatile state a
// restart loses.
func Open(r *pmem.Region, c Config) (m *PMwCAS, err error) {
	if err := CheckMutant(c.Mutant); err != nil {
		return nil, err
	}
	if r.Words() < sbWords {
		return nil, &OpenError{"open", fmt.Errorf("%w: region of %d words", ErrNotFormatted, r.Words())}
	}
	w := r.Worker(0)
	var sb [sbWords]uint64
	for i := range sb {
		if sb[i], err = w.Load(uint64(i)); err != nil {
			return nil, err
		}
	}
	got, err := parseSuperblock(sb)
	if err != nil {
		return nil, &OpenError{"open", err}
	}
	if !c.matches(got) {
		return nil, &OpenError{"open", fmt.Errorf("%w: the region holds %+v, asked for %+v", ErrGeometry, got, c)}
	}
	mut, _ := parseMutant(c.Mutant)
	l := newLayout(got)
	if r.Words() < l.total {
		return nil, &OpenError{"open", fmt.Errorf("%w: region has %d words, its superblock needs %d", ErrCorrupt, r.Words(), l.total)}
	}
	for d := range l.descs {
		st, err := w.Load(l.status(d))
		if err != nil {
			return nil, err
		}
		if !validStatus(st, l.maxK) {
			return nil, &OpenError{"open", fmt.Errorf("%w: descriptor %d has status %#x", ErrCorrupt, d, st)}
		}
	}
	return newPMwCAS(r, l, mut), nil
}

// matches tells whether every non-zero geometry field of c equals got's.
func (c Config) matches(got Config) bool {
	return (c.Words == 0 || c.Words == got.Words) && (c.MaxWorkers == 0 || c.MaxWorkers == got.MaxWorkers) &&
		(c.DescriptorsPerWorker == 0 || c.DescriptorsPerWorker == got.DescriptorsPerWorker) &&
		(c.MaxK == 0 || c.MaxK == got.MaxK) && (c.Stride == 0 || c.Stride == got.Stride) &&
		(c.LineOffset == 0 || c.LineOffset == got.LineOffset)
}

// Recover opens the PMwCAS in r (see Open) and recovers it (see
// PMwCAS.Recover) as worker 0.
func Recover(r *pmem.Region, c Config) (*PMwCAS, RecoveryStats, error) {
	m, err := Open(r, c)
	if err != nil {
		return nil, RecoveryStats{}, err
	}
	st, err := m.Recover(0)
	if err != nil {
		return nil, st, err
	}
	return m, st, nil
}

func newPMwCAS(r *pmem.Region, l layout, mut mutant) *PMwCAS {
	m := &PMwCAS{r: r, l: l, mut: mut}
	// One allocation for the workers' states and one for each kind of
	// their descriptor lists (each holds at most the worker's share of the
	// pool), not a few per worker: a harness opens a new PMwCAS after
	// every crash.
	states := make([]wstate, l.maxWorkers)
	free := make([]uint64, l.maxWorkers*l.perWorker)
	limbo := make([]retired, l.maxWorkers*l.perWorker)
	m.ws = make([]*wstate, l.maxWorkers)
	for i := range m.ws {
		w := &states[i]
		lo, hi := uint64(i)*l.perWorker, uint64(i+1)*l.perWorker
		w.m, w.pw, w.id = m, r.Worker(i), i
		w.free, w.limbo = free[lo:lo:hi], limbo[lo:lo:hi]
		m.ws[i] = w
	}
	m.resetVolatile()
	return m
}

// resetVolatile gives every worker its whole share of the pool and forgets
// epochs: the state after formatting or recovery, when no operation runs.
func (m *PMwCAS) resetVolatile() {
	m.epoch.Store(1)
	for i, w := range m.ws {
		w.announce.Store(0)
		w.free = w.free[:0]
		w.limbo = w.limbo[:0]
		for j := m.l.perWorker; j > 0; j-- {
			w.free = append(w.free, uint64(i)*m.l.perWorker+j-1)
		}
	}
}

// Region is the region the PMwCAS lives in.
func (m *PMwCAS) Region() *pmem.Region { return m.r }

// Config is the PMwCAS's geometry and mutant.
func (m *PMwCAS) Config() Config {
	return Config{Words: m.l.words, MaxWorkers: int(m.l.maxWorkers), DescriptorsPerWorker: int(m.l.perWorker),
		MaxK: int(m.l.maxK), Stride: m.l.stride, LineOffset: m.l.lineOffset, Mutant: m.mut.String()}
}

func (m *PMwCAS) worker(id int) (*wstate, error) {
	if id < 0 || id >= len(m.ws) {
		return nil, fmt.Errorf("mwcas: worker %d out of range (0..%d)", id, len(m.ws)-1)
	}
	if !m.ready.Load() {
		return nil, ErrNeedsRecovery
	}
	return m.ws[id], nil
}

// CAS atomically replaces, for every w in words, the value at w.Addr by w.New
// if every address holds its w.Old; it returns whether it did, and if not an
// address whose value differed from the expected one. The change is durable
// when CAS returns. Addresses must be distinct and below Words, values at
// most MaxValue, and 1 <= len(words) <= MaxK. An error wrapping
// pmem.ErrCrashed means the region crashed during the operation: its outcome
// is decided by recovery.
func (m *PMwCAS) CAS(worker int, words []Word) (ok bool, failedAddr uint64, err error) {
	return m.cas(worker, words, nil)
}

// CASReport is CAS; when it fails, it also sets read[i] (len(read) >=
// len(words)) to the value at words[i].Addr in one atomic snapshot taken
// after the failure was decided, inside the call, as Read takes it. Phase
// 1 saw the words only up to the one it blames, so the snapshot is taken
// anew; the value it shows at failedAddr still differs from the expected
// one whenever that value had been at the word before the call (as a
// caller that expects only values it read makes sure): a word's value,
// once replaced, never comes back.
func (m *PMwCAS) CASReport(worker int, words []Word, read []uint64) (ok bool, failedAddr uint64, err error) {
	if len(read) < len(words) {
		return false, 0, fmt.Errorf("mwcas: read has room for %d values, %d words given", len(read), len(words))
	}
	return m.cas(worker, words, read)
}

// cas is CAS, and CASReport when read is not nil.
func (m *PMwCAS) cas(worker int, words []Word, read []uint64) (ok bool, failedAddr uint64, err error) {
	w, err := m.worker(worker)
	if err != nil {
		return false, 0, err
	}
	if err := w.prepare(words, false); err != nil {
		return false, 0, err
	}
	defer catch(&err)
	d := w.alloc()
	w.enter()
	defer w.exit()
	w.initDescriptor(d, 0)
	st := w.run(d)
	w.retire(d)
	if state(st) == stSucceeded {
		return true, 0, nil
	}
	s := failedSlot(st)
	if state(st) != stFailed || s >= len(w.sorted) {
		corrupt("descriptor %d ended with status %#x", d, st)
	}
	if read != nil {
		w.addrs = w.addrs[:0]
		for _, x := range words {
			w.addrs = append(w.addrs, x.Addr)
		}
		w.snapshot(w.addrs, read)
	}
	return false, w.sorted[s].Addr, nil
}

// Swap atomically writes, for every w in words, w.New at w.Addr (w.Old is
// not used), and sets old[i] (len(old) >= len(words)) to the value it
// replaced at words[i].Addr: the value its phase 1 displaced when it
// installed the descriptor there. It is a MwCAS whose expected values are
// whatever the words hold (see installSwap), so it is helped, persisted
// and recovered as one, and always succeeds. The rules of CAS hold for the
// arguments and errors.
func (m *PMwCAS) Swap(worker int, words []Word, old []uint64) (err error) {
	w, err := m.worker(worker)
	if err != nil {
		return err
	}
	if len(old) < len(words) {
		return fmt.Errorf("mwcas: old has room for %d values, %d words given", len(old), len(words))
	}
	if err := w.prepare(words, true); err != nil {
		return err
	}
	defer catch(&err)
	d := w.alloc()
	w.enter()
	defer w.exit()
	if m.mut == mutSwapStaleOld {
		// The planted bug: the values read before the descriptor went in.
		for i, x := range words {
			old[i] = w.pread(m.l.data(x.Addr))
		}
	}
	w.initDescriptor(d, swapFlag)
	if st := w.run(d); state(st) != stSucceeded {
		corrupt("swap descriptor %d ended with status %#x", d, st)
	}
	for i, x := range words {
		s, _ := slices.BinarySearchFunc(w.sorted, x.Addr, func(y Word, a uint64) int { return cmp.Compare(y.Addr, a) })
		o := w.load(m.l.entry(d, uint64(s)) + 1)
		if o&frozenBit == 0 || o&^frozenBit > MaxValue {
			corrupt("swap descriptor %d succeeded with %#x as the value displaced from address %d", d, o, x.Addr)
		}
		if m.mut != mutSwapStaleOld {
			old[i] = o &^ frozenBit
		}
	}
	w.retire(d) // only now: a reused descriptor gets new old fields
	return nil
}

// prepare checks the words of a MwCAS or a swap and puts them in
// w.sorted, by address; a swap's expected values are swapUnknown.
func (w *wstate) prepare(words []Word, swap bool) error {
	m := w.m
	if len(words) == 0 || uint64(len(words)) > m.l.maxK {
		return fmt.Errorf("mwcas: %d words in a MwCAS (1..%d allowed)", len(words), m.l.maxK)
	}
	w.sorted = append(w.sorted[:0], words...)
	// By address, by insertion: an operation has a few words (MaxK at
	// most), where slices.SortFunc's calls of a comparison closure cost
	// more than the sort itself.
	ws := w.sorted
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && ws[j].Addr < ws[j-1].Addr; j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
	for i, x := range w.sorted {
		if x.Addr >= m.l.words {
			return fmt.Errorf("mwcas: address %d out of range (0..%d)", x.Addr, m.l.words-1)
		}
		if swap {
			w.sorted[i].Old, x.Old = swapUnknown, 0
		}
		if x.Old > MaxValue || x.New > MaxValue {
			return fmt.Errorf("mwcas: value at address %d exceeds MaxValue", x.Addr)
		}
		if i > 0 && w.sorted[i-1].Addr == x.Addr {
			return fmt.Errorf("mwcas: address %d appears twice", x.Addr)
		}
	}
	return nil
}

// Read reads the values at addrs into out (len(out) >= len(addrs)) as one
// atomic snapshot: every value is read persistently (helping descriptors,
// persisting dirty values), and collects are repeated until two in a row are
// equal. An error wrapping pmem.ErrCrashed means the region crashed.
func (m *PMwCAS) Read(worker int, addrs []uint64, out []uint64) (err error) {
	w, err := m.worker(worker)
	if err != nil {
		return err
	}
	if len(out) < len(addrs) {
		return fmt.Errorf("mwcas: out has room for %d values, %d addresses given", len(out), len(addrs))
	}
	for _, a := range addrs {
		if a >= m.l.words {
			return fmt.Errorf("mwcas: address %d out of range (0..%d)", a, m.l.words-1)
		}
	}
	defer catch(&err)
	w.enter()
	defer w.exit()
	w.snapshot(addrs, out)
	return nil
}

// snapshot reads the values at addrs into out as one atomic snapshot
// (see Read), inside the worker's epoch.
func (w *wstate) snapshot(addrs []uint64, out []uint64) {
	m := w.m
	for i, a := range addrs {
		out[i] = w.pread(m.l.data(a))
	}
	if len(addrs) == 1 || m.mut == mutReadSingleCollect {
		return
	}
	// Two equal collects in a row are a snapshot: each word kept its value
	// from its read in the first to its read in the second, and all first
	// reads come before all second ones (values are never repeated).
	w.collect = slices.Grow(w.collect[:0], len(addrs))[:len(addrs)]
	prev, cur := out[:len(addrs)], w.collect
	for {
		for i, a := range addrs {
			cur[i] = w.pread(m.l.data(a))
		}
		if slices.Equal(prev, cur) {
			break
		}
		prev, cur = cur, prev
	}
	// prev and cur are equal, and out is one of them.
}

// --- region accesses that unwind on error ---

func (w *wstate) load(off uint64) uint64 {
	v, err := w.pw.Load(off)
	if err != nil {
		panic(unwind{err})
	}
	return v
}

func (w *wstate) store(off, v uint64) {
	if err := w.pw.Store(off, v); err != nil {
		panic(unwind{err})
	}
}

// cas is written so that it is inlined (an inlining cost of 80 or less):
// the PMwCAS makes a CAS in every phase of every operation.
func (w *wstate) cas(off, old, new uint64) (ok bool) {
	ok, err := w.pw.CAS(off, old, new)
	if err != nil {
		panic(unwind{err})
	}
	return
}

func (w *wstate) flush(off uint64) {
	if err := w.pw.Flush(off); err != nil {
		panic(unwind{err})
	}
}

// epochKey names the epoch at the scheduling points on it
// (pmem.Worker.Volatile).
const epochKey = 0

func (w *wstate) volatile(key uint64) {
	if err := w.pw.Volatile(key); err != nil {
		panic(unwind{err})
	}
}

func (w *wstate) wait() {
	if err := w.pw.Wait(); err != nil {
		panic(unwind{err})
	}
}

func (w *wstate) fence() {
	if err := w.pw.Fence(); err != nil {
		panic(unwind{err})
	}
}

// --- epochs and the descriptor pool ---

func (w *wstate) enter() { w.announce.Store(w.m.epoch.Load()) }
func (w *wstate) exit()  { w.announce.Store(0) }

func (w *wstate) retire(d uint64) {
	w.limbo = append(w.limbo, retired{d, w.m.epoch.Load()})
}

// alloc takes a descriptor from the worker's share of the pool. It runs
// outside the worker's epoch. A descriptor retired at epoch e is reusable once
// every worker inside an operation has announced an epoch later than e: such
// a worker entered after the descriptor's words were cleaned, so it holds no
// pointer to it. (It may have met one meanwhile, an RDCSS that landed late,
// but the late installer entered before e, and leaves only once that
// pointer is durably gone: see install.)
func (w *wstate) alloc() uint64 {
	for {
		if n := len(w.free); n > 0 {
			d := w.free[n-1]
			w.free = w.free[:n-1]
			return d
		}
		w.tryAdvance()
		w.reclaim()
		if len(w.free) > 0 {
			continue
		}
		// Every descriptor waits for a slower worker. Wait with a region
		// access, so that a scheduling hook can run that worker and a crash
		// stops this one; a declared wait (pmem.Worker.Wait), since
		// epoch-based reclamation blocks by design while a worker stays in
		// an old epoch: the one wait of the PMwCAS that is not lock-free.
		// The wait also yields the processor to the others (or, under a
		// scheduler that runs one worker at a time, runs another).
		w.wait()
	}
}

// tryAdvance moves the global epoch on if every worker inside an operation
// has announced the current one. The epoch is shared state outside the
// region: the scheduling point before its CAS (pmem.Worker.Volatile) lets
// a deterministic scheduler run other workers between the epoch's load
// and its CAS, as real threads may.
func (w *wstate) tryAdvance() {
	m := w.m
	e := m.epoch.Load()
	for _, o := range m.ws {
		if a := o.announce.Load(); a != 0 && a != e {
			return
		}
	}
	w.volatile(epochKey)
	m.epoch.CompareAndSwap(e, e+1)
}

func (w *wstate) reclaim() {
	oldest := ^uint64(0)
	for _, o := range w.m.ws {
		if a := o.announce.Load(); a != 0 && a < oldest {
			oldest = a
		}
	}
	keep := w.limbo[:0]
	for _, r := range w.limbo {
		if r.epoch < oldest {
			w.free = append(w.free, r.d)
		} else {
			keep = append(keep, r)
		}
	}
	w.limbo = keep
}
