package histgen

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/pmlin/pmlin/internal/history"
)

// MutationKind names a way to corrupt a history. Unless said otherwise a
// mutation prefers (with probability 3/4, when the history offers one) a
// "strong" target that makes the result certainly non-linearizable in every
// mode, whatever the rest of the history; otherwise it picks any target,
// which may or may not break linearizability. Values are never repeated, so
// a value read at a word names the one CAS that wrote it.
type MutationKind uint8

const (
	// StaleRead: a read returns, for one word, the value that the writer of
	// the value it returned had overwritten. Strong: that writer finished
	// before the read was invoked.
	StaleRead MutationKind = iota + 1
	// TornRead: a multi-word read returns one word from another moment: the
	// value before (or after) a multi-word CAS while another word shows
	// that CAS's after (or before) value. Strong: the same CAS wrote both
	// words. Needs a read of k >= 2.
	TornRead
	// FutureRead: a read returns, for one word, the value a CAS invoked only
	// after the read's response writes. Always strong.
	FutureRead
	// PhantomRead: a read returns, for one word, a value nobody writes.
	// Always strong.
	PhantomRead
	// SpuriousFailure: a successful CAS is reported as failed at one of its
	// addresses; reads of its new values are left alone (they now read a
	// value nobody wrote). Strong: someone observed its values.
	SpuriousFailure
	// SpuriousFailureRewrite: a successful CAS whose values nobody
	// overwrote is reported as failed, and every read of its new values is
	// rewritten to the old ones, so the history looks as if the CAS had no
	// effect. Strong: the blamed word held the expected value throughout
	// the CAS (its writer finished before the CAS began): the PMwCAS
	// dirty-bit bug.
	SpuriousFailureRewrite
	// WrongAddressFailure: a failed CAS blames another of its addresses.
	// Strong: that address held the expected value throughout the CAS.
	WrongAddressFailure
	// FalseSuccess: a failed CAS is reported ok. Strong: one of its expected
	// values was overwritten by a CAS that finished before it began.
	FalseSuccess
	// LostWrite: after a crash, reads return for a word the value from
	// before a successful CAS (or a swap) that finished before the crash,
	// as if its write had not been persisted. Always strong. Needs a crash.
	LostWrite
	// ReorderEarlier moves a response earlier, before the invocation of a
	// concurrent operation, which now follows it in real time. Strong: the
	// moved operation read from (or, a CAS, expected a value written by)
	// the operation it now precedes, or is a CAS that overwrote a value
	// that operation read.
	ReorderEarlier
	// ReorderLater moves a response later, across other events (never
	// across its process's next invocation or a crash). It only relaxes
	// real-time order: it keeps a linearizable history linearizable, and
	// may make a non-linearizable one linearizable.
	ReorderLater
	// DropOp removes an operation. Strong: a successful CAS whose values
	// were observed. Dropping a read or a failed CAS keeps linearizability.
	DropOp
	// DuplicateRead copies a completed read, with its values, to a random
	// later place, by a process idle there (a new process if none is). Not
	// linearizable when a word changed in between for sure.
	DuplicateRead
	// InsertCrash inserts a crash at a random place: every operation
	// pending there loses its response. A successful CAS whose values were
	// read becomes a crashed CAS that must be completed; this separates
	// the modes.
	InsertCrash
	// CrashedEffectVisibleLate inserts a CAS, on an untouched word,
	// interrupted by a crash, whose new value is read only after a later
	// operation of its own process (which still reads the old value):
	// linearizable (if the input was) in Durable mode only. Into a history
	// without a crash, a crash is first inserted as InsertCrash does.
	CrashedEffectVisibleLate
	// CrashedEffectAfterCrash inserts a CAS, on an untouched word,
	// interrupted by a crash, whose old value is read after the crash and
	// whose new value is read later, before the next operation of its own
	// process: linearizable (if the input was) in Recoverable and Durable
	// modes, not in Strict. Inserts a crash if there is none, like
	// CrashedEffectVisibleLate.
	CrashedEffectAfterCrash
	// CrashedEffectPastCutOff inserts, around two crashes X and Y (inserted
	// where the history has fewer), a CAS C by a new process p on an
	// untouched word u, interrupted by X; p's next operation, invoked
	// between X and Y, is itself cut off by Y (a read of u, or a CAS on
	// another untouched word that nobody observes), so it leaves the
	// history; after Y, p reads u and still sees the initial value, and a
	// later read by another process sees C's value. C took effect after the
	// next operation of p that stays in the history: linearizable (if the
	// input was) in Durable mode only. The recoverable rule must follow
	// p's order past the cut-off operation to see it.
	CrashedEffectPastCutOff
	// StaleSwap: a swap returns, for one word, the value that the writer
	// of the value it returned had replaced, so both replaced the same
	// value: Figure 10 of the OPODIS paper (CodebaseB's bug), a fork.
	// Strong: that writer took effect for sure (it returned).
	StaleSwap
	// StaleFailValues: a failed CAS that reports values reports, for one
	// word, the value that the writer of the reported one had replaced.
	// Strong: that writer returned before the failure was invoked.
	StaleFailValues
	// ContradictingFailure: a failed CAS that reports values reports, at
	// the address it blamed, its own expected value. Always strong.
	ContradictingFailure

	numKinds
)

