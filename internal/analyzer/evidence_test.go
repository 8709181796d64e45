package analyzer_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
)

// evidenceOf is the first evidence of kind k of the first anomaly.
func evidenceOf(t *testing.T, a *analyzer.Analysis, k analyzer.EvidenceKind) analyzer.Evidence {
	t.Helper()
	if len(a.Result.Anomalies) == 0 {
		t.Fatal("no anomaly")
	}
	for _, ev := range a.Result.Anomalies[0].Evidence {
		if ev.Kind == k {
			return ev
		}
	}
	t.Fatalf("no %s evidence: %+v", k, a.Result.Anomalies[0].Evidence)
	return analyzer.Evidence{}
}

// TestLostWriteStory: a cas returns ok, a crash follows, and the read of
// every word after it finds the value the cas replaced: the story names
// the crash, the read and the lost write, as data and in words.
func TestLostWriteStory(t *testing.T) {
	text := `pmlin-history v1
1 inv cas 3:0:0x5 4:0:0x6
1 ret ok
2 inv read 9
2 ret 0
crash
9 inv read 3 4 9
9 ret 0 0x6 0
2 inv cas 3:0:0x7
2 ret ok
`
	a := analyze(t, []byte(text), history.Strict)
	an := a.Result.Anomalies[0]
	if !slices.Equal(an.Crashes, []int64{6}) {
		t.Fatalf("crashes %v: %s", an.Crashes, an.Explanation)
	}
	ev := evidenceOf(t, a, analyzer.EvidenceRecovery)
	want := []analyzer.WordValue{{Word: 3, Value: 0, Writer: 0, Read: 7, Full: true, Fate: "old"}, {Word: 4, Value: 6, Writer: 2, Read: 7, Full: true, Fate: "new"}}
	if ev.Op != 2 || ev.Crash != 6 || ev.RetLine != 3 || !slices.Equal(ev.Values, want) {
		t.Fatalf("evidence %+v", ev)
	}
	for _, s := range []string{"after the crash at line 6, the read of every word at line 7 returned 0 at address 3 (the value line 2 replaced)",
		"the successful cas of line 2, which returned at line 3, was lost at address 3", "a torn cas"} {
		if !strings.Contains(ev.Reason, s) || !strings.Contains(an.Explanation, s) {
			t.Errorf("%q is not said:\n%s", s, an.Explanation)
		}
	}
}

// TestStoryWithoutRecoveryRead: a user's history has no read of every
// word after the crash; the first read of the address after it serves,
// and where none came before a write, the story says nothing is known.
func TestStoryWithoutRecoveryRead(t *testing.T) {
	text := `1 inv cas 3:0:0x5 4:0:0x6
1 ret ok
crash
2 inv cas 4:0x6:0x8
2 ret ok
3 inv read 3
3 ret 0
`
	a := analyze(t, []byte(text), history.Strict)
	ev := evidenceOf(t, a, analyzer.EvidenceRecovery)
	if len(ev.Values) != 1 || ev.Values[0].Word != 3 || ev.Values[0].Read != 6 || ev.Values[0].Full || ev.Values[0].Fate != "old" ||
		!slices.Equal(ev.Unknown, []uint64{4}) {
		t.Fatalf("evidence %+v", ev)
	}
	for _, s := range []string{"line 6 (process 3 read), the first read of address 3 after it, returned 0", "nothing shows what recovery left at address 4"} {
		if !strings.Contains(ev.Reason, s) {
			t.Errorf("%q is not said: %s", s, ev.Reason)
		}
	}
}

// TestCutOffStoryOrderOfInterrupted: a crash cuts off two cas whose
// processes are listed in another order than their invocations; both are
// told as cut off (a regression: the records were looked up as if sorted).
func TestCutOffStoryOrderOfInterrupted(t *testing.T) {
	text := `5 inv read 9
5 ret 0
2 inv cas 7:0:0x200001 4:0:0x200002
5 inv cas 7:0:0x100001
crash
9 inv read 4 7
9 ret 0x200002 0x100001
`
	a := analyze(t, []byte(text), history.Strict)
	var cut []int64
	for _, ev := range a.Result.Anomalies[0].Evidence {
		if ev.Kind == analyzer.EvidenceCutOff && ev.Crash == 5 && ev.ObservedBy == 6 {
			cut = append(cut, ev.Op)
		}
	}
	slices.Sort(cut)
	if !slices.Equal(cut, []int64{3, 4}) {
		t.Fatalf("cut off %v: %s", cut, a.Result.Anomalies[0].Explanation)
	}
}

