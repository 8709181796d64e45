package histgen

import (
	"context"
	"testing"

	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
)

// TestExactAgrees compares package exact with this package's reference
// checker on Random's histories in every mode, and reports the share of
// linearizable histories exact finds.
func TestExactAgrees(t *testing.T) {
	t.Parallel()
	n := seeds(t, 1500)
	for _, m := range history.Modes {
		lin, total, disagree := 0, 0, 0
		for seed := range n {
			cfg := RandomSmallConfig(seed)
			cfg.Mode = m
			c := RandomCase(cfg, seed)
			for _, cm := range history.Modes {
				res, err := exact.Check(context.Background(), c.History, exact.Options{Mode: cm})
				if err != nil {
					t.Fatalf("%v: %v", c, err)
				}
				ref, _ := RefCheck(c.History, cm)
				if ref != res.Linearizable {
					disagree++
					if disagree <= 3 {
						t.Logf("%v: in %v exact says %v, RefCheck %v\n%s", c, cm, res.Linearizable, ref, Text(c.History))
					}
				}
				if cm == m {
					total++
					if res.Linearizable {
						lin++
					}
				}
			}
		}
		t.Logf("mode %-11v exact: linearizable %d/%d = %.2f; disagreements with RefCheck over all modes: %d", m, lin, total, float64(lin)/float64(total), disagree)
	}
}
