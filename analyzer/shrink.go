package analyzer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pmlin/pmlin/exact"
	"github.com/pmlin/pmlin/history"
)

// Shrinking turns a failing history (millions of operations) into a small
// sub-history that still fails, for a person to read and a test to keep.
//
// It works in two steps. Extraction picks, from the analysis of the whole
// history, the anomaly's operations and what their edges need: the writers
// of every value they observed, up to the earliest such value per word
// (which becomes the word's initial value, so the chain of writes before
// it is not needed), the writes that replaced those values, the sources of
// failures, and, for a failed cas, a read that returned its expected value
// before it was invoked (Assumption 2). Those lines are re-read from the
// input (Extract). Minimization then re-checks candidates with the
// analyzer until no single operation can be removed: it removes chunks of
// operations, then single ones, crash lines, whole words, words of
// multi-word reads, and a leading write folded into the initial values.
//
// A candidate counts as failing when the analyzer accepts it (well formed,
// within the method's assumptions) and finds an anomaly of the kind being
// shrunk, and no anomaly of a kind the whole history did not show
// (removing the writer of a value a kept read returned would otherwise
// turn any failure into a "dangling" artefact). The result is 1-minimal:
// removing any one operation makes it linearizable, ill-formed, break an
// assumption, or fail differently (no anomaly of the kind shrunk, or one
// of a new kind).

// ShrinkOptions tune shrinking.
type ShrinkOptions struct {
	Mode history.Mode
	// Anomaly is the index in Result.Anomalies of the anomaly to keep
	// (Analysis.Shrink only).
	Anomaly int
	// Kinds are the anomaly kinds a failing candidate may show (default,
	// for Analysis.Shrink: the kinds the analysis found; for Minimize:
	// any), and Want the kind it must show (default, for Analysis.Shrink:
	// the kind of the anomaly shrunk; for Minimize: any).
	Kinds []Kind
	Want  Kind
	// MaxChecks bounds the re-checks of candidates (default 20000); when
	// it runs out the result still fails but may not be 1-minimal.
	MaxChecks int
	// Confirm asks the exact checker (package exact) to confirm a result
	// of at most 40 operations.
	Confirm bool
}

// ShrinkStats describe a shrinking.
type ShrinkStats struct {
	// Original is the number of operations of the input, Extracted of the
	// sub-history extraction kept, Final of the result.
	Original, Extracted, Final int
	// Lines is the number of event lines of the result (invocations,
	// responses, crashes).
	Lines int
	// Checks is the number of candidates re-checked.
	Checks int
	// Minimal: the last round removed nothing (the result is 1-minimal);
	// false when MaxChecks ran out first.
	Minimal bool
	// Exact is the exact checker's word on the result, with Confirm:
	// "agrees" (not linearizable), "DISAGREES" (it found a
	// linearization), "too large", or "" (not asked or too many ops).
	Exact string
	// Kind is the kind of the anomaly the result shows.
	Kind Kind
	// Seconds is the time shrinking took.
	Seconds float64
}

// ErrNotFailing is returned when the history to shrink does not fail.
var ErrNotFailing = errors.New("the history does not fail: nothing to shrink")

