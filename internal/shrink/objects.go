package shrink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/model"
)

// ObjectOptions tune the shrinking of a version 2 history (Objects).
type ObjectOptions struct {
	// Mode is the mode every candidate is checked in.
	Mode history.Mode
	// Models finds a model by name (nil: model.Builtin), as lin.Options.
	Models func(name string) model.Maker
	// MaxStates bounds each check's search (default
	// lin.DefaultMaxStates): a candidate it leaves undecided does not
	// count as failing.
	MaxStates int64
	// MaxChecks bounds the re-checks of candidates (default 5000); when
	// they, or the states all re-checks may explore together (50 times
	// what deciding the input took, at least 2,000,000), run out, the
	// result still fails but may not be 1-minimal.
	MaxChecks int
}

// ObjectStats describe the shrinking of a version 2 history.
type ObjectStats struct {
	// Object is the name of the object whose violation the result keeps.
	Object string
	// Original and Final count operations, OriginalCrashes and Crashes
	// the crashes, of the input and of the result; Lines is the number
	// of events of the result (invocations, responses, crashes).
	Original, Final          int
	OriginalCrashes, Crashes int
	Lines                    int
	// After is the line of the input's last crash before the result's
	// first operation (0: none): the result starts in the recovery epoch
	// after it, which a result without crashes does not show (a deq that
	// returned a value never enqueued fails alone).
	After int64
	// Checks is the number of candidates re-checked, Undecided how many
	// of them the budget left undecided (counted as not failing).
	Checks, Undecided int
	// Minimal: the last round removed nothing and had no undecided
	// re-check (the result is 1-minimal); false when a budget ran out
	// first or the last round left a removal undecided.
	Minimal bool
	// Seconds is the time shrinking took.
	Seconds float64
}

// ErrUndecided is returned when the checker cannot decide the history to
// shrink within the budget.
var ErrUndecided = errors.New("the checker cannot decide the history within its budget: nothing to shrink")

// objShrinker shrinks a version 2 history: candidates are sets of its
// operations (by index in h.Ops), crashes follow from them (build).
type objShrinker struct {
	ctx    context.Context
	h      *model.History
	opts   ObjectOptions
	object string // the object whose violation is kept
	models []*model.Model
	all    []int // every operation of h, for the orphan rule

	checks, undecided int
	states, maxStates int64 // explored by the re-checks, and their bound
	// undecidedRound counts the undecided re-checks of the current round.
	undecidedRound int
}

