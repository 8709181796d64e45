package mwcas

// This file is the PMwCAS algorithm proper. Every method may be run by the
// descriptor's owner or by any helper; all of them are idempotent, so any
// number of workers can run them on the same descriptor at once.

// initDescriptor fills descriptor d from w.sorted, with kind 0 for a MwCAS
// or swapFlag for a swap, and persists it before any pointer to it can be
// installed: recovery must find, behind every durable pointer, the
// operation that put it there.
func (w *wstate) initDescriptor(d, kind uint64) {
	l := &w.m.l
	k := uint64(len(w.sorted))
	w.store(l.status(d), stUndecided)
	w.store(l.count(d), k|kind)
	for s, x := range w.sorted {
		e := l.entry(d, uint64(s))
		w.store(e, x.Addr)
		w.store(e+1, x.Old)
		w.store(e+2, x.New)
	}
	if w.m.mut == mutDescriptorUnflushed {
		return
	}
	for i := range l.descLines(k) {
		w.flush(l.status(d) + 8*i)
	}
	w.fence()
}

// count reads and checks the number of words of descriptor d, and tells
// whether it is a swap.
func (w *wstate) count(d uint64) (uint64, bool) {
	c := w.load(w.m.l.count(d))
	n := c &^ swapFlag
	if n == 0 || n > w.m.l.maxK {
		corrupt("descriptor %d has count word %#x", d, c)
	}
	return n, c&swapFlag != 0
}

// entryAddr reads and checks the data address of slot s of descriptor d, and
// returns its region offset.
func (w *wstate) entryAddr(d, s uint64) uint64 {
	a := w.load(w.m.l.entry(d, s))
	if a >= w.m.l.words {
		corrupt("descriptor %d slot %d names address %d", d, s, a)
	}
	return w.m.l.data(a)
}

// run takes descriptor d to its end: phase 1 if it is undecided, then
// phase 2. It returns the decided status (without the dirty bit).
func (w *wstate) run(d uint64) uint64 {
	st := w.pstatus(d)
	if state(st) == stUndecided {
		w.phase1(d)
		st = w.pstatus(d)
	}
	w.phase2(d, st)
	return st
}

// help runs another worker's descriptor met in a word.
func (w *wstate) help(d uint64) {
	if d >= w.m.l.descs {
		corrupt("pointer to descriptor %d of %d", d, w.m.l.descs)
	}
	if w.m.mut == mutHelpSkipped {
		return
	}
	w.run(d)
}

// phase1 installs descriptor d in its words in address order, persists them
// and decides the status.
func (w *wstate) phase1(d uint64) {
	l := &w.m.l
	n, swap := w.count(d)
	mine := descPtr(d)
	outcome := stSucceeded
slots:
	for s := range n {
		if swap {
			if !w.installSwap(d, s) {
				return // decided by a helper
			}
			continue
		}
		off := w.entryAddr(d, s)
		old := w.load(l.entry(d, s) + 1)
		for {
			if state(w.load(l.status(d))) != stUndecided {
				// Decided by a helper: nothing more may land.
				return
			}
			v := w.install(d, s, off, old)
			switch {
			case v&^DirtyBit == mine:
				continue slots
			case v == old:
				// Our RDCSS was undone (the status is decided) or the word
				// changed back and forth: look at the status again.
			case isRDCSS(v):
				w.completeInstall(ptrDesc(v), ptrSlot(v))
			case isDesc(v):
				w.help(ptrDesc(v))
			case v == old|DirtyBit && w.m.mut != mutDirtySpuriousFailure:
				// The expected value, not yet known durable: persist it, then
				// install over it.
				w.persistWord(off, v)
			default:
				// A different value: the MwCAS fails, blaming this word.
				// A dirty one is persisted first, as every value acted on.
				if v&DirtyBit != 0 {
					w.persistWord(off, v)
				}
				outcome = stFailed | s<<8
				break slots
			}
		}
	}
	if outcome == stSucceeded && w.m.mut != mutWordsUnpersisted {
		// The installed pointers must be durable before the status says
		// succeeded, or recovery would find a succeeded descriptor and words
		// that never heard of it.
		for s := range n {
			if s > 0 && w.m.mut == mutFlushFirstWordOnly {
				break
			}
			w.flush(w.entryAddr(d, s))
		}
		w.fence()
		for s := range n {
			off := w.entryAddr(d, s)
			w.cas(off, mine|DirtyBit, mine)
		}
	}
	w.decide(d, outcome)
}

