package analyzer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/internal/histgen"
)

// TestMemoryProjection: the memory a history needs is revised while it is
// read, from the counts of what drives it, and projected to the whole
// input: a history of many processes, or of many distinct words, under a
// bound of two thirds of what it needs stops early (in its first quarter, before
// the resident memory is ever looked at) saying about what the whole
// needs, not what the part read took; and once the bound covers the
// need, it is checked. (The
// resident memory, the test process's, is left out.)
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
	if _, err := histgen.WriteLarge(&words, histgen.LargeConfig{Ops: 75_000, Procs: 8, Words: 150_000, K: 1, ReadFraction: 0.5}, 1); err != nil {
		t.Fatal(err)
	}
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
				return load(context.Background(), r, int64(len(c.text)), splitter{workers: 1, least: minPart}, g, nil)
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
			if me.Line <= 0 || me.Line > lines/4 || me.Need < need*9/10 || me.Need > need*5/4 {
				t.Errorf("bound two thirds of the need %d: stopped at line %d of %d, needing %d", need, me.Line, lines, me.Need)
			}
			if _, err := read(need + need/4); err != nil {
				t.Errorf("bound %d, over the need %d: %v", need+need/4, need, err)
			}
		})
	}
}