// Kinds lists every mutation kind.
var Kinds = []MutationKind{
	StaleRead, TornRead, FutureRead, PhantomRead,
	SpuriousFailure, SpuriousFailureRewrite, WrongAddressFailure, FalseSuccess,
	LostWrite, ReorderEarlier, ReorderLater, DropOp, DuplicateRead, InsertCrash,
	CrashedEffectVisibleLate, CrashedEffectAfterCrash, CrashedEffectPastCutOff,
	StaleSwap, StaleFailValues, ContradictingFailure,
}

// swapKinds are the kinds whose targets are swaps and failures that report
// values: Random draws them only for configurations that make those.
var swapKinds = []MutationKind{StaleSwap, StaleFailValues, ContradictingFailure}

var kindNames = [...]string{
	StaleRead:                "stale-read",
	TornRead:                 "torn-read",
	FutureRead:               "future-read",
	PhantomRead:              "phantom-read",
	SpuriousFailure:          "spurious-failure",
	SpuriousFailureRewrite:   "spurious-failure-rewrite",
	WrongAddressFailure:      "wrong-address-failure",
	FalseSuccess:             "false-success",
	LostWrite:                "lost-write",
	ReorderEarlier:           "reorder-earlier",
	ReorderLater:             "reorder-later",
	DropOp:                   "drop-op",
	DuplicateRead:            "duplicate-read",
	InsertCrash:              "insert-crash",
	CrashedEffectVisibleLate: "crashed-effect-visible-late",
	CrashedEffectAfterCrash:  "crashed-effect-after-crash",
	CrashedEffectPastCutOff:  "crashed-effect-past-cut-off",
	StaleSwap:                "stale-swap",
	StaleFailValues:          "stale-fail-values",
	ContradictingFailure:     "contradicting-failure",
}

func (k MutationKind) String() string {
	if k > 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("MutationKind(%d)", uint8(k))
}

// Mutate returns a copy of h changed by a mutation of the given kind, and
// whether the kind applied (false, with a nil history, when h offers no
// target: no read of k >= 2 for TornRead, no crash for LostWrite, ...). The
// input is never modified. The result is well formed (Validate) and, when
// the input kept Assumptions 1 and 2, the mutation tries a few targets to
// keep them too (a mutation that removes or rewrites a read may leave a
// later CAS's expected value unjustified).
func Mutate(h *history.History, kind MutationKind, rng *rand.Rand) (*history.History, bool) {
	out, ok, _ := mutate(h, kind, rng)
	return out, ok
}

// mutate is Mutate, also reporting whether the target was strong.
func mutate(h *history.History, kind MutationKind, rng *rand.Rand) (*history.History, bool, bool) {
	keep := CheckAssumptions(h) == nil
	var fallback *history.History
	fallbackStrong := false
	for range 8 {
		m := newMutation(h, rng)
		if !m.apply(kind) {
			break
		}
		out := m.build()
		if !keep || CheckAssumptions(out) == nil {
			return out, true, m.strong
		}
		if fallback == nil {
			fallback, fallbackStrong = out, m.strong
		}
	}
	return fallback, fallback != nil, fallbackStrong
}

// ev is one event of a history being edited: an invocation or response of
// ops[op], or a crash (op -1).
type ev struct {
	op    int
	isRet bool
}

type wv struct{ w, v uint64 }

type mutation struct {
	rng  *rand.Rand
	h    *history.History
	ops  []history.Op // deep copies; IDs are indexes until build
	seq  []ev
	gone []bool // dropped ops
	// strong: the target makes the result certainly non-linearizable in
	// every mode (see MutationKind).
	strong bool
	// Indexes over values (built on demand, valid until an edit).
	writer  map[wv]int   // the non-failed CAS or the swap writing v at w
	succ    map[wv][]int // the non-failed CASes expecting v at w, the returned swaps replacing it
	readers map[wv][]int // the returned reads returning v at w, the failures reporting it
}

// pred is the value op (a non-failed CAS or a swap) replaced at slot j,
// and whether it is known: not for a swap cut off before it returned.
func pred(op *history.Op, j int) (uint64, bool) {
	switch {
	case op.Kind == history.CAS:
		return op.Expected[j], true
	case op.Status == history.Returned:
		return op.Values[j], true
	}
	return 0, false
}

// tookEffect reports whether op certainly wrote: a successful CAS or a
// returned swap.
func tookEffect(op *history.Op) bool {
	return op.Status == history.Succeeded || op.Kind == history.Swap && op.Status == history.Returned
}