// Objects shrinks a version 2 history that some object of which is not
// linearizable in opts.Mode into a small one that still fails the same
// way (objShrinker.fails, the one statement of what that means), and
// returns it: operations are left out in groups (every other object's,
// each partition's, each process's, each crash section's), then as a complement-only delta
// debugging does (halves, quarters, ..., single operations), in rounds
// until one removes nothing. A crash stays exactly when kept operations
// come before and after it (build), so the result is well formed and a
// crash bug keeps the crash between the operation that was lost and the
// read that missed it. Deterministic: the re-checks' budgets are counts
// of states, never times. The result's operations keep their lines in
// h (Line, RetLine), which WriteObjects writes beside them.
//
// Errors: ErrNotFailing (every object is linearizable), ErrUndecided, an
// input error of the checker (an unknown model, an operation its model
// does not have), or ctx's.
func Objects(ctx context.Context, h *model.History, opts ObjectOptions) (*model.History, ObjectStats, error) {
	start := time.Now()
	if opts.MaxStates <= 0 {
		opts.MaxStates = lin.DefaultMaxStates
	}
	if opts.MaxChecks <= 0 {
		opts.MaxChecks = 5000
	}
	st := ObjectStats{Original: len(h.Ops), OriginalCrashes: len(h.Crashes)}
	res, err := lin.Check(ctx, h, lin.Options{Mode: opts.Mode, Models: opts.Models, MaxStates: opts.MaxStates})
	if err != nil {
		return nil, st, err
	}
	var failed *lin.ObjectResult
	for k := range res.Objects {
		if res.Objects[k].Verdict == lin.Violation {
			failed = &res.Objects[k]
			break
		}
	}
	switch {
	case failed == nil && res.Verdict == lin.Undecided:
		return nil, st, ErrUndecided
	case failed == nil:
		return nil, st, ErrNotFailing
	}
	s := &objShrinker{ctx: ctx, h: h, opts: opts, object: failed.Name,
		maxStates: max(2_000_000, 50*res.States)}
	for i := range h.Ops {
		s.all = append(s.all, i)
	}
	st.Object = s.object
	cur := slices.Clone(s.all)
	if s.models, err = makeModels(h, opts.Models); err != nil {
		return nil, st, err
	}
	for changed := true; changed && !s.exhausted(); {
		changed = false
		s.undecidedRound = 0
		for _, pass := range []func([]int) ([]int, bool){s.dropObjects, s.dropPartitions, s.dropProcesses, s.dropSections, s.dropChunks} {
			var c bool
			cur, c = pass(cur)
			changed = changed || c
		}
	}
	out := s.build(cur)
	st.Checks, st.Undecided = s.checks, s.undecided
	st.Minimal = !s.exhausted() && s.undecidedRound == 0
	st.Final, st.Crashes, st.Lines = len(out.Ops), len(out.Crashes), out.Events
	if len(cur) > 0 {
		call := h.Ops[cur[0]].Call // (cur is in order of invocation, as h.Ops)
		for _, c := range h.Crashes {
			if c.Pos < call {
				st.After = c.Line
			}
		}
	}
	st.Seconds = time.Since(start).Seconds()
	return out, st, ctx.Err()
}

// fails is the one statement of what still fails: no result of the
// candidate lost its source (lin.Orphans: a deq of a value whose enq was
// left out fails, but for a reason of the shrinking's making), and, the
// candidate built as build writes it (well formed, its crashes where its
// operations put them), the object shrunk is not linearizable in the
// mode, decided within the budget. Other objects may pass or fail.
func (s *objShrinker) fails(ops []int) bool {
	if len(ops) == 0 || lin.Orphans(s.h, ops, s.all) {
		return false
	}
	s.checks++
	res, err := lin.Check(s.ctx, s.build(ops), lin.Options{Mode: s.opts.Mode, Models: s.opts.Models,
		MaxStates: min(s.opts.MaxStates, max(1, s.maxStates-s.states)), NoShrink: true})
	if err != nil {
		return false
	}
	s.states += res.States
	for _, o := range res.Objects {
		if o.Name != s.object {
			continue
		}
		// Undecided beside another object's violation is the search of
		// objects that recoverable process order links blaming that one:
		// decided, but not the same failure. Otherwise the budget ran out.
		if o.Verdict == lin.Undecided && res.Verdict != lin.Violation {
			s.undecided++
			s.undecidedRound++
		}
		return o.Verdict == lin.Violation
	}
	return false
}

func (s *objShrinker) exhausted() bool {
	return s.checks >= s.opts.MaxChecks || s.states >= s.maxStates || s.ctx.Err() != nil
}

// try accepts cand, the operations left, if it still fails.
func (s *objShrinker) try(cand []int) bool { return !s.exhausted() && s.fails(cand) }

// without is ops less the operations drop says.
func without(ops []int, drop func(i int) bool) []int {
	var out []int
	for _, i := range ops {
		if !drop(i) {
			out = append(out, i)
		}
	}
	return out
}

// dropGroups tries leaving out each group of cur's operations that key
// gives the same key (in order of first appearance), one group at a time.
func (s *objShrinker) dropGroups(cur []int, key func(i int) int64) ([]int, bool) {
	var keys []int64
	for _, i := range cur {
		if k := key(i); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) <= 1 {
		return cur, false
	}
	changed := false
	for _, k := range keys {
		cand := without(cur, func(i int) bool { return key(i) == k })
		if len(cand) < len(cur) && s.try(cand) {
			cur, changed = cand, true
		}
	}
	return cur, changed
}

