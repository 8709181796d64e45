package analyzer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
)

// TestRootsOfPlantedBugs: the findings of planted bugs (the first lines of
// a pmlin fuzz finding each, testdata/roots) group under their roots. A
// lost write's cascade (a torn cas's cycle, a fork per word, then a chain
// of unreachable writes, each naming the previous one as its version)
// collapses under one root; a history with two lost writes at two crashes
// keeps two roots, and swaps that replaced stale values at different
// times stay apart. roots is the count of root anomalies, read off the
// findings by hand (the crashes and operations of each cascade), not off
// the analyzer; the golden file has the grouping, anomaly by anomaly, and
// the text report.
func TestRootsOfPlantedBugs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		roots int
	}{
		// One torn cas (line 618, cut off by the crash at line 623): its
		// cycle, its forks at its 4 other words, 20 unreachable writes.
		{"words-unpersisted", 1},
		// Two cas rolled the wrong way by recovery, at the crashes at
		// lines 153 and 569, each with its own cascade.
		{"recovery-wrong-way", 2},
		// Five swaps that returned stale values, the last two of them
		// with later writes off the path.
		{"swap-stale-old", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join("testdata", "roots", tc.name+".hist")
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := analyzer.Check(context.Background(), history.NewReader(f, "roots/"+tc.name+".hist", history.Options{}), analyzer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Linearizable || len(res.Anomalies) == 0 {
				t.Fatal("linearizable: the planted bug's finding is gone")
			}
			var b strings.Builder
			roots, implied := 0, 0
			for k, a := range res.Anomalies {
				fmt.Fprintf(&b, "%d %s %v", k+1, a.Kind, a.Ops)
				if a.Root == nil {
					roots++
					b.WriteString(" root\n")
					continue
				}
				implied++
				r := *a.Root
				fmt.Fprintf(&b, " implied, root %d\n", r+1)
				if r >= k || res.Anomalies[r].Root != nil {
					t.Errorf("anomaly %d: root %d is not an earlier root", k+1, r+1)
				}
			}
			if roots != tc.roots {
				t.Errorf("%d roots, want %d", roots, tc.roots)
			}
			if implied == 0 {
				t.Error("no anomaly is implied by another: nothing collapsed")
			}
			if res.Anomalies[0].Root != nil {
				t.Error("the first anomaly is not a root")
			}
			// The text report shows each root, and counts the others.
			var text bytes.Buffer
			if err := report.Text(&text, "roots/"+tc.name+".hist", res, nil); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(text.String(), "\nanomaly "); got != roots {
				t.Errorf("the text report shows %d anomalies, want the %d roots", got, roots)
			}
			if got := strings.Count(text.String(), " it implies ("); got == 0 {
				t.Error("the text report counts no implied anomalies")
			}
			// JSON: "root" on exactly the implied ones.
			js, err := json.Marshal(report.NewVerdict(res))
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Anomalies []map[string]any `json:"anomalies"`
			}
			if err := json.Unmarshal(js, &v); err != nil {
				t.Fatal(err)
			}
			for k, a := range v.Anomalies {
				r, ok := a["root"]
				if ok != (res.Anomalies[k].Root != nil) || ok && r != float64(*res.Anomalies[k].Root) {
					t.Errorf("anomaly %d: JSON root %v, want %v", k+1, r, res.Anomalies[k].Root)
				}
			}
			b.WriteString("\n")
			b.Write(text.Bytes())
			golden(t, filepath.Join("testdata", "roots", tc.name+".golden"), []byte(b.String()))
		})
	}
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./analyzer -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("differs from %s (regenerate with -update if the change is intended):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
