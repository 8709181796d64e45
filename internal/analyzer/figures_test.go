package analyzer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of TestFigures")

// figures are the example histories of the OPODIS paper (Cepeda et al.,
// "Toward Linearizability Testing for Multi-Word Persistent Synchronization
// Primitives", OPODIS 2019), as reconstructed in testdata/opodis (each
// file's comment says how faithfully), and the crash chains of
// testdata/chains, with the verdict the definitions give, per mode, and the
// kinds of the anomalies that prove a violation. These expectations come
// from the definitions, not from the analyzer: if they disagree, the
// analyzer is what must be looked at. The brute force and the exact checker
// check each expectation too.
var figures = []struct {
	file string
	// per mode (strict, recoverable, durable): nil means linearizable,
	// otherwise the sorted anomaly kinds expected.
	want [3][]analyzer.Kind
	// ops: for a violation, the operations (lines of their inv) that the
	// first anomaly must name, in every mode where there is one (nil: not
	// checked, the modes differ).
	ops []int64
}{
	{file: "opodis/fig2.hist"},
	{file: "opodis/fig4.hist", want: all(analyzer.Cycle), ops: []int64{18, 22}},
	{file: "opodis/fig5.hist", want: all(analyzer.Dangling, analyzer.Dangling), ops: []int64{19}},
	{file: "opodis/fig6.hist", want: all(analyzer.Fork), ops: []int64{17, 18}},
	{file: "opodis/fig7.hist", want: all(analyzer.Cycle), ops: []int64{21, 22}},
	// CodebaseB's swap bug: two swaps replaced the same value (a fork).
	{file: "opodis/fig10.hist", want: all(analyzer.Fork), ops: []int64{22, 23}},
	{file: "opodis/fig12.hist", want: all(analyzer.UnexplainedFailure), ops: []int64{23, 19}},
	// Section 5.3's completion rules, in the three modes (this was once
	// wrongly named fig10.hist).
	{file: "chains/section5.3-modes.hist", want: [3][]analyzer.Kind{{analyzer.Cycle}, {analyzer.Cycle}, nil}, ops: []int64{24, 28}},
	// Chains the recoverable rule must follow past cut-off operations:
	// the verdicts of the definitions (bruteforce_test.go).
	{file: "chains/read-cut-off.hist", want: [3][]analyzer.Kind{{analyzer.Cycle}, {analyzer.Cycle}, nil}, ops: []int64{11, 15}},
	{file: "chains/cas-cut-off.hist", want: [3][]analyzer.Kind{{analyzer.Cycle}, {analyzer.Cycle}, nil}, ops: []int64{8, 12}},
	{file: "chains/two-cut-off.hist", want: [3][]analyzer.Kind{{analyzer.Cycle}, {analyzer.Cycle}, nil}, ops: []int64{9, 17}},
	// Strict: A precedes the crash, hence the read; recoverable: A
	// precedes B, B the read (two recovery edges).
	{file: "chains/observed-cut-off-cas.hist", want: [3][]analyzer.Kind{{analyzer.Cycle}, {analyzer.Cycle}, nil}, ops: nil},
	// Recoverable: completing B to explain the failure closes a cycle, so
	// the search gives up and the report shows the failure unexplained
	// (strict finds the cycle too, without the search, and lists it first:
	// its evidence starts earlier).
	{file: "chains/search-recomputed.hist", want: [3][]analyzer.Kind{{analyzer.Cycle, analyzer.UnexplainedFailure}, {analyzer.UnexplainedFailure}, nil}, ops: nil},
	// Two cut-off swaps on one word, observed in the order the analyzer
	// does not try first.
	{file: "chains/cut-off-swaps-order.hist", want: [3][]analyzer.Kind{{analyzer.Cycle}, nil, nil}, ops: []int64{16, 12}},
}

// cycleHeader is how report.Text introduces the edges of a cycle.
const cycleHeader = "must each come before the next, and the last before the first"