// Shrink extracts and minimizes a sub-history that still shows anomaly
// opts.Anomaly of the analysis. open re-opens the input the analysis read
// (the analyzer keeps no values, so the kept lines are read again).
func (a *Analysis) Shrink(ctx context.Context, open func() (io.ReadCloser, error), opts ShrinkOptions) (*history.History, ShrinkStats, error) {
	start := time.Now()
	if a.Result.Linearizable || len(a.Result.Anomalies) == 0 {
		return nil, ShrinkStats{}, ErrNotFailing
	}
	if opts.Anomaly < 0 || opts.Anomaly >= len(a.Result.Anomalies) {
		return nil, ShrinkStats{}, fmt.Errorf("analyzer: no anomaly %d to shrink", opts.Anomaly)
	}
	if len(opts.Kinds) == 0 {
		for _, an := range a.Result.Anomalies {
			if !slices.Contains(opts.Kinds, an.Kind) {
				opts.Kinds = append(opts.Kinds, an.Kind)
			}
		}
	}
	if opts.Want == "" {
		opts.Want = a.Result.Anomalies[opts.Anomaly].Kind
	}
	opts.Mode = a.Result.Mode
	var sub *history.History
	var lastErr error
	for _, full := range []bool{false, true} {
		lines, init, err := a.shrinkPlan(opts.Anomaly, full)
		if err != nil {
			lastErr = err
			continue
		}
		rc, err := open()
		if err != nil {
			return nil, ShrinkStats{}, err
		}
		h, _, err := Extract(ctx, history.NewReader(rc, a.e.h.name, history.Options{}), lines, nil)
		rc.Close()
		if err != nil {
			return nil, ShrinkStats{}, err
		}
		if len(init) > 0 && h.Init == nil {
			h.Init = map[uint64]uint64{}
		}
		maps.Copy(h.Init, init)
		s := newShrinker(ctx, h, opts)
		if s.fails(s.build(s.full())) {
			sub = h
			break
		}
		lastErr = fmt.Errorf("the %d operations extracted around the anomaly do not fail on their own", len(h.Ops))
	}
	if sub == nil {
		return nil, ShrinkStats{}, fmt.Errorf("analyzer: cannot shrink: %w", lastErr)
	}
	out, st, err := Minimize(ctx, sub, opts)
	st.Original = int(a.Result.Operations)
	st.Extracted = len(sub.Ops)
	st.Seconds = time.Since(start).Seconds()
	return out, st, err
}

// maxPlan bounds the operations extraction may keep.
const maxPlan = 200000

