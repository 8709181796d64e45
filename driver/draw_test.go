package driver

import (
	"math/rand/v2"
	"testing"
)

// TestDrawsMatchRand: the scheduler's draws are those of rand.Rand on the
// same PCG, value for value, interleaved as the scheduler makes them, for
// ranges that are powers of two or not, small or near 2^63 (where IntN's
// rejection loop draws again).
func TestDrawsMatchRand(t *testing.T) {
	for seed := range uint64(20) {
		d := newDraws(seed, 0x5ced)
		want := rand.New(rand.NewPCG(seed, 0x5ced))
		pick := rand.New(rand.NewPCG(seed, 7)) // which draw, and its range
		for i := range 20000 {
			if pick.IntN(3) == 0 {
				if g, w := d.float64(), want.Float64(); g != w {
					t.Fatalf("seed %d draw %d: Float64 %v, rand.Rand %v", seed, i, g, w)
				}
				continue
			}
			var n int
			switch pick.IntN(4) {
			case 0:
				n = 1 + pick.IntN(8)
			case 1:
				n = 1 << pick.IntN(63)
			case 2:
				n = 1<<62 + pick.IntN(1<<62) // rejections are likely
			default:
				n = 1 + pick.IntN(1<<20)
			}
			if g, w := d.intN(n), want.IntN(n); g != w {
				t.Fatalf("seed %d draw %d: IntN(%d) %d, rand.Rand %d", seed, i, n, g, w)
			}
		}
	}
}
