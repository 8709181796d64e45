package analyzer

import (
	"bytes"
	"context"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// TestEdgeFactsAssumption2: a failed cas whose expected value nobody had
// observed before it (Assumption 2 broken) has no auxiliary edge in the
// graph, so edgeFacts, the one source of every explanation's edges, never
// yields one (the old why did: its copy of the rule lacked the guard).
func TestEdgeFactsAssumption2(t *testing.T) {
	text := `1 inv cas 1:0:0x100001
1 ret ok
2 inv cas 1:0x100001:0x200001
2 ret fail 1
3 inv cas 1:0x100001:0x300001
3 ret ok
4 inv read 9
4 ret 0x777
`
	a, err := Analyze(context.Background(), history.NewReader(bytes.NewReader([]byte(text)), "t", history.Options{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, h := a.e, a.e.h
	failed, writer := h.opOfLine(3), h.opOfLine(5)
	if h.flags[failed]&fNoAux == 0 || e.assumeFail {
		t.Fatalf("the failed cas should break Assumption 2 (flags %b)", h.flags[failed])
	}
	for _, f := range e.edgeFacts(writer, failed, true) {
		if f.kind == Auxiliary {
			t.Fatalf("an auxiliary edge the graph does not have: %+v", f)
		}
	}
	if f := e.why(writer, failed); f.kind == Auxiliary {
		t.Fatalf("why names an auxiliary edge the graph does not have: %+v", f)
	}
	// With the constraints put back, it is there.
	e.assumeFail = true
	if fs := e.edgeFacts(writer, failed, false); len(fs) != 1 || fs[0].kind != Auxiliary || fs[0].rule != RuleFailedAfter {
		t.Fatalf("facts %+v", fs)
	}
}
