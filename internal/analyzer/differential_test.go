package analyzer_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/porcmodel"
	"github.com/pmlin/pmlin/internal/testenv"
)

var (
	diffSeeds = flag.Int("diff.seeds", 0, "random histories per differential test, each checked in every mode (default 4000; 20000 with PMLIN_LONG=1)")
	diffStart = flag.Uint64("diff.start", 1, "first seed of the differential test")
)

// diffCount is the size of the differential campaigns (TestDifferential's;
// the others run a fraction of it). The default, which CI runs, finds a
// lost recoverable constraint (a cut-off cas's edge to its process's next
// operation dropped when that operation was cut off too) hundreds of times
// over; PMLIN_LONG=1 runs the campaign of docs/evidence.md.
func diffCount() int { return testenv.Count(*diffSeeds, 4000, 20000) }

// tally counts the outcomes of a differential run.
type tally struct {
	compared, linearizable, violations, assumption, undecided, tooLarge int
	porcupine                                                           int // crash-free ones also compared with Porcupine
	// Of the compared: on histories with a swap or a failure that reports
	// values, and with a swap cut off by a crash or by the end.
	swaps, cutSwaps int
	mismatches      []string
}

func (t *tally) String() string {
	return fmt.Sprintf("%d compared (%d linearizable, %d not; %d also with Porcupine; %d with swaps or failures that report values, %d with a cut-off swap), %d refused for an assumption, %d undecided, %d too large for the exact checker",
		t.compared, t.linearizable, t.violations, t.porcupine, t.swaps, t.cutSwaps, t.assumption, t.undecided, t.tooLarge)
}

// swapShape reports whether h has a swap or a failure that reports values,
// and whether it has a swap without a response.
func swapShape(h *history.History) (any, cutOff bool) {
	for _, op := range h.Ops {
		swap := op.Kind == history.Swap
		any = any || swap || op.Status == history.Failed && op.Values != nil
		cutOff = cutOff || swap && op.Status == history.Pending
	}
	return any, cutOff
}

// count records one comparison.
func (t *tally) count(h *history.History, linearizable bool) {
	t.compared++
	if linearizable {
		t.linearizable++
	} else {
		t.violations++
	}
	any, cutOff := swapShape(h)
	if any {
		t.swaps++
	}
	if cutOff {
		t.cutSwaps++
	}
}

// compare checks one history in one mode with both checkers.
func compare(t *testing.T, tl *tally, c histgen.Case, mode history.Mode) {
	ctx := context.Background()
	want, err := exact.Check(ctx, c.History, exact.Options{Mode: mode, MaxStates: 2_000_000})
	if errors.Is(err, exact.ErrTooLarge) {
		tl.tooLarge++
		return
	}
	if err != nil {
		t.Fatalf("%v: exact: %v", c, err)
	}
	got, err := analyzer.CheckHistory(ctx, c.History, analyzer.Options{Mode: mode})
	var ae *analyzer.AssumptionError
	var ue *analyzer.UndecidedError
	switch {
	case errors.As(err, &ae):
		tl.assumption++
		return
	case errors.As(err, &ue):
		tl.undecided++
		return
	case err != nil:
		t.Fatalf("%v: analyzer: %v", c, err)
	}
	tl.count(c.History, want.Linearizable)
	if ops, ok := porcmodel.Operations(c.History, mode); ok {
		tl.porcupine++
		if p := porcupine.CheckOperations(porcmodel.Model(c.History.InitValue), ops); p != got.Linearizable {
			tl.mismatches = append(tl.mismatches, fmt.Sprintf("%v, mode %s: analyzer says %v, Porcupine says %v\n%s",
				c, mode, got.Linearizable, p, histgen.Text(c.History)))
		}
	}
	if got.Linearizable != want.Linearizable {
		kinds := ""
		for _, a := range got.Anomalies {
			kinds += string(a.Kind) + ":" + a.Explanation + "\n"
		}
		tl.mismatches = append(tl.mismatches, fmt.Sprintf("%v, mode %s: analyzer says %v, exact says %v\n%s%s",
			c, mode, got.Linearizable, want.Linearizable, histgen.Text(c.History), kinds))
	}
}