// install is phase 1's RDCSS of slot s of descriptor d: if the word at off
// holds old, it gets a pointer to the slot, which is then completed
// (completeInstall). It returns what the word holds afterwards.
//
// If the RDCSS landed, this worker makes sure, before it can leave its
// epoch, that the word durably no longer holds the pointer. An RDCSS lands
// late when its worker read the status undecided and was descheduled
// before its CAS while the descriptor failed and rolled the word back to
// old. completeInstall then undoes it, here or in any worker that meets
// the pointer first, and that worker may have entered its epoch after the
// descriptor was retired: its epoch does not keep the descriptor from
// reuse, and it may be descheduled before its undo is durable. This
// worker's epoch does (it began before the status was read undecided). A
// stale RDCSS pointer in a crash image after the reuse would send
// recovery to an operation that no longer names the word, with the value
// to restore gone (TestLateInstallerPersistsUndo). So unless the word
// holds the descriptor pointer, which phase 2 (run next) replaces and
// persists, the flush and fence below make whatever replaced the RDCSS
// pointer durable.
func (w *wstate) install(d, s, off, old uint64) uint64 {
	landed := w.cas(off, old, rdcssPtr(d, s))
	if landed {
		w.completeInstall(d, s)
	}
	v := w.load(off)
	if landed && v&^DirtyBit != descPtr(d) {
		w.flush(off)
		w.fence()
	}
	return v
}

// installSwap installs swap descriptor d in the word of slot s over
// whatever value the word holds, and leaves in the slot's old field, frozen,
// the value it displaced. It reports false if the status was decided
// first (by a helper: every slot is then installed and frozen).
//
// Any number of workers run it at once, so the old field is a protocol of
// its own. Before installing over a clean value v, a worker makes the old
// field say v (a CAS from the value it held), durably: recovery rolls a
// word back to it, and completeInstall undoes an RDCSS to it. A worker
// changes a recorded value o only after reading o there and then a clean v
// != o in the word: the word held o before o was recorded, so o was
// replaced by a write since and never comes back (a rollback restores the
// value its descriptor displaced, and new values are unique), so nobody
// can still install over o. While the word holds this descriptor it holds
// no clean value, so the field stays as the install found it; whoever sees
// the descriptor installed freezes the field (frozenBit), and a frozen
// field never changes: a late helper that finds the word moved on after
// phase 2 cannot rewrite the displaced value the owner returns.
func (w *wstate) installSwap(d, s uint64) bool {
	l := &w.m.l
	off := w.entryAddr(d, s)
	field := l.entry(d, s) + 1
	mine := descPtr(d)
	for {
		if st := w.load(l.status(d)); state(st) != stUndecided {
			return false
		}
		o := w.load(field)
		if o&frozenBit != 0 {
			return true
		}
		v := w.load(off)
		switch {
		case v == mine || v == mine|DirtyBit:
			w.cas(field, o, o|frozenBit)
			continue
		case isDesc(v):
			w.help(ptrDesc(v))
			continue
		case isRDCSS(v):
			w.completeInstall(ptrDesc(v), ptrSlot(v))
			continue
		case v&DirtyBit != 0:
			// Displace only durable values, as a MwCAS does.
			w.persistWord(off, v)
			continue
		case v != o && !w.cas(field, o, v):
			continue
		}
		// The field says v: durably, then install over v.
		w.flush(field)
		w.fence()
		if w.cas(off, v, rdcssPtr(d, s)) {
			// The status stays undecided until this slot is frozen, so
			// the RDCSS lands and the field keeps v: freeze it. (So
			// completeInstall puts the descriptor pointer in: there is
			// no undo to make durable, as install does.)
			w.completeInstall(d, s)
			w.cas(field, v, v|frozenBit)
			return true
		}
	}
}

// decide sets the status of d to outcome if it is still undecided, and
// persists it.
func (w *wstate) decide(d, outcome uint64) {
	off := w.m.l.status(d)
	w.pw.MarkLinearization()
	switch w.m.mut {
	case mutStatusWithoutCAS:
		w.store(off, outcome|DirtyBit)
	case mutStatusUnpersisted:
		w.cas(off, stUndecided, outcome)
		return
	default:
		w.cas(off, stUndecided, outcome|DirtyBit)
	}
	if st := w.load(off); st&DirtyBit != 0 {
		w.flush(off)
		w.fence()
		w.cas(off, st, st&^DirtyBit)
	}
}

