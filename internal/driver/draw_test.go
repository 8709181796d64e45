package driver

import (
	"math/rand/v2"
	"slices"
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

// TestBelowMatchesFloat: below with belowBound(p) decides as Float64() < p
// on rand.Rand's stream, for the stick probabilities the scheduler uses,
// the extremes, random ones, and draws right at the bound (where a wrong
// rounding of the bound would show).
func TestBelowMatchesFloat(t *testing.T) {
	ps := []float64{0, 0.8, 0.95, 1, 0.5, 1.0 / 3, 0x1p-53, 1 - 0x1p-53}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		ps = append(ps, r.Float64())
	}
	for _, p := range ps {
		b := belowBound(p)
		d := newDraws(uint64(b), 0x5ced)
		want := rand.New(rand.NewPCG(uint64(b), 0x5ced))
		for i := range 2000 {
			if g, w := d.below(b), want.Float64() < p; g != w {
				t.Fatalf("p %v draw %d: below %v, Float64() < p %v", p, i, g, w)
			}
		}
		// The draws next to the bound, as Float64 maps them.
		for x := b - min(b, 2); x <= b+2 && x <= 1<<53; x++ {
			if g, w := x < b, float64(x)/(1<<53) < p; g != w {
				t.Fatalf("p %v: 53-bit draw %d below the bound %v, as a float %v", p, x, g, w)
			}
		}
	}
}

// TestShuffleAndInt64NMatchRand: the late-write policy's other draws,
// Shuffle and Int64N, are rand.Rand's on the same PCG, interleaved with
// the others.
func TestShuffleAndInt64NMatchRand(t *testing.T) {
	for seed := range uint64(50) {
		d := newDraws(seed, 0x1a7e)
		want := rand.New(rand.NewPCG(seed, 0x1a7e))
		for i := range 300 {
			n := i % 9
			a, b := make([]int, n), make([]int, n)
			for j := range n {
				a[j], b[j] = j, j
			}
			d.shuffle(n, func(i, j int) { a[i], a[j] = a[j], a[i] })
			want.Shuffle(n, func(i, j int) { b[i], b[j] = b[j], b[i] })
			if !slices.Equal(a, b) {
				t.Fatalf("seed %d shuffle %d: %v, rand.Rand %v", seed, i, a, b)
			}
			m := int64(1 + i*37)
			if g, w := int64(d.intN(int(m))), want.Int64N(m); g != w {
				t.Fatalf("seed %d draw %d: Int64N(%d) %d, rand.Rand %d", seed, i, m, g, w)
			}
			if g, w := d.float64(), want.Float64(); g != w {
				t.Fatalf("seed %d draw %d: Float64 %v, rand.Rand %v", seed, i, g, w)
			}
		}
	}
}
