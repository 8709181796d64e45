package analyzer

import (
	"math/rand/v2"
	"testing"
)

// TestRecentWriter checks the branch-free lookup of a word's recent
// writes against a plain search of every write remembered: the latest
// write of the value among the word's last four, or none (values are
// small, so they repeat, and 0 is one, as an empty entry's value is).
func TestRecentWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const words = 3
	l := &loader{recent: make([]ring, words)}
	type write struct {
		x, op int32
		v     uint64
	}
	var past [words][]write
	for step := int32(0); step < 20000; step++ {
		w := int32(rng.IntN(words))
		if rng.IntN(2) == 0 {
			v := uint64(rng.IntN(6))
			l.remember(w, step, step/2, v)
			past[w] = append(past[w], write{x: step, op: step / 2, v: v})
			continue
		}
		v := uint64(rng.IntN(6))
		wantX, wantOp := none, none
		for k := len(past[w]) - 1; k >= max(0, len(past[w])-4); k-- {
			if past[w][k].v == v {
				wantX, wantOp = past[w][k].x, past[w][k].op
				break
			}
		}
		if x, op := l.recentWriter(w, v); x != wantX || op != wantOp {
			t.Fatalf("step %d: recentWriter(%d, %d) = %d, %d; want %d, %d (writes %v)", step, w, v, x, op, wantX, wantOp, past[w])
		}
	}
}
