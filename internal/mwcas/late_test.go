package mwcas

import (
	"errors"
	"testing"

	"github.com/pmlin/pmlin/pmem"
)

// accessLimit is an access hook that fails every access past a budget: a
// worker that spins instead of finishing is stopped with errSpin.
type accessLimit struct{ left int }

var errSpin = errors.New("access budget spent: the worker spins")

func (a *accessLimit) Access(int, pmem.AccessKind, uint64) error {
	if a.left--; a.left < 0 {
		return errSpin
	}
	return nil
}

// lateStart is a PMwCAS of configuration c on an emulated region, with 10
// and 11 at words 0 and 1, durably: the start of the schedules below.
func lateStart(t *testing.T, c Config) (*PMwCAS, *pmem.Region) {
	t.Helper()
	m, r := newTest(t, c, pmem.Options{Emulate: true})
	if ok, _, err := m.CAS(0, []Word{{Addr: 0, Old: 0, New: 10}, {Addr: 1, Old: 0, New: 11}}); err != nil || !ok {
		t.Fatalf("set up: %v %v", ok, err)
	}
	return m, r
}

// TestPhase2CompletesLateRDCSS: phase 2 must undo an RDCSS of its own
// descriptor that a late helper left in a word, not wait for that helper.
// The schedule, by hand, of three workers on a MwCAS of words 0 and 1 by
// worker 0 (the owner) that fails at word 1:
//
//  1. worker 2 helps the descriptor: in phase 1 at slot 0 it reads the
//     status (undecided) and is descheduled before its CAS;
//  2. the owner installs slot 0, finds word 1 changed and decides failed;
//  3. worker 1, which met the descriptor, runs phase 2 first: word 0 gets
//     its old value back, persisted;
//  4. worker 2 makes its CAS of word 0 from the old value to its RDCSS
//     pointer (the word holds the old value again, so it lands) and stops
//     for good right after it;
//  5. the owner runs its phase 2 and meets that RDCSS at slot 0.
//
// The owner must finish on its own (lock-freedom; the fuzzer's progress
// check asks the same), leaving word 0 with its old value. A phase 2 that
// waits for the RDCSS's installer to complete it (mutant p2-no-help-rdcss
// of internal/mutmwcas) spins forever here; its schedule is rare enough
// that fuzz campaigns of a minute miss it.
func TestPhase2CompletesLateRDCSS(t *testing.T) {
	m, r := lateStart(t, Config{Words: 4, MaxWorkers: 3, DescriptorsPerWorker: 2, MaxK: 2})
	owner, helper, late := m.ws[0], m.ws[1], m.ws[2]
	for _, w := range []*wstate{owner, helper, late} {
		w.enter()
	}
	// The owner's MwCAS expects 10 at word 0 and 99 at word 1 (which holds
	// 11): it fails at slot 1.
	if err := owner.prepare([]Word{{Addr: 0, Old: 10, New: 20}, {Addr: 1, Old: 99, New: 21}}, false); err != nil {
		t.Fatal(err)
	}
	d := owner.alloc()
	owner.initDescriptor(d, 0)
	off0 := m.l.data(0)
	// 1: the late helper's status check.
	if state(late.load(m.l.status(d))) != stUndecided {
		t.Fatal("status decided before phase 1")
	}
	// 2, 3: the owner's phase 1, the helper's phase 2.
	owner.phase1(d)
	st := owner.pstatus(d)
	if state(st) != stFailed {
		t.Fatalf("status %#x, want failed", st)
	}
	helper.phase2(d, st)
	if v := helper.load(off0); v != 10 {
		t.Fatalf("word 0 holds %#x after the rollback, want 10", v)
	}
	// 4: the late CAS, the next step of phase1's loop after its check.
	if !late.cas(off0, 10, rdcssPtr(d, 0)) {
		t.Fatal("the late RDCSS did not land")
	}
	// 5: the owner's phase 2, within a budget of accesses.
	r.SetHook(&accessLimit{left: 10_000})
	err := func() (err error) {
		defer catch(&err)
		owner.phase2(d, st)
		return nil
	}()
	r.SetHook(nil)
	if err != nil {
		t.Fatalf("the owner's phase 2 did not finish while the late helper was stopped: %v", err)
	}
	if v := owner.load(off0); v != 10 {
		t.Fatalf("word 0 holds %#x after the owner's phase 2, want 10", v)
	}
}

