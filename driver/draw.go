package driver

import (
	"math/bits"
	"math/rand/v2"
)

// draws are the deterministic scheduler's draws from its PCG, made on the
// generator itself: the scheduler draws at every region access, and a
// rand.Rand reaches its source through an interface call that nothing
// inlines. Each draw is exactly the rand.Rand method it names (same values,
// same stream; TestDrawsMatchRand), so histories replay as before; on
// 32-bit platforms, where rand.Rand reduces small ranges another way, the
// rand.Rand itself is used.
type draws struct {
	pcg *rand.PCG
	rng *rand.Rand // rand.New(pcg): the same stream
}

func newDraws(seed, seq uint64) draws {
	p := rand.NewPCG(seed, seq)
	return draws{pcg: p, rng: rand.New(p)}
}

const is64bit = ^uint(0)>>32 != 0

// float64 is rand.Rand.Float64.
func (d draws) float64() float64 {
	if !is64bit {
		return d.rng.Float64()
	}
	return float64(d.pcg.Uint64()<<11>>11) / (1 << 53)
}

// intN is rand.Rand.IntN (n > 0).
func (d draws) intN(n int) int {
	if !is64bit {
		return d.rng.IntN(n)
	}
	m := uint64(n)
	if m&(m-1) == 0 {
		return int(d.pcg.Uint64() & (m - 1))
	}
	hi, lo := bits.Mul64(d.pcg.Uint64(), m)
	if lo < m {
		thresh := -m % m
		for lo < thresh {
			hi, lo = bits.Mul64(d.pcg.Uint64(), m)
		}
	}
	return int(hi)
}
