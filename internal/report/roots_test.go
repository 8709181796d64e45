package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
)

// TestHTMLRoots: on a planted bug's finding with two lost writes (the
// analyzer's testdata/roots), the page draws the two roots, each with the
// anomalies it implies folded under it, and lists none of those as
// anomalies of their own.
func TestHTMLRoots(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "analyzer", "testdata", "roots", "recovery-wrong-way.hist"))
	if err != nil {
		t.Fatal(err)
	}
	a, d := analyzeBytes(t, "recovery-wrong-way.hist", text, history.Strict)
	var roots []int
	implied := map[int]int{}
	for k, an := range a.Result.Anomalies {
		if an.Root == nil {
			roots = append(roots, k)
		} else {
			implied[*an.Root]++
		}
	}
	if len(roots) != 2 || len(implied) != 2 {
		t.Fatalf("roots %v, implying %v: want two roots, each implying some", roots, implied)
	}
	var buf bytes.Buffer
	if err := report.HTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	sections := regexp.MustCompile(`<section class="anomaly" id="anomaly-(\d+)"`).FindAllStringSubmatch(page, -1)
	if len(sections) != len(roots) {
		t.Fatalf("%d anomalies drawn, want the %d roots", len(sections), len(roots))
	}
	for i, s := range sections {
		if s[1] != itoa(int64(roots[i]+1)) {
			t.Errorf("drawn anomaly %s, want root %d", s[1], roots[i]+1)
		}
	}
	folded := regexp.MustCompile(`(?s)<details class="implied"><summary>[^<]*</summary><ol>(.*?)</ol></details>`).FindAllStringSubmatch(page, -1)
	if len(folded) != len(roots) {
		t.Fatalf("%d folded lists, want one per root", len(folded))
	}
	for i, f := range folded {
		if n := strings.Count(f[1], "<li "); n != implied[roots[i]] {
			t.Errorf("root %d: %d folded, want the %d it implies", roots[i]+1, n, implied[roots[i]])
		}
	}
	if strings.Contains(page, "More anomalies") {
		t.Error("implied anomalies listed as more anomalies")
	}
}

// TestRunVerdictRoots: a run's own anomalies come first in its verdict, so
// the analyzer's roots are shifted past them, and the result keeps its own.
func TestRunVerdictRoots(t *testing.T) {
	zero := 0
	res := &analyzer.Result{Anomalies: []analyzer.Anomaly{{Kind: analyzer.Fork}, {Kind: analyzer.UnreachableWrite, Root: &zero}}}
	own := []analyzer.Anomaly{{Kind: "stuck"}, {Kind: "corrupt"}}
	v := report.RunVerdict(history.Strict, 2, own, res, nil, nil)
	if r := v.Anomalies[3].Root; r == nil || *r != 2 {
		t.Errorf("root in the run's verdict %v, want 2", r)
	}
	if v.Anomalies[0].Root != nil || v.Anomalies[2].Root != nil {
		t.Error("a root got a root")
	}
	if *res.Anomalies[1].Root != 0 {
		t.Error("the analyzer's result was changed")
	}
}
