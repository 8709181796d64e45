package dqueue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/targetkit"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// sched is a deterministic scheduler for the tests (the harness has its
// own, package driver): an access hook that lets one worker at a time
// through, and crashes the region at access crashAt (0: never). It runs
// a worker in bursts: after each access it keeps the same worker with
// probability 7/8, so that one worker often runs long stretches while
// another waits in the middle of an operation (between a CAS and its
// flush), which is where a durable queue's bugs are. It can also stall a
// worker (a descheduled thread): the first one chosen, from access stallAt
// on, to make a write (a store, a CAS or a flush) waits before it until no
// other can run, and is then crashed (crashAlone) or goes on. A run that
// makes more than limit accesses is crashed and reported stuck.
type sched struct {
	rng     *rand.Rand
	arrive  chan int // a worker at an access (its id), or done (-1-id)
	turn    []chan bool
	crashAt int
	limit   int
	// stallAt, crashAlone: see above; stalled is the stalled worker, or
	// -1; kinds holds each parked worker's next access.
	stallAt    int
	crashAlone bool
	stalled    int
	kinds      []pmem.AccessKind
	steps      int
	stuck      bool
	crashed    atomic.Bool
}

func (s *sched) Access(w int, k pmem.AccessKind, _ uint64) error {
	if s.crashed.Load() {
		return pmem.ErrCrashed
	}
	s.kinds[w] = k // read by run after the send below
	s.arrive <- w
	if <-s.turn[w] || s.crashed.Load() {
		return pmem.ErrCrashed
	}
	return nil
}

// run runs body(w) for each worker w on goroutines of their own, one
// access at a time.
func (s *sched) run(workers int, body func(w int)) {
	s.arrive = make(chan int)
	s.turn = make([]chan bool, workers)
	s.kinds = make([]pmem.AccessKind, workers)
	for w := range workers {
		s.turn[w] = make(chan bool)
		go func() {
			body(w)
			s.arrive <- -1 - w
		}()
	}
	var parked []int
	cur := -1
	s.stalled = -1
	for live := workers; live > 0; {
		for len(parked) < live {
			if x := <-s.arrive; x < 0 {
				live--
			} else {
				parked = append(parked, x)
			}
		}
		if s.crashed.Load() {
			for _, w := range parked {
				s.turn[w] <- false
			}
			parked = parked[:0]
			continue
		}
		if live == 0 {
			break
		}
		alone, cands := false, parked
		if j := slices.Index(parked, s.stalled); j >= 0 {
			if len(parked) > 1 { // the stalled worker waits aside
				cands = slices.Delete(slices.Clone(parked), j, j+1)
			} else {
				alone, s.stalled = true, -1
			}
		}
		i := slices.Index(cands, cur)
		if i < 0 || s.rng.IntN(8) == 0 {
			i = s.rng.IntN(len(cands))
		}
		w := cands[i]
		if k := s.kinds[w]; s.stallAt > 0 && s.steps >= s.stallAt && len(cands) > 1 &&
			(k == pmem.AccessStore || k == pmem.AccessCAS || k == pmem.AccessFlush) {
			s.stalled, s.stallAt = w, 0 // aside from now on; another runs
			continue
		}
		cur = w
		parked = slices.DeleteFunc(parked, func(x int) bool { return x == w })
		s.steps++
		crash := s.steps == s.crashAt || s.steps > s.limit || alone && s.crashAlone
		if crash {
			s.stuck = s.steps > s.limit
			s.crashed.Store(true)
		}
		s.turn[w] <- crash
	}
}

// recorder builds a version 2 history of one queue object.
type recorder struct {
	mu     sync.Mutex
	h      model.History
	events int
}

func newRecorder() *recorder {
	return &recorder{h: model.History{Objects: []model.Object{{Name: "q", Model: "queue"}}}}
}

func (r *recorder) call(proc int, name string, args ...model.Value) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Ops = append(r.h.Ops, model.Op{Proc: int64(proc), Name: name, Args: args, Status: model.CutOff, Call: r.events, Return: -1, Crash: -1})
	r.events++
	return len(r.h.Ops) - 1
}

func (r *recorder) ret(i int, res []model.Value) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := &r.h.Ops[i]
	op.Status, op.Results, op.Return = model.Returned, append([]model.Value(nil), res...), r.events
	r.events++
}

func (r *recorder) crash() {
	for i := range r.h.Ops {
		if r.h.Ops[i].Status == model.CutOff {
			r.h.Ops[i].Crash = len(r.h.Crashes)
		}
	}
	r.h.Crashes = append(r.h.Crashes, model.Crash{Pos: r.events})
	r.events++
}

// state records what State returned as deqs of the elements then a deq
// that finds it empty, by a process of its own.
func (r *recorder) state(proc int, elems []model.Value) {
	for _, e := range elems {
		r.ret(r.call(proc, "deq"), []model.Value{e})
	}
	r.ret(r.call(proc, "deq"), []model.Value{model.Sym(model.Empty)})
}

func (r *recorder) history() *model.History {
	r.h.Events = r.events
	return &r.h
}