// shrinkPlan picks the operations (invocation lines) a sub-history showing
// anomaly k needs, and the initial values that replace the writes before
// them. With full, every word's chain of writes is kept from genesis
// (no initial values replaced).
func (a *Analysis) shrinkPlan(k int, full bool) ([]int64, map[uint64]uint64, error) {
	e, h := a.e, a.e.h
	an := a.Result.Anomalies[k]
	in := map[int32]bool{}
	var work []int32
	add := func(i int32) {
		if i >= 0 && i < h.n && !in[i] {
			in[i] = true
			work = append(work, i)
		}
	}
	for _, l := range an.Ops {
		add(h.opOfLine(l))
	}
	for _, ed := range an.Edges {
		add(h.opOfLine(ed.From))
		add(h.opOfLine(ed.To))
	}

	// The versions kept operations refer to, per word, among those on the
	// word's path (verGenesis for the initial value). The path is walked
	// again when they change, keeping no copy of it: a hot word of a long
	// history has millions of versions.
	type wordRefs struct {
		refs  map[int32]bool
		dirty bool
		lo    int32 // first referenced version (an access, or verGenesis)
	}
	words := map[int32]*wordRefs{}
	note := func(w, y int32) {
		if !e.onPath(y) {
			return
		}
		r := words[w]
		if r == nil {
			r = &wordRefs{refs: map[int32]bool{}, lo: verUnresolved}
			words[w] = r
		}
		if !r.refs[y] {
			r.refs[y] = true
			r.dirty = true
		}
	}
	// segment adds the writers of the versions from the first referenced
	// (excluded, unless full: from genesis) to the last referenced.
	segment := func(w int32, r *wordRefs) {
		r.dirty = false
		seen := 0
		if r.refs[verGenesis] {
			seen++
		}
		var first, last int32 = none, none // positions: genesis 0, then 1, 2, ...
		if r.refs[verGenesis] || full {
			first = 0
			r.lo = verGenesis
		}
		if r.refs[verGenesis] {
			last = 0
		}
		q := int32(0)
		for x := e.gsucc[w]; x != none && seen < len(r.refs); x = e.succ[x] {
			q++
			if r.refs[x] {
				seen++
				if first == none {
					first, r.lo = q, x
				}
				last = q
			}
		}
		q = 0
		for x := e.gsucc[w]; x != none && q < last; x = e.succ[x] {
			q++
			if q > first {
				add(h.accOp[x])
			}
		}
	}
	next := map[int32]int32{} // completed crashed op -> the target of its recovery edge
	if e.mode == history.Recoverable {
		for _, c := range h.crashed {
			if h.flags[c.op]&fCompleted != 0 {
				if t := e.recoveryTarget(c, nil); t != none {
					next[c.op] = t
				}
			}
		}
	}
	needObs := map[int32][]int32{} // version -> failed cas that expected it
	satisfied := map[int32]bool{}  // failed cas with an observer kept
	needSeen := map[int32]bool{}   // versions written by completed cut-off cas
	for {
		for len(work) > 0 {
			i := work[len(work)-1]
			work = work[:len(work)-1]
			if h.flags[i]&fCompleted != 0 {
				if n, ok := next[i]; ok {
					add(n) // the recovery edge's target
				}
				// A cut-off cas is in the graph because someone observed
				// its value: keep one who did.
				for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
					needSeen[x] = true
				}
			}
			for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
				w, y := h.wordOf(x), h.ver[x]
				switch {
				case e.observer(i):
					note(w, y)
					if y >= 0 && !e.onPath(y) {
						add(h.accOp[y])
					}
					if e.writer(i) {
						note(w, x)
					}
				case h.failed(i) && h.word[x]&blamed != 0:
					note(w, y)
					if y >= 0 && !e.onPath(y) {
						add(h.accOp[y])
					}
					if s := e.next(y, w); s != none {
						note(w, s)
					}
					if y >= 0 && !satisfied[i] {
						needObs[y] = append(needObs[y], i)
					}
				}
			}
		}
		// The writes between the earliest and the latest version kept on
		// each word.
		for w, r := range words {
			if r.dirty {
				segment(w, r)
			}
		}
		// Assumption 2: a failed cas's expected value was returned before
		// it was invoked, by a read or a successful cas; keep one.
		if len(needObs) > 0 || len(needSeen) > 0 {
			best := map[int32]int32{} // failed cas -> observer
			seenBy := map[int32]int32{}
			for o := int32(0); o < h.n; o++ {
				if !e.observer(o) {
					continue
				}
				for x := int32(h.acc[o]); x < int32(h.acc[o+1]); x++ {
					y := h.ver[x]
					if needSeen[y] {
						if _, ok := seenBy[y]; !ok {
							seenBy[y] = o
						}
					}
					if h.flags[o]&fReturned == 0 {
						continue
					}
					for _, f := range needObs[y] {
						if _, ok := best[f]; !ok && h.lo[o] <= f {
							best[f] = o
						}
					}
				}
			}
			for y := range needSeen {
				if o, ok := seenBy[y]; ok {
					add(o)
				}
			}
			clear(needSeen)
			for _, fs := range needObs {
				for _, f := range fs {
					satisfied[f] = true
					if o, ok := best[f]; ok {
						add(o)
					}
				}
			}
			clear(needObs)
		}
		if len(in) > maxPlan {
			return nil, nil, fmt.Errorf("the anomaly's operations need more than %d others", maxPlan)
		}
		if len(work) == 0 {
			break
		}
	}
	init := map[uint64]uint64{}
	for w, r := range words {
		if r.dirty {
			segment(w, r)
		}
		if r.lo >= 0 && !in[h.accOp[r.lo]] {
			init[h.addr[w]] = h.nw[r.lo]
		}
	}
	lines := make([]int64, 0, len(in))
	for i := range in {
		lines = append(lines, int64(h.line[i]))
	}
	slices.Sort(lines)
	return lines, init, nil
}

