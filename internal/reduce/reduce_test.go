package reduce

import (
	"math/rand/v2"
	"testing"
)

// randomIntervals makes n operations by p processes with random overlaps:
// events are interleaved at random, each process alternating inv and ret;
// some operations never respond.
func randomIntervals(rng *rand.Rand, n, p int) []Interval {
	ops := make([]Interval, 0, n)
	open := make([]int, p) // op index + 1 of the process's pending op
	t := int64(0)
	for len(ops) < n || anyOpen(open) {
		q := rng.IntN(p)
		t++
		if open[q] == 0 {
			if len(ops) == n {
				continue
			}
			ops = append(ops, Interval{Inv: t, Res: Never})
			open[q] = len(ops)
			continue
		}
		if rng.IntN(20) == 0 { // abandoned: never responds
			open[q] = 0
			continue
		}
		ops[open[q]-1].Res = t
		open[q] = 0
	}
	return ops
}

func anyOpen(open []int) bool {
	for _, o := range open {
		if o != 0 {
			return true
		}
	}
	return false
}

func hb(a, b Interval) bool { return a.Res != Never && a.Res < b.Inv }

// TestTheorem1 checks, on random histories, that the transitive closure of
// ReduceHB's edges is exactly happens-before, and that no edge it keeps is
// implied by two happens-before edges through a third operation.
func TestTheorem1(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 400; iter++ {
		n := 1 + rng.IntN(40)
		p := 1 + rng.IntN(6)
		ops := randomIntervals(rng, n, p)
		order, lo, hi := Intervals(ops)
		n = len(ops)
		// Reachability over the reduced edges (ranks), by a simple
		// fixpoint: reach[i][j].
		reach := make([][]bool, n)
		for i := range reach {
			reach[i] = make([]bool, n)
		}
		edge := func(i, j int) bool { return int32(j) >= lo[i] && int32(j) < hi[i] }
		for i := n - 1; i >= 0; i-- { // edges go to larger ranks: DP backwards
			for j := i + 1; j < n; j++ {
				if edge(i, j) {
					reach[i][j] = true
					for k := j + 1; k < n; k++ {
						if reach[j][k] {
							reach[i][k] = true
						}
					}
				}
			}
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				a, b := ops[order[i]], ops[order[j]]
				if want := hb(a, b); reach[i][j] != want {
					t.Fatalf("iter %d: closure(%d,%d)=%v, happens-before=%v (%+v %+v)", iter, i, j, reach[i][j], want, a, b)
				}
				if edge(i, j) {
					for k := 0; k < n; k++ {
						if hb(a, ops[order[k]]) && hb(ops[order[k]], b) {
							t.Fatalf("iter %d: edge %d->%d is implied through %d", iter, i, j, k)
						}
					}
				}
			}
		}
	}
}

// TestStreamingEqualsIntervals checks that lo computed by counting
// invocations while streaming gives the same ranges as Intervals.
func TestStreamingEqualsIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 200; iter++ {
		ops := randomIntervals(rng, 1+rng.IntN(60), 1+rng.IntN(8))
		order, lo, hi := Intervals(ops)
		// Streaming: ops are generated in invocation order already.
		for k, i := range order {
			if int(i) != k {
				t.Fatalf("generator not in invocation order")
			}
		}
		slo := make([]int32, len(ops))
		for i, op := range ops {
			slo[i] = int32(len(ops))
			if op.Res != Never {
				c := int32(0)
				for _, o := range ops {
					if o.Inv < op.Res {
						c++
					}
				}
				slo[i] = c
			}
		}
		shi := Ranges(slo, nil)
		for i := range ops {
			if slo[i] != lo[i] || shi[i] != hi[i] {
				t.Fatalf("iter %d op %d: stream [%d,%d) sorted [%d,%d)", iter, i, slo[i], shi[i], lo[i], hi[i])
			}
		}
	}
}

func TestAllPairsMatchesHappensBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ops := randomIntervals(rng, 50, 4)
	_, lo, _ := Intervals(ops)
	off, succ := AllPairs(lo)
	count := int64(0)
	for i := range ops {
		for j := range ops {
			if hb(ops[i], ops[j]) {
				count++
			}
		}
	}
	if off[len(ops)] != count || int64(len(succ)) != count {
		t.Fatalf("all pairs has %d edges, happens-before %d", off[len(ops)], count)
	}
}

func TestRangesPanicsOnBadInput(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for lo[i] <= i")
		}
	}()
	Ranges([]int32{0}, nil)
}

func BenchmarkRanges(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	ops := randomIntervals(rng, 1_000_000, 8)
	_, lo, _ := Intervals(ops)
	hi := make([]int32, len(lo))
	b.ResetTimer()
	for b.Loop() {
		Ranges(lo, hi)
	}
	b.ReportMetric(float64(Count(lo, hi))/float64(len(lo)), "edges/op")
}