func newMutation(h *history.History, rng *rand.Rand) *mutation {
	m := &mutation{rng: rng, h: h, ops: make([]history.Op, len(h.Ops)), gone: make([]bool, len(h.Ops))}
	for i, op := range h.Ops {
		op.Addrs = slices.Clone(op.Addrs)
		op.Expected = slices.Clone(op.Expected)
		op.New = slices.Clone(op.New)
		op.Values = slices.Clone(op.Values)
		m.ops[i] = op
	}
	m.seq = make([]ev, h.Events)
	for i := range m.ops {
		m.seq[m.ops[i].Inv] = ev{i, false}
		if m.ops[i].Ret >= 0 {
			m.seq[m.ops[i].Ret] = ev{i, true}
		}
	}
	for _, c := range h.Crashes {
		m.seq[c] = ev{-1, false}
	}
	return m
}

// build renumbers the edited events into a new History.
func (m *mutation) build() *history.History {
	out := &history.History{InitDefault: m.h.InitDefault}
	if m.h.Init != nil {
		out.Init = make(map[uint64]uint64, len(m.h.Init))
		for a, v := range m.h.Init {
			out.Init[a] = v
		}
	}
	keep := make([]bool, len(m.ops))
	for i := range m.ops {
		m.ops[i].Ret = -1
	}
	pending := map[int32]int{}
	pos := 0
	for _, e := range m.seq {
		if e.op >= 0 && m.gone[e.op] {
			continue
		}
		switch {
		case e.op < 0:
			for _, id := range pending {
				m.ops[id].Crash = len(out.Crashes)
			}
			clear(pending)
			out.Crashes = append(out.Crashes, pos)
		case !e.isRet:
			op := &m.ops[e.op]
			op.Inv, op.Crash, keep[e.op] = pos, -1, true
			pending[op.Proc] = e.op
		default:
			m.ops[e.op].Ret = pos
			delete(pending, m.ops[e.op].Proc)
		}
		pos++
	}
	out.Events = pos
	for i := range m.ops {
		if !keep[i] {
			continue
		}
		op := m.ops[i]
		if op.Ret < 0 {
			op.Status, op.Values, op.FailAddr = history.Pending, nil, 0
		} else if op.Status == history.Pending {
			panic("histgen: an op got a response without a status")
		}
		if op.Status != history.Failed {
			op.FailAddr = 0
		}
		out.Ops = append(out.Ops, op)
	}
	slices.SortFunc(out.Ops, func(a, b history.Op) int { return a.Inv - b.Inv })
	for i := range out.Ops {
		out.Ops[i].ID = i
		out.Ops[i].Line, out.Ops[i].RetLine = 0, 0
	}
	return out
}

func (m *mutation) index() {
	m.writer, m.succ, m.readers = map[wv]int{}, map[wv][]int{}, map[wv][]int{}
	for i := range m.ops {
		op := &m.ops[i]
		if m.gone[i] {
			continue
		}
		switch {
		case op.Kind == history.Read && op.Status == history.Returned,
			op.Status == history.Failed && op.Values != nil:
			for j, a := range op.Addrs {
				k := wv{a, op.Values[j]}
				m.readers[k] = append(m.readers[k], i)
			}
		case op.Kind != history.Read && op.Status != history.Failed:
			for j, a := range op.Addrs {
				if _, dup := m.writer[wv{a, op.New[j]}]; !dup {
					m.writer[wv{a, op.New[j]}] = i
				}
				if p, ok := pred(op, j); ok {
					k := wv{a, p}
					m.succ[k] = append(m.succ[k], i)
				}
			}
		}
	}
}

// seqPos returns the current index in m.seq of op's invocation or response.
func (m *mutation) seqPos(op int, isRet bool) int {
	for i, e := range m.seq {
		if e.op == op && e.isRet == isRet {
			return i
		}
	}
	return -1
}

func (m *mutation) insert(at int, es ...ev) {
	m.seq = slices.Insert(m.seq, at, es...)
}

// addOp appends a new operation (positions are set by build).
func (m *mutation) addOp(op history.Op) int {
	op.ID = len(m.ops)
	m.ops = append(m.ops, op)
	m.gone = append(m.gone, false)
	return op.ID
}

// pick chooses among strong candidates with probability 3/4, else among
// all, and records which in m.strong.
func pick[T any](m *mutation, strong, all []T) (T, bool) {
	var zero T
	if len(strong) > 0 && (len(all) == 0 || m.rng.IntN(4) > 0) {
		m.strong = true
		return strong[m.rng.IntN(len(strong))], true
	}
	if len(all) == 0 {
		return zero, false
	}
	return all[m.rng.IntN(len(all))], true
}

func (m *mutation) returnedReads(minK int) []int {
	var rs []int
	for i := range m.ops {
		if m.ops[i].Kind == history.Read && m.ops[i].Status == history.Returned && len(m.ops[i].Addrs) >= minK {
			rs = append(rs, i)
		}
	}
	return rs
}

func (m *mutation) casWith(st history.Status) []int {
	var cs []int
	for i := range m.ops {
		if m.ops[i].Kind == history.CAS && m.ops[i].Status == st {
			cs = append(cs, i)
		}
	}
	return cs
}

