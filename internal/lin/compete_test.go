package lin

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// blocker is an engine that never answers: it waits for its context's end
// and records it.
func blocker(cancelled *atomic.Bool) func(context.Context) (outcome, bool) {
	return func(ctx context.Context) (outcome, bool) {
		<-ctx.Done()
		cancelled.Store(true)
		return outcome{verdict: Undecided, reason: "cancelled"}, false
	}
}

// answerAfter is an engine that answers v after d.
func answerAfter(d time.Duration, v Verdict, engine string) func(context.Context) (outcome, bool) {
	return func(ctx context.Context) (outcome, bool) {
		select {
		case <-time.After(d):
			return outcome{verdict: v, engine: engine}, true
		case <-ctx.Done():
			return outcome{verdict: Undecided}, false
		}
	}
}

// TestRace: the first answer wins whichever engine gives it, the loser is
// cancelled and has returned when race does; the fast engine's answer
// within its head start leaves the other unstarted; when it gives up,
// the other's answer is taken.
func TestRace(t *testing.T) {
	var cancelled atomic.Bool
	out := race(context.Background(), raceHeadStart(0), answerAfter(2*raceHeadStart(0), Violation, EngineUnique), blocker(&cancelled))
	if out.engine != EngineUnique || out.verdict != Violation || !cancelled.Load() {
		t.Errorf("fast engine first: %+v, search cancelled %v", out, cancelled.Load())
	}
	cancelled.Store(false)
	out = race(context.Background(), raceHeadStart(0), blocker(&cancelled), answerAfter(raceHeadStart(0), Linearizable, EngineExact))
	if out.engine != EngineExact || out.verdict != Linearizable || !cancelled.Load() {
		t.Errorf("search first: %+v, fast engine cancelled %v", out, cancelled.Load())
	}
	var started atomic.Bool
	out = race(context.Background(), raceHeadStart(0), answerAfter(0, Linearizable, EngineQueue), func(ctx context.Context) (outcome, bool) {
		started.Store(true)
		return outcome{}, false
	})
	if out.engine != EngineQueue || started.Load() {
		t.Errorf("within the head start: %+v, search started %v", out, started.Load())
	}
	giveUp := func(context.Context) (outcome, bool) { return outcome{verdict: Undecided, engine: EngineUnique}, false }
	out = race(context.Background(), raceHeadStart(0), giveUp, answerAfter(0, Violation, EngineExact))
	if out.engine != EngineExact || out.verdict != Violation {
		t.Errorf("fast engine gave up: %+v", out)
	}
	out = race(context.Background(), raceHeadStart(0), giveUp, func(context.Context) (outcome, bool) {
		return outcome{verdict: Undecided, reason: "budget", engine: EngineExact}, false
	})
	if out.verdict != Undecided || out.reason != "budget" {
		t.Errorf("both gave up: %+v, want the search's reason", out)
	}
}