// completeInstall finishes the RDCSS of slot s of descriptor d: the word gets
// the descriptor pointer if the status is still undecided, and its old value
// back otherwise. The undo is left for the RDCSS's installer to make
// durable (install): until then its epoch keeps the descriptor from reuse,
// and a crash lets recovery undo the pointer again from the descriptor.
func (w *wstate) completeInstall(d, s uint64) {
	l := &w.m.l
	if d >= l.descs || s >= l.maxK {
		corrupt("RDCSS pointer to descriptor %d slot %d", d, s)
	}
	off := w.entryAddr(d, s)
	ptr := rdcssPtr(d, s)
	if state(w.load(l.status(d))) == stUndecided {
		w.cas(off, ptr, descPtr(d)|DirtyBit)
		return
	}
	w.cas(off, ptr, w.load(l.entry(d, s)+1))
}

// phase2 writes the final value of every word of d (new if st succeeded, old
// otherwise): the pointer is replaced by the value with the dirty bit, which
// is flushed and then cleared.
func (w *wstate) phase2(d, st uint64) {
	l := &w.m.l
	n, _ := w.count(d)
	mine := descPtr(d)
	for s := range n {
		off := w.entryAddr(d, s)
		var v uint64
		if state(st) == stSucceeded {
			v = w.load(l.entry(d, s) + 2)
		} else {
			v = w.load(l.entry(d, s) + 1)
		}
		for {
			x := w.load(off)
			if x&^DirtyBit == mine {
				if w.m.mut == mutPhase2Unflushed {
					w.cas(off, x, v)
					continue
				}
				if !w.cas(off, x, v|DirtyBit) {
					continue
				}
				// This worker took the pointer out, so it persists the final
				// value itself, whatever the word holds by now, before it
				// leaves its epoch and lets the descriptor be reused. The
				// word may already look clean: a persistWord delayed
				// between its fence and its clearing CAS since the word
				// last held v|DirtyBit (a rollback writes the same old
				// value again) clears this write before anyone flushed it,
				// and a crash may then still find this descriptor's
				// pointer in the word's line (TestPhase2PersistsOwnWrite).
				x = v | DirtyBit
			}
			if x == rdcssPtr(d, s) {
				w.completeInstall(d, s)
				continue
			}
			if x == v|DirtyBit {
				w.persistWord(off, x)
			}
			break
		}
	}
}

// persistWord makes the dirty value v of the word at off durable and then
// clears its dirty bit. The fence comes before the clearing CAS, so that a
// clean value is a durable one, with one exception: a clearing CAS delayed
// until the word holds v|DirtyBit again (a rolled-back word gets its old
// value back) clears a later write of v than the one it persisted. The
// value is the same, but the stores in between (pointers to a failed
// descriptor) are not yet durably overwritten, so whoever wrote v|DirtyBit
// in phase 2 persists it itself before the descriptor can be reused.
func (w *wstate) persistWord(off, v uint64) {
	w.flush(off)
	w.fence()
	w.cas(off, v, v&^DirtyBit)
}

// pread is the persistent read of a data word: it helps what it meets and
// persists a dirty value before returning it.
func (w *wstate) pread(off uint64) uint64 {
	for {
		v := w.load(off)
		switch {
		case isRDCSS(v):
			w.completeInstall(ptrDesc(v), ptrSlot(v))
		case isDesc(v):
			w.help(ptrDesc(v))
		case v&DirtyBit != 0:
			if w.m.mut != mutReadDirtyUnpersisted {
				w.persistWord(off, v)
			}
			return v &^ DirtyBit
		default:
			return v
		}
	}
}

// pstatus is the persistent read of the status of d: a decided status is
// acted on (phase 2) only once it is durable.
func (w *wstate) pstatus(d uint64) uint64 {
	off := w.m.l.status(d)
	st := w.load(off)
	if st&DirtyBit != 0 && w.m.mut != mutReadDirtyUnpersisted {
		w.flush(off)
		w.fence()
		w.cas(off, st, st&^DirtyBit)
	}
	return st &^ DirtyBit
}