// freshValue is a value that appears nowhere in the history.
func (m *mutation) freshValue() uint64 {
	var hi uint64 = 1 << 48
	bump := func(v uint64) {
		if v >= hi {
			hi = v + 1
		}
	}
	for i := range m.ops {
		for _, v := range m.ops[i].Expected {
			bump(v)
		}
		for _, v := range m.ops[i].New {
			bump(v)
		}
		for _, v := range m.ops[i].Values {
			bump(v)
		}
	}
	bump(m.h.InitDefault)
	for _, v := range m.h.Init {
		bump(v)
	}
	return hi
}

// untouchedWord is an address no operation uses, with its initial value.
func (m *mutation) untouchedWord() uint64 {
	used := map[uint64]bool{}
	var hi uint64
	for i := range m.ops {
		for _, a := range m.ops[i].Addrs {
			used[a] = true
			hi = max(hi, a+1)
		}
	}
	for a := range hi {
		if !used[a] {
			return a
		}
	}
	return hi
}

// finishedBefore reports whether op id responded before position pos
// (both as current m.seq indexes).
func (m *mutation) finishedBefore(id, pos int) bool {
	r := m.ops[id].Ret
	return r >= 0 && r < pos
}

func (m *mutation) apply(kind MutationKind) bool {
	m.index()
	switch kind {
	case StaleRead:
		return m.staleRead()
	case TornRead:
		return m.tornRead()
	case FutureRead:
		return m.futureRead()
	case PhantomRead:
		return m.phantomRead()
	case SpuriousFailure:
		return m.spuriousFailure()
	case SpuriousFailureRewrite:
		return m.spuriousFailureRewrite()
	case WrongAddressFailure:
		return m.wrongAddressFailure()
	case FalseSuccess:
		return m.falseSuccess()
	case LostWrite:
		return m.lostWrite()
	case ReorderEarlier:
		return m.reorderEarlier()
	case ReorderLater:
		return m.reorderLater()
	case DropOp:
		return m.dropOp()
	case DuplicateRead:
		return m.duplicateRead()
	case InsertCrash:
		return m.insertCrash()
	case CrashedEffectVisibleLate:
		return m.crashedEffect(true)
	case CrashedEffectAfterCrash:
		return m.crashedEffect(false)
	case CrashedEffectPastCutOff:
		return m.crashedEffectPastCutOff()
	case StaleSwap:
		return m.staleObservation(func(op *history.Op) bool { return op.Kind == history.Swap && op.Status == history.Returned })
	case StaleFailValues:
		return m.staleObservation(func(op *history.Op) bool { return op.Status == history.Failed && op.Values != nil })
	case ContradictingFailure:
		return m.contradictingFailure()
	}
	return false
}

// slotTarget is an operation and one of its words (an index in Addrs).
type slotTarget struct{ op, slot int }

func (m *mutation) staleRead() bool {
	return m.staleObservation(func(op *history.Op) bool { return op.Kind == history.Read && op.Status == history.Returned })
}

// staleObservation makes an operation that observed values (a read, a
// swap or a failure that reports values, as which says) observe, at one
// word, the value that the writer of the value it observed had replaced.
// Strong: that writer certainly took effect, before the operation was
// invoked or, for a swap (which then replaces the value the writer
// replaced: a fork), at all.
func (m *mutation) staleObservation(which func(*history.Op) bool) bool {
	var strong, all []slotTarget
	for r := range m.ops {
		op := &m.ops[r]
		if m.gone[r] || !which(op) {
			continue
		}
		for j, a := range op.Addrs {
			w, ok := m.writer[wv{a, op.Values[j]}]
			if !ok || w == r {
				continue
			}
			if p, known := pred(&m.ops[w], slotOf(&m.ops[w], a)); !known || p == op.Values[j] {
				continue
			}
			all = append(all, slotTarget{r, j})
			if tookEffect(&m.ops[w]) && (op.Kind == history.Swap || m.finishedBefore(w, op.Inv)) {
				strong = append(strong, slotTarget{r, j})
			}
		}
	}
	t, ok := pick(m, strong, all)
	if !ok {
		return false
	}
	op := &m.ops[t.op]
	a := op.Addrs[t.slot]
	w := &m.ops[m.writer[wv{a, op.Values[t.slot]}]]
	op.Values[t.slot], _ = pred(w, slotOf(w, a))
	return true
}

// contradictingFailure makes a failure that reports values report its
// expected value at the address it blamed.
func (m *mutation) contradictingFailure() bool {
	var all []int
	for i := range m.ops {
		if op := &m.ops[i]; op.Status == history.Failed && op.Values != nil && !m.gone[i] {
			all = append(all, i)
		}
	}
	c, ok := pick(m, nil, all)
	if !ok {
		return false
	}
	m.strong = true
	op := &m.ops[c]
	j := slotOf(op, op.FailAddr)
	op.Values[j] = op.Expected[j]
	return true
}

