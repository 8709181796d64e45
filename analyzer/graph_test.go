package analyzer_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/internal/histgen"
)

func analyze(t *testing.T, text []byte, mode history.Mode) *analyzer.Analysis {
	t.Helper()
	a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(text), "t.hist", history.Options{}), analyzer.Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestGonumSeesTheCycles runs gonum's Tarjan SCC on the Graph view and
// checks it agrees with the analyzer's cycle verdict and that every cycle
// the analyzer reports lies inside one of gonum's components.
func TestGonumSeesTheCycles(t *testing.T) {
	checked := 0
	for s := uint64(1); s <= 600; s++ {
		c := histgen.RandomCase(histgen.RandomSmallConfig(s), s)
		a := analyze(t, histgen.Text(c.History), history.Strict)
		g := a.Graph()
		sccs := topo.TarjanSCC(g)
		var cyclic [][]int64
		for _, comp := range sccs {
			if len(comp) > 1 {
				var lines []int64
				for _, n := range comp {
					lines = append(lines, n.(analyzer.Node).Line)
				}
				slices.Sort(lines)
				cyclic = append(cyclic, lines)
			}
		}
		var reported int
		for _, an := range a.Result.Anomalies {
			if an.Kind != analyzer.Cycle {
				continue
			}
			reported++
			found := false
			for _, comp := range cyclic {
				all := true
				for _, op := range an.Ops {
					if _, ok := slices.BinarySearch(comp, op); !ok {
						all = false
					}
				}
				found = found || all
			}
			if !found {
				t.Fatalf("seed %d: reported cycle %v is in no gonum SCC %v", s, an.Ops, cyclic)
			}
			for _, ed := range an.Edges {
				if ed.Reason == "" {
					t.Fatalf("seed %d: edge without reason %+v", s, ed)
				}
			}
		}
		if reported != len(cyclic) {
			t.Fatalf("seed %d: analyzer reports %d cycles, gonum finds %d cyclic SCCs", s, reported, len(cyclic))
		}
		checked += reported
	}
	if checked == 0 {
		t.Fatal("no cycles in the sample")
	}
}

func TestDOTEncoding(t *testing.T) {
	a := analyze(t, []byte("1 inv cas 10:0:0x100001\n1 ret ok\n2 inv read 10\n2 ret 0\n3 inv read 10\n3 ret 0x100001\n"), history.Strict)
	b, err := dot.Marshal(a.Graph(), "precedence", "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, want := range []string{"genesis", "L1", "L3", "L5", `"rf @10"`, `"aux @10"`, `"hb"`} {
		if !strings.Contains(out, want) {
			t.Errorf("DOT lacks %s:\n%s", want, out)
		}
	}
}
