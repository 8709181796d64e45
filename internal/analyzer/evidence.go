package analyzer

import (
	"slices"
)

// Evidence: the facts of the history that tell how an anomaly came about,
// besides the edges that prove it. Most of it is the crash story: which
// crash cut which operation off and how it was completed (and under which
// mode's rule), which crash falls between the anomaly's operations, and
// what a read right after the crash found (the most direct witness of
// what recovery left). The rest is direct evidence without crashes: where
// a value nobody wrote at its address was written, and whether a failed
// cas's expected value was still there after it returned.

// EvidenceKind names a kind of evidence.
type EvidenceKind string

const (
	// EvidenceCutOff: Op was cut off by the crash at Crash (0: by the
	// end of the history); Completed says whether it was taken to have
	// succeeded, Rule under which mode's rule ("strict", "recoverable",
	// "durable", or "end" for the end of the history), ObservedBy the
	// operation that observed its value Value at Word (why it took
	// effect; 0: it was completed to explain a failure), and, under the
	// recoverable rule, Target the next operation of its process that
	// stays in the history, Skipped those in between that left it.
	EvidenceCutOff EvidenceKind = "cut-off"
	// EvidenceCrash: the crash at Crash falls between the anomaly's
	// operations Before (invoked before it) and After (invoked after it);
	// Crashes, when there are more, lists every crash that does.
	EvidenceCrash EvidenceKind = "crash"
	// EvidenceRecovery: what reads after the crash at Crash returned
	// (Values), each the first read of its address after the crash, before
	// anything that may write there was invoked: what recovery left. Op,
	// when not 0, is the anomaly's write that the values are about: it
	// returned before the crash at RetLine, or the crash cut it off and it
	// was completed under Rule (the mode); each value's Fate says whether
	// it is Op's new value there or the one Op replaced. Unknown are the
	// addresses that no such read shows.
	EvidenceRecovery EvidenceKind = "recovery"
	// EvidenceElsewhere: the value Value that Op observed at Word, which
	// nothing wrote there, was written by Writer (its status WriterStatus)
	// to WrittenAt.
	EvidenceElsewhere EvidenceKind = "elsewhere"
	// EvidenceExpected: Op, a failed cas, expected Value at Word (the
	// address it blamed) and returned at RetLine; StillThere says whether
	// the value was still there then: ReplacedBy, the write that replaced
	// it, was invoked after that (or never was: 0), and Read, when not 0,
	// is a read that returned it there afterwards.
	EvidenceExpected EvidenceKind = "expected"
)

// Evidence is one fact of an anomaly's story, as data (see EvidenceKind
// for the fields of each kind); Reason says it in a sentence.
type Evidence struct {
	Kind  EvidenceKind `json:"kind"`
	Op    int64        `json:"op,omitempty"`
	Crash int64        `json:"crash,omitempty"`

	Completed  bool     `json:"completed,omitempty"`
	Rule       string   `json:"rule,omitempty"`
	ObservedBy int64    `json:"observed_by,omitempty"`
	Target     int64    `json:"target,omitempty"`
	Skipped    []CutOff `json:"skipped,omitempty"`

	Before  []int64 `json:"before,omitempty"`
	After   []int64 `json:"after,omitempty"`
	Crashes []int64 `json:"crashes,omitempty"`

	Values  []WordValue `json:"values,omitempty"`
	Unknown []uint64    `json:"unknown,omitempty"`
	RetLine int64       `json:"ret_line,omitempty"`

	Word         *uint64 `json:"word,omitempty"`
	Value        *uint64 `json:"value,omitempty"`
	Writer       int64   `json:"writer,omitempty"`
	WriterStatus string  `json:"writer_status,omitempty"`
	WrittenAt    *uint64 `json:"written_at,omitempty"`

	StillThere *bool `json:"still_there,omitempty"`
	ReplacedBy int64 `json:"replaced_by,omitempty"`
	Read       int64 `json:"read,omitempty"`

	Reason string `json:"reason"`
}

// WordValue is what a read after a crash returned at one address.
type WordValue struct {
	Word  uint64 `json:"word"`
	Value uint64 `json:"value"`
	// Writer wrote Value there (0: the initial value; -1: nothing did).
	Writer int64 `json:"writer"`
	// Read is the read that returned it; Full: that read ran alone right
	// after the recovery and read every word (pmlin run and fuzz record
	// one after each crash).
	Read int64 `json:"read"`
	Full bool  `json:"full,omitempty"`
	// Fate of the evidence's Op's write at Word: "new" (Value is its new
	// value) or "old" (Value is the one it replaced); empty otherwise.
	Fate string `json:"fate,omitempty"`
}

