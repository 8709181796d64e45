package shrink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
)

// TestAnomalyFallsBackToWhole: when no extraction around the anomaly
// fails on its own (here one that leaves out the cas the unreachable
// write depends on: the extraction of the original code), the whole
// history is minimized instead of giving up; when the whole history is
// all there is and it does not fail as asked either, the error says so.
func TestAnomalyFallsBackToWhole(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "analyzer", "testdata", "subhistory", "unreachable-write.hist"))
	if err != nil {
		t.Fatal(err)
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(text)), nil }
	a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(text), "t.hist", history.Options{}), analyzer.Options{Mode: history.Strict})
	if err != nil {
		t.Fatal(err)
	}
	k := -1
	for i, an := range a.Result.Anomalies {
		if an.Kind == analyzer.UnreachableWrite {
			k = i
			break
		}
	}
	if k < 0 {
		t.Fatalf("no unreachable write: %+v", a.Result.Anomalies)
	}
	short := func(int, bool) (*analyzer.SubHistory, error) {
		return &analyzer.SubHistory{Lines: []int64{2, 5}}, nil // the swap and the cas it read from
	}
	broken := func(int, bool) (*analyzer.SubHistory, error) { return nil, errors.New("no plan") }
	for name, plan := range map[string]func(int, bool) (*analyzer.SubHistory, error){"short": short, "error": broken} {
		t.Run(name, func(t *testing.T) {
			h, st, err := anomaly(context.Background(), a, "t.hist", open, Options{Anomaly: k, Confirm: true}, plan)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Whole || st.Extracted != int(a.Result.Operations) {
				t.Fatalf("not shrunk from the whole history: %+v", st)
			}
			if st.Kind != analyzer.UnreachableWrite || st.Exact != "agrees" || len(h.Ops) >= st.Extracted {
				t.Fatalf("stats %+v:\n%v", st, h.Ops)
			}
		})
	}
	// A story the history does not tell: nothing fails as asked, and the
	// error names every candidate tried.
	_, _, err = anomaly(context.Background(), a, "t.hist", open, Options{Anomaly: k, Want: analyzer.Cycle}, short)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("nor does the whole history (4 operations)")) {
		t.Fatalf("err = %v", err)
	}
}