// dropObjects leaves out the other objects' operations: all at once, then
// object by object.
func (s *objShrinker) dropObjects(cur []int) ([]int, bool) {
	other := func(i int) bool { return s.h.Objects[s.h.Ops[i].Object].Name != s.object }
	if cand := without(cur, other); len(cand) < len(cur) && s.try(cand) {
		return cand, true
	}
	return s.dropGroups(cur, func(i int) int64 { return int64(s.h.Ops[i].Object) })
}

// dropPartitions leaves out each partition of an object whose model
// partitions its operations (a map's keys, a set's values): a whole key
// of a map at once.
func (s *objShrinker) dropPartitions(cur []int) ([]int, bool) {
	part := map[int]int64{}
	for obj, m := range s.models {
		if m.Partition == nil {
			continue
		}
		var idx []int
		var ops []*model.Op
		for _, i := range cur {
			if s.h.Ops[i].Object == obj {
				idx, ops = append(idx, i), append(ops, &s.h.Ops[i])
			}
		}
		for g, group := range m.Partition(ops) {
			for _, k := range group {
				part[idx[k]] = int64(obj)<<32 | int64(g)
			}
		}
	}
	if len(part) == 0 {
		return cur, false
	}
	return s.dropGroups(cur, func(i int) int64 {
		if g, ok := part[i]; ok {
			return g
		}
		return -1 - int64(s.h.Ops[i].Object) // (unpartitioned: the object whole)
	})
}

// makeModels makes the model of each object of h.
func makeModels(h *model.History, models func(string) model.Maker) ([]*model.Model, error) {
	if models == nil {
		models = model.Builtin
	}
	ms := make([]*model.Model, len(h.Objects))
	for k, o := range h.Objects {
		mk := models(o.Model)
		if mk == nil {
			return nil, fmt.Errorf("object %s: unknown model %q", o.Name, o.Model)
		}
		m, err := mk(o.Params)
		if err != nil {
			return nil, fmt.Errorf("object %s: %w", o.Name, err)
		}
		ms[k] = m
	}
	return ms, nil
}

// dropProcesses leaves out each process's operations.
func (s *objShrinker) dropProcesses(cur []int) ([]int, bool) {
	return s.dropGroups(cur, func(i int) int64 { return s.h.Ops[i].Proc })
}

// dropSections leaves out each crash section's operations: those invoked
// between two crashes (a recovery epoch), before the first or after the
// last.
func (s *objShrinker) dropSections(cur []int) ([]int, bool) {
	return s.dropGroups(cur, func(i int) int64 {
		call := s.h.Ops[i].Call
		n, _ := slices.BinarySearchFunc(s.h.Crashes, call, func(c model.Crash, pos int) int { return c.Pos - pos })
		return int64(n) // the crashes before it
	})
}