// hookFunc is an access hook made of a function.
type hookFunc func(w int, kind pmem.AccessKind, off uint64) error

func (f hookFunc) Access(w int, kind pmem.AccessKind, off uint64) error { return f(w, kind, off) }

var errStopped = errors.New("worker stopped for good")

// TestLateInstallerPersistsUndo: a worker whose RDCSS lands late must make
// its undo durable before it leaves its epoch, whoever undid it: the undoer
// may have entered after the descriptor was retired, so that its epoch
// does not hold the descriptor back, and it may stop before its undo is
// durable (or not persist it at all). The schedule, on words 0 and 1 of
// one cache line (word 8 on another), one descriptor per worker (found by
// pmlin fuzz --seed 1000, run 28925, with late crashes):
//
//  1. a helper (worker 2) of the owner's MwCAS of words 0 and 1 reads the
//     status at slot 0 (undecided) and is descheduled before its CAS;
//  2. the owner (worker 0) installs slot 0, fails at word 1, rolls word 0
//     back, retires the descriptor and leaves; the epoch moves on;
//  3. the helper's CAS lands: word 0 holds its RDCSS pointer;
//  4. worker 1's MwCAS of word 1 flushes and fences that line: the RDCSS
//     pointer is durable;
//  5. worker 1 reads word 0, in an epoch later than the retirement: it
//     undoes the RDCSS and is stopped for good at its next flush, if it
//     makes one (in the variant "by the installer", it does not read, and
//     the helper undoes its RDCSS itself);
//  6. the helper's completion CAS fails (the undo came first); it finishes
//     its phase 1 and its phase 2 and leaves;
//  7. the owner's next MwCAS (words 8 and 9) reuses the descriptor: no
//     epoch holds it back;
//  8. crash, with an image that keeps the line of word 0 up to the RDCSS
//     pointer (a legal image, unless someone made the undo durable) and
//     every other store; recovery.
//
// If nobody made the undo durable, the image holds a stale RDCSS pointer
// to a descriptor that now names word 8: recovery refuses it ("word 0
// holds an RDCSS pointer to descriptor 0 slot 0, which names another
// word"), and no record of the value to restore is left.
func TestLateInstallerPersistsUndo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reader bool
	}{{"by a reader", true}, {"by the installer", false}} {
		t.Run(tc.name, func(t *testing.T) { lateInstallerPersistsUndo(t, tc.reader) })
	}
}