// TestDanglingWrittenElsewhere: a value read at one address was written
// to another (a mixed-up log): the evidence names where.
func TestDanglingWrittenElsewhere(t *testing.T) {
	text := `1 inv cas 3:0:0x200000009
1 ret ok
2 inv read 1
2 ret 0x200000009
`
	a := analyze(t, []byte(text), history.Strict)
	ev := evidenceOf(t, a, analyzer.EvidenceElsewhere)
	if ev.Op != 3 || *ev.Word != 1 || *ev.Value != 0x200000009 || ev.Writer != 1 || *ev.WrittenAt != 3 || ev.WriterStatus != "ok" {
		t.Fatalf("evidence %+v", ev)
	}
	if want := "0x200000009 was written to address 3 by line 1 (process 1 cas), not to address 1"; ev.Reason != want {
		t.Fatalf("got %q, want %q", ev.Reason, want)
	}
}

// TestFailedCasExpectedStillThere: the dirty-bit shape. The cycle through
// the failed cas says its expected value was there throughout, and names
// a read that returned it there after the cas returned.
func TestFailedCasExpectedStillThere(t *testing.T) {
	text := `1 inv cas 0:0:0x100001
1 ret ok
2 inv read 0
2 ret 0x100001
2 inv cas 0:0x100001:0x200001
2 ret fail 0
3 inv read 0
3 ret 0x100001
3 inv cas 0:0x100001:0x300001
3 ret ok
`
	a := analyze(t, []byte(text), history.Strict)
	ev := evidenceOf(t, a, analyzer.EvidenceExpected)
	if ev.Op != 5 || !*ev.StillThere || ev.ReplacedBy != 9 || ev.Read != 7 || ev.RetLine != 6 || *ev.Value != 0x100001 {
		t.Fatalf("evidence %+v", ev)
	}
	if !strings.Contains(ev.Reason, "was there throughout") || !strings.Contains(ev.Reason, "line 7 (process 3 read) read it there after the cas returned") {
		t.Fatalf("reason %q", ev.Reason)
	}
	// The write that replaced it was invoked before the failure returned:
	// it may have been gone (a cycle through a read after the failure).
	text = `1 inv cas 0:0:0x100001
1 ret ok
2 inv read 0
2 ret 0x100001
3 inv cas 0:0x100001:0x300001
2 inv cas 0:0x100001:0x200001
2 ret fail 0
4 inv read 0
4 ret 0x100001
3 ret ok
`
	a = analyze(t, []byte(text), history.Strict)
	ev = evidenceOf(t, a, analyzer.EvidenceExpected)
	if ev.Op != 6 || *ev.StillThere || ev.ReplacedBy != 5 || ev.Read != 0 || !strings.Contains(ev.Reason, "may have been gone") {
		t.Fatalf("evidence %+v", ev)
	}
}

// TestAnomaliesByEarliestEvidence: anomalies are listed by their first
// operation, whatever their kind.
func TestAnomaliesByEarliestEvidence(t *testing.T) {
	text := `1 inv cas 1:0:0x100001
1 ret ok
2 inv read 1
2 ret 0
3 inv read 2
3 ret 0x999
`
	a := analyze(t, []byte(text), history.Strict)
	var kinds []analyzer.Kind
	for _, an := range a.Result.Anomalies {
		kinds = append(kinds, an.Kind)
	}
	if !slices.Equal(kinds, []analyzer.Kind{analyzer.Cycle, analyzer.Dangling}) {
		t.Fatalf("anomalies %v", kinds)
	}
}

