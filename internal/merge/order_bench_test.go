package merge

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkOrder merges 8 processes' steps, 1M in all, with a coarse
// clock (ties) and a crash every 10k steps (a stream each).
func BenchmarkOrder(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const procs, n = 8, 1 << 20
	var steps []Step
	streams := make([][]int32, procs)
	ts := make([]uint64, procs)
	for i := range n {
		if i%10000 == 9999 {
			steps = append(steps, Step{TS: uint64(i)*4 + 3, Proc: -1})
			streams = append(streams, []int32{int32(len(steps) - 1)})
			continue
		}
		p := rng.IntN(procs)
		ts[p] = max(ts[p], uint64(i)*4) + uint64(rng.IntN(2))
		steps = append(steps, Step{TS: ts[p], Proc: int32(p), Ret: len(streams[p])%2 == 1})
		streams[p] = append(streams[p], int32(len(steps)-1))
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := Order(steps, streams); err != nil {
			b.Fatal(err)
		}
	}
}
