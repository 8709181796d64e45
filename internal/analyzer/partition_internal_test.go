package analyzer

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/internal/histgen"
)

// TestPartitionRangeSameAsOnePass checks that splitting the counting and
// filling over parts and goroutines gives exactly the buckets, in the same
// order, as one pass over the range (checked by a plain stable sort by
// bucket, not by partition itself). Index i of the range emits none, one
// or two items (a writer emits one per word).
func TestPartitionRangeSameAsOnePass(t *testing.T) {
	const seed = 3
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, n := range []int{0, 1, 63, 64, 1000, 5000} {
		groups := make([][]hashed, n)
		var items []hashed
		for i := range groups {
			for range rng.IntN(3) {
				groups[i] = append(groups[i], hashed{hash: rng.Uint32(), acc: int32(len(items))})
				items = append(items, groups[i][len(groups[i])-1])
			}
		}
		for _, bits := range []uint{0, 1, 4, 9} {
			want := slices.Clone(items)
			slices.SortStableFunc(want, func(a, b hashed) int {
				if bits == 0 {
					return 0
				}
				return int(a.hash>>(32-bits)) - int(b.hash>>(32-bits))
			})
			for _, workers := range []int{1, 2, 3} {
				split := splitter{workers: workers, least: 16}
				out, off := partitionRange(split, n, bits, func(k hashed) uint32 { return k.hash }, func(lo, hi int, emit func(hashed)) {
					for _, g := range groups[lo:hi] {
						for _, it := range g {
							emit(it)
						}
					}
				})
				if !slices.Equal(out, want) {
					t.Fatalf("seed %d, n %d, bits %d, workers %d: the items differ from a stable sort by bucket", seed, n, bits, workers)
				}
				if len(off) != 1<<bits+1 || off[len(off)-1] != int32(len(items)) {
					t.Fatalf("seed %d, n %d, bits %d, workers %d: offsets %v", seed, n, bits, workers, off[len(off)-1])
				}
				for b := 0; b < 1<<bits; b++ {
					for _, it := range out[off[b]:off[b+1]] {
						if bits > 0 && it.hash>>(32-bits) != uint32(b) {
							t.Fatalf("seed %d, n %d, bits %d, workers %d: item %v in bucket %d", seed, n, bits, workers, it, b)
						}
					}
				}
			}
		}
	}
}

// TestPartitionWritersIsPartitionRange checks the hand-written partition of
// the writers against partitionRange given the writers one by one, on
// generated histories with crashes (writers that may have written) and
// pending operations, for several partition counts and workers.
func TestPartitionWritersIsPartitionRange(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		cfg := histgen.LargeConfig{Ops: 3000, Procs: 5, Words: 40, K: 3, ReadFraction: 0.3,
			CrashEvery: int(seed) * 400, PendingAtEnd: seed%2 == 0}
		var b bytes.Buffer
		if _, err := histgen.WriteLarge(&b, cfg, seed); err != nil {
			t.Fatal(err)
		}
		h := loadText(t, b.String())
		writers := func(lo, hi int, emit func(hashed)) {
			for i := int32(lo); i < int32(hi); i++ {
				if !h.writes(i) {
					continue
				}
				for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
					emit(hashed{hash: mix(h.word[x]&^blamed, h.newVal(x)), acc: x})
				}
			}
		}
		for _, bits := range []uint{0, 1, 5, 16} {
			for _, workers := range []int{1, 2, 3} {
				split := splitter{workers: workers, least: 16}
				want, wantOff := partitionRange(split, int(h.n), bits, func(k hashed) uint32 { return k.hash }, writers)
				got, gotOff := h.partitionWriters(split, bits)
				if len(want) == 0 || !slices.Equal(got, want) || !slices.Equal(gotOff, wantOff) {
					t.Fatalf("seed %d, bits %d, workers %d: %d writers, want %d (offsets equal: %v)",
						seed, bits, workers, len(got), len(want), slices.Equal(gotOff, wantOff))
				}
			}
		}
	}
}