// note is an Evidence in internal ids.
type note struct {
	kind  EvidenceKind
	op    int32 // none
	crash int32 // index in hist.crashLine, none for the end

	completed bool
	rule      string
	target    int32 // none
	skipped   []crashRec

	before, after []int32
	also          []int32 // crash: later crashes between the same operations

	vals    []noteVal
	unknown []int32 // words

	// acc: elsewhere, the dangling access; expected, the blamed access.
	acc       int32
	writerAcc int32 // elsewhere: the access that wrote the value
	still     bool
	replacer  int32 // expected: the op that replaced the value, or none
	readBy    int32 // expected: a read of the value after the return, or none
}

// newNote is a note of kind about operation op and crash c, its other
// operations and accesses none.
func newNote(kind EvidenceKind, op, c int32) note {
	return note{kind: kind, op: op, crash: c, target: none, acc: none, writerAcc: none, replacer: none, readBy: none}
}

// noteVal is a value a read after a crash returned: the read's access.
type noteVal struct {
	acc  int32
	full bool
	fate string
}

// Bounds of the evidence searches: they run for the few anomalies
// reported, but a history may have millions of operations.
const (
	maxEvidenceScan    = 1 << 16 // operations scanned after a crash or a return
	maxEvidenceCrashes = 3       // crashes told per anomaly
	maxEvidenceWriters = 3       // writes followed across one crash
	maxEvidenceWords   = 8       // addresses shown per read
)

// evidence adds the evidence of every finding.
func (x *explainer) evidence() {
	for k := range x.findings {
		f := &x.findings[k]
		x.crashStory(f, x.evidenceOps(f), sorted(f.ops))
		switch f.kind {
		case Dangling:
			x.elsewhere(f)
		case Cycle, UnexplainedFailure:
			for _, i := range f.ops {
				if x.h.failed(i) && x.h.flags[i]&fValued == 0 { // (one that reports values is a read)
					x.expected(f, i)
				}
			}
		}
	}
}

// crashStory adds, for the crashes a finding involves (those that cut
// off one of its operations or its edges' ends, all in evidence; those
// between its first and last operation, in ops), the operations they cut
// off and how those were completed, how the finding's operations fall
// around them, and, for each of its writes that took effect before one,
// what the reads after it found at the write's words; then the
// operations cut off by the end.
func (x *explainer) crashStory(f *finding, evidence, ops []int32) {
	h := x.h
	var crashes []int32
	for _, i := range evidence {
		if c := h.crashOf(i); c != none && h.flags[i]&fCompleted != 0 && !slices.Contains(crashes, c) {
			crashes = append(crashes, c)
		}
	}
	if len(ops) > 1 {
		lo, hi := ops[0], ops[len(ops)-1]
		k, _ := slices.BinarySearch(h.crashAt, lo+1)
		for ; k < len(h.crashAt) && h.crashAt[k] <= hi; k++ {
			if !slices.Contains(crashes, int32(k)) {
				crashes = append(crashes, int32(k))
			}
		}
	}
	for _, i := range ops {
		// A read that shows what recovery left at one of the words.
		if c := x.readsRecovery(i, f.words); c != none && !slices.Contains(crashes, c) {
			crashes = append(crashes, c)
		}
	}
	slices.Sort(crashes)
	if len(crashes) > maxEvidenceCrashes {
		crashes = crashes[:maxEvidenceCrashes]
	}
	f.crashes = crashes
	told := 0 // recovery notes
	for _, c := range crashes {
		for _, i := range evidence {
			if h.crashOf(i) == c && h.flags[i]&fCompleted != 0 {
				f.notes = append(f.notes, x.cutOff(i, c))
			}
		}
		if n := x.straddle(c, ops); n.crash != none {
			m := slices.IndexFunc(f.notes, func(o note) bool {
				return o.kind == EvidenceCrash && slices.Equal(o.before, n.before) && slices.Equal(o.after, n.after)
			})
			if m >= 0 {
				f.notes[m].also = append(f.notes[m].also, c)
			} else {
				f.notes = append(f.notes, n)
			}
		}
		for _, i := range ops {
			if told < maxEvidenceWriters && x.tookEffectBefore(i, c) {
				if n := x.recovery(c, i, nil); n.telling() {
					f.notes = append(f.notes, n)
					told++
				}
			}
		}
	}
	if told == 0 && len(crashes) > 0 {
		// No write of the finding crossed a crash: what the reads after the
		// first crash found at its words.
		if n := x.recovery(crashes[0], none, f.words); len(n.vals) > 0 {
			f.notes = append(f.notes, n)
		}
	}
	for _, i := range evidence {
		if h.flags[i]&(fCrashed|fCompleted|fReturned) == fCompleted {
			f.notes = append(f.notes, x.cutOff(i, none))
		}
	}
}