// trial is one run of the crash test: workers apply random operations
// under the scheduler until it crashes the region at access crashAt, the
// image of policy p replaces it, the queue is reopened and recovered,
// its state read, and the workers apply a second round of operations
// without a crash, then the state is read again. What the run found: a
// violation (the history is not durably linearizable), an error of an
// operation or of recovery other than the crash (a "corrupt" finding),
// or a stuck run.
type trial struct {
	mutant  string
	stride  string
	workers int
	ops     int // per worker and round
	seed    uint64
	crashAt int
	policy  pmem.Policy
	// stallAt, crashAlone: the scheduler's (sched).
	stallAt    int
	crashAlone bool
	// crashRecoveryAt, if positive, crashes the first recovery at that
	// access (a new image of the same policy, then recovery again).
	crashRecoveryAt int
}

func (tr trial) config() target.Config {
	return target.Config{Workers: tr.workers, Mutant: tr.mutant, Ops: 2 * tr.workers * tr.ops, Params: map[string]string{"node-words": tr.stride}}
}

type outcome struct {
	crashed bool // the crash came inside the first round
	finding string
	hist    *model.History
}

func (tr trial) run(t testing.TB) outcome {
	t.Helper()
	c := tr.config()
	n, err := Target().Size(c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Close() }()
	obj, err := create(r, c)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(tr.seed, uint64(tr.crashAt)))
	rec := newRecorder()
	var mu sync.Mutex
	var opErr error
	round := func(s *sched, o target.Object, base uint64) {
		r.SetHook(s)
		s.run(tr.workers, func(w int) {
			wrng := rand.New(rand.NewPCG(tr.seed+base, uint64(w)))
			res := make([]model.Value, 0, 2)
			for k := range tr.ops {
				name, args := "deq", []model.Value(nil)
				if wrng.IntN(5) < 3 {
					name, args = "enq", []model.Value{model.Number(base + uint64(w+1)<<16 + uint64(k))}
				}
				i := rec.call(w, name, args...)
				var err error
				if res, err = o.Do(w, name, args, res); err != nil {
					if !errors.Is(err, pmem.ErrCrashed) {
						mu.Lock()
						opErr = err
						mu.Unlock()
					}
					return
				}
				rec.ret(i, res)
			}
		})
		r.SetHook(nil)
	}
	s1 := &sched{rng: rng, crashAt: tr.crashAt, limit: 200 * tr.workers * tr.ops, stallAt: tr.stallAt, crashAlone: tr.crashAlone}
	round(s1, obj, 1<<24)
	var out outcome
	switch {
	case s1.stuck:
		return outcome{finding: "stuck"}
	case opErr != nil:
		return outcome{finding: "corrupt: " + opErr.Error()}
	}
	out.crashed = s1.crashed.Load()
	rec.crash()
	if err := r.Crash(tr.policy, rng); err != nil {
		t.Fatal(err)
	}
	reopen := func() (target.Object, string) {
		if r, err = r.Reopen(pmem.Options{Emulate: true}); err != nil {
			t.Fatal(err)
		}
		o, err := open(r, c)
		if err != nil {
			return nil, "open: " + err.Error()
		}
		if _, err := o.Recover(0); err != nil {
			return nil, "corrupt recovery: " + err.Error()
		}
		return o, ""
	}
	if tr.crashRecoveryAt > 0 {
		o, err := open(r, c)
		if err != nil {
			t.Fatal(err)
		}
		r.SetHook(&targetkit.CrashAt{N: tr.crashRecoveryAt})
		_, err = o.Recover(0)
		r.SetHook(nil)
		if err != nil && !errors.Is(err, pmem.ErrCrashed) {
			return outcome{finding: "corrupt recovery: " + err.Error()}
		}
		if err := r.Crash(tr.policy, rng); err != nil {
			t.Fatal(err)
		}
	}
	obj, f := reopen()
	if f != "" {
		return outcome{finding: f}
	}
	st, err := obj.State(0, nil)
	if err != nil {
		return outcome{finding: "corrupt state: " + err.Error()}
	}
	rec.state(tr.workers, st)
	out.hist = rec.history()
	if out.finding = tr.check(t, out.hist); out.finding != "" {
		return out
	}
	// The second round starts a history of its own from the recovered
	// state (enqueued by a process of its own): all its operations return
	// and its values are distinct, which the queue engine decides fast.
	rec = newRecorder()
	for _, v := range st {
		rec.ret(rec.call(tr.workers, "enq", v), []model.Value{model.Sym(model.OK)})
	}
	s2 := &sched{rng: rng, limit: 200 * tr.workers * tr.ops}
	round(s2, obj, 2<<24)
	switch {
	case s2.stuck:
		return outcome{finding: "stuck"}
	case opErr != nil:
		return outcome{finding: "corrupt: " + opErr.Error()}
	}
	if st, err = obj.State(0, st); err != nil {
		return outcome{finding: "corrupt state: " + err.Error()}
	}
	rec.state(tr.workers, st)
	out.hist = rec.history()
	out.finding = tr.check(t, out.hist)
	return out
}

// check decides h in durable mode: "violation" or "".
func (tr trial) check(t testing.TB, h *model.History) string {
	t.Helper()
	res, err := lin.Check(context.Background(), h, lin.Options{Mode: history.Durable, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	switch res.Verdict {
	case lin.Violation:
		return "violation"
	case lin.Undecided:
		t.Fatalf("%+v: undecided: %+v\n%s", tr, res.Objects, describe(h))
	}
	return ""
}

func describe(h *model.History) string {
	if h == nil {
		return ""
	}
	s := ""
	for _, op := range h.Ops {
		s += fmt.Sprintf("  p%d %s%v -> %v (%d..%d)\n", op.Proc, op.Name, op.Args, op.Results, op.Call, op.Return)
	}
	return s
}
