package dqueue

import (
	"errors"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// pauser is an access hook that stops a worker before each access for
// which its stop function (given the access's kind and how many of that
// kind the worker made before it) says so, and lets it go when the test
// says: a thread descheduled at one exact point while the others run.
type pauser struct {
	stop   []func(k pmem.AccessKind, nth int) bool // per worker; nil: never
	counts [][pmem.AccessVolatile + 1]int
	paused []chan struct{}
	resume []chan struct{}
}

func (p *pauser) Access(w int, k pmem.AccessKind, _ uint64) error {
	if p.stop[w] == nil {
		return nil
	}
	p.counts[w][k]++
	if p.stop[w](k, p.counts[w][k]) {
		p.paused[w] <- struct{}{}
		<-p.resume[w]
	}
	return nil
}

// step is one move of a script: worker w's operation (enq v or deq) run to
// its end; or, for a worker that the script pauses, its operation started
// (start: it runs to its first pause), let go to its next pause or its
// end (resume); or a crash, which lets every paused worker go (into the
// crash).
type step struct {
	w      int
	op     string // "enq", "deq", "crash"
	v      uint64
	start  bool
	resume bool
}

// script runs steps on a fresh queue of mutant m, three workers, each
// paused where stop says; then, if it crashed, builds the image of policy
// min, recovers and reads the state; and returns what it found: a
// violation in durable mode, a corrupt error, or "".
func script(t *testing.T, m string, stop []func(pmem.AccessKind, int) bool, steps []step) string {
	t.Helper()
	const workers = 3
	c := target.Config{Workers: workers, Mutant: m, Ops: 40, Params: map[string]string{"node-words": "8"}}
	n, _ := Target().Size(c)
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Close() }()
	o, err := create(r, c)
	if err != nil {
		t.Fatal(err)
	}
	p := &pauser{stop: append(stop, make([]func(pmem.AccessKind, int) bool, workers-len(stop))...), counts: make([][pmem.AccessVolatile + 1]int, workers)}
	done := make([]chan error, workers)
	for w := range workers {
		p.paused = append(p.paused, make(chan struct{}))
		p.resume = append(p.resume, make(chan struct{}))
		done[w] = make(chan error, 1)
	}
	r.SetHook(p)
	rec := newRecorder()
	running := map[int]bool{}
	// wait waits for worker w to pause or end; its error, if it ended.
	wait := func(w int) error {
		select {
		case <-p.paused[w]:
			return nil
		case err := <-done[w]:
			delete(running, w)
			return err
		}
	}
	crashed := false
	for _, s := range steps {
		args := []model.Value(nil)
		if s.op == "enq" {
			args = []model.Value{model.Number(s.v)}
		}
		switch {
		case s.op == "crash":
			r.RequestCrash()
			for w := range running {
				p.resume[w] <- struct{}{}
				if err := <-done[w]; !errors.Is(err, pmem.ErrCrashed) {
					t.Fatalf("worker %d's paused operation: %v", w, err)
				}
			}
			crashed = true
		case s.start:
			i := rec.call(s.w, s.op, args...)
			running[s.w] = true
			go func() {
				res, err := o.Do(s.w, s.op, args, nil)
				if err == nil {
					rec.ret(i, res)
				}
				done[s.w] <- err
			}()
			if err := wait(s.w); err != nil {
				return "corrupt: " + err.Error()
			}
		case s.resume && !running[s.w]:
			// It ended already (the correct queue can take fewer pauses).
		case s.resume:
			p.resume[s.w] <- struct{}{}
			if err := wait(s.w); err != nil {
				return "corrupt: " + err.Error()
			}
		default:
			i := rec.call(s.w, s.op, args...)
			res, err := o.Do(s.w, s.op, args, nil)
			if err != nil {
				return "corrupt: " + err.Error()
			}
			rec.ret(i, res)
		}
	}
	r.SetHook(nil)
	if crashed {
		rec.crash()
		if err := r.Crash(pmem.PolicyMin, nil); err != nil {
			t.Fatal(err)
		}
		if r, err = r.Reopen(pmem.Options{Emulate: true}); err != nil {
			t.Fatal(err)
		}
		if o, err = open(r, c); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Recover(0); err != nil {
			return "corrupt recovery: " + err.Error()
		}
	} else if len(running) > 0 {
		t.Fatalf("workers %v still in an operation at the end", running)
	}
	st, err := o.State(0, nil)
	if err != nil {
		return "corrupt state: " + err.Error()
	}
	rec.state(workers, st)
	return trial{}.check(t, rec.history())
}