// TestDifferential compares the graph verdict with the exact checker's on
// random small histories (2-6 processes, with and without crashes, pending
// operations at the end), generated linearizable and then mutated, in
// every mode; and, on the crash-free ones, with Porcupine's.
func TestDifferential(t *testing.T) {
	seeds := diffCount()
	var tl tally
	for s := *diffStart; s < *diffStart+uint64(seeds); s++ {
		c := histgen.RandomCase(histgen.RandomSmallConfig(s), s)
		for _, mode := range history.Modes {
			compare(t, &tl, c, mode)
		}
		if len(tl.mismatches) >= 5 {
			break
		}
	}
	t.Logf("differential: %s", &tl)
	for _, m := range tl.mismatches {
		t.Errorf("verdicts differ: %s", m)
	}
	if tl.violations < tl.compared/5 || tl.linearizable < tl.compared/5 {
		t.Errorf("unbalanced sample: %s", &tl)
	}
	checkSwapShare(t, tl.compared, tl.swaps, tl.cutSwaps)
}

// TestDifferentialCrashFree repeats the comparison on crash-free histories,
// where Porcupine is a second, independent oracle.
func TestDifferentialCrashFree(t *testing.T) {
	seeds := diffCount() / 2
	var tl tally
	for s := *diffStart; s < *diffStart+uint64(seeds); s++ {
		cfg := histgen.RandomSmallConfig(s)
		cfg.Crashes = 0
		c := histgen.RandomCase(cfg, s)
		compare(t, &tl, c, history.Strict)
		if len(tl.mismatches) >= 5 {
			break
		}
	}
	t.Logf("differential, crash-free: %s", &tl)
	for _, m := range tl.mismatches {
		t.Errorf("verdicts differ: %s", m)
	}
	if tl.porcupine < seeds*3/4 { // some mutations insert a crash
		t.Errorf("too few Porcupine comparisons: %s", &tl)
	}
}

// breakAssumption2 rewrites the expected value of one cas at one word to a
// value some other cas writes there (or the initial value), whether or not
// anybody read it first: the input the graph method may refuse. It returns
// false when the history has no such pair.
func breakAssumption2(h *history.History, rng *rand.Rand) bool {
	type write struct {
		op int
		v  uint64
	}
	byAddr := map[uint64][]write{}
	for i, op := range h.Ops {
		if op.Kind == history.CAS {
			for k, a := range op.Addrs {
				byAddr[a] = append(byAddr[a], write{i, op.New[k]})
			}
		}
	}
	var cas []int
	for i, op := range h.Ops {
		if op.Kind == history.CAS {
			cas = append(cas, i)
		}
	}
	if len(cas) == 0 {
		return false
	}
	i := cas[rng.IntN(len(cas))]
	op := &h.Ops[i]
	k := rng.IntN(len(op.Addrs))
	if op.Status == history.Failed && rng.IntN(4) != 0 {
		for j, a := range op.Addrs {
			if a == op.FailAddr {
				k = j
			}
		}
	}
	var cands []uint64
	for _, w := range byAddr[op.Addrs[k]] {
		if w.op != i {
			cands = append(cands, w.v)
		}
	}
	cands = append(cands, h.InitValue(op.Addrs[k]))
	op.Expected = append([]uint64(nil), op.Expected...)
	op.Expected[k] = cands[rng.IntN(len(cands))]
	return true
}