type tornTarget struct {
	op, slot int
	value    uint64
}

func (m *mutation) tornRead() bool {
	var strong, all []tornTarget
	for _, r := range m.returnedReads(2) {
		op := &m.ops[r]
		for j, a := range op.Addrs {
			v := op.Values[j]
			// Older: the writer C of v; if C also wrote another word of
			// the read and the read shows C's value there, returning C's
			// expected value at a is torn for sure.
			if c, ok := m.writer[wv{a, v}]; ok {
				cop := &m.ops[c]
				old, known := pred(cop, slotOf(cop, a))
				if !known {
					continue
				}
				sure := false
				for jj, b := range op.Addrs {
					if s := slotOf(cop, b); jj != j && s >= 0 && cop.New[s] == op.Values[jj] {
						sure = true
					}
				}
				t := tornTarget{r, j, old}
				all = append(all, t)
				if sure {
					strong = append(strong, t)
				}
			}
			// Newer: a successor S of v at a; if S also wrote another word
			// of the read and the read shows S's expected value there,
			// returning S's new value at a is torn for sure.
			for _, s := range m.succ[wv{a, v}] {
				sop := &m.ops[s]
				if sop.Status != history.Succeeded {
					continue
				}
				sure := false
				for jj, b := range op.Addrs {
					if x := slotOf(sop, b); jj != j && x >= 0 && sop.Expected[x] == op.Values[jj] {
						sure = true
					}
				}
				t := tornTarget{r, j, sop.New[slotOf(sop, a)]}
				all = append(all, t)
				if sure {
					strong = append(strong, t)
				}
			}
		}
	}
	t, ok := pick(m, strong, all)
	if !ok {
		return false
	}
	m.ops[t.op].Values[t.slot] = t.value
	return true
}

func (m *mutation) futureRead() bool {
	var all []tornTarget
	for _, r := range m.returnedReads(1) {
		op := &m.ops[r]
		for j, a := range op.Addrs {
			for c := range m.ops {
				cop := &m.ops[c]
				if cop.Kind == history.Read || cop.Status == history.Failed || cop.Inv < op.Ret {
					continue
				}
				if s := slotOf(cop, a); s >= 0 {
					all = append(all, tornTarget{r, j, cop.New[s]})
				}
			}
		}
	}
	t, ok := pick(m, nil, all)
	if !ok {
		return false
	}
	m.strong = true
	m.ops[t.op].Values[t.slot] = t.value
	return true
}

func (m *mutation) phantomRead() bool {
	rs := m.returnedReads(1)
	if len(rs) == 0 {
		return false
	}
	m.strong = true
	op := &m.ops[rs[m.rng.IntN(len(rs))]]
	op.Values[m.rng.IntN(len(op.Values))] = m.freshValue()
	return true
}

// observed reports whether some read returned a value op wrote.
func (m *mutation) observed(id int) bool {
	op := &m.ops[id]
	for j, a := range op.Addrs {
		if len(m.readers[wv{a, op.New[j]}]) > 0 {
			return true
		}
	}
	return false
}

func (m *mutation) spuriousFailure() bool {
	all := m.casWith(history.Succeeded)
	var strong []int
	for _, c := range all {
		if m.observed(c) {
			strong = append(strong, c)
		}
	}
	c, ok := pick(m, strong, all)
	if !ok {
		return false
	}
	op := &m.ops[c]
	op.Status, op.FailAddr = history.Failed, op.Addrs[m.rng.IntN(len(op.Addrs))]
	return true
}

// heldThroughout reports whether word a certainly held v from before
// position from until after position to: v is the initial value or was
// written by a successful CAS that finished before from, and no CAS that
// may have taken effect expecting v at a was invoked before to.
func (m *mutation) heldThroughout(a, v uint64, from, to int, except int) bool {
	if v != m.h.InitValue(a) {
		w, ok := m.writer[wv{a, v}]
		if !ok || !tookEffect(&m.ops[w]) || !m.finishedBefore(w, from) {
			return false
		}
	}
	for _, s := range m.succ[wv{a, v}] {
		if s != except && m.ops[s].Inv < to {
			return false
		}
	}
	// A swap cut off before it returned may have replaced any value.
	for i := range m.ops {
		if op := &m.ops[i]; op.Kind == history.Swap && op.Status == history.Pending && op.Inv < to && slotOf(op, a) >= 0 {
			return false
		}
	}
	return true
}

func (m *mutation) spuriousFailureRewrite() bool {
	type target struct {
		op   int
		addr uint64
	}
	var strong, all []target
	for _, c := range m.casWith(history.Succeeded) {
		op := &m.ops[c]
		overwritten := false
		for j, a := range op.Addrs {
			overwritten = overwritten || len(m.succ[wv{a, op.New[j]}]) > 0
		}
		if overwritten {
			continue
		}
		for j, a := range op.Addrs {
			t := target{c, a}
			all = append(all, t)
			end := op.Ret
			if end < 0 {
				end = m.h.Events
			}
			if m.heldThroughout(a, op.Expected[j], op.Inv, end, c) {
				strong = append(strong, t)
			}
		}
	}
	t, ok := pick(m, strong, all)
	if !ok {
		return false
	}
	op := &m.ops[t.op]
	for j, a := range op.Addrs {
		for _, r := range m.readers[wv{a, op.New[j]}] {
			rop := &m.ops[r]
			rop.Values[slotOf(rop, a)] = op.Expected[j]
		}
	}
	op.Status, op.FailAddr = history.Failed, t.addr
	return true
}

