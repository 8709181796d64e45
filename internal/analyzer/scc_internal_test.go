package analyzer

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

// gonumGraph copies the precedence graph the verdict was reached on (every
// operation in it, every edge of the compressed adjacency, happens-before
// ranges included) into a gonum graph, node i+1 for operation i. Genesis
// has no in-edges and so lies on no cycle; self-loops are left out.
func gonumGraph(e *eval) *simple.DirectedGraph {
	e.fullGraph()
	g := simple.NewDirectedGraph()
	for i := int32(0); i < e.h.n; i++ {
		if e.effective(i) {
			g.AddNode(simple.Node(int64(i) + 1))
		}
	}
	for u := int32(0); u < e.h.n; u++ {
		if !e.effective(u) {
			continue
		}
		for k := int32(0); k < e.degree(u); k++ {
			if t := e.edgeAt(u, k); t != none && t != u && e.effective(t) {
				g.SetEdge(simple.Edge{F: simple.Node(int64(u) + 1), T: simple.Node(int64(t) + 1)})
			}
		}
	}
	return g
}

// TestGonumSeesTheCycles runs gonum's Tarjan SCC on a copy of the graph
// and checks it agrees with the analyzer's own cycle search: as many
// cyclic components as reported cycles, and every reported cycle inside
// one of them. The analyzer's search and gonum's share nothing but the
// edges.
func TestGonumSeesTheCycles(t *testing.T) {
	checked := 0
	for s := uint64(1); s <= 600; s++ {
		c := histgen.RandomCase(histgen.RandomSmallConfig(s), s)
		a, err := Analyze(context.Background(), history.NewReader(bytes.NewReader(histgen.Text(c.History)), "t.hist", history.Options{}), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var cyclic [][]int64
		for _, comp := range topo.TarjanSCC(gonumGraph(a.e)) {
			if len(comp) > 1 {
				var lines []int64
				for _, n := range comp {
					lines = append(lines, int64(a.e.h.line[n.ID()-1]))
				}
				slices.Sort(lines)
				cyclic = append(cyclic, lines)
			}
		}
		reported := 0
		for _, an := range a.Result.Anomalies {
			if an.Kind != Cycle {
				continue
			}
			reported++
			inOne := slices.ContainsFunc(cyclic, func(comp []int64) bool {
				return !slices.ContainsFunc(an.Ops, func(op int64) bool {
					_, ok := slices.BinarySearch(comp, op)
					return !ok
				})
			})
			if !inOne {
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