// Minimize shrinks a failing in-memory history (see the package's notes on
// shrinking) and returns a copy; h is not modified.
func Minimize(ctx context.Context, h *history.History, opts ShrinkOptions) (*history.History, ShrinkStats, error) {
	start := time.Now()
	s := newShrinker(ctx, h, opts)
	st := ShrinkStats{Original: len(h.Ops), Extracted: len(h.Ops)}
	if !s.fails(s.build(s.full())) {
		return nil, st, ErrNotFailing
	}
	cur := s.full()
	for changed := true; changed && !s.exhausted(); {
		changed = false
		for _, pass := range []func(state) (state, bool){s.dropChunks, s.dropCrashes, s.dropWords, s.dropReadWords, s.absorb} {
			var c bool
			cur, c = pass(cur)
			changed = changed || c
		}
	}
	out := s.build(cur)
	st.Checks = s.checks
	st.Minimal = !s.exhausted()
	st.Final = len(out.Ops)
	st.Lines = out.Events
	if res := s.last(out); res != nil && len(res.Anomalies) > 0 {
		st.Kind = res.Anomalies[0].Kind
	}
	if opts.Confirm && len(out.Ops) <= 40 {
		r, err := exact.Check(ctx, out, exact.Options{Mode: opts.Mode, MaxStates: 2_000_000})
		switch {
		case errors.Is(err, exact.ErrTooLarge):
			st.Exact = "too large"
		case err != nil:
			st.Exact = "error: " + err.Error()
		case r.Linearizable:
			st.Exact = "DISAGREES"
		default:
			st.Exact = "agrees"
		}
	}
	st.Seconds = time.Since(start).Seconds()
	return out, st, ctx.Err()
}

// state is a candidate: which operations and crashes are kept, which words
// dropped, and the initial values.
type state struct {
	ops     []bool
	crashes []bool
	// drop: addresses removed from every operation; readDrop: (op,
	// address) pairs removed from single reads.
	drop     map[uint64]bool
	readDrop map[[2]uint64]bool
	init     map[uint64]uint64
}

func (s state) clone() state {
	return state{ops: slices.Clone(s.ops), crashes: slices.Clone(s.crashes),
		drop: maps.Clone(s.drop), readDrop: maps.Clone(s.readDrop), init: maps.Clone(s.init)}
}

type shrinker struct {
	ctx    context.Context
	h      *history.History
	opts   ShrinkOptions
	checks int
	max    int
}

func newShrinker(ctx context.Context, h *history.History, opts ShrinkOptions) *shrinker {
	if opts.MaxChecks <= 0 {
		opts.MaxChecks = 20000
	}
	return &shrinker{ctx: ctx, h: h, opts: opts, max: opts.MaxChecks}
}

func (s *shrinker) exhausted() bool { return s.checks >= s.max || s.ctx.Err() != nil }

func (s *shrinker) full() state {
	st := state{ops: make([]bool, len(s.h.Ops)), crashes: make([]bool, len(s.h.Crashes)),
		drop: map[uint64]bool{}, readDrop: map[[2]uint64]bool{}, init: maps.Clone(s.h.Init)}
	if st.init == nil {
		st.init = map[uint64]uint64{}
	}
	for i := range st.ops {
		st.ops[i] = true
	}
	for i := range st.crashes {
		st.crashes[i] = true
	}
	return st
}

