package crash

import (
	"context"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
)

// TestDecideV2: a gathered history of version 2 (the program declared
// objects) is decided by the exact checker in the chosen mode: a
// violation is an anomaly of its object, with the checker's explanation
// and verdict kept for the report; a model the checker does not know is
// the program's error (corrupt), not pmlin's.
func TestDecideV2(t *testing.T) {
	const head = "# pmlin run --exec ./q\npmlin-history v2\nobject q queue\n"
	// An enq cut off by the crash, seen absent after it, then present:
	// fine when it may take effect after the crash (durable), not when it
	// must before it (strict): the mode reaches the checker.
	late := head + "0 inv q enq 5\ncrash\n1 inv q deq\n1 ret empty\n1 inv q deq\n1 ret 5\n"
	ghost := head + "0 inv q enq 5\n0 ret ok\n1 inv q deq\n1 ret 5\n1 inv q deq\n1 ret 5\n"
	for _, c := range []struct {
		hist string
		mode history.Mode
		kind analyzer.Kind // "": no anomaly
	}{
		{late, history.Durable, ""},
		{late, history.Strict, NotLinearizable},
		{ghost, history.Strict, NotLinearizable},
		{strings.Replace(ghost, "object q queue", "object q quue", 1), history.Strict, Corrupt},
	} {
		o := &ExecOutcome{Run: &Result{Anomalies: []analyzer.Anomaly{}}, History: []byte(c.hist), Gathered: true}
		v, err := o.Decide(context.Background(), c.mode)
		if err != nil {
			t.Fatalf("%s mode:\n%s: %v", c.mode, c.hist, err)
		}
		switch {
		case c.kind == "" && (v.Violated() || v.Objects == nil || !v.Objects.Linearizable):
			t.Errorf("%s mode:\n%s: %+v, want linearizable", c.mode, c.hist, v.Anomalies)
		case c.kind != "" && (len(v.Anomalies) != 1 || v.Anomalies[0].Kind != c.kind):
			t.Errorf("%s mode:\n%s: %+v, want one %s anomaly", c.mode, c.hist, v.Anomalies, c.kind)
		case c.kind == NotLinearizable && (v.Objects == nil || !strings.Contains(v.Anomalies[0].Explanation, "object q (queue): ") || len(v.Anomalies[0].Ops) == 0):
			t.Errorf("the violation's anomaly lacks its object, explanation or operations: %+v", v.Anomalies[0])
		}
	}
}
