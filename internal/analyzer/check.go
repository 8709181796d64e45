package analyzer

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
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
	// Origin, if set, gives for a line of this history the line it had in
	// the history it was cut from (a shrunk history names them in
	// comments), or 0: anomalies name those lines too (OriginalOps).
	Origin func(line int64) int64
	// Names, if set, names the events in explanations and errors (the
	// Go API: by the caller's indexes); nil: by their lines.
	Names Namer
	// Workers bounds the goroutines that decode the input and run the
	// phases that split (default GOMAXPROCS; 1: none besides the
	// caller's). The result does not depend on it.
	Workers int
	// MaxMemory, if positive, bounds the memory of the check, in bytes: a
	// history whose size (SizeHint) says it needs more is refused before it
	// is read, and one that turns out to need more is stopped while it is
	// read, both with a *MemoryError. MemorySource says where the bound
	// comes from, for the error.
	MaxMemory    int64
	MemorySource string
	// Recycle, if set, is an earlier analysis the caller no longer uses
	// (neither it nor its graph): this one fills its arrays again instead
	// of making new ones, which a fuzzer checking thousands of small
	// histories would otherwise make and clear for each.
	Recycle *Analysis
	// partSize, when positive, replaces minPart (tests: WithPartSize).
	partSize int
}

// workers is the number of goroutines the options allow.
func (o *Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// splitter is how the phases that split spread over the workers.
func (o *Options) splitter() splitter {
	s := splitter{workers: o.workers(), least: minPart, prefaultFrom: prefaultBytes}
	if o.partSize > 0 {
		s.least, s.prefaultFrom = o.partSize, 0
	}
	return s
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
	// A bytes.Reader, which cannot grow, lets the Reader size its buffers
	// to the history (see history.NewReader).
	return Check(ctx, history.NewReader(bytes.NewReader(buf.Bytes()), "<history>", history.Options{}), opts)
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
	if opts.MemorySource == "" {
		opts.MemorySource = "Options.MaxMemory"
	}
	var old *hist
	if a := opts.Recycle; a != nil && a.e != nil {
		old = a.e.h
	}
	guard := newMemoryGuard(opts.MaxMemory, opts.MemorySource, opts.SizeHint)
	h, err := load(ctx, r, opts.SizeHint, opts.splitter(), guard, old, namerOr(opts.Names))
	if err != nil {
		return nil, err
	}
	// The evaluation's arrays: a path successor per word, two bits per
	// access, three per operation.
	if err := guard.room(h, "evaluate its graph", 4*int64(len(h.addr))+int64(len(h.word))/4+int64(h.n)*3/8); err != nil {
		return nil, err
	}
	e := newEval(h, opts.Mode, opts.splitter())
	e.guard = guard
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
		if !ok && s.undecided == nil {
			i := e.h.firstNoAux()
			return nil, &AssumptionError{File: h.name, Line: int64(h.line[i]), Assumption: 2,
				Msg: fmt.Sprintf("this cas failed at address %d expecting a value no operation had returned before it was invoked, and the history is linearizable only if that failure can be explained otherwise (pmlin check --exact decides small histories without the assumption)", h.addr[h.wordOf(h.blamedAccess(i))])}
		}
	}
	if !ok && s.undecided != nil {
		// Some completions or orders were not tried: never a guess. (A
		// pass, found before the budget ran out, is a proof.)
		return nil, s.undecided
	}
	if !ok && s.evals > 1 {
		// Report on the evaluation with the forced completions only, in
		// the default order: the others tried did not help.
		e.rank = nil
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
	result.Vertices, result.Dropped = e.countEffective()
	result.Vertices++ // genesis
	x := newExplainer(e, opts.Origin)
	if !ok {
		if err := x.anomalies(ctx, result, opts.MaxAnomalies); err != nil {
			return nil, err
		}
	}
	return &Analysis{Result: result, e: e, x: x}, nil
}

// countEffective counts the operations in the graph and those left out,
// on the split's goroutines (a pass over every operation, which done
// serially kept the other cores idle at the end of every check).
func (e *eval) countEffective() (in, out int64) {
	n := int(e.h.n)
	counts := make([]int64, e.split.parts(n))
	e.split.run(n, func(k, lo, hi int) {
		c := int64(0)
		for i := int32(lo); i < int32(hi); i++ {
			if e.effective(i) {
				c++
			}
		}
		counts[k] = c
	})
	for _, c := range counts {
		in += c
	}
	return in, int64(n) - in
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