func (m *mutation) wrongAddressFailure() bool {
	type target struct {
		op   int
		addr uint64
	}
	var strong, all []target
	for _, c := range m.casWith(history.Failed) {
		op := &m.ops[c]
		for j, a := range op.Addrs {
			if a == op.FailAddr {
				continue
			}
			t := target{c, a}
			all = append(all, t)
			if m.heldThroughout(a, op.Expected[j], op.Inv, op.Ret, c) {
				strong = append(strong, t)
			}
		}
	}
	t, ok := pick(m, strong, all)
	if !ok {
		return false
	}
	m.ops[t.op].FailAddr = t.addr
	return true
}

func (m *mutation) falseSuccess() bool {
	all := m.casWith(history.Failed)
	var strong []int
	for _, c := range all {
		op := &m.ops[c]
		for j, a := range op.Addrs {
			for _, s := range m.succ[wv{a, op.Expected[j]}] {
				if m.ops[s].Status == history.Succeeded && m.finishedBefore(s, op.Inv) {
					strong = append(strong, c)
				}
			}
		}
	}
	c, ok := pick(m, strong, all)
	if !ok {
		return false
	}
	m.ops[c].Status, m.ops[c].FailAddr, m.ops[c].Values = history.Succeeded, 0, nil
	return true
}

func (m *mutation) lostWrite() bool {
	type target struct {
		cas, crash int // crash: position in seq
	}
	var all []target
	for i, e := range m.seq {
		if e.op >= 0 {
			continue
		}
		for c := range m.ops {
			if !tookEffect(&m.ops[c]) || !m.finishedBefore(c, i) {
				continue
			}
			op := &m.ops[c]
			for j, a := range op.Addrs {
				hit := false
				for _, r := range m.readers[wv{a, op.New[j]}] {
					hit = hit || m.ops[r].Inv > i
				}
				if hit {
					all = append(all, target{c, i})
					break
				}
			}
		}
	}
	t, ok := pick(m, nil, all)
	if !ok {
		return false
	}
	m.strong = true
	op := &m.ops[t.cas]
	for j, a := range op.Addrs {
		p, _ := pred(op, j)
		for _, r := range m.readers[wv{a, op.New[j]}] {
			if rop := &m.ops[r]; rop.Inv > t.crash {
				rop.Values[slotOf(rop, a)] = p
			}
		}
	}
	return true
}

// readsFrom reports whether op a must follow op b: a read, swap, failure
// that reports values or successful CAS a saw (or expected) at some word
// the value b wrote.
func (m *mutation) readsFrom(a, b int) bool {
	aop, bop := &m.ops[a], &m.ops[b]
	if bop.Kind == history.Read || bop.Status == history.Failed {
		return false
	}
	for j, x := range aop.Addrs {
		s := slotOf(bop, x)
		if s < 0 {
			continue
		}
		switch {
		case aop.Values != nil && aop.Values[j] == bop.New[s]:
			return true
		case aop.Status == history.Succeeded && aop.Expected[j] == bop.New[s]:
			return true
		}
	}
	return false
}

// overwrote reports whether a (a successful CAS or a returned swap)
// overwrote, at some word, the value that b (a read, or a failure that
// reports values) returned there, so that b must precede a.
func (m *mutation) overwrote(a, b int) bool {
	aop, bop := &m.ops[a], &m.ops[b]
	if !tookEffect(aop) || bop.Values == nil || bop.Kind == history.Swap {
		return false
	}
	for j, x := range aop.Addrs {
		p, _ := pred(aop, j)
		if s := slotOf(bop, x); s >= 0 && bop.Values[s] == p {
			return true
		}
	}
	return false
}

func (m *mutation) reorderEarlier() bool {
	type target struct{ op, before int } // move op's response just before op before's invocation
	var strong, all []target
	for i := range m.ops {
		if m.ops[i].Ret < 0 {
			continue
		}
		for j := range m.ops {
			if j != i && m.ops[j].Inv > m.ops[i].Inv && m.ops[j].Inv < m.ops[i].Ret {
				t := target{i, j}
				all = append(all, t)
				if m.readsFrom(i, j) || m.overwrote(i, j) {
					strong = append(strong, t)
				}
			}
		}
	}
	t, ok := pick(m, strong, all)
	if !ok {
		return false
	}
	// In m.seq, positions still equal the input's event positions.
	r, q := m.ops[t.op].Ret, m.ops[t.before].Inv
	e := m.seq[r]
	m.seq = slices.Delete(m.seq, r, r+1)
	m.insert(q, e)
	return true
}

