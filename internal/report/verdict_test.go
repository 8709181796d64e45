package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
)

// keys lists the top-level keys of a JSON object, in order.
func keys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	var out []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestVerdictShapes: the three verdicts print as one type, with the fields
// that apply to each, in a fixed order, and printing modifies nothing.
func TestVerdictShapes(t *testing.T) {
	a, _ := analyzeFile(t, "linearizable.hist", history.Strict)
	if a.Result.Anomalies != nil {
		t.Fatal("the test wants a result whose anomaly list is nil")
	}
	var buf bytes.Buffer
	if err := report.JSON(&buf, report.NewVerdict(a.Result)); err != nil {
		t.Fatal(err)
	}
	if a.Result.Anomalies != nil {
		t.Error("report.JSON modified the result")
	}
	if !strings.Contains(buf.String(), `"anomalies":[]`) || !strings.HasSuffix(buf.String(), "}\n") {
		t.Errorf("graph verdict: %s", buf.String())
	}
	want := "linearizable mode operations engine processes crashes words vertices edges dropped completed anomalies"
	if got := strings.Join(keys(t, buf.Bytes()), " "); got != want {
		t.Errorf("graph verdict keys:\n got %s\nwant %s", got, want)
	}

	h, err := history.ReadAll(strings.NewReader("1 inv cas 1:0:5\n1 ret ok\n2 inv read 1\n2 ret 0\n"), "x")
	if err != nil {
		t.Fatal(err)
	}
	res, err := exact.Check(context.Background(), h, exact.Options{})
	if err != nil || res.Linearizable {
		t.Fatalf("%v %+v", err, res)
	}
	buf.Reset()
	if err := report.JSON(&buf, report.ExactVerdict(h, history.Strict, res, nil)); err != nil {
		t.Fatal(err)
	}
	want = "linearizable mode operations engine exact states components failing anomalies"
	if got := strings.Join(keys(t, buf.Bytes()), " "); got != want {
		t.Errorf("exact verdict keys:\n got %s\nwant %s\n%s", got, want, buf.String())
	}
	if !strings.Contains(buf.String(), `"failing":[1,3]`) || !strings.Contains(buf.String(), `"exact":true`) || !strings.Contains(buf.String(), `"engine":"exact"`) {
		t.Errorf("exact verdict names operations by line: %s", buf.String())
	}

	stuck := analyzer.Anomaly{Kind: "stuck", Ops: []int64{4}, Words: []uint64{}, Explanation: "made no progress"}
	run := map[string]int{"seed": 7}
	b, err := json.Marshal(report.RunVerdict(history.Recoverable, 9, []analyzer.Anomaly{stuck}, nil, errors.New("t:3: undecided: why"), run))
	if err != nil {
		t.Fatal(err)
	}
	want = "linearizable mode operations undecided anomalies run"
	if got := strings.Join(keys(t, b), " "); got != want || !strings.Contains(string(b), `"mode":"recoverable"`) ||
		!strings.Contains(string(b), `"operations":9`) || !strings.Contains(string(b), `"kind":"stuck"`) {
		t.Errorf("undecided run verdict:\n%s", b)
	}
	ad, _ := analyzeFile(t, "dirty-bit.hist", history.Strict)
	v := report.RunVerdict(history.Strict, 1, []analyzer.Anomaly{stuck}, ad.Result, nil, run)
	if len(v.Anomalies) != 1+len(ad.Result.Anomalies) || v.Anomalies[0].Kind != "stuck" || v.Operations != ad.Result.Operations ||
		v.Linearizable || v.Processes != ad.Result.Processes || len(ad.Result.Anomalies) != 1 {
		t.Errorf("decided run verdict: %+v", v)
	}
}
