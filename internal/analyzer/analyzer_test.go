package analyzer

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

func check(t *testing.T, text string, mode history.Mode) (*Result, error) {
	t.Helper()
	r := history.NewReader(strings.NewReader(text), "test.hist", history.Options{})
	return Check(context.Background(), r, Options{Mode: mode})
}

// verdicts per mode: strict, recoverable, durable. "L" linearizable, a kind
// name for the first anomaly's kind, "A1"/"A2" for an assumption error.
func TestVerdicts(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		modes [3]string
	}{
		{"empty", "", [3]string{"L", "L", "L"}},
		{"spec example", `pmlin-history v1
init 0
1 inv read 10 11
1 ret 0 0
1 inv cas 10:0:0x100001 11:0:0x100002
2 inv read 10
1 ret ok
2 ret 0x100001
crash
2 inv read 10 11
2 ret 0x100001 0x100002
`, [3]string{"L", "L", "L"}},
		{"stale read after write", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv read 10\n2 ret 0\n", [3]string{"cycle", "cycle", "cycle"}},
		{"concurrent read of old value", "1 inv cas 10:0:0x100001\n2 inv read 10\n2 ret 0\n1 ret ok\n", [3]string{"L", "L", "L"}},
		{"read before write invoked", "2 inv read 10\n2 ret 0x100001\n1 inv cas 10:0:0x100001\n1 ret ok\n", [3]string{"cycle", "cycle", "cycle"}},
		{"dangling", "1 inv read 10\n1 ret 77\n", [3]string{"dangling", "dangling", "dangling"}},
		{"fork", "1 inv cas 10:0:0x100001\n2 inv cas 10:0:0x200001\n1 ret ok\n2 ret ok\n", [3]string{"fork", "fork", "fork"}},
		{"failure never explained", "1 inv cas 10:0:0x100001\n1 ret fail 10\n", [3]string{"unexplained-failure", "unexplained-failure", "unexplained-failure"}},
		{"failure explained by concurrent write", "1 inv cas 10:0:0x100001\n2 inv cas 10:0:0x200001\n1 ret ok\n2 ret fail 10\n", [3]string{"L", "L", "L"}},
		{"failure before the write that explains it", "2 inv cas 10:0:0x200001\n2 ret fail 10\n1 inv cas 10:0:0x100001\n1 ret ok\n", [3]string{"cycle", "cycle", "cycle"}},
		{"torn read", "1 inv cas 10:0:0x100001 11:0:0x100002\n1 ret ok\n2 inv read 10 11\n2 ret 0x100001 0\n", [3]string{"cycle", "cycle", "cycle"}},
		{"crashed cas explains a later failure", "1 inv cas 10:0:0x100001\ncrash\n2 inv cas 10:0:0x200001\n2 ret fail 10\n", [3]string{"L", "L", "L"}},
		{"crashed cas unobserved is dropped", "1 inv cas 10:0:0x100001\ncrash\n2 inv read 10\n2 ret 0\n", [3]string{"L", "L", "L"}},
		// Observed only after an older value was read post-crash: strict
		// needs the effect before the crash.
		{"effect visible late", "1 inv cas 10:0:0x100001\ncrash\n2 inv read 10\n2 ret 0\n2 inv read 10\n2 ret 0x100001\n",
			[3]string{"cycle", "L", "L"}},
		// The cut-off process itself saw the old value after the crash:
		// recoverable needs the effect before its next operation.
		{"effect after own next op", "1 inv cas 10:0:0x100001\ncrash\n1 inv read 10\n1 ret 0\n2 inv read 10\n2 ret 0x100001\n",
			[3]string{"cycle", "cycle", "L"}},
		{"pending at end observed", "1 inv cas 10:0:0x100001\n2 inv read 10\n2 ret 0x100001\n", [3]string{"L", "L", "L"}},
		{"pending read dropped", "1 inv read 10\n", [3]string{"L", "L", "L"}},
		{"value written twice", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv cas 10:0x100001:0x100001\n2 ret ok\n", [3]string{"A1", "A1", "A1"}},
		{"initial value written", "1 inv cas 10:0:5\n1 ret ok\n2 inv cas 10:5:0\n2 ret ok\n", [3]string{"A1", "A1", "A1"}},
		// Expected 0x100001 without reading it first; the failure is
		// explainable only if ordered after the write that replaced it.
		{"assumption 2 undecidable", "1 inv cas 10:0:0x100001\n1 ret ok\n3 inv cas 10:0x100001:0x300001\n3 ret fail 10\n",
			[3]string{"A2", "A2", "A2"}},
		// The same unread expectation, but the failure is explained by a
		// later write anyway: decidable.
		{"assumption 2 broken but decidable", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv cas 10:0x100001:0x200001\n3 inv cas 10:0x100001:0x300001\n2 ret ok\n3 ret fail 10\n",
			[3]string{"L", "L", "L"}},
		// Broken elsewhere: decidable as not linearizable.
		{"assumption 2 broken, other anomaly", "1 inv cas 10:0:0x100001\n1 ret ok\n3 inv cas 10:0x100001:0x300001\n3 ret fail 10\n4 inv read 11\n4 ret 9\n",
			[3]string{"dangling", "dangling", "dangling"}},
		{"failed cas other words ignored", "1 inv cas 10:0:0x100001 11:55:0x100002\n1 ret fail 11\n", [3]string{"L", "L", "L"}},
		{"expected value nobody wrote: failure needs nothing", "1 inv read 10\n1 ret 0\n2 inv cas 10:66:0x200001\n2 ret fail 10\n", [3]string{"L", "L", "L"}},
		{"chain of crashed cas observed", "1 inv cas 10:0:0x100001\n2 inv cas 10:0x100001:0x200001\ncrash\n3 inv read 10\n3 ret 0x200001\n", [3]string{"L", "L", "L"}},

		// Swaps (Section 5.1: a successful cas that learns its expected
		// values at its response).
		{"swaps in a row", "1 inv swap 10:0x100001\n1 ret 0\n2 inv swap 10:0x200001\n2 ret 0x100001\n", [3]string{"L", "L", "L"}},
		{"two swaps replaced one value", "1 inv swap 10:0x100001\n1 ret 0\n2 inv swap 10:0x200001\n2 ret 0\n", [3]string{"fork", "fork", "fork"}},
		{"swap and cas replaced one value", "1 inv swap 10:0x100001\n2 inv cas 10:0:0x200001\n1 ret 0\n2 ret ok\n", [3]string{"fork", "fork", "fork"}},
		{"swap returns a stale value", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv swap 10:0x200001\n2 ret 0\n", [3]string{"fork", "fork", "fork"}},
		{"swap returns its own value", "1 inv swap 10:0x100001\n1 ret 0x100001\n", [3]string{"unreachable-write", "unreachable-write", "unreachable-write"}},
		{"swap returns a value nobody wrote", "1 inv swap 10:0x100001\n1 ret 77\n", [3]string{"dangling", "dangling", "dangling"}},
		{"swap's value read", "1 inv swap 10:0x100001 11:0x100002\n1 ret 0 0\n2 inv read 11 10\n2 ret 0x100002 0x100001\n", [3]string{"L", "L", "L"}},
		{"swap's value torn", "1 inv swap 10:0x100001 11:0x100002\n1 ret 0 0\n2 inv read 11 10\n2 ret 0x100002 0\n", [3]string{"cycle", "cycle", "cycle"}},
		{"swap writes twice", "1 inv swap 10:0x100001\n1 ret 0\n2 inv swap 10:0x100001\n2 ret 0x100001\n", [3]string{"A1", "A1", "A1"}},
		{"swap writes the initial value", "1 inv swap 10:0\n1 ret 0\n", [3]string{"A1", "A1", "A1"}},
		// A swap expects nothing: a cas may expect what a swap returned.
		{"cas expects what a swap returned", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv swap 10:0x200001\n2 ret 0x100001\n3 inv cas 10:0x100001:0x300001\n3 ret fail 10\n", [3]string{"L", "L", "L"}},
		{"cut-off swap observed", "1 inv swap 10:0x100001\ncrash\n2 inv read 10\n2 ret 0x100001\n", [3]string{"L", "L", "L"}},
		{"cut-off swap seen late", "1 inv swap 10:0x100001\ncrash\n2 inv read 10\n2 ret 0\n2 inv read 10\n2 ret 0x100001\n", [3]string{"cycle", "L", "L"}},
		// (Strict: it would have to precede the read of 0; the report shows
		// the failure unexplained, with the cut-off swap dropped.)
		{"cut-off swap explains a failure", "1 inv swap 10:0x100001\ncrash\n2 inv read 10\n2 ret 0\n2 inv cas 10:0:0x200001\n2 ret fail 10\n", [3]string{"unexplained-failure", "L", "L"}},
		{"cut-off swap after a known write", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv swap 10:0x200001\ncrash\n3 inv read 10\n3 ret 0x200001\n", [3]string{"L", "L", "L"}},

		// Failures that report values (Section 5.2: a read at every word).
		{"failure reports the current values", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv cas 10:0:0x200001 11:0:0x200002\n2 ret fail 10 0x100001 0\n", [3]string{"L", "L", "L"}},
		{"failure reports a value nobody wrote", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv cas 11:0:0x200001 10:0x100001:0x200002\n2 ret fail 11 0x300001 0x100001\n", [3]string{"dangling", "dangling", "dangling"}},
		{"failure reports a replaced value", "1 inv cas 10:0:0x100001 11:0:0x100002\n1 ret ok\n2 inv cas 10:0:0x200001 11:0x100002:0x200002\n2 ret fail 10 0x100001 0\n", [3]string{"cycle", "cycle", "cycle"}},
		{"failure contradicts itself", "1 inv cas 10:0:0x100001\n1 ret fail 10 0\n", [3]string{"unexplained-failure", "unexplained-failure", "unexplained-failure"}},
		// It expected a value nobody had returned (Assumption 2): without
		// values the graph method cannot decide; with them, it is a read,
		// and needs no write to explain it.
		{"failure without values, Assumption 2 broken", "3 inv cas 10:0x100001:0x300001\n1 inv cas 10:0:0x100001\n3 ret fail 10\n1 ret ok\n", [3]string{"A2", "A2", "A2"}},
		{"failure with values needs no Assumption 2", "3 inv cas 10:0x100001:0x300001\n1 inv cas 10:0:0x100001\n3 ret fail 10 0\n1 ret ok\n", [3]string{"L", "L", "L"}},
		{"failure with values reports the unread value", "3 inv cas 10:0x100001:0x300001\n1 inv cas 10:0:0x100001\n3 ret fail 10 0x100001\n1 ret ok\n", [3]string{"unexplained-failure", "unexplained-failure", "unexplained-failure"}},
		{"failure reads a cut-off cas's value", "1 inv cas 10:0:0x100001\ncrash\n2 inv cas 10:0:0x200001\n2 ret fail 10 0x100001\n", [3]string{"L", "L", "L"}},
	}
	for _, tc := range tests {
		for mi, mode := range history.Modes {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				res, err := check(t, tc.text, mode)
				got := "L"
				var ae *AssumptionError
				switch {
				case errors.As(err, &ae):
					got = "A" + string(rune('0'+ae.Assumption))
				case err != nil:
					t.Fatalf("error: %v", err)
				case !res.Linearizable:
					if len(res.Anomalies) == 0 {
						t.Fatalf("not linearizable without anomalies")
					}
					got = string(res.Anomalies[0].Kind)
				}
				if got != tc.modes[mi] {
					t.Fatalf("got %s, want %s (err %v)", got, tc.modes[mi], err)
				}
			})
		}
	}
}

func TestCycleIsShortAndExplained(t *testing.T) {
	// A long history with one stale read far from the write it misses.
	var b strings.Builder
	b.WriteString("1 inv cas 10:0:0x100001\n1 ret ok\n")
	for i := 0; i < 200; i++ {
		b.WriteString("2 inv read 11\n2 ret 0\n")
	}
	b.WriteString("3 inv read 10\n3 ret 0\n")
	res, err := check(t, b.String(), history.Strict)
	if err != nil || res.Linearizable {
		t.Fatalf("res %+v err %v", res, err)
	}
	a := res.Anomalies[0]
	if a.Kind != Cycle || len(a.Ops) != 2 || !slices.Equal(a.Ops, []int64{1, 403}) {
		t.Fatalf("want the 2-cycle [1 403], got %s with %d ops", a.Kind, len(a.Ops))
	}
	if len(a.Edges) != 2 || a.Edges[0].Kind != HappensBefore || a.Edges[1].Kind != Auxiliary || a.Edges[1].Word != 10 {
		t.Fatalf("edges %+v", a.Edges)
	}
}

func TestEdgeCounts(t *testing.T) {
	res, err := check(t, `1 inv read 10 11
1 ret 0 0
1 inv cas 10:0:0x100001 11:0:0x100002
2 inv read 10
1 ret ok
2 ret 0x100001
crash
2 inv read 10 11
2 ret 0x100001 0x100002
`, history.Strict)
	if err != nil {
		t.Fatal(err)
	}
	want := EdgeCounts{HappensBefore: 4, ReadsFrom: 3, Auxiliary: 2}
	if res.Edges != want || res.Vertices != 5 || res.Operations != 4 {
		t.Fatalf("got %+v vertices %d", res.Edges, res.Vertices)
	}
}

func TestMalformedIsHistoryError(t *testing.T) {
	_, err := check(t, "1 inv read 10\n2 ret 5\n", history.Strict)
	var he *history.Error
	if !errors.As(err, &he) || he.Line != 2 {
		t.Fatalf("want a history.Error at line 2, got %v", err)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := history.NewReader(strings.NewReader("1 inv read 10\n1 ret 0\n"), "x", history.Options{})
	if _, err := Check(ctx, r, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

// TestCompletionSearchBudget: a failure explained only by a crashed cas
// needs a second evaluation; with a budget of one, the analyzer must say
// it cannot decide rather than guess.
func TestCompletionSearchBudget(t *testing.T) {
	text := "1 inv cas 10:0:0x100001\ncrash\n2 inv cas 10:0:0x200001\n2 ret fail 10\n"
	r := history.NewReader(strings.NewReader(text), "t.hist", history.Options{})
	_, err := Check(context.Background(), r, Options{MaxEvaluations: 1})
	var ue *UndecidedError
	if !errors.As(err, &ue) || ue.Line != 3 {
		t.Fatalf("want an UndecidedError at line 3, got %v", err)
	}
	res, err := check(t, text, history.Strict)
	if err != nil || !res.Linearizable || res.Completed != 1 || res.Dropped != 0 {
		t.Fatalf("with the default budget: %+v, %v", res, err)
	}
}

// TestCompletedAndDropped counts cut-off operations.
func TestCompletedAndDropped(t *testing.T) {
	res, err := check(t, `1 inv cas 10:0:0x100001
2 inv read 11
3 inv cas 12:0:0x300001
crash
4 inv read 10
4 ret 0x100001
`, history.Strict)
	if err != nil || !res.Linearizable {
		t.Fatalf("%+v %v", res, err)
	}
	// The observed cas is completed; the pending read and the unobserved
	// cas are dropped; genesis plus two operations remain.
	if res.Completed != 1 || res.Dropped != 2 || res.Vertices != 3 {
		t.Fatalf("completed %d dropped %d vertices %d", res.Completed, res.Dropped, res.Vertices)
	}
}

// TestShortestCycleInComponent: the component's DFS root (line 1) lies
// only on a 3-cycle, but lines 2 and 5 form a 2-cycle; that one is shown.
func TestShortestCycleInComponent(t *testing.T) {
	res, err := check(t, `1 inv cas 11:0x200002:0x100001
2 inv cas 10:0:0x200001 11:0:0x200002
2 ret ok
1 ret ok
3 inv read 10
3 ret 0
`, history.Strict)
	if err != nil || res.Linearizable || len(res.Anomalies) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	ops := slices.Clone(res.Anomalies[0].Ops)
	slices.Sort(ops)
	if !slices.Equal(ops, []int64{2, 5}) {
		t.Fatalf("want the 2-cycle of lines 2 and 5, got %v", res.Anomalies[0].Ops)
	}
}

// TestCheckHistorySmallBuffers: CheckHistory reads a small history through
// buffers sized to it. It used to allocate a 1 MiB line buffer and, with
// workers, six 512 KiB chunks per call: most of the time of the
// differential tests and of shrink, which make thousands of calls.
func TestCheckHistorySmallBuffers(t *testing.T) {
	h, err := history.ReadAll(strings.NewReader("1 inv cas 1:0:5\n1 ret ok\n2 inv read 1\n2 ret 5\n"), "small")
	if err != nil {
		t.Fatal(err)
	}
	const calls = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range calls {
		if res, err := CheckHistory(context.Background(), h, Options{Workers: 2}); err != nil || !res.Linearizable {
			t.Fatalf("%v %+v", err, res)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > 256<<10 {
		t.Errorf("CheckHistory of a 4-line history allocated %d bytes per call", per)
	}
}
