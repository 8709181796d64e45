package driver

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// draws are the deterministic scheduler's draws: the stream of
// rand.New(rand.NewPCG(seed, seq)), value for value (TestDrawsMatchRand),
// so that histories replay as they did, but from a generator held by
// value and small enough to be inlined. The scheduler draws at every
// region access, thirty thousand times a fuzz run; through a rand.Rand
// each draw was an interface call, and through a *rand.PCG still a call
// and a pointer away, about 7 % of a run's instructions.
//
// The generator is the one rand.PCG implements, as published by its
// author (M. E. O'Neill, PCG, with the DXSM output function): a 128-bit
// linear congruential state, hi and lo, advanced by the multiplier and
// increment below, and each 64-bit output taken from the new state by the
// DXSM permutation. rand.NewPCG(seed1, seed2) starts from hi = seed1, lo =
// seed2.
type draws struct{ hi, lo uint64 }

const (
	pcgMulHi   = 0x2360ed051fc65da4
	pcgMulLo   = 0x4385df649fccf645
	pcgIncHi   = 0x5851f42d4c957f2d
	pcgIncLo   = 0x14057b7ef767814f
	pcgDXSMMul = 0xda942042e4dd58b5
)

func newDraws(seed, seq uint64) draws { return draws{hi: seed, lo: seq} }

// Uint64 advances the state and returns the next output (rand.PCG.Uint64).
func (d *draws) Uint64() uint64 {
	// state = state*mul + inc, modulo 2^128.
	hi, lo := bits.Mul64(d.lo, pcgMulLo)
	hi += d.hi*pcgMulLo + d.lo*pcgMulHi
	lo, c := bits.Add64(lo, pcgIncLo, 0)
	hi, _ = bits.Add64(hi, pcgIncHi, c)
	d.hi, d.lo = hi, lo
	// DXSM: a xorshift, a multiply, a xorshift and a multiply by the
	// (odd) low half.
	hi ^= hi >> 32
	hi *= pcgDXSMMul
	hi ^= hi >> 48
	return hi * (lo | 1)
}

const is64bit = ^uint(0)>>32 != 0

// float64 is rand.Rand.Float64.
func (d *draws) float64() float64 {
	return float64(d.Uint64()<<11>>11) / (1 << 53)
}

// below is float64() < p for the bound b = belowBound(p): the same draw
// compared as an integer. float64 divides the draw's 53 low bits x by
// 2^53, exactly (x and 2^53 are exact doubles), so it is below p exactly
// when x is below p*2^53 (exact too), that is, x being an integer, below
// its ceiling.
func (d *draws) below(b uint64) bool { return d.Uint64()<<11>>11 < b }

// belowBound is the bound of below for a probability p (0 <= p <= 1).
func belowBound(p float64) uint64 { return uint64(math.Ceil(p * (1 << 53))) }

// shuffle is rand.Rand.Shuffle: Fisher-Yates, each index drawn as intN
// draws it (rand.Rand's Shuffle, IntN and Int64N reduce a draw alike).
func (d *draws) shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, d.intN(i+1))
	}
}

// intN is rand.Rand.IntN, and Int64N (n > 0). On 32-bit platforms,
// where rand.Rand reduces small ranges another way, a rand.Rand on this
// generator draws it.
func (d *draws) intN(n int) int {
	if !is64bit {
		return rand.New(d).IntN(n)
	}
	return d.reduce(d.Uint64(), uint64(n))
}

// reduce is the rest of intN(m) on 64-bit platforms after its first draw
// x: x itself for a power of two (four workers, or two, or one), else
// scale's multiply. It is small enough to be inlined, with the draw, where
// the scheduler draws at every region access (detSched.Access), where the
// call to intN cost about a tenth of the hook's instructions.
func (d *draws) reduce(x, m uint64) int {
	if m&(m-1) == 0 {
		return int(x & (m - 1))
	}
	return d.scale(x, m)
}

// scale is reduce for an m that is not a power of two: the high word of
// x·m, unless the low word falls in the biased range, when it draws again
// (as rand.Rand's uint64n).
func (d *draws) scale(x, m uint64) int {
	hi, lo := bits.Mul64(x, m)
	if lo < m {
		thresh := -m % m
		for lo < thresh {
			hi, lo = bits.Mul64(d.Uint64(), m)
		}
	}
	return int(hi)
}
