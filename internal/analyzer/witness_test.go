package analyzer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

func analyze(t *testing.T, text []byte, mode history.Mode) *analyzer.Analysis {
	t.Helper()
	return analyzeOpts(t, text, analyzer.Options{Mode: mode})
}

func analyzeOpts(t *testing.T, text []byte, opts analyzer.Options) *analyzer.Analysis {
	t.Helper()
	a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(text), "t.hist", history.Options{}), opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// large is histgen.Planted, failing the test on error.
func large(t testing.TB, ops int, v histgen.Violation, seed uint64) ([]byte, histgen.LargeStats) {
	t.Helper()
	text, st, err := histgen.Planted(ops, v, seed)
	if err != nil {
		t.Fatal(err)
	}
	return text, st
}

func TestStalenessCountsMissedVersions(t *testing.T) {
	// Three writes of word 7 finish, then a read returns the first value:
	// it missed two versions.
	text := `1 inv cas 7:0:0x100001
1 ret ok
2 inv cas 7:0x100001:0x200001
2 ret ok
3 inv cas 7:0x200001:0x300001
3 ret ok
4 inv read 7
4 ret 0x100001
`
	a := analyze(t, []byte(text), history.Strict)
	if a.Result.Linearizable || len(a.Result.Anomalies) != 1 {
		t.Fatalf("want one anomaly: %+v", a.Result)
	}
	an := a.Result.Anomalies[0]
	if len(an.Staleness) != 1 {
		t.Fatalf("staleness: %+v", an)
	}
	s := an.Staleness[0]
	want := analyzer.Staleness{Op: 7, Word: 7, Value: 0x100001, Writer: 1, Behind: 2, Latest: 0x300001, LatestWriter: 5, LatestRetLine: 6}
	s.Reason = ""
	if s != want {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	if !strings.Contains(an.Explanation, "2 versions behind") {
		t.Fatalf("explanation: %s", an.Explanation)
	}
}

func TestStalenessConcurrentWriteNotCounted(t *testing.T) {
	// The second write is still running when the read is invoked: the
	// read is one version behind, not two.
	text := `1 inv cas 7:0:0x100001
1 ret ok
2 inv cas 7:0x100001:0x200001
2 ret ok
3 inv cas 7:0x200001:0x300001
4 inv read 7
4 ret 0
3 ret ok
`
	a := analyze(t, []byte(text), history.Strict)
	if len(a.Result.Anomalies) == 0 {
		t.Fatal("want an anomaly")
	}
	var got []int
	for _, an := range a.Result.Anomalies {
		for _, s := range an.Staleness {
			got = append(got, s.Behind)
			if s.Value != 0 || s.Writer != 0 || s.Latest != 0x200001 {
				t.Fatalf("%+v", s)
			}
		}
	}
	if !slices.Equal(got, []int{2}) {
		// genesis -> 0x100001 -> 0x200001 finished; 0x300001 concurrent.
		t.Fatalf("behind: %v", got)
	}
}

func TestPlantedStaleReadWitness(t *testing.T) {
	text, st := large(t, 20000, histgen.PlantStaleRead, 3)
	a := analyze(t, text, history.Strict)
	if len(a.Result.Anomalies) != 1 {
		t.Fatalf("anomalies: %+v", a.Result.Anomalies)
	}
	an := a.Result.Anomalies[0]
	if an.Kind != analyzer.Cycle || !slices.Contains(an.Ops, st.ViolationLine) {
		t.Fatalf("anomaly %+v, planted at line %d", an, st.ViolationLine)
	}
	if len(an.Staleness) == 0 || an.Staleness[0].Op != st.ViolationLine || an.Staleness[0].Behind < 1 {
		t.Fatalf("staleness: %+v", an.Staleness)
	}
	// Every edge of the witness has a reason naming both ends.
	for _, e := range an.Edges {
		if !strings.Contains(e.Reason, "line ") || e.From == e.To {
			t.Fatalf("edge %+v", e)
		}
	}
}

func TestForkWitnessEdges(t *testing.T) {
	text := "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv read 10\n2 ret 0x100001\n3 inv cas 10:0x100001:0x200001\n4 inv cas 10:0x100001:0x300001\n3 ret ok\n4 ret ok\n"
	a := analyze(t, []byte(text), history.Strict)
	var fork *analyzer.Anomaly
	for k := range a.Result.Anomalies {
		if a.Result.Anomalies[k].Kind == analyzer.Fork {
			fork = &a.Result.Anomalies[k]
		}
	}
	if fork == nil {
		t.Fatalf("no fork: %+v", a.Result.Anomalies)
	}
	if len(fork.Edges) != 2 {
		t.Fatalf("edges: %+v", fork.Edges)
	}
	for _, e := range fork.Edges {
		if e.Kind != analyzer.ReadsFrom || e.From != 1 || e.Word != 10 {
			t.Fatalf("edge %+v", e)
		}
	}
}

func TestNeighbourhood(t *testing.T) {
	for _, v := range []histgen.Violation{histgen.PlantStaleRead, histgen.PlantTornRead, histgen.PlantLostWrite} {
		t.Run(v.String(), func(t *testing.T) {
			text, _ := large(t, 20000, v, 5)
			a := analyze(t, text, history.Strict)
			if len(a.Result.Anomalies) == 0 {
				t.Fatal("no anomaly")
			}
			const maxNodes, maxTimeline = 12, 50
			nb, err := a.Neighbourhood(0, analyzer.Bounds(maxNodes, 4, maxTimeline))
			if err != nil {
				t.Fatal(err)
			}
			an := a.Result.Anomalies[0]
			if len(nb.Nodes) > maxNodes+len(an.Ops) || len(nb.Timeline) > maxTimeline+maxNodes {
				t.Fatalf("too big: %d nodes, %d on the timeline", len(nb.Nodes), len(nb.Timeline))
			}
			lines := map[int64]bool{}
			for _, o := range nb.Nodes {
				lines[o.Line] = true
			}
			for _, l := range an.Ops {
				if !lines[l] {
					t.Fatalf("core op %d not a node", l)
				}
			}
			var witness int
			for _, e := range nb.Edges {
				if !lines[e.From] || !lines[e.To] {
					t.Fatalf("edge %+v leaves the neighbourhood", e)
				}
				if e.Witness {
					witness++
				}
			}
			if witness < len(an.Edges) {
				t.Fatalf("%d witness edges, the anomaly has %d", witness, len(an.Edges))
			}
			if !slices.IsSortedFunc(nb.Timeline, func(x, y analyzer.OpInfo) int { return int(x.Line - y.Line) }) {
				t.Fatal("timeline not in invocation order")
			}
			if _, err := a.Neighbourhood(len(a.Result.Anomalies), analyzer.NeighbourhoodOptions{}); err == nil {
				t.Fatal("want an error for a missing anomaly")
			}
		})
	}
}

// TestEdgeJSON: "word" is written for every edge that has one, address 0
// included, and for no other; the default decoding reads an edge back.
func TestEdgeJSON(t *testing.T) {
	for _, ed := range []analyzer.Edge{
		{From: 3, To: 5, Kind: analyzer.ReadsFrom, Word: 0, Reason: "r"},
		{From: 0, To: 5, Kind: analyzer.Auxiliary, Word: 7, Reason: "a"},
		{From: 3, To: 5, Kind: analyzer.HappensBefore, Reason: "h"},
		{From: 3, To: 5, Kind: analyzer.Recovery, Reason: "c"},
	} {
		b, err := json.Marshal(ed)
		if err != nil {
			t.Fatal(err)
		}
		hasWord := ed.Kind == analyzer.ReadsFrom || ed.Kind == analyzer.Auxiliary
		if strings.Contains(string(b), `"word":`) != hasWord {
			t.Errorf("%s: word present %v, want %v", b, !hasWord, hasWord)
		}
		var back analyzer.Edge
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, ed) {
			t.Errorf("%s read back as %+v (%v)", b, back, err)
		}
	}
}
