package mwcas

import (
	"errors"
	"fmt"
)

// RecoveryStats counts what a recovery did.
type RecoveryStats struct {
	RolledForward int // words that got a succeeded descriptor's new value
	RolledBack    int // words that got a descriptor's old value back
	RDCSSUndone   int // words whose RDCSS pointer was replaced by the old value
	DirtyCleared  int // plain values whose dirty bit was cleared
	Descriptors   int // descriptors found in use and freed
}

// Recover brings the region to a state with no descriptor pointer, RDCSS
// pointer or dirty bit in any data word, in which every MwCAS whose status is
// durably succeeded took effect and every other one did not, and frees every
// descriptor. It must run after Open and after every pmem.Region.Crash, with
// no operation in progress; it accesses the region as the given worker (an
// access hook sees it, and can crash it: running Recover again then gives the
// same result). An error wrapping pmem.ErrCrashed means it was cut short;
// an *OpenError (wrapping ErrCorrupt) means the region is in a state no
// crash of the correct algorithm produces (for instance a pointer to a
// descriptor that does not name the word).
func (m *PMwCAS) Recover(worker int) (stats RecoveryStats, err error) {
	if worker < 0 || worker >= len(m.ws) {
		return stats, fmt.Errorf("mwcas: worker %d out of range (0..%d)", worker, len(m.ws)-1)
	}
	m.ready.Store(false)
	defer func() {
		// Runs after catch: a corrupt region is the image's fault.
		if err != nil && errors.Is(err, ErrCorrupt) {
			err = &OpenError{"recover", err}
		}
	}()
	defer catch(&err)
	w := m.ws[worker]
	l := &m.l
	// Words first, descriptors last: until every fixed word is durable the
	// descriptors still say how to fix the others, so a recovery cut short
	// and run again decides every word the same way.
	for a := range l.words {
		off := l.data(a)
		v := w.load(off)
		if v&flagBits == 0 {
			continue
		}
		nv := w.recoverWord(a, v, &stats)
		if nv != v {
			w.store(off, nv)
			w.flush(off)
		}
	}
	w.fence()
	for d := range l.descs {
		off := l.status(d)
		if w.load(off) != stFree {
			w.store(off, stFree)
			w.flush(off)
			stats.Descriptors++
		}
	}
	w.fence()
	m.resetVolatile()
	m.ready.Store(true)
	return stats, nil
}

// recoverWord decides the value of data word a, which holds v with some flag.
func (w *wstate) recoverWord(a, v uint64, stats *RecoveryStats) uint64 {
	l := &w.m.l
	switch {
	case isDesc(v) && isRDCSS(v):
		corrupt("word %d holds %#x, both a descriptor and an RDCSS pointer", a, v)
	case isDesc(v):
		d := ptrDesc(v)
		s := w.findSlot(a, d)
		st := state(w.load(l.status(d)))
		forward := st == stSucceeded
		if w.m.mut == mutRecoveryWrongWay {
			forward = !forward
		}
		if forward {
			stats.RolledForward++
			return w.recoverValue(a, l.entry(d, s)+2)
		}
		stats.RolledBack++
		return w.recoverValue(a, l.entry(d, s)+1)
	case isRDCSS(v):
		if w.m.mut == mutRecoverySkipsRDCSS {
			return v
		}
		d, s := ptrDesc(v), ptrSlot(v)
		if d >= l.descs || s >= l.maxK {
			corrupt("word %d holds an RDCSS pointer to descriptor %d slot %d", a, d, s)
		}
		if w.load(l.entry(d, s)) != a {
			corrupt("word %d holds an RDCSS pointer to descriptor %d slot %d, which names another word", a, d, s)
		}
		stats.RDCSSUndone++
		return w.recoverValue(a, l.entry(d, s)+1)
	}
	stats.DirtyCleared++
	return v &^ DirtyBit
}

// findSlot returns the slot of descriptor d that names word a.
func (w *wstate) findSlot(a, d uint64) uint64 {
	l := &w.m.l
	if d >= l.descs {
		corrupt("word %d holds a pointer to descriptor %d of %d", a, d, l.descs)
	}
	n := w.load(l.count(d)) &^ swapFlag
	if n > l.maxK {
		corrupt("word %d points to descriptor %d, which has %d words", a, d, n)
	}
	for s := range n {
		if w.load(l.entry(d, s)) == a {
			return s
		}
	}
	corrupt("word %d points to descriptor %d, which does not name it", a, d)
	return 0
}

// recoverValue reads the value for word a in a descriptor's old or new
// field (a swap's old field may carry frozenBit: the value is the same).
func (w *wstate) recoverValue(a, off uint64) uint64 {
	v := w.load(off) &^ frozenBit
	if v > MaxValue {
		corrupt("descriptor value %#x for word %d has flag bits", v, a)
	}
	return v
}

// SkipRecovery makes a PMwCAS that Open returned usable without Recover:
// the data words keep the descriptor pointers, RDCSS pointers and dirty
// bits the crash left, and the descriptor pool is handed out afresh as if
// nothing were in flight. No correct caller uses it: it is the planted bug
// of a structure built on the PMwCAS whose recovery forgets the PMwCAS's
// own (internal/pmlist's pmwcas-recovery-skipped), which only this
// package can plant.
func (m *PMwCAS) SkipRecovery() {
	m.resetVolatile()
	m.ready.Store(true)
}