// nthOf stops at the n-th access of kind k.
func nthOf(k pmem.AccessKind, n int) func(pmem.AccessKind, int) bool {
	return func(kk pmem.AccessKind, nth int) bool { return kk == k && nth == n }
}

// TestScripts replays, for the planted bugs that need one thread
// descheduled at one exact point, that schedule: the mutant shows the bug
// (a lost or resurrected element, or a corrupt queue), the correct queue
// does not. Worker 0 is the paused one.
func TestScripts(t *testing.T) {
	// An enq's accesses: the frontier's load and CAS, three stores and a
	// flush and a fence (the node), loads of tail, next and tail, the
	// linking CAS, the link's flush and fence, the tail CAS. A deq's: the
	// cell's load and CAS, a store, flush, fence (the cell), the same for
	// the slot, loads of head, tail, next and head, the value's load, the
	// marking CAS, the mark's flush and fence, ...
	afterLink := nthOf(pmem.AccessFlush, 2) // the enq's link flush
	afterMark := nthOf(pmem.AccessFlush, 3) // the deq's mark flush
	type stops = []func(pmem.AccessKind, int) bool
	for _, c := range []struct {
		mutant string
		stop   stops
		steps  []step
		want   string
	}{
		// Worker 0 linked 1 and is descheduled before flushing the link.
		// Worker 1's enq helps tail past 1 and links 2 after it: 2's link
		// is durable, 1's is not, and 2 is lost.
		{"enq-help-unflushed", stops{afterLink}, []step{
			{op: "enq", v: 1, start: true}, {w: 1, op: "enq", v: 2}, {op: "crash"},
		}, "violation"},
		// The same, with worker 1's deq helping tail and taking 1.
		{"deq-help-unflushed", stops{afterLink}, []step{
			{op: "enq", v: 1, start: true}, {w: 1, op: "deq"}, {w: 1, op: "enq", v: 2}, {op: "crash"},
		}, "violation"},
		// Worker 0 marked 1 and is descheduled before flushing the mark.
		// Worker 1 helps (moves head past 1) and takes 2: after the
		// crash 1 is back, in front, though 2 was dequeued.
		{"mark-help-unflushed", stops{afterMark}, []step{
			{w: 1, op: "enq", v: 1}, {w: 1, op: "enq", v: 2}, {op: "deq", start: true}, {w: 1, op: "deq"}, {op: "crash"},
		}, "violation"},
		// Worker 2 linked 1 and is descheduled before its tail CAS;
		// worker 0's enq, helping, is descheduled before its plain store
		// of tail (to 1); worker 1 takes 1, enqueues 3 and takes it: head
		// is 3's node; the late store puts tail back to 1's, behind head,
		// and worker 1's next deq finds head without a next but tail
		// elsewhere. (The correct queue's late CAS fails.)
		{"tail-store", stops{
			func(k pmem.AccessKind, nth int) bool {
				return k == pmem.AccessStore && nth == 4 || k == pmem.AccessLoad && nth == 5
			},
			nil,
			nthOf(pmem.AccessCAS, 3),
		}, []step{
			{w: 2, op: "enq", v: 1, start: true}, {op: "enq", v: 2, start: true},
			{w: 1, op: "deq"}, {w: 1, op: "enq", v: 3}, {w: 1, op: "deq"},
			{resume: true}, {w: 1, op: "deq"}, {resume: true}, {w: 2, resume: true},
		}, "corrupt: dqueue: region is corrupt: head"},
	} {
		for _, m := range []string{c.mutant, ""} {
			got := script(t, m, c.stop, c.steps)
			if want := map[bool]string{true: c.want, false: ""}[m != ""]; !strings.HasPrefix(got, want) || want == "" && got != "" {
				t.Errorf("%s, mutant %q: %q, want %q", c.mutant, m, got, want)
			}
		}
	}
}
