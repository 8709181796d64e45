package lin

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/model"
)

// Verdict is the answer about a history or an object.
type Verdict uint8

const (
	Linearizable Verdict = iota
	Violation
	// Undecided: the search stopped (budget, memory bound) before an
	// answer; Reason says why. Never a guess.
	Undecided
)

var verdictNames = [...]string{"linearizable", "violation", "undecided"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// MarshalText writes the verdict's name, for JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// DefaultMaxStates is the state budget of one search when
// Options.MaxStates is 0: at about a million states a second, seconds.
const DefaultMaxStates = 5_000_000

// DefaultMaxMemory is the memory bound when Options.MaxMemory is 0.
const DefaultMaxMemory = 2 << 30

// Options tunes a check. The zero value checks in strict mode with the
// built-in models and the default bounds.
type Options struct {
	Mode history.Mode
	// Models finds the maker of a model by name; nil: model.Builtin. A
	// user's own models go here (wrap model.Builtin to keep the built-in
	// ones).
	Models func(name string) model.Maker
	// MaxStates bounds the states (configurations) one search explores
	// (one object, or one partition of it); beyond it the object is
	// undecided. 0: DefaultMaxStates.
	MaxStates int64
	// MaxMemory bounds the memory (bytes) the memos of all the searches
	// running at once hold; beyond it they are undecided. 0:
	// DefaultMaxMemory; negative: no bound.
	MaxMemory int64
	// Progress, if not nil, is called every ProgressEvery (default one
	// second) while the check runs, from one goroutine at a time.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// NoShrink skips the shrinking of a violation's operations: the
	// explanation then names every operation of the failing partition.
	NoShrink bool
}

func (o *Options) maxStates() int64 {
	if o.MaxStates > 0 {
		return o.MaxStates
	}
	return DefaultMaxStates
}

// Progress is how far a check has come.
type Progress struct {
	States     int64 // explored so far, by every search
	Parts      int   // searches in all (objects and their partitions)
	PartsDone  int
	MemoryUsed int64 // bytes held by the memos of the running searches
}

// Result is the answer about a history.
type Result struct {
	// Verdict: Violation if some object's operations are not linearizable;
	// else Undecided if some object's search stopped; else Linearizable.
	Verdict Verdict        `json:"verdict"`
	Mode    history.Mode   `json:"mode"`
	Objects []ObjectResult `json:"objects"`
	States  int64          `json:"states"` // explored, by every search
}

// ObjectResult is the answer about one object.
type ObjectResult struct {
	Object  int     `json:"-"` // index in History.Objects
	Name    string  `json:"name"`
	Model   string  `json:"model"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason,omitempty"` // why Undecided
	Ops     int     `json:"ops"`
	Parts   int     `json:"partitions"` // searched separately
	// Explanation is the witness of a Violation.
	Explanation *Explanation `json:"explanation,omitempty"`
}

// Check decides whether h is linearizable (docs/history-format.md, version
// 2) in opt.Mode, object by object. An error is an input error (an
// unknown model, a bad parameter, an operation its model does not have),
// naming the file and line, or ctx's error when ctx ends first.
func Check(ctx context.Context, h *model.History, opt Options) (*Result, error) {
	parts, res, err := compile(h, &opt)
	if err != nil {
		return nil, err
	}
	sh := &shared{maxMemory: opt.MaxMemory}
	if sh.maxMemory == 0 {
		sh.maxMemory = DefaultMaxMemory
	}
	bounds := make([]int, len(h.Ops))
	next := nextCalls(h)
	for i := range h.Ops {
		bounds[i], _ = window(h, &h.Ops[i], opt.Mode, next[i])
	}
	outs := runParts(ctx, h, parts, bounds, &opt, sh)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Mode = opt.Mode
	res.States = sh.states.Load()
	for k, p := range parts {
		o := &res.Objects[p.obj]
		out := &outs[k]
		switch {
		case out.verdict == Violation && o.Verdict != Violation:
			o.Verdict = Violation
			o.Explanation = explain(ctx, h, p, bounds, &opt, out)
		case out.verdict == Undecided && o.Verdict == Linearizable:
			o.Verdict, o.Reason = Undecided, out.reason
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, o := range res.Objects {
		if o.Verdict == Violation || (o.Verdict == Undecided && res.Verdict == Linearizable) {
			res.Verdict = o.Verdict
		}
	}
	return res, nil
}

// compile makes each object's model, validates each operation, and splits
// each object's operations into the parts to search.
func compile(h *model.History, opt *Options) ([]*part, *Result, error) {
	find := opt.Models
	if find == nil {
		find = model.Builtin
	}
	res := &Result{Objects: make([]ObjectResult, len(h.Objects))}
	models := make([]*model.Model, len(h.Objects))
	for k, obj := range h.Objects {
		where := fmt.Sprintf("object %s", obj.Name)
		if obj.Line > 0 {
			where = lineOf(h, obj.Line) + ": " + where
		}
		mk := find(obj.Model)
		if mk == nil {
			return nil, nil, fmt.Errorf("%s: unknown model %q", where, obj.Model)
		}
		m, err := mk(obj.Params)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		if m == nil || m.Init == nil || m.Step == nil || m.Key == nil || m.Validate == nil {
			return nil, nil, fmt.Errorf("%s: model %s lacks Init, Step, Key or Validate", where, obj.Model)
		}
		models[k] = m
		res.Objects[k] = ObjectResult{Object: k, Name: obj.Name, Model: obj.Model}
	}
	byObj := make([][]int, len(h.Objects))
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Object < 0 || op.Object >= len(h.Objects) {
			return nil, nil, fmt.Errorf("%s: operation on object %d, which is not declared", h.Where(i), op.Object)
		}
		if op.Status == model.Returned && op.Return <= op.Call {
			return nil, nil, fmt.Errorf("%s: operation's positions are inconsistent (call %d, return %d)", h.Where(i), op.Call, op.Return)
		}
		if op.Status == model.CutOff && op.Crash >= len(h.Crashes) {
			return nil, nil, fmt.Errorf("%s: cut off by crash %d, which is not in the history", h.Where(i), op.Crash)
		}
		if i > 0 && h.Ops[i-1].Call >= op.Call {
			return nil, nil, fmt.Errorf("%s: operations are not in order of invocation", h.Where(i))
		}
		if err := models[op.Object].Validate(op); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", h.Where(i), err)
		}
		byObj[op.Object] = append(byObj[op.Object], i)
	}
	var parts []*part
	for k, ops := range byObj {
		res.Objects[k].Ops = len(ops)
		if len(ops) == 0 {
			continue
		}
		m := models[k]
		groups := [][]int{ops}
		if m.Partition != nil {
			ptrs := make([]*model.Op, len(ops))
			for j, i := range ops {
				ptrs[j] = &h.Ops[i]
			}
			local := m.Partition(ptrs)
			seen := make([]bool, len(ops))
			groups = groups[:0]
			for _, g := range local {
				if len(g) == 0 {
					continue
				}
				abs := make([]int, len(g))
				for x, j := range g {
					if j < 0 || j >= len(ops) || seen[j] {
						return nil, nil, fmt.Errorf("object %s: model %s's partition is not a partition of its operations", h.Objects[k].Name, h.Objects[k].Model)
					}
					seen[j] = true
					abs[x] = ops[j]
				}
				groups = append(groups, sortedInts(abs))
			}
			for _, s := range seen {
				if !s {
					return nil, nil, fmt.Errorf("object %s: model %s's partition leaves operations out", h.Objects[k].Name, h.Objects[k].Model)
				}
			}
		}
		res.Objects[k].Parts = len(groups)
		for _, g := range groups {
			label := fmt.Sprintf("object %s", h.Objects[k].Name)
			if len(groups) > 1 {
				label += fmt.Sprintf(" (the partition of %d operations from %s)", len(g), h.Where(g[0]))
			}
			parts = append(parts, &part{obj: k, m: m, ops: g, label: label})
		}
	}
	return parts, res, nil
}

func lineOf(h *model.History, line int64) string {
	if h.Name == "" {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("%s:%d", h.Name, line)
}

func sortedInts(s []int) []int {
	slices.Sort(s)
	return s
}

// runParts searches the parts on GOMAXPROCS goroutines, largest first so
// that a long one starts early.
func runParts(ctx context.Context, h *model.History, parts []*part, bounds []int, opt *Options, sh *shared) []outcome {
	outs := make([]outcome, len(parts))
	order := make([]int, len(parts))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(parts[b].ops) - len(parts[a].ops) })
	var done sync.WaitGroup
	var finished int64
	var mu sync.Mutex
	stop, stopped := make(chan struct{}), make(chan struct{})
	if opt.Progress == nil {
		close(stopped)
	} else {
		every := opt.ProgressEvery
		if every <= 0 {
			every = time.Second
		}
		go func() {
			defer close(stopped)
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					mu.Lock()
					f := finished
					mu.Unlock()
					opt.Progress(Progress{States: sh.states.Load(), Parts: len(parts), PartsDone: int(f), MemoryUsed: sh.memory.Load()})
				}
			}
		}()
	}
	work := make(chan int)
	for range max(1, min(runtime.GOMAXPROCS(0), len(parts))) {
		done.Add(1)
		go func() {
			defer done.Done()
			for k := range work {
				outs[k] = search(ctx, h, parts[k], bounds, opt, sh)
				mu.Lock()
				finished++
				mu.Unlock()
			}
		}()
	}
	for _, k := range order {
		if ctx.Err() != nil {
			break
		}
		work <- k
	}
	close(work)
	done.Wait()
	close(stop)
	<-stopped // no call of Progress after Check returns
	return outs
}