func lateInstallerPersistsUndo(t *testing.T, reader bool) {
	m, r := lateStart(t, Config{Words: 12, MaxWorkers: 3, DescriptorsPerWorker: 1, MaxK: 2})
	if m.l.data(0)/pmem.LineWords != m.l.data(1)/pmem.LineWords || m.l.data(0)/pmem.LineWords == m.l.data(8)/pmem.LineWords {
		t.Fatal("layout: words 0 and 1 must share a line, word 8 not")
	}
	owner, late := m.ws[0], m.ws[2]
	if err := owner.prepare([]Word{{Addr: 0, Old: 10, New: 20}, {Addr: 1, Old: 99, New: 21}}, false); err != nil {
		t.Fatal(err)
	}
	d := owner.alloc()
	owner.enter()
	late.enter()
	owner.initDescriptor(d, 0)
	off0 := m.l.data(0)
	var (
		descheduled, landed, reading, stopped bool
		stray                                 uint64 // what the helper's CAS put in word 0
		upto                                  uint64 // the stores to word 0's line before the undo
		n                                     int
	)
	r.SetHook(hookFunc(func(w int, kind pmem.AccessKind, off uint64) error {
		if n++; n > 10_000 {
			return errSpin
		}
		switch {
		case w == 1 && reading && (stopped || kind == pmem.AccessFlush):
			stopped = true // 5: stopped at its flush
			return errStopped
		case w == 2 && kind == pmem.AccessCAS && off == off0 && !descheduled:
			// 1: the helper's next access is its RDCSS CAS. 2:
			descheduled = true
			if st := owner.run(d); state(st) != stFailed {
				t.Errorf("status %#x, want failed", st)
			}
			owner.retire(d)
			owner.exit()
			e := m.epoch.Load()
			owner.tryAdvance()
			if m.epoch.Load() == e {
				t.Error("the epoch did not move on")
			}
		case w == 2 && descheduled && !landed && r.Peek(off0) != 10:
			// 3: the CAS landed (its RDCSS pointer, which the checks
			// below do not insist on: what matters is that recovery
			// finds what a correct PMwCAS leaves); before the helper's
			// next access, 4:
			landed, stray = true, r.Peek(off0)
			if ok, _, err := m.CAS(1, []Word{{Addr: 1, Old: 11, New: 31}}); err != nil || !ok {
				t.Errorf("worker 1's MwCAS of word 1: %v %v", ok, err)
			}
			if v, err := r.Durable(off0); err != nil || v != stray {
				t.Errorf("word 0 durably holds %#x (%v), want the helper's %#x", v, err, stray)
			}
			upto = r.LineStores(off0)
			if !reader {
				break
			}
			// 5.
			reading = true
			got := []uint64{0}
			if err := m.Read(1, []uint64{0}, got); err != nil && !errors.Is(err, errStopped) || err == nil && got[0] != 10 {
				t.Errorf("worker 1 read %d (%v), want 10", got[0], err)
			}
			if v := r.Peek(off0); v&^DirtyBit != 10 {
				t.Errorf("word 0 holds %#x after worker 1's read, want 10 (dirty or not)", v)
			}
		}
		return nil
	}))
	// 1, 6: the helper helps the owner's descriptor.
	err := func() (err error) {
		defer catch(&err)
		late.help(d)
		return nil
	}()
	late.exit()
	r.SetHook(nil)
	if err != nil || !landed {
		t.Fatalf("the helper: %v (its CAS landed: %v)", err, landed)
	}
	// 7: the owner has one descriptor.
	r.SetHook(&accessLimit{left: 10_000})
	ok, _, err := m.CAS(0, []Word{{Addr: 8, Old: 0, New: 40}, {Addr: 9, Old: 0, New: 41}})
	r.SetHook(nil)
	if err != nil || !ok {
		t.Fatalf("the owner's next MwCAS: %v %v", ok, err)
	}
	if a := owner.load(m.l.entry(d, 0)); a != 8 {
		t.Fatalf("descriptor %d was not reused (slot 0 names word %d)", d, a)
	}
	// 8.
	if err := r.CrashKeeping(off0, upto); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Recover(0); err != nil {
		t.Fatalf("recovery after the crash: %v", err)
	}
	want := []uint64{10, 31, 40, 41}
	got := []uint64{0}
	for i, a := range []uint64{0, 1, 8, 9} {
		if err := m.Read(0, []uint64{a}, got); err != nil || got[0] != want[i] {
			t.Fatalf("word %d holds %d after recovery (%v), want %d", a, got[0], err, want[i])
		}
	}
}

// interpose is an access hook that calls do once, right before the first
// access of worker w made while ready holds. The accesses do makes (as
// other workers) pass through. Like accessLimit, it stops a spinning
// worker: past 10,000 accesses every access fails with errSpin.
type interpose struct {
	w     int
	ready func() bool
	do    func()
	done  bool
	n     int
}

func (h *interpose) Access(w int, _ pmem.AccessKind, _ uint64) error {
	if h.n++; h.n > 10_000 {
		return errSpin
	}
	if w == h.w && !h.done && h.ready() {
		h.done = true
		h.do()
	}
	return nil
}

