package pmlin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/porcmodel"
)

func read(p int, call, ret int64, addrs []uint64, values ...uint64) pmlin.Operation {
	return pmlin.Operation{Process: p, Kind: pmlin.Read, Addrs: addrs, Call: call, Return: ret, Outcome: pmlin.Returned, Values: values}
}

func cas(p int, call, ret int64, addr, expected, new uint64, out pmlin.Outcome) pmlin.Operation {
	return pmlin.Operation{Process: p, Kind: pmlin.CAS, Addrs: []uint64{addr}, Expected: []uint64{expected}, New: []uint64{new},
		Call: call, Return: ret, Outcome: out, FailAddr: addr}
}

func check(t *testing.T, h pmlin.History, mode pmlin.Mode) *pmlin.Result {
	t.Helper()
	res, err := pmlin.Check(context.Background(), h, pmlin.Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTiesInvocationsFirst: between processes, an operation that returns
// at t and one called at t overlap (closed intervals, as in Porcupine);
// one process's own operations keep their order on a tie.
func TestTiesInvocationsFirst(t *testing.T) {
	// Process 1 writes 7 over [0, 5]; process 2 reads 0 over [5, 10]: they
	// overlap, so the read may come first.
	h := pmlin.History{Operations: []pmlin.Operation{cas(1, 0, 5, 1, 0, 7, pmlin.OK), read(2, 5, 10, []uint64{1}, 0)}}
	if res := check(t, h, pmlin.Strict); !res.Linearizable {
		t.Fatalf("a tie made an order: %+v", res.Anomalies)
	}
	// Called at 6, the read comes after the write: stale.
	h.Operations[1].Call = 6
	res := check(t, h, pmlin.Strict)
	if res.Linearizable || len(res.Anomalies) != 1 || !sameInts(res.Anomalies[0].Ops, []int{1, 0}) && !sameInts(res.Anomalies[0].Ops, []int{0, 1}) {
		t.Fatalf("%+v", res.Anomalies)
	}
	// The same process: the read at 5 comes after its own write that
	// returned at 5 (not an ill-formed invocation while pending).
	h.Operations[1] = read(1, 5, 10, []uint64{1}, 0)
	if res := check(t, h, pmlin.Strict); res.Linearizable {
		t.Fatal("a process's own order was not kept on a tie")
	}
	// Listed in any order, the operations are ordered by their timestamps.
	h.Operations[0], h.Operations[1] = h.Operations[1], h.Operations[0]
	res = check(t, h, pmlin.Strict)
	if res.Linearizable || res.Line(1) >= res.Line(0) {
		t.Fatalf("lines %d %d", res.Line(0), res.Line(1))
	}
}

// TestCoarseClock: a tie group with one process that returns and calls
// again at its timestamp is merged with that call before the other
// process's return; with two such processes no order is honest, and Check
// refuses the history (a checker that merged them in some order would have
// called such a history NOT LINEARIZABLE).
func TestCoarseClock(t *testing.T) {
	// Process 1 reads 0 over [5, 10] and again over [10, 20]; process 0
	// writes 5 over [10, 10]: the second read may come before the write.
	h := pmlin.History{Operations: []pmlin.Operation{read(1, 5, 10, []uint64{1}, 0), read(1, 10, 20, []uint64{1}, 0), cas(0, 10, 10, 1, 0, 5, pmlin.OK)}}
	if res := check(t, h, pmlin.Strict); !res.Linearizable {
		t.Fatalf("the merge put the write's return before the read's call: %+v", res.Anomalies)
	}
	// Every step at 10: each process returns and calls again there.
	h = pmlin.History{Operations: []pmlin.Operation{
		cas(0, 10, 10, 1, 0, 5, pmlin.OK), read(0, 10, 10, []uint64{1}, 5),
		read(1, 10, 10, []uint64{1}, 0), read(1, 10, 10, []uint64{1}, 0)}}
	_, err := pmlin.Check(context.Background(), h, pmlin.Options{})
	var pe *pmlin.Error
	if !errors.As(err, &pe) || !errors.Is(err, pmlin.ErrCoarseClock) || errors.Is(err, pmlin.ErrMalformed) || pe.Op < 0 ||
		!strings.Contains(err.Error(), "at timestamp 10, as process 0 does (operation 0's response): which of their operations came first is unknown") {
		t.Fatalf("got %v", err)
	}
	if _, err := h.WriteTo(&bytes.Buffer{}); !errors.Is(err, pmlin.ErrCoarseClock) {
		t.Fatalf("WriteTo: %v", err)
	}
}

func sameInts(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestCrashes: a cas cut off by a crash is Pending; the modes tell how
// late it may take effect.
func TestCrashes(t *testing.T) {
	h := pmlin.History{
		Operations: []pmlin.Operation{
			{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{10}, Expected: []uint64{0}, New: []uint64{0x100001}, Call: 1, Outcome: pmlin.Pending},
			read(2, 3, 4, []uint64{10}, 0),
			read(2, 5, 6, []uint64{10}, 0x100001),
		},
		Crashes: []int64{2},
	}
	if res := check(t, h, pmlin.Strict); res.Linearizable {
		t.Fatal("strict: the cut-off cas took effect after the crash")
	}
	if res := check(t, h, pmlin.Recoverable); !res.Linearizable {
		t.Fatalf("recoverable: %+v", res.Anomalies)
	}
	var text bytes.Buffer
	if _, err := h.WriteTo(&text); err != nil {
		t.Fatal(err)
	}
	want := "pmlin-history v1\n1 inv cas 10:0:0x100001  # op 0\ncrash  # crash 0\n2 inv read 10  # op 1\n2 ret 0\n2 inv read 10  # op 2\n2 ret 0x100001\n"
	if text.String() != want {
		t.Fatalf("text:\n%s\nwant:\n%s", text.String(), want)
	}
}

// TestSwapsAndValuedFailures: swaps and failures that report values go
// through Check like the other kinds: the paper's Figure 10 (two swaps
// replaced one value) is a fork naming both swaps, and a failure that
// reports what it read is judged by it.
func TestSwapsAndValuedFailures(t *testing.T) {
	swap := func(p int, call, ret int64, addr, new, old uint64) pmlin.Operation {
		return pmlin.Operation{Process: p, Kind: pmlin.Swap, Addrs: []uint64{addr}, New: []uint64{new},
			Call: call, Return: ret, Outcome: pmlin.Returned, Values: []uint64{old}}
	}
	h := pmlin.History{Operations: []pmlin.Operation{
		swap(0, 0, 1, 10, 0x100000001, 0),
		swap(0, 2, 4, 10, 0x100000002, 0x100000001),
		swap(1, 3, 5, 10, 0x200000001, 0x100000001), // stale: the fork
	}}
	res := check(t, h, pmlin.Strict)
	if res.Linearizable || len(res.Anomalies) != 1 || res.Anomalies[0].Kind != "fork" || !sameInts(res.Anomalies[0].Ops, []int{1, 2}) {
		t.Fatalf("Figure 10: %+v", res.Anomalies)
	}
	h.Operations[2].Values[0] = 0x100000002 // it saw the second swap: fine
	if res := check(t, h, pmlin.Strict); !res.Linearizable {
		t.Fatalf("%+v", res.Anomalies)
	}
	fail := cas(2, 6, 7, 10, 0x100000001, 0x300000001, pmlin.Failed)
	fail.Values = []uint64{0x200000001}
	h.Operations = append(h.Operations, fail)
	if res := check(t, h, pmlin.Strict); !res.Linearizable {
		t.Fatalf("a failure that reports the current value: %+v", res.Anomalies)
	}
	h.Operations[3].Values[0] = 0x100000002 // replaced before it was called
	if res := check(t, h, pmlin.Strict); res.Linearizable {
		t.Fatal("a failure that reports a stale value passed")
	}
}

// TestErrorsNameTheOperation: a history that cannot be judged gets an
// *Error naming the caller's operation (or crash), with the cause.
func TestErrorsNameTheOperation(t *testing.T) {
	ok := cas(1, 0, 1, 1, 0, 5, pmlin.OK)
	tests := []struct {
		name  string
		h     pmlin.History
		op    int
		crash int
		is    error
		msg   string
	}{
		{"empty", pmlin.History{}, -1, -1, pmlin.ErrIllFormed, "no operation"},
		{"no outcome", pmlin.History{Operations: []pmlin.Operation{ok, {Process: 2, Kind: pmlin.Read, Addrs: []uint64{1}, Call: 3, Return: 4, Values: []uint64{5}}}}, 1, -1, pmlin.ErrIllFormed, "cannot end Outcome(0)"},
		{"overlap", pmlin.History{Operations: []pmlin.Operation{ok, read(1, 0, 3, []uint64{1}, 5)}}, 1, -1, pmlin.ErrIllFormed, "process 1 calls it at 0 while its operation 0"},
		{"pending then more", pmlin.History{Operations: []pmlin.Operation{{Process: 1, Kind: pmlin.Read, Addrs: []uint64{1}, Call: 0, Outcome: pmlin.Pending}, read(1, 2, 3, []uint64{1}, 0)}}, 1, -1, pmlin.ErrIllFormed, "is pending with no crash between"},
		{"returns after a crash", pmlin.History{Operations: []pmlin.Operation{read(1, 0, 3, []uint64{1}, 0)}, Crashes: []int64{2}}, 0, -1, pmlin.ErrIllFormed, "after a crash that came during it"},
		{"crash tie", pmlin.History{Operations: []pmlin.Operation{ok}, Crashes: []int64{1}}, 0, -1, pmlin.ErrIllFormed, "returns at 1, the timestamp of crash 0"},
		{"two crashes at once", pmlin.History{Operations: []pmlin.Operation{ok}, Crashes: []int64{7, 7}}, -1, 1, pmlin.ErrIllFormed, "timestamp 7 of crash 0"},
		{"blamed address", pmlin.History{Operations: []pmlin.Operation{{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{1}, Expected: []uint64{0}, New: []uint64{5}, Return: 1, Outcome: pmlin.Failed, FailAddr: 9}}}, 0, -1, pmlin.ErrIllFormed, "fails at address 9"},
		{"values", pmlin.History{Operations: []pmlin.Operation{read(1, 0, 1, []uint64{1, 2}, 0)}}, 0, -1, pmlin.ErrIllFormed, "returns 1 values"},
		{"return before call", pmlin.History{Operations: []pmlin.Operation{read(1, 5, 1, []uint64{1}, 0)}}, 0, -1, pmlin.ErrIllFormed, "returns at 1, before its call at 5"},
		{"valued failure, values missing", pmlin.History{Operations: []pmlin.Operation{{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{1, 2}, Expected: []uint64{3, 0}, New: []uint64{5, 6}, Return: 1, Outcome: pmlin.Failed, FailAddr: 1, Values: []uint64{0}}}}, 0, -1, pmlin.ErrIllFormed, "fails reporting 1 values"},
		{"swap ends ok", pmlin.History{Operations: []pmlin.Operation{{Process: 1, Kind: pmlin.Swap, Addrs: []uint64{1}, New: []uint64{5}, Return: 1, Outcome: pmlin.OK}}}, 0, -1, pmlin.ErrIllFormed, "a swap cannot end ok"},
		// Found by the analyzer, in the text: mapped back to the operation.
		{"assumption 1", pmlin.History{Operations: []pmlin.Operation{ok, cas(2, 2, 3, 1, 0, 5, pmlin.OK)}}, 1, -1, nil, "breaks Assumption 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pmlin.Check(context.Background(), tc.h, pmlin.Options{})
			var e *pmlin.Error
			if !errors.As(err, &e) {
				t.Fatalf("%v: not an *Error", err)
			}
			if e.Op != tc.op || e.Crash != tc.crash || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %+v (%v)", e, err)
			}
			if tc.name == "assumption 1" {
				if !errors.Is(err, pmlin.ErrAssumption) || errors.Is(err, pmlin.ErrUndecided) || !strings.HasPrefix(err.Error(), "operation 1: ") {
					t.Fatalf("%v", err)
				}
			}
		})
	}
}

// TestAgreesWithPorcupine: on random small histories (histgen, linearizable
// or not), given coarse timestamps so that steps of different processes
// tie, Check's verdict is Porcupine's on the same operations and
// timestamps: an independent oracle with closed intervals and no merge of
// its own. Its anomalies name operations that exist and touch the
// anomaly's words.
func TestAgreesWithPorcupine(t *testing.T) {
	cfg := histgen.DefaultSmall()
	cfg.Crashes = 1
	cases, ties := 0, 0
	for seed := range uint64(400) {
		h := histgen.Random(cfg, seed)
		api, th, n := withTimestamps(h, rand.New(rand.NewPCG(seed, 9)))
		ties += n
		for _, mode := range []pmlin.Mode{pmlin.Strict, pmlin.Durable} {
			ops, ok := porcmodel.Operations(th, mode)
			if !ok {
				continue
			}
			cases++
			want := porcupine.CheckOperations(porcmodel.Model(th.InitValue), ops)
			res, err := pmlin.Check(context.Background(), api, pmlin.Options{Mode: mode})
			if errors.Is(err, pmlin.ErrAssumption) {
				continue // the method cannot decide; covered by the analyzer's own tests
			}
			if err != nil {
				t.Fatalf("seed %d %v: %v", seed, mode, err)
			}
			if res.Linearizable != want {
				var text bytes.Buffer
				api.WriteTo(&text)
				t.Fatalf("seed %d %v: pmlin %v, Porcupine %v\n%s", seed, mode, res.Linearizable, want, text.String())
			}
			for _, a := range res.Anomalies {
				for _, i := range a.Ops {
					if i < 0 || i >= len(api.Operations) || !touches(api.Operations[i], a.Words) {
						t.Fatalf("seed %d: anomaly %+v names operation %d", seed, a, i)
					}
				}
			}
		}
	}
	if cases < 500 || ties < 100 {
		t.Fatalf("%d cases, %d ties: too few", cases, ties)
	}
}

// withTimestamps gives h's events timestamps that tie between processes
// (never within one, and never with a crash), shuffles its operations, and
// returns it as a pmlin.History, the same history with those timestamps as
// event positions (for porcmodel), and the number of ties.
func withTimestamps(h *history.History, rng *rand.Rand) (pmlin.History, *history.History, int) {
	ts := make([]int64, h.Events)
	procAt := map[int32]bool{}
	kind := make([]int32, h.Events) // the process of each event, -1 crash
	for i := range kind {
		kind[i] = -2
	}
	for _, c := range h.Crashes {
		kind[c] = -1
	}
	for i := range h.Ops {
		kind[h.Ops[i].Inv] = h.Ops[i].Proc
		if h.Ops[i].Ret >= 0 {
			kind[h.Ops[i].Ret] = h.Ops[i].Proc
		}
	}
	cur, ties := int64(10), 0
	prevCrash := false
	for pos := range ts {
		p := kind[pos]
		if p == -1 || prevCrash || procAt[p] || rng.IntN(2) == 0 {
			cur++
			clear(procAt)
		} else if pos > 0 {
			ties++
		}
		prevCrash = p == -1
		procAt[p] = true
		ts[pos] = cur
	}
	th := *h
	th.Ops = append([]history.Op(nil), h.Ops...)
	th.Crashes = nil
	var api pmlin.History
	api.Init, api.InitWords = h.InitDefault, h.Init
	for _, c := range h.Crashes {
		th.Crashes = append(th.Crashes, int(ts[c]))
		api.Crashes = append(api.Crashes, ts[c])
	}
	th.Events = int(cur) + 1
	for i := range th.Ops {
		op := &th.Ops[i]
		o := pmlin.Operation{Process: int(op.Proc), Kind: op.Kind, Addrs: op.Addrs, Expected: op.Expected, New: op.New,
			Call: ts[op.Inv], Values: op.Values, FailAddr: op.FailAddr}
		op.Inv = int(ts[op.Inv])
		switch op.Status {
		case history.Pending:
			o.Outcome = pmlin.Pending
		case history.Returned:
			o.Outcome = pmlin.Returned
		case history.Succeeded:
			o.Outcome = pmlin.OK
		case history.Failed:
			o.Outcome = pmlin.Failed
		}
		if op.Ret >= 0 {
			o.Return = ts[op.Ret]
			op.Ret = int(ts[op.Ret])
		}
		api.Operations = append(api.Operations, o)
	}
	rng.Shuffle(len(api.Operations), func(i, j int) { api.Operations[i], api.Operations[j] = api.Operations[j], api.Operations[i] })
	return api, &th, ties
}

func touches(o pmlin.Operation, words []uint64) bool {
	for _, w := range words {
		for _, a := range o.Addrs {
			if a == w {
				return true
			}
		}
	}
	return len(words) == 0
}
