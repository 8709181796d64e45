package shrink

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

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
)

// Options tune shrinking.
type Options struct {
	// Mode is the mode candidates are checked in (Minimize; Anomaly takes
	// the analysis's).
	Mode history.Mode
	// Anomaly is the index in Result.Anomalies of the anomaly to keep
	// (func Anomaly only).
	Anomaly int
	// Kinds are the anomaly kinds a failing candidate may show (default,
	// for Anomaly: the kinds the analysis found; for Minimize: any), and
	// Want the kind it must show (default, for Anomaly: the kind of the
	// anomaly shrunk; for Minimize: any).
	Kinds []analyzer.Kind
	Want  analyzer.Kind
	// Story asks for the same crash story: the anomaly of kind Want must
	// involve a crash (Anomaly.Crashes) and, with Story.Lost, a read after
	// a crash that found the value one of its writes had replaced. Anomaly
	// sets it from the anomaly shrunk, so that a crash bug does not shrink
	// into a history without its crash, which would look like a bug of
	// concurrency.
	Story Story
	// MaxChecks bounds the re-checks of candidates (default 20000); when
	// it runs out the result still fails but may not be 1-minimal.
	MaxChecks int
	// Confirm asks the exact checker (package exact) to confirm a result
	// of at most 40 operations.
	Confirm bool
}

// Story is the crash story a shrunk history must keep (Options.Story).
type Story struct {
	Crash bool
	Lost  bool
}

// StoryOf is the crash story of an anomaly.
func StoryOf(a analyzer.Anomaly) Story {
	return Story{Crash: len(a.Crashes) > 0, Lost: lostWrite(a)}
}

// lostWrite reports whether the anomaly's evidence has a read after a
// crash that found the value one of its writes had replaced.
func lostWrite(a analyzer.Anomaly) bool {
	return slices.ContainsFunc(a.Evidence, func(ev analyzer.Evidence) bool {
		return ev.Kind == analyzer.EvidenceRecovery && slices.ContainsFunc(ev.Values, func(v analyzer.WordValue) bool { return v.Fate == "old" })
	})
}

// Tells reports whether anomaly a tells the story s (at least).
func (s Story) Tells(a analyzer.Anomaly) bool {
	return (!s.Crash || len(a.Crashes) > 0) && (!s.Lost || lostWrite(a))
}

// Stats describe a shrinking.
type Stats struct {
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
	// Whole: no extraction around the anomaly failed on its own, and the
	// whole history was minimized instead (Anomaly).
	Whole bool
	// Kind is the kind of the anomaly the result shows.
	Kind analyzer.Kind
	// Seconds is the time shrinking took.
	Seconds float64
}

// ErrNotFailing is returned when the history to shrink does not fail.
var ErrNotFailing = errors.New("the history does not fail: nothing to shrink")

// Anomaly extracts and minimizes a sub-history that still shows anomaly
// opts.Anomaly of the analysis. open re-opens the input the analysis read,
// named name in errors (the analyzer keeps no values, so the kept lines
// are read again).
func Anomaly(ctx context.Context, a *analyzer.Analysis, name string, open func() (io.ReadCloser, error), opts Options) (*history.History, Stats, error) {
	return anomaly(ctx, a, name, open, opts, a.SubHistory)
}

// maxWhole bounds the operations of a history that is shrunk whole when
// no extraction around its anomaly fails on its own: it is held in memory
// and re-checked by every candidate of the first rounds.
const maxWhole = 200_000

// anomaly is Anomaly with the extraction plan given (the analysis's
// SubHistory; tests give one that falls short). It starts from the
// smallest candidate that fails on its own: the extraction around the
// anomaly, then the same with every word's chain kept from its initial
// value, then the whole history (up to maxWhole operations), so that an
// extraction that misses an operation the anomaly depends on costs time,
// never the shrink.
func anomaly(ctx context.Context, a *analyzer.Analysis, name string, open func() (io.ReadCloser, error), opts Options,
	plan func(k int, fromGenesis bool) (*analyzer.SubHistory, error)) (*history.History, Stats, error) {
	start := time.Now()
	if a.Result.Linearizable || len(a.Result.Anomalies) == 0 {
		return nil, Stats{}, ErrNotFailing
	}
	if opts.Anomaly < 0 || opts.Anomaly >= len(a.Result.Anomalies) {
		return nil, Stats{}, fmt.Errorf("shrink: no anomaly %d to shrink", opts.Anomaly)
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
		opts.Story = StoryOf(a.Result.Anomalies[opts.Anomaly])
	}
	opts.Mode = a.Result.Mode
	var sub *history.History
	var tried []string
	wholeUsed := false
	for _, full := range []bool{false, true} {
		p, err := plan(opts.Anomaly, full)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		h, err := extract(ctx, name, open, p)
		if err != nil {
			return nil, Stats{}, err
		}
		if failsOnItsOwn(ctx, h, opts) {
			sub = h
			break
		}
		tried = append(tried, fmt.Sprintf("the %d operations extracted around the anomaly do not fail on their own", len(h.Ops)))
	}
	if sub == nil {
		h, err := whole(ctx, a, name, open)
		if err != nil {
			return nil, Stats{}, fmt.Errorf("shrink: cannot shrink: %s; %w", strings.Join(tried, "; "), err)
		}
		if !failsOnItsOwn(ctx, h, opts) {
			tried = append(tried, fmt.Sprintf("nor does the whole history (%d operations)", len(h.Ops)))
			return nil, Stats{}, fmt.Errorf("shrink: cannot shrink: %s", strings.Join(tried, "; "))
		}
		sub, wholeUsed = h, true
	}
	out, st, err := Minimize(ctx, sub, opts)
	st.Whole = wholeUsed
	st.Original = int(a.Result.Operations)
	st.Extracted = len(sub.Ops)
	st.Seconds = time.Since(start).Seconds()
	return out, st, err
}

