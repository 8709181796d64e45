package analyzer_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

// TestRecycleSameResults: an analysis that fills the arrays of an earlier
// one (Options.Recycle, as fuzz passes the last run's) reaches the result
// of a fresh analysis, on random histories of every size and verdict, each
// recycling the one before (larger or smaller than itself).
func TestRecycleSameResults(t *testing.T) {
	var last *analyzer.Analysis
	analyze := func(text []byte, mode history.Mode, recycle *analyzer.Analysis) (*analyzer.Analysis, error) {
		r := history.NewReader(bytes.NewReader(text), "t.hist", history.Options{})
		return analyzer.Analyze(context.Background(), r, analyzer.Options{Mode: mode, SizeHint: int64(len(text)), Recycle: recycle})
	}
	compared := 0
	for s := uint64(1); s <= 150; s++ {
		c := histgen.RandomCase(histgen.RandomSmallConfig(s), s)
		text := histgen.Text(c.History)
		mode := history.Modes[s%uint64(len(history.Modes))]
		fresh, errFresh := analyze(text, mode, nil)
		again, errAgain := analyze(text, mode, last)
		if (errFresh == nil) != (errAgain == nil) || (errFresh != nil && errFresh.Error() != errAgain.Error()) {
			t.Fatalf("seed %d: errors %v and, recycling, %v", s, errFresh, errAgain)
		}
		if errFresh != nil {
			continue
		}
		if !reflect.DeepEqual(fresh.Result, again.Result) {
			t.Fatalf("seed %d: results differ:\n%+v\nrecycling:\n%+v", s, fresh.Result, again.Result)
		}
		compared++
		last = again
	}
	if compared < 100 {
		t.Fatalf("only %d of 150 histories compared", compared)
	}
}