// dropChunks leaves out kept operations in chunks, halving the chunk
// size down to single operations (a complement-only ddmin, as the
// version 1 shrinker's).
func (s *objShrinker) dropChunks(cur []int) ([]int, bool) {
	changed := false
	for size := max(len(cur)/2, 1); ; size /= 2 {
		for start := 0; start < len(cur) && !s.exhausted(); {
			end := min(start+size, len(cur))
			cand := append(slices.Clone(cur[:start]), cur[end:]...)
			if s.try(cand) {
				cur, changed = cand, true
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

// build writes the operations ops of s.h (indices, ascending) as a
// history of their own: the objects they act on (in s.h's order), their
// events renumbered densely in s.h's order, and the crashes that lie
// between two of their events, one for each run of crashes with none of
// their events between (the first, the one that cut off what was
// pending). So every process's operations still alternate (the crash
// that cut an operation off lies before its process's next one) and an
// operation cut off by a crash is cut off by the same crash, or by the end
// when nothing kept follows it. The operations keep their lines in s.h.
func (s *objShrinker) build(ops []int) *model.History {
	h := &model.History{Name: s.h.Name}
	objIndex := map[int]int{}
	first, last := -1, -1
	for _, i := range ops {
		op := &s.h.Ops[i]
		if _, ok := objIndex[op.Object]; !ok {
			objIndex[op.Object] = -1
		}
		if first < 0 || op.Call < first {
			first = op.Call
		}
		last = max(last, op.Call, op.Return)
	}
	for k := range s.h.Objects {
		if _, ok := objIndex[k]; ok {
			objIndex[k] = len(h.Objects)
			h.Objects = append(h.Objects, s.h.Objects[k])
		}
	}
	// Events: +1+2i the call of ops[i], +2+2i its response, -1-c crash c.
	type event struct{ pos, ev int }
	var evs []event
	for k, i := range ops {
		op := &s.h.Ops[i]
		evs = append(evs, event{op.Call, 1 + 2*k})
		if op.Return >= 0 {
			evs = append(evs, event{op.Return, 2 + 2*k})
		}
	}
	for c, cr := range s.h.Crashes {
		if cr.Pos > first && cr.Pos < last {
			evs = append(evs, event{cr.Pos, -1 - c})
		}
	}
	slices.SortFunc(evs, func(a, b event) int { return a.pos - b.pos })
	h.Ops = make([]model.Op, len(ops))
	for k, i := range ops {
		h.Ops[k] = s.h.Ops[i]
		h.Ops[k].Object = objIndex[s.h.Ops[i].Object]
		h.Ops[k].Crash = -1
	}
	lastWasCrash := false
	for _, e := range evs {
		switch {
		case e.ev < 0 && lastWasCrash:
			continue // a run of crashes: the first stands for them
		case e.ev < 0:
			c := s.h.Crashes[-1-e.ev]
			h.Crashes = append(h.Crashes, model.Crash{Pos: h.Events, Line: c.Line})
		case e.ev%2 == 1:
			h.Ops[(e.ev-1)/2].Call = h.Events
		default:
			h.Ops[(e.ev-2)/2].Return = h.Events
		}
		lastWasCrash = e.ev < 0
		h.Events++
	}
	for k := range h.Ops {
		op := &h.Ops[k]
		if op.Status != model.CutOff {
			continue
		}
		for c, cr := range h.Crashes {
			if cr.Pos > op.Call {
				op.Crash = c
				break
			}
		}
	}
	return h
}

// WriteObjects writes a shrunk version 2 history (Objects) in text: the
// comment lines, then the history, each invocation and crash followed by
// "# line N", its line in the history it was shrunk from.
func WriteObjects(w io.Writer, h *model.History, comment []string) error {
	var buf bytes.Buffer
	if err := history.WriteV2(&buf, h, history.Text); err != nil {
		return err
	}
	orig := make([]int64, h.Events) // by position: the line of an invocation or a crash
	for _, op := range h.Ops {
		orig[op.Call] = op.Line
	}
	for _, c := range h.Crashes {
		orig[c.Pos] = c.Line
	}
	var out strings.Builder
	for _, c := range comment {
		out.WriteString("# " + strings.ReplaceAll(c, "\n", " ") + "\n")
	}
	// WriteV2 writes the header, a line per object, then a line per event.
	for n, l := range strings.SplitAfter(buf.String(), "\n") {
		pos := n - 1 - len(h.Objects)
		if t := strings.TrimSuffix(l, "\n"); pos >= 0 && pos < len(orig) && orig[pos] > 0 {
			l = fmt.Sprintf("%-48s # line %d\n", t, orig[pos])
		}
		out.WriteString(l)
	}
	_, err := io.WriteString(w, out.String())
	return err
}
