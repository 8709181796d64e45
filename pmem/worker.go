package pmem

import (
	"runtime"
	"sync/atomic"
)

// A Worker is one thread's handle on a region (see Region.Worker). Its
// methods are the region accesses; each first calls the access hook, then
// fails with ErrCrashed once a crash has been requested.
type Worker struct {
	r  *Region
	id int
	// pending holds the lines flushed since the last fence, each with the
	// position of its store log at the flush (emulation only).
	pending []pendingFlush
}

type pendingFlush struct {
	line uint64
	seq  uint64
}

// Load, Store, CAS, Flush and Fence make their access's prologue
// (Region.access: the hook, then accessOK) themselves, written out: they
// are the accesses of every operation, a scheduling point each, and the
// call to access, not inlined (it calls the hook through an interface),
// cost a frame, its arguments and its results per access, about 4 % of a
// fuzz run's instructions. Wait and Volatile, rarer, call it.

// Load reads word off atomically.
func (w *Worker) Load(off uint64) (uint64, error) {
	r := w.r
	if hb := r.hook.Load(); hb != nil {
		if err := hb.h.Access(w.id, AccessLoad, off); err != nil {
			return 0, r.hookFailed(err)
		}
	}
	if !r.accessOK(AccessLoad, off) {
		return 0, r.accessError(AccessLoad, off)
	}
	return atomic.LoadUint64(&r.words[off]), nil
}

// Store writes v to word off atomically.
func (w *Worker) Store(off, v uint64) error {
	r := w.r
	excl := false
	if hb := r.hook.Load(); hb != nil {
		if err := hb.h.Access(w.id, AccessStore, off); err != nil {
			return r.hookFailed(err)
		}
		excl = hb.excl
	}
	if !r.accessOK(AccessStore, off) {
		return r.accessError(AccessStore, off)
	}
	switch e := r.emu; {
	case e == nil:
		atomic.StoreUint64(&r.words[off], v)
	case excl:
		e.storeExcl(r.words, off, v)
	default:
		e.store(r.words, off, v)
	}
	return nil
}

// CAS atomically replaces word off by new if it holds old, and reports
// whether it did.
func (w *Worker) CAS(off, old, new uint64) (bool, error) {
	r := w.r
	excl := false
	if hb := r.hook.Load(); hb != nil {
		var err error
		if hb.cas != nil {
			err = hb.cas.AccessCAS(w.id, off, old)
		} else {
			err = hb.h.Access(w.id, AccessCAS, off)
		}
		if err != nil {
			return false, r.hookFailed(err)
		}
		excl = hb.excl
	}
	if !r.accessOK(AccessCAS, off) {
		return false, r.accessError(AccessCAS, off)
	}
	switch e := r.emu; {
	case e == nil:
		return atomic.CompareAndSwapUint64(&r.words[off], old, new), nil
	case excl:
		return e.casExcl(r.words, off, old, new), nil
	default:
		return e.cas(r.words, off, old, new), nil
	}
}

// Flush writes back the line holding word off (CLWB). The write-back is
// complete only after this worker's next Fence.
func (w *Worker) Flush(off uint64) error {
	r := w.r
	excl := false
	if hb := r.hook.Load(); hb != nil {
		if err := hb.h.Access(w.id, AccessFlush, off); err != nil {
			return r.hookFailed(err)
		}
		excl = hb.excl
	}
	if !r.accessOK(AccessFlush, off) {
		return r.accessError(AccessFlush, off)
	}
	if r.hw {
		hwFlush(&r.words[off])
	}
	if e := r.emu; e != nil {
		line := off / LineWords
		var seq uint64
		if excl {
			seq = e.positionExcl(line)
		} else {
			seq = e.position(line)
		}
		for i := range w.pending {
			if w.pending[i].line == line {
				w.pending[i].seq = max(w.pending[i].seq, seq)
				return nil
			}
		}
		w.pending = append(w.pending, pendingFlush{line, seq})
	}
	return nil
}