// telling reports whether a recovery note about a write says something:
// a value it replaced came back, or nothing shows, or the write was cut
// off by the crash (then that it survived is news too).
func (n *note) telling() bool {
	if len(n.unknown) > 0 || n.rule != "" {
		return true
	}
	return slices.ContainsFunc(n.vals, func(v noteVal) bool { return v.fate != "new" })
}

// straddle is the crash note for crash c if it falls between the
// operations (those in the graph before it, those after it), else a note
// with crash none.
func (x *explainer) straddle(c int32, ops []int32) note {
	n := newNote(EvidenceCrash, none, none)
	for _, i := range ops {
		switch {
		case i >= x.h.crashAt[c]:
			n.after = append(n.after, i)
		case x.e.effective(i):
			n.before = append(n.before, i)
		}
	}
	if len(n.before) > 0 && len(n.after) > 0 {
		n.crash = c
	}
	return n
}

// readsRecovery is the crash after which the read i is the first read of
// one of words (readAfterCrash), or none.
func (x *explainer) readsRecovery(i int32, words []int32) int32 {
	h := x.h
	if h.flags[i]&(fRead|fReturned) != fRead|fReturned {
		return none
	}
	c, _ := slices.BinarySearch(h.crashAt, i+1)
	if c == 0 {
		return none
	}
	c--
	for _, w := range words {
		if r, _ := x.readAfterCrash(int32(c), w); r == i {
			return int32(c)
		}
	}
	return none
}

// tookEffectBefore reports whether the write i took effect before crash c
// and after the crash before it: it returned ok in between, or c cut it
// off and it was completed.
func (x *explainer) tookEffectBefore(i, c int32) bool {
	h := x.h
	if !x.e.writer(i) {
		return false
	}
	if h.crashOf(i) == c {
		return true
	}
	return h.retLineOf(i) != 0 && h.retLineOf(i) < h.crashLine[c] && (c == 0 || i >= h.crashAt[c-1])
}

// cutOff is the evidence of the completed cas i, cut off by crash c (none:
// by the end of the history).
func (x *explainer) cutOff(i, c int32) note {
	e, h := x.e, x.h
	n := newNote(EvidenceCutOff, i, c)
	n.completed, n.rule = true, e.mode.String()
	if c == none {
		n.rule = "end"
	} else if e.mode.ProcessOrder() {
		n.target = e.recoveryTarget(h.crashRecOf(i), &n.skipped)
	}
	return n
}

// recovery is what the first reads after crash c found at the words of
// the write i that took effect before it (its fate there), or, with i
// none, at words.
func (x *explainer) recovery(c, i int32, words []int32) note {
	h := x.h
	n := newNote(EvidenceRecovery, i, c)
	if i != none && h.retLineOf(i) == 0 {
		n.rule = x.e.mode.String()
	}
	if i == none {
		for _, w := range words {
			if len(n.vals)+len(n.unknown) < maxEvidenceWords {
				x.recoveredWord(&n, c, w, none)
			}
		}
		return n
	}
	for a := int32(h.acc[i]); a < int32(h.acc[i+1]) && len(n.vals)+len(n.unknown) < maxEvidenceWords; a++ {
		x.recoveredWord(&n, c, h.wordOf(a), a)
	}
	return n
}

// recoveredWord adds to n what the first read of word w after crash c
// returned, with the fate there of the write access wa (none: no write).
func (x *explainer) recoveredWord(n *note, c, w, wa int32) {
	h := x.h
	r, ra := x.readAfterCrash(c, w)
	if r == none {
		n.unknown = append(n.unknown, w)
		return
	}
	v := noteVal{acc: ra, full: r == h.crashAt[c] && int(h.acc[r+1]-h.acc[r]) == len(h.addr)}
	if wa != none {
		switch h.valueOf(ra) {
		case h.newVal(wa):
			v.fate = "new"
		case h.valueOf(wa):
			v.fate = "old"
		}
	}
	n.vals = append(n.vals, v)
}