// TestFigureTextKinds: the text report introduces an anomaly's edges as a
// cycle only when the anomaly is one. (A regression test: for a while
// report.Text printed the cycle header for every anomaly that carried
// Edges, which the analyzer attaches to forks and other kinds as well.)
func TestFigureTextKinds(t *testing.T) {
	for _, fig := range figures {
		in, err := os.ReadFile(filepath.Join("testdata", fig.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range history.Modes {
			r := history.NewReader(bytes.NewReader(in), fig.file, history.Options{})
			res, err := analyzer.Check(context.Background(), r, analyzer.Options{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range res.Anomalies {
				var buf bytes.Buffer
				one := *res
				one.Anomalies = []analyzer.Anomaly{a}
				if err := report.Text(&buf, fig.file, &one, nil); err != nil {
					t.Fatal(err)
				}
				if a.Kind != analyzer.Cycle && bytes.Contains(buf.Bytes(), []byte(cycleHeader)) {
					t.Errorf("%s, %v: a %s anomaly is printed as a cycle:\n%s", fig.file, mode, a.Kind, buf.String())
				}
			}
		}
	}
}

func all(k ...analyzer.Kind) [3][]analyzer.Kind { return [3][]analyzer.Kind{k, k, k} }

// goldenReport renders res as its golden file has it (the text report, a
// blank line, the JSON indented), compares it with the file at path or
// rewrites the file with -update, and returns the JSON.
func goldenReport(t *testing.T, name string, res *analyzer.Result, path string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := report.Text(&buf, name, res, nil); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n")
	var js bytes.Buffer
	if err := report.JSON(&js, report.NewVerdict(res)); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(js.Bytes()) {
		t.Fatalf("invalid JSON: %s", js.String())
	}
	if err := json.Indent(&buf, js.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	if *updateGolden {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return js.Bytes()
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./analyzer -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("report differs from %s (regenerate with -update if the change is intended):\n--- got\n%s\n--- want\n%s", path, buf.String(), want)
	}
	return js.Bytes()
}

func TestFigures(t *testing.T) {
	var files []string
	for _, dir := range []string{"opodis", "chains"} {
		fs, err := filepath.Glob(filepath.Join("testdata", dir, "*.hist"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	if len(files) != len(figures) {
		t.Errorf("%d files in testdata/opodis and testdata/chains, %d in the table", len(files), len(figures))
	}
	for _, fig := range figures {
		path := filepath.Join("testdata", fig.file)
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h, err := history.ReadAll(bytes.NewReader(in), fig.file)
		if err != nil {
			t.Fatal(err)
		}
		for mi, mode := range history.Modes {
			t.Run(fig.file+"/"+mode.String(), func(t *testing.T) {
				r := history.NewReader(bytes.NewReader(in), fig.file, history.Options{})
				res, err := analyzer.Check(context.Background(), r, analyzer.Options{Mode: mode})
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				// The verdict and anomalies the paper's definitions give.
				want := fig.want[mi]
				var got []analyzer.Kind
				for _, a := range res.Anomalies {
					got = append(got, a.Kind)
				}
				slices.Sort(got)
				if res.Linearizable != (want == nil) || !slices.Equal(got, want) {
					t.Errorf("verdict: linearizable=%v anomalies %v; the paper: linearizable=%v anomalies %v",
						res.Linearizable, got, want == nil, want)
				}
				if want != nil && fig.ops != nil && len(res.Anomalies) > 0 && !slices.Equal(res.Anomalies[0].Ops, fig.ops) {
					t.Errorf("first anomaly names operations %v, want %v", res.Anomalies[0].Ops, fig.ops)
				}
				// The exact checker, an independent oracle, agrees with
				// the paper (a check of the reconstruction itself).
				ex, err := exact.Check(context.Background(), h, exact.Options{Mode: mode})
				if err != nil {
					t.Fatalf("exact: %v", err)
				}
				if ex.Linearizable != (want == nil) {
					t.Errorf("the exact checker says linearizable=%v, the paper %v", ex.Linearizable, want == nil)
				}
				if brute, ok := bruteLinearizable(h, mode); ok && brute != (want == nil) {
					t.Errorf("the brute force says linearizable=%v, the table %v", brute, want == nil)
				}
				// Golden text and JSON reports.
				golden := filepath.Join("testdata", fig.file[:len(fig.file)-len(".hist")]+"."+mode.String()+".golden")
				js := goldenReport(t, fig.file, res, golden)
				// The JSON fields of docs/cli-contract.md.
				var obj map[string]any
				if err := json.Unmarshal(js, &obj); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"linearizable", "mode", "operations", "anomalies"} {
					if _, ok := obj[k]; !ok {
						t.Errorf("JSON has no %q", k)
					}
				}
				if obj["mode"] != mode.String() || obj["linearizable"] != res.Linearizable {
					t.Errorf("JSON mode %v linearizable %v", obj["mode"], obj["linearizable"])
				}
			})
		}
	}
}
