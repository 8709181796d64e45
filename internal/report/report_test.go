package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/multi"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// analyzeFile analyzes a file of testdata and collects what DOT and HTML
// draw.
func analyzeFile(t testing.TB, name string, mode history.Mode) (*analyzer.Analysis, *report.Data) {
	t.Helper()
	path := filepath.Join("testdata", name)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return analyzeBytes(t, name, text, mode)
}

func analyzeBytes(t testing.TB, name string, text []byte, mode history.Mode) (*analyzer.Analysis, *report.Data) {
	t.Helper()
	a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(text), name, history.Options{}), analyzer.Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(text)), nil }
	d, err := report.Collect(context.Background(), a, name, history.TextSource(open, name, history.Options{Prefix: true}), report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a, d
}

// golden compares got with testdata/NAME, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

var cases = []struct {
	file string
	mode history.Mode
}{
	{"dirty-bit.hist", history.Strict},
	{"stale.hist", history.Strict},
	{"fork.hist", history.Strict},
	{"crash.hist", history.Strict},
	{"crash.hist", history.Recoverable},
	{"linearizable.hist", history.Strict},
	{"swap.hist", history.Strict},
}

func TestGoldenTextAndJSON(t *testing.T) {
	for _, c := range cases {
		base := strings.TrimSuffix(c.file, ".hist") + "." + c.mode.String()
		t.Run(base, func(t *testing.T) {
			a, _ := analyzeFile(t, c.file, c.mode)
			var txt, js bytes.Buffer
			if err := report.Text(&txt, c.file, a.Result, nil); err != nil {
				t.Fatal(err)
			}
			if err := report.JSON(&js, report.NewVerdict(a.Result)); err != nil {
				t.Fatal(err)
			}
			golden(t, base+".txt", txt.Bytes())
			golden(t, base+".json", js.Bytes())
		})
	}
}

// TestJSONContract checks the fields docs/cli-contract.md promises, and
// the explanation edges and staleness added to them.
func TestJSONContract(t *testing.T) {
	a, _ := analyzeFile(t, "stale.hist", history.Strict)
	var buf bytes.Buffer
	if err := report.JSON(&buf, report.NewVerdict(a.Result)); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Linearizable *bool   `json:"linearizable"`
		Mode         *string `json:"mode"`
		Operations   *int64  `json:"operations"`
		Anomalies    []struct {
			Kind        string   `json:"kind"`
			Ops         []int64  `json:"ops"`
			Words       []uint64 `json:"words"`
			Explanation string   `json:"explanation"`
			Edges       []struct {
				From, To int64
				Kind     string
				Word     uint64
				Reason   string
			} `json:"edges"`
			Staleness []struct {
				Op     int64  `json:"op"`
				Word   uint64 `json:"word"`
				Behind int    `json:"behind"`
				Reason string `json:"reason"`
			} `json:"staleness"`
		} `json:"anomalies"`
	}
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Linearizable == nil || *v.Linearizable || v.Mode == nil || v.Operations == nil || len(v.Anomalies) != 1 {
		t.Fatalf("%s", buf.String())
	}
	an := v.Anomalies[0]
	if an.Kind != "cycle" || len(an.Ops) < 2 || len(an.Words) == 0 || an.Explanation == "" || len(an.Edges) != len(an.Ops) {
		t.Fatalf("%+v", an)
	}
	if len(an.Staleness) != 1 || an.Staleness[0].Behind != 2 || an.Staleness[0].Word != 7 || an.Staleness[0].Reason == "" {
		t.Fatalf("staleness %+v", an.Staleness)
	}
}

func TestDOT(t *testing.T) {
	for _, c := range cases {
		t.Run(c.file+"/"+c.mode.String(), func(t *testing.T) {
			a, d := analyzeFile(t, c.file, c.mode)
			var buf bytes.Buffer
			if err := report.DOT(&buf, d); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			// gonum reads it back.
			g := multi.NewDirectedGraph()
			if err := dot.UnmarshalMulti(buf.Bytes(), g); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, an := range a.Result.Anomalies {
				for _, l := range an.Ops {
					if !strings.Contains(out, "L"+itoa(l)+" [") {
						t.Errorf("anomaly op %d not drawn:\n%s", l, out)
					}
				}
				for _, e := range an.Edges {
					label := string(e.Kind)
					if e.Kind == analyzer.ReadsFrom || e.Kind == analyzer.Auxiliary {
						label = `"` + string(e.Kind) + " @" + itoa(int64(e.Word)) + "=" + history.FormatValue(e.Value) + `"`
					}
					if !strings.Contains(out, "label="+label) {
						t.Errorf("edge label %s missing:\n%s", label, out)
					}
				}
				// The crashes of its evidence are marked vertices, joined
				// to what they cut off.
				for _, c := range an.Crashes {
					if !strings.Contains(out, "crash"+itoa(c)+" [") || !strings.Contains(out, "shape=octagon") {
						t.Errorf("crash %d is not drawn:\n%s", c, out)
					}
				}
			}
			if a.Result.Linearizable && g.Nodes().Len() != 0 {
				t.Errorf("a linearizable history has no neighbourhood to draw:\n%s", out)
			}
			// Graphviz, when installed, accepts it.
			if p, err := exec.LookPath("dot"); err == nil {
				cmd := exec.Command(p, "-Tsvg")
				cmd.Stdin = bytes.NewReader(buf.Bytes())
				if msg, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("dot -Tsvg: %v\n%s", err, msg)
				}
			}
		})
	}
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// selfContained fails if the page loads anything: no src or href
// attributes, no url(...) but the page's own fragment references, no
// @import.
func selfContained(t *testing.T, page string) {
	t.Helper()
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)\s(src|href|xlink:href|srcset|action)\s*=`),
		regexp.MustCompile(`(?i)url\(\s*['"]?[^#'")]`),
		regexp.MustCompile(`(?i)@import|<link|<iframe|fetch\(|XMLHttpRequest|import\(`),
	} {
		if m := re.FindString(page); m != "" {
			t.Fatalf("the report loads something: %q", m)
		}
	}
}

