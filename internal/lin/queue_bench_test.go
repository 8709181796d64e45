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

// BenchmarkQueueEngine checks one legal history of a unique-value queue
// (genUniqueQueue: 8 processes, half the operations deq, no lie) by the
// queue engine at 100k and 1M operations, and by the generic search
// (forced) and Porcupine (its fastest queue model, benchPorcupine) at the
// sizes they finish, in one run:
//
//	go test -run '^$' -bench BenchmarkQueueEngine -benchtime 1x -timeout 30m ./internal/lin/
//
// A check that does not answer (budget, Porcupine's 30 s timeout) is
// reported, not timed as an answer.
func BenchmarkQueueEngine(b *testing.B) {
	hist := map[int]*model.History{}
	get := func(n int) *model.History {
		if hist[n] == nil {
			hist[n] = genUniqueQueue(rand.New(rand.NewPCG(uint64(n), 32)), n, 8, 0.5, 0, 0)
		}
		return hist[n]
	}
	for _, c := range []struct {
		engine string
		sizes  []int
	}{
		{"queue", []int{100, 300, 1_000, 100_000, 1_000_000}},
		{"exact", []int{100, 300, 1_000}},
		{"porcupine", []int{100, 300, 1_000}},
	} {
		for _, n := range c.sizes {
			b.Run(fmt.Sprintf("%s/%d", c.engine, n), func(b *testing.B) {
				h := get(n)
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
						res, err := lin.Check(context.Background(), h, lin.Options{Generic: c.engine == "exact"})
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