func (m *mutation) reorderLater() bool {
	type target struct{ from, to int } // move the response at from to just after to
	var all []target
	for i := range m.ops {
		op := &m.ops[i]
		if op.Ret < 0 {
			continue
		}
		for q := op.Ret + 1; q < len(m.seq); q++ {
			e := m.seq[q]
			if e.op < 0 || !e.isRet && m.ops[e.op].Proc == op.Proc {
				break
			}
			all = append(all, target{op.Ret, q})
		}
	}
	t, ok := pick(m, nil, all)
	if !ok {
		return false
	}
	e := m.seq[t.from]
	m.insert(t.to+1, e)
	m.seq = slices.Delete(m.seq, t.from, t.from+1)
	return true
}

func (m *mutation) dropOp() bool {
	all := make([]int, len(m.ops))
	for i := range all {
		all[i] = i
	}
	var strong []int
	for _, c := range m.casWith(history.Succeeded) {
		if m.observed(c) {
			strong = append(strong, c)
		}
	}
	d, ok := pick(m, strong, all)
	if !ok {
		return false
	}
	m.gone[d] = true
	return true
}

// freeAt reports whether proc's last event before seq index at is a
// response (or it has none): it is idle there, and a new operation of it
// would not be the next operation of one it left pending or crashed, so it
// does not move the deadline the Recoverable rule gives that one.
func (m *mutation) freeAt(proc int32, at int) bool {
	free := true
	for _, e := range m.seq[:at] {
		if e.op >= 0 && m.ops[e.op].Proc == proc {
			free = e.isRet
		}
	}
	return free
}

// idleProc picks a process free (see freeAt) just before seq index at,
// different from avoid; a new process id if there is none, and sometimes
// anyway.
func (m *mutation) idleProc(at int, avoid int32) int32 {
	var procs []int32
	var hi int32 = -1
	seen := map[int32]bool{}
	for i := range m.ops {
		p := m.ops[i].Proc
		hi = max(hi, p)
		if !seen[p] {
			seen[p] = true
			if p != avoid && m.freeAt(p, at) {
				procs = append(procs, p)
			}
		}
	}
	slices.Sort(procs)
	if len(procs) == 0 || m.rng.IntN(8) == 0 {
		return max(hi+1, avoid+1)
	}
	return procs[m.rng.IntN(len(procs))]
}

func (m *mutation) duplicateRead() bool {
	rs := m.returnedReads(1)
	if len(rs) == 0 {
		return false
	}
	r := rs[m.rng.IntN(len(rs))]
	src := m.ops[r]
	at := src.Ret + 1 + m.rng.IntN(len(m.seq)-src.Ret)
	p := m.idleProc(at, -1)
	id := m.addOp(history.Op{Proc: p, Kind: history.Read, Addrs: slices.Clone(src.Addrs),
		Values: slices.Clone(src.Values), Status: history.Returned})
	m.insert(at, ev{id, false}, ev{id, true})
	return true
}

func (m *mutation) insertCrash() bool {
	if len(m.seq) < 2 {
		return false
	}
	m.crashAt(1 + m.rng.IntN(len(m.seq)-1))
	return true
}

// crashAt inserts a crash at position at of the event sequence; the
// operations pending there lose their responses (a crash interrupts them).
func (m *mutation) crashAt(at int) {
	pending := map[int32]int{}
	for _, e := range m.seq[:at] {
		switch {
		case e.op < 0:
			clear(pending)
		case e.isRet:
			delete(pending, m.ops[e.op].Proc)
		default:
			pending[m.ops[e.op].Proc] = e.op
		}
	}
	// Their responses come after at, so removing them keeps at in place.
	for _, id := range pending {
		if r := m.seqPos(id, true); r >= 0 {
			m.seq = slices.Delete(m.seq, r, r+1)
		}
	}
	m.insert(at, ev{-1, false})
}

