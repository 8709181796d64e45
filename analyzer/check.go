package analyzer

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/history"
)

// Options tune Check. The zero value checks in strict mode.
type Options struct {
	Mode history.Mode
	// MaxAnomalies bounds the anomalies listed per kind (default 20); the
	// rest are counted in Result.Omitted.
	MaxAnomalies int
	// SizeHint is the input's size in bytes, if known, to size arrays once.
	SizeHint int64
	// MaxEvaluations bounds the completions of crashed operations tried
	// when failures need one (default: scaled to the history's size).
	MaxEvaluations int
	// Phase, if set, is told when each phase after reading starts
	// ("checking", "explaining"), for progress displays.
	Phase func(name string)
	// Origin, if set, gives for a line of this history the line it had in
	// the history it was cut from (a shrunk history names them in
	// comments), or 0: anomalies name those lines too (OriginalOps).
	Origin func(line int64) int64
}

// Check decides the linearizability of the history r streams. It returns
// a *history.Error for malformed input, an *AssumptionError or
// *UndecidedError when the method cannot decide, or ctx's error.
func Check(ctx context.Context, r *history.Reader, opts Options) (*Result, error) {
	a, err := Analyze(ctx, r, opts)
	if err != nil {
		return nil, err
	}
	return a.Result, nil
}

// CheckHistory checks an in-memory history (for tests and small tools): it
// is written in text format and streamed through Check, so line numbers in
// the result refer to that text.
func CheckHistory(ctx context.Context, h *history.History, opts Options) (*Result, error) {
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		return nil, err
	}
	return Check(ctx, history.NewReader(&buf, "<history>", history.Options{}), opts)
}

// Analysis is a verdict together with the graph it was reached on, for
// explanations and exports.
type Analysis struct {
	Result *Result
	e      *eval
	x      *explainer
}

// Analyze is Check, keeping the graph: Analysis.Graph exposes it.
func Analyze(ctx context.Context, r *history.Reader, opts Options) (*Analysis, error) {
	if opts.MaxAnomalies <= 0 {
		opts.MaxAnomalies = 20
	}
	h, err := load(ctx, r, opts.SizeHint)
	if err != nil {
		return nil, err
	}
	phase := func(name string) {
		if opts.Phase != nil {
			opts.Phase(name)
		}
	}
	phase("checking")
	e := newEval(h, opts.Mode)
	budget := opts.MaxEvaluations
	if budget <= 0 {
		// Each evaluation is a few passes over the arrays: allow about
		// 5·10^7 array elements of work in all, between 8 and 4096 tries.
		budget = int(5e7 / (int64(len(h.word)) + int64(h.n) + 1))
		budget = max(8, min(budget, 4096))
	}
	s := &searcher{e: e, budget: budget, tried: map[string]bool{}}
	ok, err := s.find(ctx, nil)
	if err != nil {
		return nil, err
	}
	if ok && e.hasNoAux() {
		// The constraints of failed cas that break Assumption 2 were left
		// out, so passing proves nothing yet. Put them back: they are
		// sufficient (a linearization that obeys them explains the
		// failures), though not necessary.
		e.assumeFail = true
		s.tried = map[string]bool{}
		ok, err = s.find(ctx, nil)
		if err != nil {
			return nil, err
		}
		if !ok {
			i := e.h.firstNoAux()
			return nil, &AssumptionError{File: h.name, Line: int64(h.line[i]), Assumption: 2,
				Msg: fmt.Sprintf("this cas failed at address %d expecting a value no operation had returned before it was invoked, and the history is linearizable only if that failure can be explained otherwise (pmlin check --exact decides small histories without the assumption)", h.addr[h.wordOf(h.blamedAccess(i))])}
		}
	}
	if s.undecided != nil {
		return nil, s.undecided
	}
	if !ok && s.lastKey != "" {
		// Report on the evaluation with the forced completions only: the
		// extra completions tried did not help.
		if _, err := e.run(ctx, nil); err != nil {
			return nil, err
		}
	}
	result := &Result{Linearizable: ok, Mode: opts.Mode, Operations: int64(h.n), Stats: Stats{
		Processes: len(h.procIDs),
		Crashes:   h.crashes,
		Words:     len(h.addr),
		Edges:     e.edges,
		Completed: e.completed,
	}}
	for i := int32(0); i < h.n; i++ {
		if e.effective(i) {
			result.Vertices++
		} else {
			result.Dropped++
		}
	}
	result.Vertices++ // genesis
	x := newExplainer(e, opts.Origin)
	if !ok {
		phase("explaining")
		if err := x.anomalies(ctx, result, opts.MaxAnomalies); err != nil {
			return nil, err
		}
	}
	return &Analysis{Result: result, e: e, x: x}, nil
}

func (e *eval) hasNoAux() bool { return e.h.firstNoAux() != none }

func (h *hist) firstNoAux() int32 {
	for _, i := range h.failedCAS {
		if h.flags[i]&fNoAux != 0 {
			return i
		}
	}
	return none
}

// searcher looks for completions of crashed cas that explain failures.
//
// Completing a pending cas only adds constraints, except that its write can
// explain a failed cas (a pending cas nobody observed is last on each of
// its words' paths, so its only use is to have replaced a value some failed
// cas expected). Any successful completion must explain the first
// unexplained failure with some pending cas that expected the same version
// at that word, so branching on those candidates is exhaustive; cycles,
// forks and dangling or unreachable writes never go away by completing
// more, so they prune.
type searcher struct {
	e         *eval
	budget    int
	tried     map[string]bool
	undecided error
	lastKey   string // the completions of the last evaluation run
}

func (s *searcher) find(ctx context.Context, extra []int32) (bool, error) {
	key := setKey(extra)
	if s.tried[key] {
		return false, nil
	}
	s.tried[key] = true
	if s.budget <= 0 {
		if s.undecided == nil {
			h := s.e.h
			x := s.e.unexplainFirst()
			line := int64(0)
			if x != none {
				line = int64(h.line[h.accOp[x]])
			}
			s.undecided = &UndecidedError{File: h.name, Line: line,
				Msg: "too many ways to complete the crashed cas operations that could explain this failure; pmlin check --exact decides small histories"}
		}
		return false, nil
	}
	s.budget--
	s.lastKey = key
	e := s.e
	ok, err := e.run(ctx, extra)
	if err != nil || ok {
		return ok, err
	}
	if e.cyclic || len(e.forks) > 0 || len(e.unreach) > 0 || e.danglingCount() > 0 || len(e.unexplain) == 0 {
		return false, nil
	}
	h := e.h
	x := e.unexplain[0]
	w, y := h.wordOf(x), h.ver[x]
	var cands []int32
	for _, c := range h.pendingCAS {
		if h.flags[c]&fCompleted != 0 || slices.Contains(extra, c) {
			continue
		}
		for z := int32(h.acc[c]); z < int32(h.acc[c+1]); z++ {
			if h.wordOf(z) == w && h.ver[z] == y {
				cands = append(cands, c)
				break
			}
		}
	}
	for _, c := range cands {
		next := append(slices.Clone(extra), c)
		slices.Sort(next)
		ok, err := s.find(ctx, next)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func (e *eval) unexplainFirst() int32 {
	if len(e.unexplain) > 0 {
		return e.unexplain[0]
	}
	return none
}

func setKey(ops []int32) string {
	var b strings.Builder
	for _, o := range ops {
		fmt.Fprintf(&b, "%d,", o)
	}
	return b.String()
}