// TestEdgeData: a witness's edges carry their value and the lines that
// justify them as fields, and the JSON has them.
func TestEdgeData(t *testing.T) {
	text := `1 inv cas 10:0:0x100001
crash
2 inv read 10
2 ret 0
3 inv read 10
3 ret 0x100001
`
	a := analyze(t, []byte(text), history.Strict)
	an := a.Result.Anomalies[0]
	want := []analyzer.Edge{
		{From: 1, To: 3, Kind: analyzer.HappensBefore, Rule: analyzer.RuleCutOffStrict, CrashLine: 2, ObservedBy: 5},
		{From: 3, To: 1, Kind: analyzer.Auxiliary, Rule: analyzer.RuleReadFirst, Word: 10, Value: 0},
	}
	for k := range an.Edges {
		an.Edges[k].Reason = ""
	}
	if len(an.Edges) != 2 || !slices.EqualFunc(an.Edges, want, func(a, b analyzer.Edge) bool {
		return a.From == b.From && a.To == b.To && a.Kind == b.Kind && a.Rule == b.Rule && a.Word == b.Word && a.Value == b.Value &&
			a.CrashLine == b.CrashLine && a.ObservedBy == b.ObservedBy && a.RetLine == b.RetLine
	}) {
		t.Fatalf("edges %+v", an.Edges)
	}
	b, _ := json.Marshal(an.Edges[0])
	if !strings.Contains(string(b), `"crash_line":2`) || !strings.Contains(string(b), `"observed_by":5`) || strings.Contains(string(b), `"value"`) {
		t.Fatalf("%s", b)
	}
	b, _ = json.Marshal(an.Edges[1])
	if !strings.Contains(string(b), `"word":10,"value":0`) {
		t.Fatalf("%s", b)
	}
}

// TestOriginalLines: with Options.Origin, anomalies name the lines their
// operations had in the original history.
func TestOriginalLines(t *testing.T) {
	text := "1 inv cas 1:0:0x100001\n1 ret ok\n2 inv read 1\n2 ret 0\n"
	a := analyzeOpts(t, []byte(text), analyzer.Options{Origin: func(l int64) int64 { return l + 100 }})
	if an := a.Result.Anomalies[0]; !slices.Equal(an.OriginalOps, []int64{101, 103}) {
		t.Fatalf("original %v of %v", an.OriginalOps, an.Ops)
	}
}

// TestNeighbourhoodSharesTheRenderer: the neighbourhood's witness edges
// are the anomaly's, sentence for sentence, and its crashes are the
// evidence's, with the read after them.
func TestNeighbourhoodSharesTheRenderer(t *testing.T) {
	text := `pmlin-history v1
7 inv read 9
7 ret 0
1 inv cas 3:0:0x5 4:0:0x6
crash
9 inv read 3 4
9 ret 0 0x6
`
	a := analyze(t, []byte(text), history.Strict)
	nb, err := a.Neighbourhood(0, analyzer.NeighbourhoodOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range a.Result.Anomalies[0].Edges {
		if !slices.ContainsFunc(nb.Edges, func(n analyzer.NeighbourEdge) bool { return n.Witness && n.Edge.Reason == e.Reason }) {
			t.Errorf("witness edge %q is not drawn with the same sentence", e.Reason)
		}
	}
	var nodes []int64
	for _, o := range nb.Nodes {
		nodes = append(nodes, o.Line)
	}
	slices.Sort(nodes)
	if !slices.Equal(nodes, []int64{0, 4, 6}) {
		t.Errorf("nodes %v, want genesis, the cas and the read after the crash", nodes)
	}
	if len(nb.Crashes) != 1 || nb.Crashes[0].Line != 5 || !nb.Crashes[0].Story || !slices.Equal(nb.Crashes[0].CutOff, []int64{4}) ||
		!slices.Equal(nb.Crashes[0].Reads, []int64{6}) {
		t.Fatalf("crashes %+v", nb.Crashes)
	}
	b, _ := json.Marshal(nb.Edges)
	if !strings.Contains(string(b), `"witness":true`) {
		t.Fatalf("the witness mark is lost in JSON: %s", b)
	}
}
