package lin_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// linVerdict runs the checker on h in mode: linearizable or not, failing
// t on an error or an undecided answer.
func linVerdict(t *testing.T, h *model.History, mode history.Mode, opt lin.Options, where func() string) bool {
	t.Helper()
	opt.Mode = mode
	res, err := lin.Check(context.Background(), h, opt)
	if err != nil {
		t.Fatalf("%s, %v: lin.Check: %v\n%s", where(), mode, err, renderV2(h))
	}
	switch res.Verdict {
	case lin.Linearizable:
		return true
	case lin.Violation:
		return false
	}
	t.Fatalf("%s, %v: lin.Check is %v on a history of %d operations\n%s", where(), mode, res.Verdict, len(h.Ops), renderV2(h))
	return false
}

// TestOracleAgreement compares the checker with the brute force on random
// histories of every built-in model (kqueue included), with crashes, `?` and pending
// operations, in every mode: 3,000 per model by default (under -race a
// few seconds), 20,000 under PMLIN_LONG=1. A seed pair (i, model index)
// replays a history: genSeeded(model, index, i).
func TestOracleAgreement(t *testing.T) {
	n := testenv.Count(0, 3000, 20000)
	for mi, m := range bruteModels {
		var yes, modal [3]int
		for i := range n {
			h := genSeeded(m, mi, i)
			var b [3]bool
			for _, mode := range history.Modes {
				var err error
				if b[mode], err = bruteForce(h, mode); err != nil {
					t.Fatal(err)
				}
				where := func() string { return m + " seed (" + itoa(i) + ", " + itoa(mi) + ")" }
				if l := linVerdict(t, h, mode, lin.Options{}, where); l != b[mode] {
					t.Fatalf("%s, %v: lin says %v, the brute force %v\n%s", where(), mode, l, b[mode], renderV2(h))
				}
				if b[mode] {
					yes[mode]++
				}
			}
			if b[0] != b[1] {
				modal[0]++
			}
			if b[1] != b[2] {
				modal[1]++
			}
		}
		t.Logf("%-8s %d histories x 3 modes agree; linearizable strict %d, recoverable %d, durable %d; verdict differs strict/recoverable on %d, recoverable/durable on %d",
			m, n, yes[0], yes[1], yes[2], modal[0], modal[1])
	}
}

// TestOracleLinPorcupine compares the checker with Porcupine on larger
// crash-free histories (up to 16 operations, beyond the brute force).
func TestOracleLinPorcupine(t *testing.T) {
	n := testenv.Count(0, 1000, 20000)
	for mi, m := range genModels {
		yes := 0
		for i := range n {
			r := rand.New(rand.NewPCG(uint64(i), uint64(200+mi)))
			cfg := crashFree(genConfigFor(m, i))
			cfg.maxOps, cfg.procs = 16, 4
			h := genHistory(r, cfg)
			ops, _, err := porcHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			p := porcupine.CheckOperations(porcModel, ops)
			where := func() string { return m + " seed (" + itoa(i) + ", " + itoa(200+mi) + ")" }
			for _, mode := range history.Modes {
				if l := linVerdict(t, h, mode, lin.Options{}, where); l != p {
					t.Fatalf("%s, %v: lin says %v, Porcupine %v\n%s", where(), mode, l, p, renderV2(h))
				}
			}
			if p {
				yes++
			}
		}
		t.Logf("%-8s %d crash-free histories of up to 16 operations agree with Porcupine: %d linearizable, %d not", m, n, yes, n-yes)
		if yes == 0 || yes == n {
			t.Errorf("%s: one verdict only", m)
		}
	}
}
