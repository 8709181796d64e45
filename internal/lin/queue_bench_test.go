package lin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/model"
)

// BenchmarkQueueEngine checks legal histories of a unique-value queue
// (genUniqueQueue: half the operations deq, no lie; 8 processes, nearly
// always all in flight, and 3) by the queue engine at up to 1M
// operations, and by the generic search (forced) and Porcupine (its
// fastest queue model, benchPorcupine) from 100 to 3,000 operations,
// where they stop finishing, in one run:
//
//	go test -run '^$' -bench BenchmarkQueueEngine -benchtime 1x -timeout 30m ./internal/lin/
//
// A check that does not answer (budget, Porcupine's 30 s timeout) is
// reported, not timed as an answer.
func BenchmarkQueueEngine(b *testing.B) {
	type key struct{ procs, n int }
	hist := map[key]*model.History{}
	get := func(procs, n int) *model.History {
		if hist[key{procs, n}] == nil {
			hist[key{procs, n}] = genUniqueQueue(rand.New(rand.NewPCG(uint64(n), 32)), n, procs, 0.5, 0, 0)
		}
		return hist[key{procs, n}]
	}
	for _, c := range []struct {
		procs  int
		engine string
		sizes  []int
	}{
		{8, "queue", []int{100, 1_000, 100_000, 1_000_000}},
		{8, "exact", []int{100, 300, 1_000, 3_000}},
		{8, "porcupine", []int{100, 300, 1_000, 3_000}},
		{3, "queue", []int{100, 1_000, 100_000, 1_000_000}},
		{3, "exact", []int{100, 300, 1_000, 3_000}},
		{3, "porcupine", []int{100, 300, 1_000, 3_000}},
	} {
		for _, n := range c.sizes {
			b.Run(fmt.Sprintf("p%d/%s/%d", c.procs, c.engine, n), func(b *testing.B) {
				h := get(c.procs, n)
				for range b.N {
					switch c.engine {
					case "porcupine":
						m, convert := benchPorcupine("queue-gen")
						ops := convert(h)
						res := porcupine.CheckOperationsTimeout(m, ops, 30*time.Second)
						if res != porcupine.Ok {
							b.Logf("porcupine: %v on %d operations", res, n)
						}
					default:
						res, err := lin.Check(context.Background(), h, lin.Options{Engine: c.engine})
						if err != nil {
							b.Fatal(err)
						}
						if res.Verdict != lin.Linearizable || res.Objects[0].Engine != c.engine {
							b.Logf("%s: %v (%s) by %s on %d operations", c.engine, res.Verdict, res.Objects[0].Reason, res.Objects[0].Engine, n)
						}
					}
				}
			})
		}
	}
}