// TestDifferentialAssumption2 feeds histories whose cas may expect values
// never read: the analyzer may refuse them (exit 2), but whenever it
// decides, it must agree with the exact checker, which needs no assumption.
func TestDifferentialAssumption2(t *testing.T) {
	seeds := diffCount() / 2
	var tl tally
	rng := rand.New(rand.NewPCG(2, 2))
	for s := *diffStart; s < *diffStart+uint64(seeds); s++ {
		c := histgen.RandomCase(histgen.RandomSmallConfig(s), s)
		h, err := histgen.Reparse(c.History)
		if err != nil {
			t.Fatal(err)
		}
		if !breakAssumption2(h, rng) {
			continue
		}
		c.History = h
		for _, mode := range history.Modes {
			compare(t, &tl, c, mode)
		}
		if len(tl.mismatches) >= 5 {
			break
		}
	}
	t.Logf("differential, Assumption 2 broken: %s", &tl)
	for _, m := range tl.mismatches {
		t.Errorf("verdicts differ: %s", m)
	}
	if tl.compared < seeds {
		t.Errorf("too few decided: %s", &tl)
	}
}

// relabel maps every address to a large sparse one (beyond the analyzer's
// direct table) and every value v to v XOR key, with the initial value
// moved accordingly: a bijection that must not change any verdict.
func relabel(h *history.History, key uint64) *history.History {
	addr := func(a uint64) uint64 { return 1<<40 + a*4099 }
	val := func(v uint64) uint64 { return v ^ key }
	out := *h
	out.InitDefault = val(h.InitDefault)
	out.Init = map[uint64]uint64{}
	for a, v := range h.Init {
		out.Init[addr(a)] = val(v)
	}
	out.Ops = make([]history.Op, len(h.Ops))
	for i, op := range h.Ops {
		o := op
		mapAll := func(xs []uint64, f func(uint64) uint64) []uint64 {
			if xs == nil {
				return nil
			}
			ys := make([]uint64, len(xs))
			for k, x := range xs {
				ys[k] = f(x)
			}
			return ys
		}
		o.Addrs = mapAll(op.Addrs, addr)
		o.Expected, o.New, o.Values = mapAll(op.Expected, val), mapAll(op.New, val), mapAll(op.Values, val)
		if op.Status == history.Failed {
			o.FailAddr = addr(op.FailAddr)
		}
		out.Ops[i] = o
	}
	return &out
}

// TestRelabelledVerdicts checks that relabelling addresses and values
// changes no verdict, and that the exact checker agrees on the result.
func TestRelabelledVerdicts(t *testing.T) {
	seeds := diffCount() / 8
	var tl tally
	ctx := context.Background()
	for s := *diffStart; s < *diffStart+uint64(seeds); s++ {
		c := histgen.RandomCase(histgen.RandomSmallConfig(s), s)
		r := c
		r.History = relabel(c.History, 0x5a5a_0000_0000_1234+s)
		for _, mode := range history.Modes {
			a, errA := analyzer.CheckHistory(ctx, c.History, analyzer.Options{Mode: mode})
			b, errB := analyzer.CheckHistory(ctx, r.History, analyzer.Options{Mode: mode})
			if (errA == nil) != (errB == nil) || (errA == nil && a.Linearizable != b.Linearizable) {
				t.Fatalf("%v mode %s: relabelling changed the verdict: %v/%v -> %v/%v", c, mode, a != nil && a.Linearizable, errA, b != nil && b.Linearizable, errB)
			}
			compare(t, &tl, r, mode)
		}
	}
	t.Logf("relabelled: %s", &tl)
	for _, m := range tl.mismatches {
		t.Errorf("verdicts differ: %s", m)
	}
}

var bruteSeeds = flag.Int("brute.seeds", 0, "crash-chain histories compared with the brute force, each in every mode (default 3000; 20000 with PMLIN_LONG=1)")

