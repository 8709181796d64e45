package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
)

// layoutCases are the findings whose drawings the layout tests measure:
// the report's own examples, the crash findings of the analyzer's
// testdata (shrunk), and two whole fuzz findings of planted bugs
// (testdata/findings: `pmlin fuzz --mutant words-unpersisted --seed 1`
// and `--mutant recovery-wrong-way --seed 1`, 1,007 operations each, the
// dense subgraphs of up to 13 vertices that need the layout). dense marks
// those: their graphs may keep a few edges through a text where no free
// place is left. Short marks the few the browser test opens by default.
var layoutCases = []struct {
	Path         string
	Dense, Short bool
}{
	{"testdata/crash.hist", false, true},
	{"testdata/dirty-bit.hist", false, true},
	{"testdata/fork.hist", false, false},
	{"testdata/stale.hist", false, false},
	{"testdata/swap.hist", false, false},
	{"../analyzer/testdata/crashes/descriptor-unflushed.hist", false, false},
	{"../analyzer/testdata/crashes/phase2-unflushed.hist", false, false},
	{"../analyzer/testdata/crashes/read-dirty-unpersisted.hist", false, false},
	{"../analyzer/testdata/crashes/recovery-skips-rdcss.hist", false, false},
	{"../analyzer/testdata/crashes/recovery-wrong-way.hist", false, true},
	{"../analyzer/testdata/crashes/status-unpersisted.hist", false, false},
	{"../analyzer/testdata/crashes/words-unpersisted.hist", false, false},
	{"testdata/findings/words-unpersisted.hist.gz", true, true},
	{"testdata/findings/recovery-wrong-way.hist.gz", true, true},
}