func TestHTML(t *testing.T) {
	for _, c := range cases {
		t.Run(c.file+"/"+c.mode.String(), func(t *testing.T) {
			a, d := analyzeFile(t, c.file, c.mode)
			var buf bytes.Buffer
			if err := report.HTML(&buf, d); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			selfContained(t, page)
			if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(page, "</html>\n") {
				t.Fatal("not a whole page")
			}
			if a.Result.Linearizable {
				if !strings.Contains(page, "No anomaly") || strings.Contains(page, " hl\"") {
					t.Fatal("a linearizable history's report should say so and highlight nothing")
				}
				return
			}
			// Every operation of an anomaly is highlighted, on the timeline
			// (a bar) and in the graph (a vertex), and its values shown.
			for _, an := range a.Result.Anomalies {
				for _, l := range an.Ops {
					bar := regexp.MustCompile(`<g class="op [^"]* hl" data-line="` + itoa(l) + `"`)
					node := regexp.MustCompile(`<g class="node hl" data-line="` + itoa(l) + `"`)
					if !bar.MatchString(page) || !node.MatchString(page) {
						t.Errorf("op %d not highlighted in both drawings", l)
					}
					if !strings.Contains(page, `"`+itoa(l)+`":{"d":"line `+itoa(l)) {
						t.Errorf("op %d has no hover data", l)
					}
				}
				for _, e := range an.Edges {
					if !strings.Contains(page, html(e.Reason)) {
						t.Errorf("edge reason missing: %s", e.Reason)
					}
				}
			}
		})
	}
}

// TestHTMLSwaps: swaps are drawn as swaps: a returned swap's status is
// "returned" (not a cas's "ok"), its values read replaced→new.
func TestHTMLSwaps(t *testing.T) {
	_, d := analyzeFile(t, "swap.hist", history.Strict)
	var buf bytes.Buffer
	if err := report.HTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`<g class="op swap s-returned hl" data-line="22"`, `"s":"returned"`, "10:0x100000001→0x100000002",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, `"s":"ok"`) {
		t.Error(`a swap's status reads "ok"`)
	}
}

func html(s string) string {
	r := strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;")
	return r.Replace(s)
}

// TestHTMLSize: on a 100k-operation violating history the report shows
// the anomaly's neighbourhood only, and stays far below 5 MB.
func TestHTMLSize(t *testing.T) {
	ops := 100000
	if testing.Short() {
		ops = 20000
	}
	for _, v := range []histgen.Violation{histgen.PlantStaleRead, histgen.PlantLostWrite} {
		t.Run(v.String(), func(t *testing.T) {
			var text bytes.Buffer
			cfg := histgen.LargeConfig{Ops: ops, Procs: 16, Words: 2000, K: 4, ReadFraction: 0.5, Violation: v, ViolationAt: ops / 2, CrashEvery: 4000}
			st, err := histgen.WriteLarge(&text, cfg, 7)
			if err != nil {
				t.Fatal(err)
			}
			a, d := analyzeBytes(t, "large.hist", text.Bytes(), history.Strict)
			var buf bytes.Buffer
			if err := report.HTML(&buf, d); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d operations (%d bytes): report %d bytes, %d anomalies, %d ops on the first timeline",
				st.Ops, st.Bytes, buf.Len(), len(a.Result.Anomalies), len(d.Neighbourhoods[0].Timeline))
			if buf.Len() > 5<<20 {
				t.Fatalf("report of %d bytes", buf.Len())
			}
			if !strings.Contains(buf.String(), `data-line="`+itoa(st.ViolationLine)+`"`) {
				t.Fatalf("the planted violation (line %d) is not drawn", st.ViolationLine)
			}
			selfContained(t, buf.String())
		})
	}
}

// TestTextNonCycle: anomalies other than cycles print their explanation
// and their edges.
func TestTextNonCycle(t *testing.T) {
	a, _ := analyzeFile(t, "fork.hist", history.Strict)
	var buf bytes.Buffer
	if err := report.Text(&buf, "fork.hist", a.Result, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "anomaly 1: fork") || !strings.Contains(buf.String(), "- [rf]") {
		t.Fatalf("%s", buf.String())
	}
}