// TestDifferentialBruteForce compares three checkers that share no code on
// tiny crash-heavy histories (histgen.CrashChainConfig: 2-4 crashes among
// at most 7 operations, with mutations that cut off a process's next
// operation after a cut-off cas): the definition-level brute force
// (bruteforce_test.go), the exact checker and the analyzer. It counts the
// recoverable-mode comparisons on histories with a crash, and how many of
// them have the chain the recoverable rule must follow: a completed cut-off
// cas whose process's next operation was cut off in turn.
func TestDifferentialBruteForce(t *testing.T) {
	seeds := testenv.Count(*bruteSeeds, 3000, 20000)
	ctx := context.Background()
	var compared, lin, recovCrash, chains, tooBig, refused, swaps, cutSwaps int
	var mismatches []string
	for s := *diffStart; s < *diffStart+uint64(seeds) && len(mismatches) < 5; s++ {
		c := histgen.RandomCase(histgen.CrashChainConfig(s), s)
		h := c.History
		for _, mode := range history.Modes {
			brute, ok := bruteLinearizable(h, mode)
			if !ok {
				tooBig++
				continue
			}
			ex, err := exact.Check(ctx, h, exact.Options{Mode: mode})
			if err != nil {
				t.Fatalf("%v: exact: %v", c, err)
			}
			got, err := analyzer.CheckHistory(ctx, h, analyzer.Options{Mode: mode})
			var ae *analyzer.AssumptionError
			var ue *analyzer.UndecidedError
			graph := "refused"
			switch {
			case errors.As(err, &ae), errors.As(err, &ue):
				refused++
			case err != nil:
				t.Fatalf("%v: analyzer: %v", c, err)
			default:
				graph = fmt.Sprint(got.Linearizable)
			}
			compared++
			if brute {
				lin++
			}
			if any, cutOff := swapShape(h); any {
				swaps++
				if cutOff {
					cutSwaps++
				}
			}
			if mode == history.Recoverable && len(h.Crashes) > 0 {
				recovCrash++
				if hasCutOffChain(h) {
					chains++
				}
			}
			if ex.Linearizable != brute || (graph != "refused" && graph != fmt.Sprint(brute)) {
				mismatches = append(mismatches, fmt.Sprintf("%v, mode %s: brute force %v, exact %v, analyzer %s\n%s",
					c, mode, brute, ex.Linearizable, graph, histgen.Text(h)))
			}
		}
	}
	t.Logf("brute force: %d compared (%d linearizable; %d with swaps or failures that report values, %d with a cut-off swap), %d recoverable-mode with crashes (%d with a cut-off chain), %d refused by the analyzer (assumption or undecided), %d over %d operations",
		compared, lin, swaps, cutSwaps, recovCrash, chains, refused, tooBig, bruteMaxOps)
	for _, m := range mismatches {
		t.Errorf("verdicts differ: %s", m)
	}
	if chains < recovCrash/10 || lin < compared/5 || compared-lin < compared/5 {
		t.Errorf("sample lacks chains or balance: %d compared, %d linearizable, %d recoverable with crashes, %d chains", compared, lin, recovCrash, chains)
	}
	checkSwapShare(t, compared, swaps, cutSwaps)
}

// checkSwapShare fails a differential run whose sample has too few
// histories with swaps or failures that report values, or with cut-off
// swaps (whose replaced values the analyzer must place or search).
func checkSwapShare(t *testing.T, compared, swaps, cutSwaps int) {
	t.Helper()
	if swaps < compared/3 || cutSwaps < compared/20 {
		t.Errorf("too few swaps: %d of %d comparisons have swaps or failures that report values, %d a cut-off swap", swaps, compared, cutSwaps)
	}
}

// hasCutOffChain reports whether some cas cut off by a crash has, as its
// process's next operation, one that was cut off by a later crash.
func hasCutOffChain(h *history.History) bool {
	for i, op := range h.Ops {
		if op.Kind == history.Read || op.Crash < 0 {
			continue
		}
		for j := i + 1; j < len(h.Ops); j++ {
			if h.Ops[j].Proc == op.Proc {
				if h.Ops[j].Crash >= 0 {
					return true
				}
				break
			}
		}
	}
	return false
}