// readAfterCrash finds the first read of word w after crash c that
// returned before anything that may write w (a cas that succeeded or was
// cut off) was invoked after the crash: what it returned there is what
// recovery left (later crashes may fall in between: their recoveries
// found it there too). It returns the read and its access, or none.
func (x *explainer) readAfterCrash(c, w int32) (op, acc int32) {
	key := [2]int32{c, w}
	if r, ok := x.afterCrash[key]; ok {
		return r[0], r[1]
	}
	if x.afterCrash == nil {
		x.afterCrash = map[[2]int32][2]int32{}
	}
	op, acc = x.scanAfterCrash(c, w)
	x.afterCrash[key] = [2]int32{op, acc}
	return op, acc
}

// scanAfterCrash is readAfterCrash without its cache: anomalies of one
// lost write (a fork per later write) share their crash.
func (x *explainer) scanAfterCrash(c, w int32) (op, acc int32) {
	h := x.h
	end := min(h.n, h.crashAt[c]+maxEvidenceScan)
	mayWrite := func(i int32) bool { return h.writes(i) && h.accessAt(i, w) != none }
	r, ra := none, none
	for i := h.crashAt[c]; i < end && r == none; i++ {
		if mayWrite(i) {
			return none, none
		}
		if h.flags[i]&(fRead|fReturned) == fRead|fReturned {
			if a := h.accessAt(i, w); a != none {
				r, ra = i, a
			}
		}
	}
	if r == none {
		return none, none
	}
	for i := r + 1; i < end && h.line[i] < h.retLineOf(r); i++ {
		if mayWrite(i) {
			return none, none
		}
	}
	return r, ra
}

// elsewhere adds, for a dangling value, the cas that had it as a new
// value: at another address (a mixed-up log), or at that one but failed.
func (x *explainer) elsewhere(f *finding) {
	h := x.h
	if x.writersOf == nil {
		x.indexDanglingValues()
	}
	v, w := h.valueOf(f.acc), h.wordOf(f.acc)
	// Prefer a write at another address, then one that took effect.
	score := func(a int32) int {
		s := 0
		if h.wordOf(a) != w {
			s += 2
		}
		if x.e.writer(h.opOf(a)) {
			s++
		}
		return s
	}
	best := none
	for _, a := range x.writersOf[v] {
		if best == none || score(a) > score(best) {
			best = a
		}
	}
	if best != none {
		n := newNote(EvidenceElsewhere, h.opOf(f.acc), none)
		n.acc, n.writerAcc = f.acc, best
		f.notes = append(f.notes, n)
	}
}

// indexDanglingValues finds, in one pass, the cas accesses whose new
// values are those of the dangling findings.
func (x *explainer) indexDanglingValues() {
	h := x.h
	x.writersOf = map[uint64][]int32{}
	for _, f := range x.findings {
		if f.kind == Dangling {
			x.writersOf[h.valueOf(f.acc)] = nil
		}
	}
	for i := int32(0); i < h.n; i++ {
		if h.isRead(i) {
			continue
		}
		for a := int32(h.acc[i]); a < int32(h.acc[i+1]); a++ {
			if ws, ok := x.writersOf[h.newVal(a)]; ok && len(ws) < 4 {
				x.writersOf[h.newVal(a)] = append(ws, a)
			}
		}
	}
}

// expected adds, for the failed cas i, whether its expected value at the
// word it blamed was still there after it returned.
func (x *explainer) expected(f *finding, i int32) {
	e, h := x.e, x.h
	a := h.blamedAccess(i)
	y, w := h.ver[a], h.wordOf(a)
	if y == verDangling || (y >= 0 && !e.writer(h.opOf(y))) || h.flags[i]&fNoAux != 0 {
		// The value never was there, or nobody had observed it there
		// before the cas (Assumption 2): nothing to say.
		return
	}
	n := newNote(EvidenceExpected, i, none)
	n.acc = a
	s := e.next(y, w)
	if s != none {
		n.replacer = h.opOf(s)
	}
	n.still = s == none || h.line[h.opOf(s)] > h.retLineOf(i)
	if n.still {
		// A read that returned the value there after the cas returned.
		end := min(h.n, h.lo[i]+maxEvidenceScan)
		if n.replacer != none {
			end = min(end, n.replacer)
		}
		for r := h.lo[i]; r < end; r++ {
			if h.flags[r]&(fRead|fReturned) == fRead|fReturned {
				if ra := h.accessAt(r, w); ra != none && h.ver[ra] == y {
					n.readBy = r
					break
				}
			}
		}
	}
	if f.kind == UnexplainedFailure && n.readBy == none {
		return // the summary says it all
	}
	f.notes = append(f.notes, n)
}