// TestPhase2PersistsOwnWrite: the worker whose phase 2 takes a pointer out
// of a word must persist the value it wrote, even if the word looks clean
// right after: a persistWord delayed between its fence and its clearing
// CAS can clear a later write of the same dirty value, one nobody flushed.
// The schedule, by hand, on words 0 and 1 of one cache line (word 8 on
// another), one descriptor per worker (found by pmlin fuzz --seed 1, run
// 46381, with late crashes):
//
//  1. worker 1's MwCAS of words 0 and 1 fails at word 1; its phase 2 puts
//     10|DirtyBit back in word 0, and worker 2, reading word 0, flushes and
//     fences it and is delayed before its clearing CAS; worker 1 persists
//     the word and clears the bit itself;
//  2. the owner's (worker 0's) MwCAS of words 0 and 1 fails the same way:
//     its RDCSS and descriptor pointer go into word 0 (not flushed: the
//     MwCAS failed), its phase 2 writes 10|DirtyBit, and worker 2's
//     delayed CAS lands right then: word 0 holds a clean 10 that nobody
//     flushed since the pointers;
//  3. the owner retires the descriptor; its next MwCAS (words 8 and 9)
//     reuses it;
//  4. crash, with an image that keeps the line of word 0 up to the
//     descriptor pointer (a legal image: that line was last made durable
//     in step 1) and every other store; recovery.
//
// A phase 2 that trusts the clean value and moves on leaves that pointer
// to a descriptor that now names word 8: recovery refuses the image.
func TestPhase2PersistsOwnWrite(t *testing.T) {
	m, r := lateStart(t, Config{Words: 12, MaxWorkers: 3, DescriptorsPerWorker: 1, MaxK: 2})
	if m.l.data(0)/pmem.LineWords != m.l.data(1)/pmem.LineWords || m.l.data(0)/pmem.LineWords == m.l.data(8)/pmem.LineWords {
		t.Fatal("layout: words 0 and 1 must share a line, word 8 not")
	}
	off0 := m.l.data(0)
	late := m.ws[2]
	dirty10 := func() bool { return r.Peek(off0) == 10|DirtyBit }
	failing := func(w int) {
		t.Helper()
		ok, _, err := m.CAS(w, []Word{{Addr: 0, Old: 10, New: 20 + uint64(w)}, {Addr: 1, Old: 99, New: 30 + uint64(w)}})
		if err != nil || ok {
			t.Fatalf("worker %d's MwCAS of words 0 and 1: %v %v, want a failure", w, ok, err)
		}
	}
	// The owner's one descriptor, retired by lateStart's MwCAS, back in
	// its free list before worker 2 enters an epoch and holds it up.
	m.ws[0].tryAdvance()
	m.ws[0].reclaim()
	// 1.
	late.enter()
	r.SetHook(&interpose{w: 1, ready: dirty10, do: func() { late.flush(off0); late.fence() }})
	failing(1)
	// 2.
	var upto uint64
	stale := &interpose{w: 0, ready: dirty10, do: func() {
		upto = r.LineStores(off0) - 1 // the owner's 10|DirtyBit is the last store
		if !late.cas(off0, 10|DirtyBit, 10) {
			t.Error("the delayed clearing CAS did not land")
		}
	}}
	r.SetHook(stale)
	failing(0)
	r.SetHook(nil)
	if !stale.done {
		t.Fatal("the owner's phase 2 never wrote 10|DirtyBit to word 0")
	}
	late.exit()
	// 3.
	if ok, _, err := m.CAS(0, []Word{{Addr: 8, Old: 0, New: 40}, {Addr: 9, Old: 0, New: 41}}); err != nil || !ok {
		t.Fatalf("the owner's next MwCAS: %v %v", ok, err)
	}
	if m.ws[0].load(m.l.entry(0, 0)) != 8 {
		t.Fatalf("descriptor 0 was not reused (slot 0 names word %d)", m.ws[0].load(m.l.entry(0, 0)))
	}
	// 4.
	if err := r.CrashKeeping(off0, upto); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Recover(0); err != nil {
		t.Fatalf("recovery after the crash: %v", err)
	}
	want := []uint64{10, 11, 40, 41}
	got := []uint64{0}
	for i, a := range []uint64{0, 1, 8, 9} {
		if err := m.Read(0, []uint64{a}, got); err != nil || got[0] != want[i] {
			t.Fatalf("word %d holds %d after recovery (%v), want %d", a, got[0], err, want[i])
		}
	}
}