// collect analyzes a file of testdata (gzipped if it ends in .gz) in
// strict mode and collects what the report draws.
func collect(t *testing.T, path string) *Data {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(bytes.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		if text, err = io.ReadAll(z); err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Base(path)
	a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(text), name, history.Options{}), analyzer.Options{Mode: history.Strict})
	if err != nil {
		t.Fatal(err)
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(text)), nil }
	d, err := Collect(context.Background(), a, name, history.TextSource(open, name, history.Options{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Neighbourhoods) == 0 {
		t.Fatalf("%s: no anomaly drawn", path)
	}
	return d
}

func (a box) String() string { return fmt.Sprintf("[%.0f,%.0f %.0f,%.0f]", a.x1, a.y1, a.x2, a.y2) }

func (a box) inside(b box) bool { return a.x1 >= b.x1 && a.y1 >= b.y1 && a.x2 <= b.x2 && a.y2 <= b.y2 }

// TestGraphLayout measures the computed layout of every subgraph: no two
// texts (values, edge labels) overlap each other or a vertex, the
// drawing's box holds every vertex and text (nothing is cut at an edge),
// the key reads (the reads after a crash that show what recovery left)
// and the anomaly's operations show all their values, and no edge runs
// through another edge's label or a vertex's values (the dense findings:
// at most one in three texts, and all of them above the edges, on a
// white halo).
func TestGraphLayout(t *testing.T) {
	for _, c := range layoutCases {
		t.Run(filepath.Base(c.Path), func(t *testing.T) {
			d := collect(t, c.Path)
			for _, nb := range d.Neighbourhoods {
				core := map[int64]bool{}
				for _, l := range nb.Core {
					core[l] = true
				}
				g := layoutGraph(d, nb, core)
				type named struct {
					what string
					b    box
					edge int // the edge it labels, or -1
				}
				var texts, vertices []named
				for _, n := range g.nodes {
					vertices = append(vertices, named{fmt.Sprintf("vertex %d", n.v.line), box{n.p[0] - nodeR, n.p[1] - nodeR, n.p[0] + nodeR, n.p[1] + nodeR}, -1})
					if len(n.vals.lines) > 0 {
						texts = append(texts, named{fmt.Sprintf("values of %d", n.v.line), n.vals.box, -1})
					}
				}
				for k, e := range g.edges {
					texts = append(texts, named{fmt.Sprintf("label %q", e.label.lines), e.label.box, k})
				}
				for i, a := range texts {
					if !a.b.inside(g.view) {
						t.Errorf("anomaly %d: %s %v is outside the drawing %v", nb.Index+1, a.what, a.b, g.view)
					}
					for _, b := range texts[i+1:] {
						if a.b.overlaps(b.b) {
							t.Errorf("anomaly %d: %s %v overlaps %s %v", nb.Index+1, a.what, a.b, b.what, b.b)
						}
					}
					for _, v := range vertices {
						if a.b.overlaps(v.b) {
							t.Errorf("anomaly %d: %s %v overlaps %s", nb.Index+1, a.what, a.b, v.what)
						}
					}
				}
				for _, v := range vertices {
					if !v.b.inside(g.view) {
						t.Errorf("anomaly %d: %s is outside the drawing %v", nb.Index+1, v.what, g.view)
					}
				}
				crossings := 0
				for _, a := range texts {
					for k, e := range g.edges {
						if k != a.edge && crossesAny(a.b, e.pts) {
							crossings++
							t.Logf("anomaly %d: edge %q runs through %s", nb.Index+1, e.label.lines, a.what)
						}
					}
					for _, ce := range g.cedges {
						if crossesAny(a.b, polyline(ce.q)) {
							crossings++
							t.Logf("anomaly %d: crash edge %q runs through %s", nb.Index+1, ce.title, a.what)
						}
					}
				}
				if crossings > 0 && (!c.Dense || 3*crossings > len(texts)) {
					t.Errorf("anomaly %d: %d edges run through %d texts", nb.Index+1, crossings, len(texts))
				}
				key := map[int64]bool{}
				for _, cr := range nb.Crashes {
					for _, l := range cr.Reads {
						key[l] = true
					}
				}
				for _, n := range g.nodes {
					if n.v.op == nil || (!key[n.v.line] && !n.v.core) {
						continue
					}
					got := strings.Join(n.vals.lines, " ")
					if want := opValues(d.Ops[n.v.line], nb.Anomaly.Words); got != want {
						t.Errorf("anomaly %d: the values of line %d read %q, want all of %q", nb.Index+1, n.v.line, got, want)
					}
				}
				t.Logf("anomaly %d: %d vertices, %d edges drawn, %d texts, %d crossings, %.0fx%.0f px",
					nb.Index+1, len(g.nodes), len(g.edges), len(texts), crossings, g.view.x2-g.view.x1, g.view.y2-g.view.y1)
			}
		})
	}
}

// TestTimelineWidth: a timeline of n operations (one process after
// another, so 2n events, and a crash) is at most tlWidth wide up to the
// number of columns tlWidth holds at their narrowest, so a small history
// does not scroll in a window 1000 px wide; the key read's values, last
// in their lane, are written in full inside it.
func TestTimelineWidth(t *testing.T) {
	for _, n := range []int{1, 2, 6, 12, 20} {
		var h strings.Builder
		h.WriteString("pmlin-history v1\n")
		for k := 0; k < n; k++ {
			fmt.Fprintf(&h, "%d inv cas 0:%d:%d 1:%d:%d\n%d ret ok\n", k%3+1, k, k+1, k, k+1, k%3+1)
		}
		h.WriteString("crash\n9 inv read 0 1\n9 ret 0x9 0x0\n")
		text := []byte(h.String())
		a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(text), "w.hist", history.Options{}), analyzer.Options{Mode: history.Strict})
		if err != nil {
			t.Fatal(err)
		}
		open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(text)), nil }
		d, err := Collect(context.Background(), a, "w.hist", history.TextSource(open, "w.hist", history.Options{}), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ops []analyzer.OpInfo
		if len(d.Neighbourhoods) > 0 {
			ops = d.Neighbourhoods[0].Timeline
		} else {
			ops = d.Sample
		}
		var b strings.Builder
		key := map[int64]bool{ops[len(ops)-1].Line: true}
		timeline(&b, d, ops, nil, key, nil, nil, nil)
		ticks, _ := timelineTicks(d, ops, nil)
		l := layoutTimeline(ticks, ops, tlWidth)
		w := max(l.width, l.tail(d, ops, key, nil))
		drawn := svgWidth(t, b.String())
		t.Logf("%d operations (%d drawn, %d events): %.0f px", n+1, len(ops), len(ticks), drawn)
		if len(ticks)*int(tlCol) < int(tlWidth)-200 && drawn > tlWidth {
			t.Errorf("%d operations: the timeline is %.0f px wide, more than %.0f", n+1, drawn, tlWidth)
		}
		if drawn < w-1 {
			t.Errorf("%d operations: the drawing is %.0f px, its values need %.0f", n+1, drawn, w)
		}
		last := ops[len(ops)-1]
		if want := opValues(d.Ops[last.Line], nil); !strings.Contains(b.String(), ">"+want+"</text>") {
			t.Errorf("%d operations: the last read's values %q are not written in full", n+1, want)
		}
	}
}

// svgWidth is the width of the scrolled timeline drawing in s.
func svgWidth(t *testing.T, s string) float64 {
	t.Helper()
	k := strings.Index(s, `<svg class="timeline"`)
	if k < 0 {
		t.Fatal("no timeline drawn")
	}
	var w float64
	if _, err := fmt.Sscanf(s[k+strings.Index(s[k:], `width="`)+len(`width="`):], "%g", &w); err != nil {
		t.Fatal(err)
	}
	return w
}
