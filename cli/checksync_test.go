package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckSyncObjects: the synchronisation objects from the command
// line. Lawrence and Lowe's Figure 9 (an exchange with no partner) is a
// violation explained by pairing, in text and JSON; their Figure 10 (a
// send and a receive pending together at the end) is linearizable but
// stuck, exit 1, in text, JSON and the HTML report; the buggy exchanger
// example names the exchange that took an offer already taken.
func TestCheckSyncObjects(t *testing.T) {
	fig9, fig10 := "../internal/history/testdata/v2/exchanger-fig9.hist", "../internal/history/testdata/v2/channel-fig10.hist"
	code, out, errs := pmlin(t, "", "check", fig9)
	if code != 1 || errs != "" {
		t.Fatalf("fig 9: exit %d, %s", code, errs)
	}
	for _, s := range []string{"NOT LINEARIZABLE (strict mode, synchronisation matching)", "object x (exchanger): NOT LINEARIZABLE, 4 operations",
		"exchange 13 -> 58 (line 7, process 0) could not be paired", "exchange 70 -> 13 (line 8)"} {
		if !strings.Contains(out, s) {
			t.Errorf("fig 9: no %q in\n%s", s, out)
		}
	}
	html9 := filepath.Join(t.TempDir(), "fig9.html")
	if code, _, errs := pmlin(t, "", "check", "--report", html9, fig9); code != 1 {
		t.Fatalf("fig 9 --report: exit %d, %s", code, errs)
	}
	page9, err := os.ReadFile(html9)
	if err != nil {
		t.Fatal(err)
	}
	if p := string(page9); !strings.Contains(p, "No pairing of the object's operations gives a partner") ||
		!strings.Contains(p, "no pairing explains") || strings.Contains(p, "Longest order") {
		t.Errorf("fig 9's report does not explain by pairing:\n%s", p)
	}
	code, out, _ = pmlin(t, "", "check", "--json", fig9)
	v := v2JSONOf(t, out)
	if code != 1 || v.Engine != "sync" || len(v.Anomalies) != 1 || !slices.Equal(v.Anomalies[0].Ops, []int64{7}) || v.Anomalies[0].Failing != 7 {
		t.Errorf("fig 9 --json: exit %d, %+v", code, v)
	}

	html := filepath.Join(t.TempDir(), "fig10.html")
	code, out, errs = pmlin(t, "", "check", "--report", html, fig10)
	if code != 1 {
		t.Fatalf("fig 10: exit %d, %s%s", code, out, errs)
	}
	for _, s := range []string{"LINEARIZABLE, NOT PROGRESSIBLE (strict mode, synchronisation matching)",
		"object c (channel): linearizable, NOT PROGRESSIBLE (2 stuck), 4 operations",
		"stuck 1: object c, operation at line 9, partner at line 10", "stuck 2: object c, operation at line 10, partner at line 9"} {
		if !strings.Contains(out, s) {
			t.Errorf("fig 10: no %q in\n%s", s, out)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"LINEARIZABLE, NOT PROGRESSIBLE", "Stuck: not progressible", `data-line="9" data-partner="10"`} {
		if !strings.Contains(string(page), s) {
			t.Errorf("fig 10's report has no %q", s)
		}
	}
	code, out, _ = pmlin(t, "", "check", "--json", fig10)
	v = v2JSONOf(t, out)
	if code != 1 || !v.Linearizable || v.Stuck != 2 || len(v.Objects[0].Stuck) != 2 {
		t.Fatalf("fig 10 --json: exit %d, %+v", code, v)
	}
	if st := v.Objects[0].Stuck[0]; st.Op.Line != 9 || st.Partner.Line != 10 || st.Synchronised {
		t.Errorf("fig 10 --json: stuck %+v", st)
	}

	code, out, _ = pmlin(t, "", "check", "../examples/v2/exchanger-bug.hist")
	if code != 1 || !strings.Contains(out, "exchange 0x300001 -> 0x100001 (line 12, process 3) could not be paired") ||
		!strings.Contains(out, "not overlapping: exchange 0x100001 -> 0x200001 (line 8)") {
		t.Errorf("exchanger-bug: exit %d\n%s", code, out)
	}
}

// TestCheckSyncStuckSynchronised: a receive that returned the value of a
// send still pending at the end synchronised with it, so the send should
// have returned: stuck, naming the receive.
func TestCheckSyncStuckSynchronised(t *testing.T) {
	f := writeFile(t, "s.hist", "pmlin-history v2\nobject c channel\n1 inv c send 5\n2 inv c recv\n2 ret 5\n")
	code, out, _ := pmlin(t, "", "check", "--json", f)
	v := v2JSONOf(t, out)
	if code != 1 || !v.Linearizable || len(v.Objects[0].Stuck) != 1 {
		t.Fatalf("exit %d, %+v", code, v)
	}
	if st := v.Objects[0].Stuck[0]; st.Op.Line != 3 || st.Partner.Line != 4 || !st.Synchronised || !strings.Contains(st.Explanation, "must have synchronised: no pairing gives every operation that returned a partner without pending ones") {
		t.Errorf("stuck %+v", st)
	}
	// Answered, it is progressible.
	f = writeFile(t, "s2.hist", "pmlin-history v2\nobject c channel\n1 inv c send 5\n2 inv c recv\n2 ret 5\n1 ret ok\n")
	if code, out, _ := pmlin(t, "", "check", f); code != 0 || !strings.Contains(out, "LINEARIZABLE (strict mode") {
		t.Errorf("answered: exit %d\n%s", code, out)
	}
}

// TestCheckSyncRecoverable: in recoverable mode, an exchange cut off by a
// crash must pair before its process's next exchange; the only exchange
// that got its value came after: the two-step search says so (exit 1,
// engine twostep, the four operations); durable mode accepts it. Where
// only two operations that may not have taken effect could pair to
// explain a history, recoverable mode is undecided (exit 2, kind
// undecided), never guessed.
func TestCheckSyncRecoverable(t *testing.T) {
	h := "pmlin-history v2\nobject x exchanger\n1 inv x exchange 1\ncrash\n1 inv x exchange 2\n2 inv x exchange 3\n1 ret 3\n2 ret 2\n3 inv x exchange 9\n3 ret 1\n"
	f := writeFile(t, "r.hist", h)
	code, out, _ := pmlin(t, "", "check", "--json", "--mode", "recoverable", f)
	v := v2JSONOf(t, out)
	if code != 1 || v.Engine != "twostep" || len(v.Anomalies) != 1 || !slices.Equal(v.Anomalies[0].Ops, []int64{3, 5, 6, 9}) ||
		!strings.Contains(v.Anomalies[0].Explanation, "respects recoverable process order") {
		t.Errorf("recoverable: exit %d\n%s", code, out)
	}
	if code, out, errs := pmlin(t, "", "check", "--mode", "durable", f); code != 0 {
		t.Errorf("durable: exit %d\n%s%s", code, out, errs)
	}
	// Only a pair of two operations that may not have taken effect (a
	// cut-off send, a "?" receive) explains the receive of 3 here.
	f2 := writeFile(t, "r2.hist", "pmlin-history v2\nobject x channel\n0 inv x send 2\n1 inv x send 1\ncrash\n1 inv x send 3\ncrash\n"+
		"1 inv x send 1\n0 inv x recv\ncrash\n1 inv x recv\n1 ret ?\n1 inv x recv\n1 ret 3\n0 inv x send 3\n0 ret fail\n")
	code, out, _ = pmlin(t, "", "check", "--json", "--mode", "recoverable", f2)
	var e struct{ Error checkErrorJSON }
	if err := json.Unmarshal([]byte(out), &e); err != nil || code != 2 || e.Error.Kind != "undecided" || e.Error.Line != 2 ||
		!strings.Contains(e.Error.Message, "could have paired") {
		t.Errorf("recoverable, two cut-off exchanges: exit %d, %v\n%s", code, err, out)
	}
}