// Fence waits for this worker's flushes to complete (SFENCE): every line it
// flushed is durable at least up to its contents at the time of the flush.
func (w *Worker) Fence() error {
	r := w.r
	excl := false
	if hb := r.hook.Load(); hb != nil {
		if err := hb.h.Access(w.id, AccessFence, 0); err != nil {
			return r.hookFailed(err)
		}
		excl = hb.excl
	}
	if !r.accessOK(AccessFence, 0) {
		return r.accessError(AccessFence, 0)
	}
	if r.hw {
		hwFence()
	}
	if e := r.emu; e != nil {
		for _, p := range w.pending {
			if !excl {
				e.persist(r.words, p.line, p.seq)
			} else if l := &e.lines[p.line]; !l.persistAll(p.seq, lineOf(r.words, p.line)) {
				l.persistLog(p.seq) // eline.persist, its steps inlined
			}
		}
		w.pending = w.pending[:0]
	}
	return nil
}

// Wait is one step of a loop in which the worker waits by design for
// others to take steps: for a lock to be released, or for memory that a
// reclamation scheme (epochs) cannot hand out before the other workers
// move on. It reads and writes nothing, but it is an access: the hook
// sees it (AccessWait, offset 0), so that a scheduler can run another
// worker, and it fails once a crash has been requested, so that a crash
// stops the waiting worker. A wait loop calls it once per round: the
// loads of a round (those since the worker's last access other than a
// load: a scan of hazard slots, a re-read of a lock or an epoch) and the
// Wait that closes it tell a progress check (pmlin's stopped or held
// thread, package driver) that this worker waits on purpose, not because
// it failed to help an operation of the worker it waits for: they do not
// count as the worker's steps, and it waits until its next access other
// than a load. A loop that only loads, never calling Wait, is counted
// step by step, as a spin that should help instead. So call Wait only
// where the design waits for another worker it cannot help (a lock, a
// descriptor a reclamation scheme holds back). After the hook it yields
// the processor (runtime.Gosched), so that the workers it waits for run,
// unless the hook is an ExclusiveHook: such a hook has run the others
// already (a scheduler that runs one worker at a time), and a yield to the
// Go scheduler would only cost it (a futex wake-up of an idle processor,
// about 5 % of a fuzz run's CPU time when the PMwCAS made it).
func (w *Worker) Wait() error {
	excl, err := w.r.access(w.id, AccessWait, 0)
	if err == nil && !excl {
		runtime.Gosched()
	}
	return err
}

// Volatile is a scheduling point at the worker's next step on shared
// state that lives outside the region: a Go atomic (an epoch counter, a
// flag) that every worker reads and writes. The harness's deterministic
// scheduler switches workers only at region accesses, so without such a
// point a load of that state and the write that depends on it (an epoch
// advanced by a CAS of the value read) always run back to back, and the
// interleavings that break them are never tried. It reads and writes
// nothing, but it is an access: the hook sees it (AccessVolatile, with key
// as the offset: a number the target chooses to name that state, so that
// a scheduler can tell points on the same state apart), and it fails once
// a crash has been requested. Call it right before the step, each time;
// it costs the hook's call and nothing else. pmlin's deterministic
// scheduler switches there in its late-write runs (package driver).
func (w *Worker) Volatile(key uint64) error {
	_, err := w.r.access(w.id, AccessVolatile, key)
	return err
}

// Persist is Flush of word off followed by Fence.
func (w *Worker) Persist(off uint64) error {
	if err := w.Flush(off); err != nil {
		return err
	}
	return w.Fence()
}

// MarkLinearization tells the emulated persistence domain that the caller is
// about to take a step that decides an operation (for PMwCAS: the status
// CAS). The targeted crash policy keeps every store made before the latest
// mark and drops every store made after it that is not yet durable. It is not
// an access: the hook is not called and it never fails.
func (w *Worker) MarkLinearization() {
	if e := w.r.emu; e != nil {
		atomic.StoreUint64(&e.mark, atomic.LoadUint64(&e.gseq))
	}
}
