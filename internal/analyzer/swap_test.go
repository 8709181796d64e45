package analyzer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
)

// cutOffSwaps is a history of n multi-word swaps, all cut off by one crash
// and each observed after it at a word of its own (so all took effect), all
// sharing word 10: which replaced which at 10 is unknown, n! orders. A read
// of 10 just after the crash returns the initial value: in strict mode no
// order explains it (every swap took effect before the crash), in durable
// mode any does (they took effect after that read).
func cutOffSwaps(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d inv swap 10:%#x %d:%#x\n", i, i<<20|1, 20+i, i<<20|2)
	}
	b.WriteString("crash\n0 inv read 10\n0 ret 0\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "0 inv read %d\n0 ret %#x\n", 20+i, i<<20|2)
	}
	return b.String()
}

// TestCutOffSwapsUndecided: where the orders of cut-off swaps outnumber the
// budget, the answer is "undecided" with its reason, never a guess; with
// the budget they need, the verdict the exact checker gives.
func TestCutOffSwapsUndecided(t *testing.T) {
	text := cutOffSwaps(5) // 120 orders
	run := func(mode history.Mode, budget int) (*analyzer.Result, error) {
		r := history.NewReader(strings.NewReader(text), "swaps.hist", history.Options{})
		return analyzer.Check(context.Background(), r, analyzer.Options{Mode: mode, MaxEvaluations: budget})
	}
	_, err := run(history.Strict, 8)
	var ue *analyzer.UndecidedError
	if !errors.As(err, &ue) || ue.Line != 1 || !strings.Contains(ue.Msg, "swaps, whose replaced values are unknown") {
		t.Fatalf("budget 8: got %v, want undecided at line 1 naming the cut-off swaps", err)
	}
	res, err := run(history.Strict, 0)
	if err != nil || res.Linearizable {
		t.Fatalf("default budget, strict: %+v, %v; want not linearizable", res, err)
	}
	res, err = run(history.Durable, 8)
	if err != nil || !res.Linearizable {
		t.Fatalf("durable: %+v, %v; want linearizable (the first order passes)", res, err)
	}
	h, err := history.ReadAll(strings.NewReader(text), "swaps.hist")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []history.Mode{history.Strict, history.Durable} {
		ex, err := exact.Check(context.Background(), h, exact.Options{Mode: mode})
		if err != nil || ex.Linearizable != (mode == history.Durable) {
			t.Fatalf("exact, %v: %v, %v", mode, ex.Linearizable, err)
		}
	}
}

// TestSwapExplanations: explanations name swaps and failures that report
// values for what they are.
func TestSwapExplanations(t *testing.T) {
	tests := []struct {
		name, text string
		mode       history.Mode
		want       []string // parts of the first anomaly's explanation
	}{
		{"fork of swaps", "1 inv swap 10:0x100001\n1 ret 0\n2 inv swap 10:0x200001\n2 ret 0\n", history.Strict,
			[]string{"line 1 (process 1 swap) and line 3 (process 2 swap) both replaced 0 at address 10"}},
		{"stale failure", "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv cas 10:0x100001:0x200001\n2 ret fail 10 0\n", history.Strict,
			[]string{"line 3 (process 2 cas) read address 10 = 0, which line 1 (process 1 cas) replaced"}},
		{"contradiction", "1 inv cas 10:0:0x100001\n1 ret fail 10 0\n", history.Strict,
			[]string{"line 1 (process 1 cas) failed at address 10 expecting 0, yet reports having read 0 there", "contradicts itself"}},
		{"dangling swap", "1 inv swap 10:0x100001\n1 ret 77\n", history.Strict,
			[]string{"line 1 (process 1 swap) replaced address 10 = 77, a value nothing wrote there"}},
		// Strict: the swap took effect before the crash, yet after the cas
		// invoked after it, whose value it must have replaced.
		{"cut-off swap placed", "2 inv swap 10:0x200001\ncrash\n1 inv cas 10:0:0x100001\n1 ret ok\n3 inv read 10\n3 ret 0x200001\n", history.Strict,
			[]string{"line 1 (process 2 swap) must have replaced address 10 = 0x100001, written by line 3 (process 1 cas)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := analyzer.Analyze(context.Background(), history.NewReader(strings.NewReader(tc.text), "t", history.Options{}), analyzer.Options{Mode: tc.mode})
			if err != nil || a.Result.Linearizable {
				t.Fatalf("%v %v", a, err)
			}
			var all bytes.Buffer
			for _, an := range a.Result.Anomalies {
				all.WriteString(an.Explanation + "\n")
				for _, e := range an.Edges {
					all.WriteString(e.Reason + "\n")
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(all.String(), w) {
					t.Errorf("no %q in\n%s", w, all.String())
				}
			}
		})
	}
}