// build writes a candidate as a History, events renumbered densely; nil if
// the candidate makes no sense (a failed cas whose blamed word is gone).
func (s *shrinker) build(st state) *history.History {
	h := &history.History{InitDefault: s.h.InitDefault, Init: maps.Clone(st.init)}
	type step struct {
		pos   int
		op    int
		isRet bool
	}
	var steps []step
	for id, keep := range st.ops {
		if !keep {
			continue
		}
		o := s.h.Ops[id]
		op := history.Op{Line: o.Line, RetLine: o.RetLine, Proc: o.Proc, Kind: o.Kind, Status: o.Status, FailAddr: o.FailAddr, Crash: -1}
		for j, a := range o.Addrs {
			if st.drop[a] || (o.Kind == history.Read && st.readDrop[[2]uint64{uint64(o.Line), a}]) {
				if o.Status == history.Failed && a == o.FailAddr {
					return nil
				}
				continue
			}
			op.Addrs = append(op.Addrs, a)
			if o.Kind == history.CAS {
				op.Expected = append(op.Expected, o.Expected[j])
				op.New = append(op.New, o.New[j])
			} else if o.Values != nil {
				op.Values = append(op.Values, o.Values[j])
			}
		}
		if len(op.Addrs) == 0 {
			continue
		}
		op.ID = len(h.Ops)
		h.Ops = append(h.Ops, op)
		steps = append(steps, step{o.Inv, op.ID, false})
		if o.Ret >= 0 {
			steps = append(steps, step{o.Ret, op.ID, true})
		}
	}
	for c, keep := range st.crashes {
		if keep {
			steps = append(steps, step{s.h.Crashes[c], -1 - c, false})
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return a.pos - b.pos })
	for pos, sp := range steps {
		switch {
		case sp.op < 0:
			h.Crashes = append(h.Crashes, pos)
		case sp.isRet:
			h.Ops[sp.op].Ret = pos
		default:
			h.Ops[sp.op].Inv = pos
			h.Ops[sp.op].Ret = -1
		}
	}
	// A pending operation is cut off by the first crash kept after its
	// invocation, which is what the written text says even when its own
	// crash was dropped.
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Ret >= 0 {
			continue
		}
		for c, pos := range h.Crashes {
			if pos > op.Inv {
				op.Crash = c
				break
			}
		}
	}
	h.Events = len(steps)
	return h
}

// check runs the analyzer on a candidate.
func (s *shrinker) check(h *history.History) *Result {
	if h == nil || len(h.Ops) == 0 {
		return nil
	}
	s.checks++
	res, err := CheckHistory(s.ctx, h, Options{Mode: s.opts.Mode, MaxAnomalies: 4})
	if err != nil {
		return nil
	}
	return res
}

// last re-checks without counting (for the stats).
func (s *shrinker) last(h *history.History) *Result {
	res, err := CheckHistory(s.ctx, h, Options{Mode: s.opts.Mode})
	if err != nil {
		return nil
	}
	return res
}

// fails is the oracle: well formed, within the assumptions, not
// linearizable, and only with anomalies of the kinds asked for.
func (s *shrinker) fails(h *history.History) bool {
	res := s.check(h)
	if res == nil || res.Linearizable {
		return false
	}
	return acceptable(res, s.opts.Kinds, s.opts.Want)
}

// acceptable: res shows an anomaly of kind want (if given), and only
// anomalies of the given kinds (if any).
func acceptable(res *Result, kinds []Kind, want Kind) bool {
	wanted := want == ""
	for _, a := range res.Anomalies {
		if len(kinds) > 0 && !slices.Contains(kinds, a.Kind) {
			return false
		}
		wanted = wanted || a.Kind == want
	}
	return wanted && len(res.Anomalies) > 0
}

// try accepts a candidate if it still fails.
func (s *shrinker) try(c state) bool {
	if s.exhausted() {
		return false
	}
	return s.fails(s.build(c))
}

// dropChunks removes kept operations in chunks, halving the chunk size
// down to single operations (a complement-only ddmin).
func (s *shrinker) dropChunks(cur state) (state, bool) {
	changed := false
	kept := func() []int {
		var ids []int
		for i, k := range cur.ops {
			if k {
				ids = append(ids, i)
			}
		}
		return ids
	}
	for size := max(len(kept())/2, 1); ; size /= 2 {
		ids := kept()
		for start := 0; start < len(ids) && !s.exhausted(); {
			end := min(start+size, len(ids))
			c := cur.clone()
			for _, id := range ids[start:end] {
				c.ops[id] = false
			}
			if s.try(c) {
				cur, changed = c, true
				ids = append(ids[:start:start], ids[end:]...)
				continue
			}
			start = end
		}
		if size <= 1 {
			break
		}
	}
	return cur, changed
}

