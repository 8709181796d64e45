package pmlin_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

// large is a linearizable history of n operations on the word array (8
// processes, 1,000 words, 1 to 3 words an operation, a crash every 10,000
// invocations), as a History whose timestamps are the event positions.
func large(tb testing.TB, n int) pmlin.History {
	tb.Helper()
	var text bytes.Buffer
	cfg := histgen.LargeConfig{Ops: n, Procs: 8, Words: 1000, K: 3, ReadFraction: 0.3, CrashEvery: 10000}
	if _, err := histgen.WriteLarge(&text, cfg, 1); err != nil {
		tb.Fatal(err)
	}
	h, err := history.ReadAll(&text, "large")
	if err != nil {
		tb.Fatal(err)
	}
	return fromHistory(h)
}

// fromHistory is h as a History of the Go API, each event's position its
// timestamp (so no two steps tie).
func fromHistory(h *history.History) pmlin.History {
	api := pmlin.History{Init: h.InitDefault, InitWords: h.Init}
	for _, c := range h.Crashes {
		api.Crashes = append(api.Crashes, int64(c))
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		o := pmlin.Operation{Process: int(op.Proc), Kind: op.Kind, Addrs: op.Addrs, Expected: op.Expected, New: op.New,
			Call: int64(op.Inv), Return: int64(op.Ret), Values: op.Values, FailAddr: op.FailAddr}
		switch op.Status {
		case history.Pending:
			o.Outcome, o.Return = pmlin.Pending, 0
		case history.Returned:
			o.Outcome = pmlin.Returned
		case history.Succeeded:
			o.Outcome = pmlin.OK
		case history.Failed:
			o.Outcome = pmlin.Failed
		}
		api.Operations = append(api.Operations, o)
	}
	return api
}

// BenchmarkCheck is Check of a linearizable history of 100,000
// operations, from the caller's operations to the verdict.
func BenchmarkCheck(b *testing.B) {
	h := large(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res, err := pmlin.Check(context.Background(), h, pmlin.Options{})
		if err != nil || !res.Linearizable {
			b.Fatal(err, res)
		}
	}
}

// TestCheckAllocations: Check of 20,000 operations makes a few hundred
// allocations, not a few per operation: it records the operations as
// events in one growing block (a history.Recording) that the analyzer
// reads in place, and renders no line of text, formats no value and
// parses nothing back (rendering the text took about 18 per operation).
func TestCheckAllocations(t *testing.T) {
	h := large(t, 20_000)
	allocs := testing.AllocsPerRun(2, func() {
		if res, err := pmlin.Check(context.Background(), h, pmlin.Options{}); err != nil || !res.Linearizable {
			t.Fatal(err, res)
		}
	})
	if allocs > 2_000 {
		t.Fatalf("%.0f allocations for %d operations", allocs, len(h.Operations))
	}
	t.Logf("%.0f allocations for %d operations", allocs, len(h.Operations))
}
