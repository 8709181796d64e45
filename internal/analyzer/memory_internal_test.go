package analyzer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// TestMemoryProjection: the memory a history needs is revised while it is
// read, from the counts of what drives it: a history of many processes,
// or of many distinct words, under a bound of two thirds of what it needs
// stops once the part read needs more than the bound, and says about what
// the whole needs (projected from the share read), not what the part
// took; once the bound covers the need, it is checked. (The resident
// memory, the test process's, is left out.)
func TestMemoryProjection(t *testing.T) {
	var procs bytes.Buffer
	w := bufio.NewWriter(&procs)
	w.WriteString("pmlin-history v1\n")
	for p := range 50_000 {
		id := strconv.Itoa(p)
		w.WriteString(id + " inv read 1\n" + id + " ret 0\n")
	}
	w.Flush()
	var words bytes.Buffer
	w = bufio.NewWriter(&words)
	w.WriteString("pmlin-history v1\n")
	for i := range 200_000 { // a word each, beyond the direct table
		p, a := strconv.Itoa(i%8), strconv.Itoa(1<<23+7*i)
		w.WriteString(p + " inv read " + a + "\n" + p + " ret 0\n")
	}
	w.Flush()
	for _, c := range []struct {
		name string
		text []byte
	}{{"processes", procs.Bytes()}, {"words", words.Bytes()}} {
		t.Run(c.name, func(t *testing.T) {
			read := func(bound int64) (*hist, error) {
				r := history.NewReader(bytes.NewReader(c.text), c.name+".hist", history.Options{})
				g := newMemoryGuard(bound, "the test", int64(len(c.text)))
				if g != nil {
					g.sample = func() int64 { return 0 } // the counts alone
				}
				return load(context.Background(), r, int64(len(c.text)), splitter{workers: 1, least: minPart}, g, nil, LineNamer{})
			}
			h, err := read(0)
			if err != nil {
				t.Fatal(err)
			}
			need := h.usage().need() // without the join's lookups: a little low
			lines := int64(h.line[h.n-1]) + 1
			_, err = read(need * 2 / 3)
			var me *MemoryError
			if !errors.As(err, &me) || me.Estimated || me.AtLeast || me.After != "" {
				t.Fatalf("bound %d, two thirds of the need %d: %v, want a projection", need*2/3, need, err)
			}
			if me.Line <= 0 || me.Line >= lines || me.Need < need*9/10 || me.Need > need*5/4 {
				t.Errorf("bound two thirds of the need %d: stopped at line %d of %d, needing %d", need, me.Line, lines, me.Need)
			}
			if _, err := read(need + need/4); err != nil {
				t.Errorf("bound %d, over the need %d: %v", need+need/4, need, err)
			}
		})
	}
}

// TestDistinct: the distinct words or processes met are projected as
// draws at random from a set of unknown size: in proportion while each
// operation meets a new one, levelling off at the set's size once they
// repeat, and no more once none is new.
func TestDistinct(t *testing.T) {
	d := func(k, n float64) float64 { return k * -math.Expm1(-n/k) }
	for _, c := range []struct {
		name           string
		n1, d1, n2, d2 float64
		n              float64
		want, within   float64
	}{
		{"one per operation", 1000, 1000, 2000, 2000, 10_000, 10_000, 0},
		{"drawn from 5,000", 1000, d(5000, 1000), 2000, d(5000, 2000), 20_000, d(5000, 20_000), 0.02},
		{"drawn from 5,000 every other operation", 1000, d(10_000, 1000) / 2, 2000, d(10_000, 2000) / 2, 40_000, d(10_000, 40_000) / 2, 0.02},
		{"a new one every other operation", 1000, 500, 2500, 1250, 10_000, 5000, 0},
		{"drawn from 10^6", 100_000, d(1e6, 100_000), 300_000, d(1e6, 300_000), 4e6, d(1e6, 4e6), 0.02},
		{"none new", 1000, 800, 2000, 800, 10_000, 800, 0},
	} {
		got := float64(distinct(c.n1, c.d1, c.n2, c.d2, c.n))
		if math.Abs(got-c.want) > c.within*c.want+1 {
			t.Errorf("%s: %.0f, want %.0f", c.name, got, c.want)
		}
	}
}