// crashedEffect inserts, around a random crash X (one is inserted at a
// random place if the history has none), a CAS C by a process p on an
// untouched word u, interrupted by X, and reads that show when its effect
// became visible. late: p's next operation (a read of u) still sees the
// initial value and a later read sees C's value. Otherwise: after X, another
// process reads the initial value and then C's value, both before p's next
// invocation.
func (m *mutation) crashedEffect(late bool) bool {
	var crashes []int
	for i, e := range m.seq {
		if e.op < 0 {
			crashes = append(crashes, i)
		}
	}
	if len(crashes) == 0 {
		at := m.rng.IntN(len(m.seq) + 1)
		m.crashAt(at)
		crashes = append(crashes, at)
	}
	x := crashes[m.rng.IntN(len(crashes))]
	u := m.untouchedWord()
	init, n := m.h.InitValue(u), m.freshValue()
	p := m.idleProc(x, -1)
	// C is invoked just before the crash, at a random distance.
	cAt := x
	for cAt > 0 && m.seq[cAt-1].op >= 0 && m.ops[m.seq[cAt-1].op].Proc != p && m.rng.IntN(2) == 0 {
		cAt--
	}
	c := m.addOp(m.cutOffWrite(p, u, init, n))
	m.insert(cAt, ev{c, false})
	x++ // the crash moved right
	// next: p's next invocation after the crash, or the end.
	next := len(m.seq)
	for i := x + 1; i < len(m.seq); i++ {
		if e := m.seq[i]; e.op >= 0 && !e.isRet && m.ops[e.op].Proc == p {
			next = i
			break
		}
	}
	read := func(at int, proc int32, v uint64) {
		id := m.addOp(history.Op{Proc: proc, Kind: history.Read, Addrs: []uint64{u},
			Values: []uint64{v}, Status: history.Returned})
		m.insert(at, ev{id, false}, ev{id, true})
	}
	between := func(lo, hi int) int { return lo + m.rng.IntN(hi-lo+1) }
	if late {
		// p's next operation reads init, somewhere before its old next
		// invocation; a read of n comes later, anywhere.
		at := between(x+1, next)
		read(at, p, init)
		at2 := between(at+2, len(m.seq))
		read(at2, m.idleProc(at2, -1), n)
		return true
	}
	// Before p's next invocation: a read of init, then a read of n, by
	// other processes.
	at := between(x+1, next)
	read(at, m.idleProc(at, p), init)
	at2 := between(at+2, next+2)
	read(at2, m.idleProc(at2, p), n)
	return true
}

// cutOffWrite is the pending write of new value n over init at word u by
// process p that the crashed-effect kinds insert: a CAS, or, in a history
// that has swaps, half of the time a swap.
func (m *mutation) cutOffWrite(p int32, u, init, n uint64) history.Op {
	hasSwap := slices.ContainsFunc(m.ops, func(op history.Op) bool { return op.Kind == history.Swap })
	if hasSwap && m.rng.IntN(2) == 0 {
		return history.Op{Proc: p, Kind: history.Swap, Addrs: []uint64{u}, New: []uint64{n}, Status: history.Pending}
	}
	return history.Op{Proc: p, Kind: history.CAS, Addrs: []uint64{u},
		Expected: []uint64{init}, New: []uint64{n}, Status: history.Pending}
}

// crashes lists the seq indexes of the crashes.
func (m *mutation) crashes() []int {
	var out []int
	for i, e := range m.seq {
		if e.op < 0 {
			out = append(out, i)
		}
	}
	return out
}

// crashedEffectPastCutOff builds the chain CrashedEffectPastCutOff
// describes.
func (m *mutation) crashedEffectPastCutOff() bool {
	// Two crashes x < y: existing ones where the history has them.
	cs := m.crashes()
	if len(cs) == 0 {
		m.crashAt(m.rng.IntN(len(m.seq) + 1))
		cs = m.crashes()
	}
	x := cs[m.rng.IntN(len(cs))]
	var later []int
	for _, c := range cs {
		if c > x {
			later = append(later, c)
		}
	}
	var y int
	if len(later) == 0 || m.rng.IntN(3) == 0 {
		m.crashAt(x + 1 + m.rng.IntN(len(m.seq)-x))
		cs = m.crashes()
		later = later[:0]
		for _, c := range cs {
			if c > x {
				later = append(later, c)
			}
		}
	}
	y = later[m.rng.IntN(len(later))]

	var hi int32 = -1
	for i := range m.ops {
		hi = max(hi, m.ops[i].Proc)
	}
	p := hi + 1 // a process with no other operation: nothing else moves its order
	u := m.untouchedWord()
	init, n := m.h.InitValue(u), m.freshValue()
	c := m.addOp(m.cutOffWrite(p, u, init, n))
	var d int
	if m.rng.IntN(2) == 0 {
		d = m.addOp(history.Op{Proc: p, Kind: history.Read, Addrs: []uint64{u}, Status: history.Pending})
	} else {
		u2 := m.untouchedWord() // C holds u now
		d = m.addOp(history.Op{Proc: p, Kind: history.CAS, Addrs: []uint64{u2},
			Expected: []uint64{m.h.InitValue(u2)}, New: []uint64{n + 1}, Status: history.Pending})
	}
	read := func(proc int32, v uint64) int {
		return m.addOp(history.Op{Proc: proc, Kind: history.Read, Addrs: []uint64{u},
			Values: []uint64{v}, Status: history.Returned})
	}
	between := func(lo, hi int) int { return lo + m.rng.IntN(hi-lo+1) }
	// Insert from the last position back, so that earlier ones stay valid.
	rAt := between(y+1, len(m.seq))
	seeAt := between(rAt, len(m.seq))
	seer := read(m.idleProc(seeAt, p), n)
	m.insert(seeAt, ev{seer, false}, ev{seer, true})
	r := read(p, init)
	m.insert(rAt, ev{r, false}, ev{r, true})
	m.insert(between(x+1, y), ev{d, false})
	m.insert(between(max(0, x-2), x), ev{c, false})
	return true
}
