package lin

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
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
	// Engine forces an engine (tests, benchmarks): EngineQueue or
	// EngineUnique, that engine alone where it applies (the search where
	// it does not, or where it gives up); EngineExact, the search for
	// every object, as Generic. "": where a fast engine applies, it and
	// the search run at once and the first answer is taken (race).
	Engine string
	// headStart, if positive, replaces raceHeadStart (tests).
	headStart time.Duration
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
	// Generic: every object by the generic search, even where a faster
	// engine applies, and with every operation (no optional insert left
	// out up front, unobserved.go): for comparisons.
	Generic bool
	// Names, if not nil, names the history's operations and crashes in
	// every sentence and error (by the lines they have in the history);
	// nil: by those lines, as the file read has them (names.go).
	Names analyzer.Namer
}

// raceStart is the fast engine's head start on ops operations.
func (o *Options) raceStart(ops int) time.Duration {
	if o.headStart > 0 {
		return o.headStart
	}
	return raceHeadStart(ops)
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
	// Engine answered: EngineExact, EngineQueue or EngineUnique when that
	// one decided every part, else EngineMixed.
	Engine string `json:"engine"`
	// Explanation is the witness of a Violation.
	Explanation *Explanation `json:"explanation,omitempty"`
	// Stuck, for a synchronisation object (EngineSync) that is
	// linearizable, are its failures of progressibility (sync.go).
	Stuck []Stuck `json:"stuck,omitempty"`
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
	syncs, twoStep, err := syncObjects(h, &opt)
	if err != nil {
		return nil, err
	}
	if twoStep {
		// Recoverable process order through a synchronisation object:
		// the two-step form (twostep.go).
		return checkTwoStep(ctx, h, opt)
	}
	sh := &shared{maxMemory: opt.MaxMemory}
	if sh.maxMemory == 0 {
		sh.maxMemory = DefaultMaxMemory
	}
	bounds := make([]int, len(h.Ops))
	for i := range h.Ops {
		bounds[i], _ = window(h, &h.Ops[i], opt.Mode)
	}
	units := uniqueUnits(h, parts, &opt)
	outs := runParts(ctx, h, parts, units, bounds, &opt, sh)
	for _, so := range syncs {
		checkSync(ctx, h, so.ops, so.m, bounds, &opt, &res.Objects[so.obj])
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Mode = opt.Mode
	res.States = sh.states.Load()
	for k, p := range parts {
		out := &outs[k]
		for _, obj := range p.objs {
			// The object's engine: its parts', or mixed.
			switch o := &res.Objects[obj]; {
			case out.engine == "": // a part not decided
			case o.Engine == "":
				o.Engine = out.engine
			case o.Engine != out.engine:
				o.Engine = EngineMixed
			}
		}
		switch out.verdict {
		case Violation:
			// A part of several objects (joined by process order) blames
			// the object of the operation that could not take effect.
			o := &res.Objects[h.Ops[out.failing].Object]
			if o.Verdict != Violation {
				o.Verdict, o.Reason = Violation, "" // its other parts may have been stopped
				switch {
				case out.queue != nil:
					o.Explanation = explainQueue(ctx, h, p, bounds, &opt, sh, out.queue)
				case out.unique != nil:
					o.Explanation = explainUnique(ctx, h, p, bounds, &opt, sh, out.unique)
				default:
					o.Explanation = explain(ctx, h, p, bounds, &opt, out)
				}
			}
		case Undecided:
			for _, obj := range p.objs {
				if o := &res.Objects[obj]; o.Verdict == Linearizable {
					o.Verdict, o.Reason = Undecided, out.reason
				}
			}
		}
	}
	// The other objects of a violating part joined by process order have
	// no answer of their own: searched alone, each might be explained.
	for k, p := range parts {
		if outs[k].verdict != Violation {
			continue
		}
		blamed := &h.Objects[h.Ops[outs[k].failing].Object]
		for _, obj := range p.objs {
			if o := &res.Objects[obj]; o.Verdict == Linearizable {
				o.Verdict = Undecided
				o.Reason = fmt.Sprintf("searched with object %s, which is not linearizable, because recoverable process order links them", blamed.Name)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for k := range res.Objects {
		o := &res.Objects[k]
		if o.Engine == "" { // no operations
			o.Engine = EngineExact
		}
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
		where := opt.objectWhere(h, k)
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
		if len(m.Init()) == 0 {
			return nil, nil, fmt.Errorf("%s: model %s has no initial state", where, obj.Model)
		}
		models[k] = m
		res.Objects[k] = ObjectResult{Object: k, Name: obj.Name, Model: obj.Model}
	}
	byObj := make([][]int, len(h.Objects))
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Object < 0 || op.Object >= len(h.Objects) {
			return nil, nil, opt.opError(h, i, fmt.Errorf("operation on object %d, which is not declared", op.Object))
		}
		if op.Status == model.Returned && op.Return <= op.Call {
			return nil, nil, opt.opError(h, i, fmt.Errorf("operation's positions are inconsistent (call %d, return %d)", op.Call, op.Return))
		}
		if op.Status == model.CutOff && op.Crash >= len(h.Crashes) {
			return nil, nil, opt.opError(h, i, fmt.Errorf("cut off by crash %d, which is not in the history", op.Crash))
		}
		if i > 0 && h.Ops[i-1].Call >= op.Call {
			return nil, nil, opt.opError(h, i, fmt.Errorf("operations are not in order of invocation"))
		}
		if err := models[op.Object].Validate(op); err != nil {
			return nil, nil, opt.opError(h, i, err)
		}
		byObj[op.Object] = append(byObj[op.Object], i)
	}
	var groups []group
	for k, ops := range byObj {
		res.Objects[k].Ops = len(ops)
		if len(ops) == 0 || models[k].Sync != nil { // matched, not searched (sync.go)
			continue
		}
		if opt.Models == nil && !opt.Generic {
			ops = unobserved(h, &h.Objects[k], ops) // (built-in models only)
		}
		m := models[k]
		gs := [][]int{ops}
		if m.Partition != nil {
			ptrs := make([]*model.Op, len(ops))
			for j, i := range ops {
				ptrs[j] = &h.Ops[i]
			}
			local := m.Partition(ptrs)
			seen := make([]bool, len(ops))
			gs = gs[:0]
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
				gs = append(gs, sortedInts(abs))
			}
			for _, s := range seen {
				if !s {
					return nil, nil, fmt.Errorf("object %s: model %s's partition leaves operations out", h.Objects[k].Name, h.Objects[k].Model)
				}
			}
		}
		res.Objects[k].Parts = len(gs)
		for _, g := range gs {
			label := fmt.Sprintf("object %s", h.Objects[k].Name)
			if len(gs) > 1 {
				label += fmt.Sprintf(" (the partition of %d operations from %s)", len(g), opt.where(h, g[0]))
			}
			groups = append(groups, group{obj: k, m: m, ops: g, label: label})
		}
	}
	return join(h, groups, opt.Mode), res, nil
}

// group is the operations of one object, or of one partition of it, that
// can be searched alone but for process order.
type group struct {
	obj   int
	m     *model.Model
	ops   []int
	label string
}

// join makes the parts to search from the groups. In recoverable mode, an
// operation cut off by a crash must precede its process's next operations
// (processOrder), which may belong to other groups: such groups are
// searched together, as one part whose state is the tuple of theirs.
// Searching them apart would let each group place the cut-off operation
// at a time that suits it alone.
func join(h *model.History, groups []group, mode history.Mode) []*part {
	root := make([]int, len(groups))
	for g := range root {
		root[g] = g
	}
	find := func(g int) int {
		for root[g] != g {
			root[g] = root[root[g]]
			g = root[g]
		}
		return g
	}
	if mode.ProcessOrder() {
		groupOf := make([]int, len(h.Ops))
		for i := range groupOf {
			groupOf[i] = -1 // an operation of a synchronisation object (twostep.go)
		}
		for g, gr := range groups {
			for _, i := range gr.ops {
				groupOf[i] = g
			}
		}
		all := make([]int, len(h.Ops))
		for i := range all {
			all[i] = i
		}
		for x, chain := range processOrder(h, all, nil) {
			for _, y := range chain {
				if groupOf[x] >= 0 && groupOf[y] >= 0 {
					root[find(groupOf[x])] = find(groupOf[y])
				}
			}
		}
	}
	members := map[int][]int{}
	var roots []int
	for g := range groups {
		r := find(g)
		if _, ok := members[r]; !ok {
			roots = append(roots, r)
		}
		members[r] = append(members[r], g)
	}
	parts := make([]*part, 0, len(roots))
	for _, r := range roots {
		gs := members[r]
		if len(gs) == 1 {
			g := &groups[gs[0]]
			parts = append(parts, &part{obj: g.obj, objs: []int{g.obj}, m: g.m, ops: g.ops, label: g.label})
			continue
		}
		p := &part{obj: groups[gs[0]].obj}
		var labels []string
		for _, g := range gs {
			p.ops = append(p.ops, groups[g].ops...)
			labels = append(labels, groups[g].label)
			if !slices.Contains(p.objs, groups[g].obj) {
				p.objs = append(p.objs, groups[g].obj)
			}
		}
		slices.Sort(p.ops)
		p.m = product(h, groups, gs)
		p.label = strings.Join(labels, " with ") + ", joined by process order"
		parts = append(parts, p)
	}
	return parts
}

// product is the model of several groups searched as one: a state is the
// tuple of the groups' states, and an operation steps its own group's.
func product(h *model.History, groups []group, gs []int) *model.Model {
	comp := map[*model.Op]int{}
	for c, g := range gs {
		for _, i := range groups[g].ops {
			comp[&h.Ops[i]] = c
		}
	}
	return &model.Model{
		Init: func() []any {
			tuples := []any{[]any{}}
			for _, g := range gs {
				var next []any
				for _, t := range tuples {
					for _, s := range groups[g].m.Init() {
						next = append(next, append(slices.Clip(t.([]any)), s))
					}
				}
				tuples = next
			}
			return tuples
		},
		Step: func(s any, op *model.Op) []any {
			t := s.([]any)
			c := comp[op]
			var out []any
			for _, n := range groups[gs[c]].m.Step(t[c], op) {
				u := slices.Clone(t)
				u[c] = n
				out = append(out, u)
			}
			return out
		},
		// Key: each group's key behind its length, so that no two tuples
		// share one.
		Key: func(s any) string {
			var b []byte
			for c, x := range s.([]any) {
				k := groups[gs[c]].m.Key(x)
				b = binary.AppendUvarint(b, uint64(len(k)))
				b = append(b, k...)
			}
			return string(b)
		},
		Validate: func(op *model.Op) error { return groups[gs[comp[op]]].m.Validate(op) },
		ReadOnly: func(op *model.Op) bool {
			m := groups[gs[comp[op]]].m
			return m.ReadOnly != nil && m.ReadOnly(op)
		},
		Expect: func(s any, op *model.Op) []model.Value {
			c := comp[op]
			if m := groups[gs[c]].m; m.Expect != nil {
				return m.Expect(s.([]any)[c], op)
			}
			return nil
		},
		Describe: func(s any) string {
			var parts []string
			for c, x := range s.([]any) {
				parts = append(parts, fmt.Sprintf("%s: %s", groups[gs[c]].label, describe(groups[gs[c]].m, x)))
			}
			return strings.Join(parts, "; ")
		},
	}
}

func sortedInts(s []int) []int {
	slices.Sort(s)
	return s
}

// runParts searches the parts on GOMAXPROCS goroutines, largest first so
// that a long one starts early.
//
// An object the unique-value engine may decide (units) is one job, that
// decides all its parts (decideUnit); job len(parts)+u is units[u].
func runParts(ctx context.Context, h *model.History, parts []*part, units []unit, bounds []int, opt *Options, sh *shared) []outcome {
	outs := make([]outcome, len(parts))
	inUnit := make([]bool, len(parts))
	size := make([]int, len(parts)+len(units))
	order := make([]int, 0, len(size))
	for u, un := range units {
		for _, k := range un.parts {
			inUnit[k] = true
		}
		size[len(parts)+u] = len(un.ops)
		order = append(order, len(parts)+u)
	}
	for k := range parts {
		size[k] = len(parts[k].ops)
		if !inUnit[k] {
			order = append(order, k)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return size[b] - size[a] })
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
	// Once a part of an object is a violation, the object's verdict cannot
	// change: its other parts (those of that object alone) stop.
	objCtx := make([]context.Context, len(h.Objects))
	objStop := make([]context.CancelFunc, len(h.Objects))
	for o := range objCtx {
		objCtx[o], objStop[o] = context.WithCancel(ctx)
		defer objStop[o]()
	}
	work := make(chan int)
	for range max(1, min(runtime.GOMAXPROCS(0), len(parts))) {
		done.Add(1)
		go func() {
			defer done.Done()
			for k := range work {
				if k >= len(parts) {
					un := &units[k-len(parts)]
					decideUnit(objCtx[un.obj], h, parts, un, bounds, opt, sh, outs)
					for _, k := range un.parts {
						if outs[k].verdict == Violation {
							objStop[un.obj]() // its parts left to the search stop
						}
					}
					mu.Lock()
					finished += int64(len(un.parts))
					mu.Unlock()
					continue
				}
				pctx := ctx
				if p := parts[k]; len(p.objs) == 1 {
					pctx = objCtx[p.objs[0]]
				}
				if pctx.Err() != nil {
					outs[k] = outcome{verdict: Undecided, reason: "cancelled", failing: -1}
				} else {
					outs[k] = decideFast(pctx, h, parts[k], bounds, opt, sh)
				}
				if outs[k].verdict == Violation {
					objStop[h.Ops[outs[k].failing].Object]()
				}
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

// decideFast decides a part by the queue engine where it applies, in a
// race with the generic search unless opt.Engine forces one, else by the
// generic search.
func decideFast(ctx context.Context, h *model.History, p *part, bounds []int, opt *Options, sh *shared) outcome {
	exact := func(ctx context.Context) (outcome, bool) {
		out := decide(ctx, h, p, bounds, opt, sh)
		out.engine = EngineExact
		return out, out.verdict != Undecided
	}
	if !queueApplies(h, p, opt) {
		out, _ := exact(ctx)
		return out
	}
	queue := func(ctx context.Context) (outcome, bool) {
		// The budget: the steps of the branch-free run, many times over.
		q := decideQueue(ctx, h, p, 16*int64(len(p.ops))+1<<20)
		return outcome{verdict: q.verdict, failing: q.failing, queue: &q, engine: EngineQueue}, q.ok
	}
	if opt.Engine == EngineQueue {
		if out, ok := queue(ctx); ok {
			return out
		}
		out, _ := exact(ctx)
		return out
	}
	return race(ctx, opt.raceStart(len(p.ops)), queue, exact)
}

// race runs the engines in competition, as Lowe's tester runs two
// algorithms ("Testing for linearizability"), and returns the first
// answer one of them gives, cancelling the others; it returns once every
// engine it started has returned, so that none outlives the check. The
// first engine (the fast one) has a head start (raceHeadStart): the
// others start then, or as soon as it gives up. An
// engine returns ok false when it gives up; if every one does, the last
// engine's outcome (the exact search's, with its reason) is the answer.
func race(ctx context.Context, headStart time.Duration, engines ...func(context.Context) (outcome, bool)) outcome {
	many := make([]func(context.Context) ([]outcome, bool), len(engines))
	for k, e := range engines {
		many[k] = func(ctx context.Context) ([]outcome, bool) {
			out, ok := e(ctx)
			return []outcome{out}, ok
		}
	}
	return raceParts(ctx, headStart, many...)[0]
}

// raceHeadStart is the fast engine's head start in a race on ops
// operations: 20 ms and 1 µs per operation, about what the fast engines
// take on a busy core. What the fast engine answers within it costs the
// other core nothing (on a history of millions of operations, the search
// beside it would take half the machine and slow it down), and an answer
// on a small object does not depend on which goroutine the scheduler ran
// first. Past it, the fast engine may be in trouble (the analyzer's
// search of completions, the queue engine's branching): the search starts.
func raceHeadStart(ops int) time.Duration {
	return 20*time.Millisecond + time.Duration(ops)*time.Microsecond
}

// raceParts is race for engines that decide several parts at once.
func raceParts(ctx context.Context, headStart time.Duration, engines ...func(context.Context) ([]outcome, bool)) []outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		k   int
		out []outcome
		ok  bool
	}
	ch := make(chan answer, len(engines))
	started := 0
	startRest := func(upTo int) {
		for ; started < upTo; started++ {
			k, e := started, engines[started]
			go func() {
				out, ok := e(ctx)
				ch <- answer{k, out, ok}
			}()
		}
	}
	startRest(1)
	head := time.NewTimer(headStart)
	defer head.Stop()
	var won *answer
	var last []outcome
	for received := 0; received < started; {
		select {
		case <-head.C:
			if won == nil {
				startRest(len(engines))
			}
		case a := <-ch:
			received++
			switch {
			case won == nil && a.ok && ctx.Err() == nil:
				won = &a
				cancel()
			case a.k == len(engines)-1:
				last = a.out
			}
			if won == nil {
				startRest(len(engines)) // the fast one gave up
			}
		}
	}
	if won != nil {
		return won.out
	}
	return last
}
