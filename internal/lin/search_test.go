package lin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// hardRegister is n concurrent writes of distinct values, then a read of
// a value nobody wrote: a violation that the search can only establish
// after trying every subset of the writes (about n * 2^(n-1) states).
func hardRegister(n int) string {
	var b strings.Builder
	b.WriteString("object r register\n")
	for p := range n {
		fmt.Fprintf(&b, "%d inv r write %d\n", p, p+1)
	}
	for p := range n {
		fmt.Fprintf(&b, "%d ret ok\n", p)
	}
	fmt.Fprintf(&b, "%d inv r read\n%d ret %d\n", n, n, n+1)
	return b.String()
}

func TestBudgetUndecided(t *testing.T) {
	h := parse(t, hardRegister(12))
	res, err := Check(context.Background(), h, Options{MaxStates: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Undecided || !strings.Contains(res.Objects[0].Reason, "explored 1000 states, the budget") {
		t.Fatalf("%v %q, want undecided by the budget", res.Verdict, res.Objects[0].Reason)
	}
	// With the default budget it is decided: the budget, not the search,
	// made it undecided.
	if v := verdict(t, hardRegister(12), history.Strict); v != Violation {
		t.Fatalf("default budget: %v", v)
	}
}

func TestMemoryUndecided(t *testing.T) {
	h := parse(t, hardRegister(12))
	res, err := Check(context.Background(), h, Options{MaxMemory: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Undecided || !strings.Contains(res.Objects[0].Reason, "memory bound") {
		t.Fatalf("%v %q, want undecided by the memory bound", res.Verdict, res.Objects[0].Reason)
	}
}

// TestViolationBeatsUndecided: a certain violation of one object stands
// when another object is undecided.
func TestViolationBeatsUndecided(t *testing.T) {
	h := parse(t, hardRegister(12)+"object q queue\n1 inv q deq\n1 ret 5\n")
	res, err := Check(context.Background(), h, Options{MaxStates: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Violation || res.Objects[0].Verdict != Undecided || res.Objects[1].Verdict != Violation {
		t.Fatalf("%v (%v, %v), want violation (undecided, violation)", res.Verdict, res.Objects[0].Verdict, res.Objects[1].Verdict)
	}
}

func TestCancel(t *testing.T) {
	h := parse(t, hardRegister(18))
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	// The cancel follows the first progress report, not a fixed sleep: on
	// a loaded machine 50 ms could pass before the search reported once.
	// The timer is a backstop so that a search that never reports fails
	// (calls == 0 below) instead of hanging.
	backstop := time.AfterFunc(time.Minute, cancel)
	defer backstop.Stop()
	start := time.Now()
	_, err := Check(ctx, h, Options{MaxStates: 1 << 40, MaxMemory: -1, Progress: func(p Progress) {
		if p.Parts != 1 {
			t.Errorf("progress: %d parts", p.Parts)
		}
		if calls.Add(1) == 1 {
			start = time.Now()
			cancel()
		}
	}, ProgressEvery: 10 * time.Millisecond})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ended %v after its cancel", d)
	}
	if calls.Load() == 0 {
		t.Errorf("no progress report in a search of a minute")
	}
}

// TestUserModel: a model of the user's own, found through Options.Models
// beside the built-in ones, with two initial states and a nondeterministic
// step: a "lossy" register whose write may be lost.
func TestUserModel(t *testing.T) {
	lossy := &model.Model{
		Init: func() []any { return []any{uint64(0), uint64(1)} },
		Step: func(s any, op *model.Op) []any {
			v := s.(uint64)
			switch op.Name {
			case "write":
				return []any{v, op.Args[0].N}
			case "read":
				if op.Status == model.Returned && op.Results[0].N != v {
					return nil
				}
				return []any{v}
			}
			return nil
		},
		Key: func(s any) string { return fmt.Sprint(s) },
		Validate: func(op *model.Op) error {
			if op.Name != "write" && op.Name != "read" {
				return fmt.Errorf("lossy has no %s", op.Name)
			}
			return nil
		},
	}
	models := func(name string) model.Maker {
		if name == "lossy" {
			return func(ps []model.Param) (*model.Model, error) { return lossy, nil }
		}
		return model.Builtin(name)
	}
	cases := []struct {
		hist string
		want Verdict
	}{
		{"object r lossy\n1 inv r read\n1 ret 1", L},                            // the second initial state
		{"object r lossy\n1 inv r read\n1 ret 2", V},                            // neither
		{"object r lossy\n1 inv r write 7\n1 ret ok\n1 inv r read\n1 ret 0", L}, // lost
		{"object r lossy\n1 inv r write 7\n1 ret ok\n1 inv r read\n1 ret 7\n1 inv r read\n1 ret 0", V},
		{"object r lossy\nobject q queue\n1 inv q deq\n1 ret 5", V}, // built-ins still there
	}
	for _, c := range cases {
		res, err := Check(context.Background(), parse(t, c.hist), Options{Models: models})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != c.want {
			t.Errorf("%q: %v, want %v", c.hist, res.Verdict, c.want)
		}
	}
	if _, err := Check(context.Background(), parse(t, "object r lossy"), Options{}); err == nil {
		t.Errorf("a user's model found without Options.Models")
	}
	// a model without initial states is an error, not a violation
	barren := func(string) model.Maker {
		return func([]model.Param) (*model.Model, error) {
			m := *lossy
			m.Init = func() []any { return nil }
			return &m, nil
		}
	}
	_, err := Check(context.Background(), parse(t, "object r lossy\n1 inv r read\n1 ret 0"), Options{Models: barren})
	if err == nil || !strings.Contains(err.Error(), "test.hist:1: object r: model lossy has no initial state") {
		t.Errorf("a model without initial states: %v", err)
	}
}

// randomMap is a random history of a map with a few keys and values:
// each operation takes effect at its response (or, cut off by a crash,
// at the crash or never) on a real map, so the history is legal, except
// that some responses are answered ? and some replaced by a wrong value.
func randomMap(r *rand.Rand, ops int) string {
	var b strings.Builder
	b.WriteString("object m map\n")
	type call struct {
		name string
		k, v int
	}
	pending := map[int]*call{}
	state := map[int]int{}
	apply := func(c *call) string {
		old, ok := state[c.k]
		res := "nil"
		if ok {
			res = fmt.Sprint(old)
		}
		switch {
		case c.name == "put", c.name == "putifabsent" && !ok:
			state[c.k] = c.v
		case c.name == "remove":
			delete(state, c.k)
		}
		return res
	}
	names := []string{"put", "get", "remove", "putifabsent"}
	for range ops {
		p := r.IntN(4)
		if c := pending[p]; c != nil {
			res := apply(c)
			switch r.IntN(12) {
			case 0:
				res = "?"
			case 1:
				res = []string{"nil", "1", "2"}[r.IntN(3)]
			}
			fmt.Fprintf(&b, "%d ret %s\n", p, res)
			delete(pending, p)
			continue
		}
		if r.IntN(20) == 0 {
			for _, c := range pending {
				if r.IntN(2) == 0 {
					apply(c)
				}
			}
			b.WriteString("crash\n")
			clear(pending)
			continue
		}
		c := &call{name: names[r.IntN(len(names))], k: r.IntN(3), v: 1 + r.IntN(2)}
		if c.name == "put" || c.name == "putifabsent" {
			fmt.Fprintf(&b, "%d inv m %s %d %d\n", p, c.name, c.k, c.v)
		} else {
			fmt.Fprintf(&b, "%d inv m %s %d\n", p, c.name, c.k)
		}
		pending[p] = c
	}
	return b.String()
}

// TestPartitionAgrees: checking a map key by key gives the verdict of
// checking it whole, on random histories, in every mode; and the split
// is really made (partitions > 1).
func TestPartitionAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	count := [3]int{}
	split := 0
	for range 400 {
		h := parse(t, randomMap(r, 12+r.IntN(12)))
		for _, mode := range history.Modes {
			a, err := Check(context.Background(), h, Options{Mode: mode, NoShrink: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := Check(context.Background(), h, Options{Mode: mode, NoShrink: true, Models: unpartitioned})
			if err != nil {
				t.Fatal(err)
			}
			if a.Verdict != b.Verdict {
				t.Fatalf("%s: partitioned %v, whole %v:\n%s", mode, a.Verdict, b.Verdict, fmtHist(h))
			}
			count[a.Verdict]++
			if a.Objects[0].Parts > 1 {
				split++
			}
		}
	}
	t.Logf("verdicts %v, %d split", count, split)
	if count[Linearizable] < 50 || count[Violation] < 50 || split < 100 {
		t.Errorf("verdicts %v, %d split: the random histories do not test both answers", count, split)
	}
}

func fmtHist(h *model.History) string {
	var b strings.Builder
	for _, op := range h.Ops {
		fmt.Fprintf(&b, "line %d: %d %s %v -> %v (%d) call %d ret %d crash %d\n", op.Line, op.Proc, op.Name, op.Args, op.Results, op.Status, op.Call, op.Return, op.Crash)
	}
	return b.String()
}

// TestViolationStopsSiblings: once one key of a map is a violation, the
// object's verdict is known, and the search of its other keys stops (a
// hard violation of key 1 would take millions of states).
func TestViolationStopsSiblings(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two searches at once")
	}
	var b strings.Builder
	b.WriteString("object m map\n")
	const n = 18
	for p := range n {
		fmt.Fprintf(&b, "%d inv m put 1 %d\n", p, p+1)
	}
	for p := range n {
		fmt.Fprintf(&b, "%d ret %s\n", p, "?")
	}
	fmt.Fprintf(&b, "%d inv m get 1\n%d ret %d\n", n, n, n+1)
	fmt.Fprintf(&b, "%d inv m get 2\n%d ret 5\n", n+1, n+1)
	h := parse(t, b.String())
	// The search's own behaviour: the unique-value engine would answer
	// for the map at once.
	res, err := Check(context.Background(), h, Options{MaxStates: 1 << 40, NoShrink: true, Engine: EngineExact})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Objects[0]
	if res.Verdict != Violation || o.Reason != "" || o.Explanation.Failing.Line != int64(2*n+4) {
		t.Fatalf("%v %q, failing %+v", res.Verdict, o.Reason, o.Explanation.Failing)
	}
	if res.States > 200_000 {
		t.Errorf("%d states: the search of key 1 went on after key 2's violation", res.States)
	}
}
