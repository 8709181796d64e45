package exact

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/porcmodel"
	"github.com/pmlin/pmlin/internal/testenv"
)

// porcupineConfigs make histories larger than the brute force can take.
var porcupineConfigs = []genConfig{
	{procs: 3, words: 3, values: 3, minOps: 6, maxOps: 14, maxK: 2, lie: 0.06},
	{procs: 4, words: 2, values: 3, minOps: 6, maxOps: 14, maxK: 2, lie: 0.06},
	{procs: 3, words: 4, values: 2, minOps: 8, maxOps: 16, maxK: 3, lie: 0.05},
	{procs: 3, words: 3, values: 3, minOps: 6, maxOps: 12, maxK: 2, crash: 0.05, lie: 0.05, late: 0.3},
	{procs: 4, words: 2, values: 2, minOps: 6, maxOps: 12, maxK: 1, crash: 0.1, late: 0.3},
}

// TestAgainstPorcupine compares Check with Porcupine, a second oracle, on
// histories of up to 16 ops: in every mode when it has no crash, and with
// crashes in the modes whose constraints are intervals.
func TestAgainstPorcupine(t *testing.T) {
	n := testenv.Count(0, 6000, 30000)
	r := rand.New(rand.NewPCG(3, 4))
	var yes, no, compared, crashed, skipped int
	for i := range n {
		h := genHistory(r, porcupineConfigs[i%len(porcupineConfigs)])
		model := porcmodel.Model(h.InitValue)
		for _, mode := range history.Modes {
			ops, ok := porcmodel.Operations(h, mode)
			if !ok {
				skipped++
				continue
			}
			res, err := Check(context.Background(), h, Options{Mode: mode})
			if err != nil {
				t.Fatalf("history %d: %v", i, err)
			}
			compared++
			if len(h.Crashes) > 0 {
				crashed++
			}
			if p := porcupine.CheckOperations(model, ops); p != res.Linearizable {
				t.Fatalf("history %d, %v: Check says %v, Porcupine %v\n%s", i, mode, res.Linearizable, p, text(h))
			}
			if res.Linearizable {
				yes++
				if err := Validate(h, mode, res.Order); err != nil {
					t.Fatalf("history %d, %v: %v\n%s", i, mode, err, text(h))
				}
			} else {
				no++
			}
		}
	}
	t.Logf("%d histories, %d (history, mode) pairs compared (%d with crashes): %d linearizable, %d not; %d recoverable pairs skipped",
		n, compared, crashed, yes, no, skipped)
	if yes < compared/10 || no < compared/10 {
		t.Errorf("verdicts too lopsided: %d yes, %d no", yes, no)
	}
}