func (s *shrinker) dropCrashes(cur state) (state, bool) {
	changed := false
	for c := range cur.crashes {
		if !cur.crashes[c] {
			continue
		}
		n := cur.clone()
		n.crashes[c] = false
		if s.try(n) {
			cur, changed = n, true
		}
	}
	return cur, changed
}

// words are the addresses the kept operations use, in order.
func (s *shrinker) words(cur state) []uint64 {
	var ws []uint64
	for id, k := range cur.ops {
		if k {
			for _, a := range s.h.Ops[id].Addrs {
				if !cur.drop[a] {
					ws = append(ws, a)
				}
			}
		}
	}
	slices.Sort(ws)
	return slices.Compact(ws)
}

func (s *shrinker) dropWords(cur state) (state, bool) {
	changed := false
	ws := s.words(cur)
	if len(ws) <= 1 {
		return cur, false
	}
	for _, a := range ws {
		n := cur.clone()
		n.drop[a] = true
		delete(n.init, a)
		if s.try(n) {
			cur, changed = n, true
		}
	}
	return cur, changed
}

func (s *shrinker) dropReadWords(cur state) (state, bool) {
	changed := false
	for id, k := range cur.ops {
		o := &s.h.Ops[id]
		if !k || o.Kind != history.Read {
			continue
		}
		for _, a := range o.Addrs {
			live := 0
			for _, b := range o.Addrs {
				if !cur.drop[b] && !cur.readDrop[[2]uint64{uint64(o.Line), b}] {
					live++
				}
			}
			key := [2]uint64{uint64(o.Line), a}
			if live <= 1 || cur.drop[a] || cur.readDrop[key] {
				continue
			}
			n := cur.clone()
			n.readDrop[key] = true
			if s.try(n) {
				cur, changed = n, true
			}
		}
	}
	return cur, changed
}

// absorb folds a successful cas whose expected values are its words'
// initial values into the initial values: the history then starts after it.
func (s *shrinker) absorb(cur state) (state, bool) {
	changed := false
	for id, k := range cur.ops {
		o := &s.h.Ops[id]
		if !k || o.Kind != history.CAS || o.Status != history.Succeeded {
			continue
		}
		initOf := func(a uint64) uint64 {
			if v, ok := cur.init[a]; ok {
				return v
			}
			return s.h.InitDefault
		}
		ok := true
		for j, a := range o.Addrs {
			if !cur.drop[a] && o.Expected[j] != initOf(a) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		n := cur.clone()
		n.ops[id] = false
		for j, a := range o.Addrs {
			if !cur.drop[a] {
				n.init[a] = o.New[j]
			}
		}
		if s.try(n) {
			cur, changed = n, true
		}
	}
	return cur, changed
}

// WriteShrunk writes a shrunk history in text format with a header comment
// and, after each invocation, the line it had in the original input.
func WriteShrunk(w io.Writer, h *history.History, comment []string) error {
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		return err
	}
	byInv := map[int]int64{}
	for _, op := range h.Ops {
		byInv[op.Inv] = op.Line
	}
	var out strings.Builder
	for _, c := range comment {
		out.WriteString("# " + strings.ReplaceAll(c, "\n", " ") + "\n")
	}
	pos := 0
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if l == "" {
			continue
		}
		t := strings.TrimSpace(l)
		if t == "" || t == "crash" || strings.Contains(t, " inv ") || strings.Contains(t, " ret") {
			if orig, ok := byInv[pos]; ok && orig > 0 {
				l = fmt.Sprintf("%-48s # line %d\n", t, orig)
			}
			if t != "" {
				pos++
			}
		}
		out.WriteString(l)
	}
	_, err := io.WriteString(w, out.String())
	return err
}
