package analyzer

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// TestSubHistory: the sub-history of an anomaly (both ways), re-read
// from the input with its initial values, shows an anomaly of the same
// kind, and keeps the operation the anomaly's explanation depends on that
// an earlier planner left out (seeds 816 and 8196 of the long shrink
// campaign, in which shrinking then failed):
//
//   - unreachable-write.hist: the cas at line 4 replaced the initial values
//     first, so the cas at line 5, which replaced them too, lost a fork,
//     and the swap at line 2, which replaced what line 5 wrote, is
//     unreachable. Without line 4 the rest is linearizable.
//   - placed-swap.hist: the cut-off swap at line 7 took effect because the
//     read at line 22 (and the one at line 24) returned its value; the
//     cut-off swap at line 17, placed after it, observed nothing, and
//     without a read of the value line 7 is dropped and the cycle with it.
func TestSubHistory(t *testing.T) {
	for _, tc := range []struct {
		file    string
		modes   []history.Mode
		anomaly int // its index in the result
		kind    Kind
		needs   []int64 // one of these lines
	}{
		{"unreachable-write.hist", []history.Mode{history.Strict, history.Durable, history.Recoverable}, 0, UnreachableWrite, []int64{4}},
		{"placed-swap.hist", []history.Mode{history.Durable}, 0, Cycle, []int64{22, 24}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "subhistory", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, mode := range tc.modes {
			a, err := Analyze(context.Background(), history.NewReader(strings.NewReader(text), tc.file, history.Options{}), Options{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Result.Anomalies) <= tc.anomaly || a.Result.Anomalies[tc.anomaly].Kind != tc.kind {
				t.Fatalf("%s, %v: anomaly %d is no %s: %+v", tc.file, mode, tc.anomaly, tc.kind, a.Result.Anomalies)
			}
			for _, fromGenesis := range []bool{false, true} {
				sub, err := a.SubHistory(tc.anomaly, fromGenesis)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(tc.needs, func(l int64) bool { return slices.Contains(sub.Lines, l) }) {
					t.Errorf("%s, %v, fromGenesis %v: lines %v, none of %v", tc.file, mode, fromGenesis, sub.Lines, tc.needs)
				}
				keep := func(line int64) bool { return slices.Contains(sub.Crashes, line) }
				h, _, err := history.Extract(context.Background(), history.NewReader(strings.NewReader(text), tc.file, history.Options{}), sub.Lines, keep)
				if err != nil {
					t.Fatal(err)
				}
				if h.Init == nil {
					h.Init = map[uint64]uint64{}
				}
				maps.Copy(h.Init, sub.Init)
				res, err := CheckHistory(context.Background(), h, Options{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(res.Anomalies, func(b Anomaly) bool { return b.Kind == tc.kind }) {
					t.Errorf("%s, %v, fromGenesis %v: lines %v show %+v", tc.file, mode, fromGenesis, sub.Lines, res.Anomalies)
				}
			}
		}
	}
}