// TestUniqueRaceCancelsSearch: a map whose first key the search cannot
// decide (20 concurrent puts answered ?, then a get of a value none
// wrote: every subset of the puts) beside 60,000 operations on other keys,
// which keep the unique-value engine busy past its head start (1 ms here). The
// engine answers, the search of the first key is cancelled at once, and
// no goroutine outlives the check.
func TestUniqueRaceCancelsSearch(t *testing.T) {
	var b strings.Builder
	b.WriteString("object m map\n")
	const n = 20
	for p := range n {
		fmt.Fprintf(&b, "%d inv m put 1 %d\n", p, 1000+p)
	}
	for p := range n {
		fmt.Fprintf(&b, "%d ret ?\n", p)
	}
	fmt.Fprintf(&b, "%d inv m get 1\n%d ret 5\n", n, n)
	for k := range 30_000 {
		fmt.Fprintf(&b, "%d inv m put %d %d\n%d ret nil\n", n+1+k%4, 2+k, 5000+k, n+1+k%4)
	}
	h := parse(t, b.String())
	before := runtime.NumGoroutine()
	start := time.Now()
	res, err := Check(context.Background(), h, Options{Mode: history.Strict, MaxStates: 1 << 40, headStart: time.Millisecond})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	o := res.Objects[0]
	if res.Verdict != Violation || o.Engine != EngineUnique || o.Explanation == nil || o.Explanation.Failing.Line != 2*n+2 {
		t.Fatalf("%v by %s, explanation %+v", res.Verdict, o.Engine, o.Explanation)
	}
	if res.States == 0 {
		t.Errorf("the search did not run beside the engine (no states)")
	}
	if took > 20*time.Second {
		t.Errorf("the check took %v: the search was not cancelled", took)
	}
	// Up to 30 s for the cancelled search's goroutines to end: 1 s was
	// tight on a loaded machine; a leak never ends, so it is still caught.
	for range 3000 {
		if runtime.NumGoroutine() <= before {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after the check, %d before", g, before)
	}
	t.Logf("%v, %d states searched before the search was cancelled", took, res.States)
}

// TestUniqueExplainsLarge: a violation on a key of more operations than
// the search explains is told from the analyzer's anomaly, in the map's
// terms: the key, the operations and their lines, the values.
func TestUniqueExplainsLarge(t *testing.T) {
	for _, c := range []struct{ name, bad, want string }{
		// put 7 returning a value that a later put writes: a cycle.
		{"cycle", "1 inv m put 7 99999\n1 ret 6500\n", "round a cycle"},
		// a get of a value nobody wrote.
		{"dangling", "1 inv m get 7\n1 ret 4\n", "saw a value that no operation gave that key"},
		// two puts replaced the same value.
		{"fork", "1 inv m put 7 99999\n1 ret 5000\n", "two operations replaced the same value"},
	} {
		var b strings.Builder
		b.WriteString("object m map\n")
		prev := "nil"
		for k := range 2500 {
			if k == 1000 {
				b.WriteString(c.bad)
			}
			fmt.Fprintf(&b, "2 inv m put 7 %d\n2 ret %s\n", 5000+k, prev)
			prev = fmt.Sprint(5000 + k)
		}
		h := parse(t, b.String())
		res, err := Check(context.Background(), h, Options{Engine: EngineUnique})
		if err != nil {
			t.Fatal(err)
		}
		o := res.Objects[0]
		if res.Verdict != Violation || o.Engine != EngineUnique || o.Explanation == nil {
			t.Fatalf("%s: %v by %s", c.name, res.Verdict, o.Engine)
		}
		s := o.Explanation.Sentence
		if !strings.Contains(s, "of m (map) on key 7") || !strings.Contains(s, c.want) || !strings.Contains(s, "test.hist:2002") ||
			strings.Contains(s, "address") || strings.Contains(s, "word") {
			t.Errorf("%s: %s", c.name, s)
		}
		t.Log(s)
	}
}

// TestUniqueViolationStopsSearch: a map whose key 0 goes to the search (a
// nil after a remove that took a value) and is hard there (18 puts
// answered ?, then a get of a value none wrote), and whose key 1 the
// engine finds a violation on at once: the search of key 0 stops.
func TestUniqueViolationStopsSearch(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs the engine and a search at once")
	}
	var b strings.Builder
	b.WriteString("object m map\n")
	const n = 18
	for p := range n {
		fmt.Fprintf(&b, "%d inv m put 0 %d\n", p, 1000+p)
	}
	for p := range n {
		fmt.Fprintf(&b, "%d ret ?\n", p)
	}
	fmt.Fprintf(&b, "%d inv m remove 0\n%d ret 1000\n%d inv m get 0\n%d ret nil\n%d inv m get 0\n%d ret 5\n", n, n, n, n, n, n)
	fmt.Fprintf(&b, "%d inv m get 1\n%d ret 7\n", n+1, n+1)
	h := parse(t, b.String())
	res, err := Check(context.Background(), h, Options{MaxStates: 1 << 40, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Objects[0]
	if res.Verdict != Violation || o.Engine != EngineMixed || o.Explanation == nil || o.Explanation.Failing.Line != 2*n+8 {
		t.Fatalf("%v by %s, explanation %+v", res.Verdict, o.Engine, o.Explanation)
	}
	if res.States > 200_000 {
		t.Errorf("%d states: the search of key 0 went on after the engine's violation on key 1", res.States)
	}
}

// TestUniqueUnknownOperation: an operation of a map or register the
// translation does not know (should the model grow one) sends the object
// to the search, as a register's write does.
func TestUniqueUnknownOperation(t *testing.T) {
	for _, c := range []struct{ model, op string }{{"map", "scan"}, {"register", "swap"}, {"register", "write"}} {
		h := &model.History{Objects: []model.Object{{Name: "x", Model: c.model}},
			Ops: []model.Op{{Proc: 1, Name: c.op, Args: []model.Value{model.Number(1), model.Number(2)}, Status: model.CutOff, Return: -1, Crash: -1}}}
		if why, _ := uniqueApplies(h, 0, []int{0}, history.Strict); why == "" {
			t.Errorf("%s %s: the engine would take it", c.model, c.op)
		}
	}
}
