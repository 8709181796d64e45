package exact

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// benchHistory is a random 100-op history of a correct word array with
// crashes: 8 processes, 3 words, repeated values. The search goes nearly
// straight to a linearization: this measures the cost per op.
func benchHistory() *history.History {
	r := rand.New(rand.NewPCG(1, 100))
	return genHistory(r, genConfig{procs: 8, words: 3, values: 4, minOps: 100, maxOps: 100,
		maxK: 2, crash: 0.02, complete: true})
}

// hardHistory is an adversarial 100-op history: 5 rounds, each of 16
// concurrent cas ops on 16 words (round r moves every word from r to r+1)
// followed by 4 reads of 5 words each, overlapping in a ring so that
// the words form one component. The last read is wrong, so the search must try every subset of
// every round's cas ops: about 5 * 2^16 states. This measures states/s.
func hardHistory(t testing.TB) *history.History {
	var b strings.Builder
	for r := range 5 {
		for p := range 16 {
			fmt.Fprintf(&b, "%d inv cas %d:%d:%d\n", p, p, r, r+1)
		}
		for p := range 16 {
			fmt.Fprintf(&b, "%d ret ok\n", p)
		}
		for k := range 4 {
			v := r + 1
			if r == 4 && k == 3 {
				v = r // wrong: every cas of the round has returned
			}
			fmt.Fprintf(&b, "99 inv read %d %d %d %d %d\n99 ret %d %d %d %d %d\n",
				4*k, 4*k+1, 4*k+2, 4*k+3, (4*k+4)%16, r+1, r+1, r+1, r+1, v)
		}
	}
	return parse(t, b.String())
}

func benchmarkCheck(b *testing.B, h *history.History, mode history.Mode, want bool) {
	states := 0
	var res Result
	for b.Loop() {
		var err error
		res, err = Check(context.Background(), h, Options{Mode: mode})
		if err != nil {
			b.Fatal(err)
		}
		if res.Linearizable != want {
			b.Fatalf("linearizable = %v", res.Linearizable)
		}
		states += res.States
	}
	b.ReportMetric(float64(res.States), "states/op")
	b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
}

func BenchmarkCheck100(b *testing.B) {
	h := benchHistory()
	for _, mode := range history.Modes {
		b.Run(mode.String(), func(b *testing.B) { benchmarkCheck(b, h, mode, true) })
	}
}

func BenchmarkCheck100Hard(b *testing.B) {
	benchmarkCheck(b, hardHistory(b), history.Strict, false)
}