// failsOnItsOwn reports whether h, every operation kept, fails as opts
// asks.
func failsOnItsOwn(ctx context.Context, h *history.History, opts Options) bool {
	s := newShrinker(ctx, h, opts)
	return s.fails(s.build(s.full()))
}

// extract re-reads the lines an extraction plan keeps, its initial values
// set.
func extract(ctx context.Context, name string, open func() (io.ReadCloser, error), p *analyzer.SubHistory) (*history.History, error) {
	rc, err := open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	keep := func(line int64) bool { return slices.Contains(p.Crashes, line) }
	// (The analysis read a recording cut short as far as it goes.)
	h, _, err := history.Extract(ctx, history.NewReader(rc, name, history.Options{Prefix: true}), p.Lines, keep)
	if err != nil {
		return nil, err
	}
	if len(p.Init) > 0 && h.Init == nil {
		h.Init = map[uint64]uint64{}
	}
	maps.Copy(h.Init, p.Init)
	return h, nil
}

// whole re-reads the whole input, as far as the analysis read it, when it
// has at most maxWhole operations.
func whole(ctx context.Context, a *analyzer.Analysis, name string, open func() (io.ReadCloser, error)) (*history.History, error) {
	if a.Result.Operations > maxWhole {
		return nil, fmt.Errorf("the whole history (%d operations) is too large to shrink whole (at most %d)", a.Result.Operations, maxWhole)
	}
	rc, err := open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	h, err := history.ReadAll(rc, name)
	if errors.Is(err, history.ErrCutShort) {
		err = nil // (as the analysis did: what the file holds)
	}
	if err == nil {
		err = ctx.Err()
	}
	return h, err
}

// Minimize shrinks a failing in-memory history (see the package
// documentation) and returns a copy; h is not modified.
func Minimize(ctx context.Context, h *history.History, opts Options) (*history.History, Stats, error) {
	start := time.Now()
	s := newShrinker(ctx, h, opts)
	st := Stats{Original: len(h.Ops), Extracted: len(h.Ops)}
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
	opts   Options
	checks int
	max    int
}

func newShrinker(ctx context.Context, h *history.History, opts Options) *shrinker {
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
			// Each of these is parallel to Addrs or empty: a cas's
			// expected and new values, a swap's new ones, the values a
			// read or a swap returned or a failure reported.
			if len(o.Expected) > 0 {
				op.Expected = append(op.Expected, o.Expected[j])
			}
			if len(o.New) > 0 {
				op.New = append(op.New, o.New[j])
			}
			if len(o.Values) > 0 {
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
func (s *shrinker) check(h *history.History) *analyzer.Result {
	if h == nil || len(h.Ops) == 0 {
		return nil
	}
	s.checks++
	res, err := analyzer.CheckHistory(s.ctx, h, analyzer.Options{Mode: s.opts.Mode, MaxAnomalies: 4})
	if err != nil {
		return nil
	}
	return res
}

// last re-checks without counting (for the stats).
func (s *shrinker) last(h *history.History) *analyzer.Result {
	res, err := analyzer.CheckHistory(s.ctx, h, analyzer.Options{Mode: s.opts.Mode})
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
	return acceptable(res, s.opts.Kinds, s.opts.Want, s.opts.Story)
}

// acceptable: res shows an anomaly of kind want (if given) that tells the
// story, and only anomalies of the given kinds (if any).
func acceptable(res *analyzer.Result, kinds []analyzer.Kind, want analyzer.Kind, story Story) bool {
	wanted := false
	for _, a := range res.Anomalies {
		if len(kinds) > 0 && !slices.Contains(kinds, a.Kind) {
			return false
		}
		wanted = wanted || ((want == "" || a.Kind == want) && story.Tells(a))
	}
	return wanted
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

// Write writes a shrunk history in text format with a header comment
// and, after each invocation, the line it had in the original input.
func Write(w io.Writer, h *history.History, comment []string) error {
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
