package pmlin_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

// TestUndecidedDecidedExactly: Check leaves no small history undecided
// that the exact search can decide. Random crash-heavy histories with
// swaps (20 operations of 4 processes on 2 words, 8 crashes), in every
// mode and with ties between processes: each gets a verdict that agrees
// with histgen.RefCheck (an exhaustive search sharing no code with the
// graph method or the exact search), Engine says which method answered,
// and an exact verdict not linearizable names a witness and says why the
// graph method did not decide.
func TestUndecidedDecidedExactly(t *testing.T) {
	seeds := uint64(300)
	if raceEnabled {
		seeds = 50 // each history the graph method gives up on takes it 4096 evaluations
	}
	cfg := histgen.SmallConfig{Procs: 4, Ops: 20, Words: 2, MaxK: 2, ReadFraction: 0.3, Crashes: 8, PendingAtEnd: true, Swaps: 0.8}
	engines := map[string]int{}
	for _, mode := range history.Modes {
		for seed := range seeds {
			c := cfg
			c.Mode = mode
			api, th, _ := withTimestamps(histgen.Random(c, seed), rand.New(rand.NewPCG(seed, 10)))
			res, err := pmlin.Check(context.Background(), api, pmlin.Options{Mode: mode})
			if ae := (*analyzer.AssumptionError)(nil); errors.As(err, &ae) {
				continue // a mutation may break one
			}
			if err != nil {
				t.Fatalf("seed %d, %v: %v", seed, mode, err)
			}
			ref, err := histgen.RefCheck(th, mode)
			if err != nil {
				t.Fatal(err)
			}
			if res.Linearizable != ref {
				t.Fatalf("seed %d, %v: Check says linearizable %v (engine %s), RefCheck %v", seed, mode, res.Linearizable, res.Engine, ref)
			}
			engines[res.Engine]++
			if res.Engine != "exact" {
				continue
			}
			var text bytes.Buffer
			if err := res.WriteReport(&text); err != nil || !strings.Contains(text.String(), "the graph method left it undecided") ||
				!res.Linearizable && len(res.Witness) == 0 || len(res.Anomalies) != 0 {
				t.Fatalf("seed %d, %v: exact verdict %+v, report %v:\n%s", seed, mode, res, err, text.String())
			}
			for _, i := range res.Witness {
				if i < 0 || i >= len(api.Operations) {
					t.Fatalf("seed %d, %v: witness %v", seed, mode, res.Witness)
				}
			}
		}
	}
	t.Logf("verdicts by engine: %v", engines)
}
