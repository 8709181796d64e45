package pmlin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/model"
)

// TestExplanationsNameOperations: Check's sentences (explanations, edges'
// reasons, hints, errors) name the caller's operations by index, its
// crashes by index and its responses by their timestamps, never a line of
// a text the caller did not write: the operations named are the
// anomaly's.
func TestExplanationsNameOperations(t *testing.T) {
	crashed := pmlin.Operation{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{10}, Expected: []uint64{0}, New: []uint64{0x100001}, Call: 1, Outcome: pmlin.Pending}
	for _, c := range []struct {
		name string
		h    pmlin.History
		want []string // in the first anomaly's explanation
	}{
		{"stale read", pmlin.History{Operations: []pmlin.Operation{cas(1, 0, 5, 1, 0, 7, pmlin.OK), read(2, 6, 10, []uint64{1}, 0)}},
			[]string{"operation 0 (process 1 cas) returned at time 5, before operation 1 (process 2 read) was invoked"}},
		{"cut off by a crash", pmlin.History{Operations: []pmlin.Operation{crashed, read(2, 3, 4, []uint64{10}, 0), read(2, 5, 6, []uint64{10}, 0x100001)}, Crashes: []int64{2}},
			[]string{"was cut off by crash 0 and", "as operation 2 observed its value", "came before crash 0"}},
		{"torn read (README)", pmlin.History{Operations: []pmlin.Operation{
			{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{10, 11}, Expected: []uint64{0, 0}, New: []uint64{0x100001, 0x100002}, Call: 100, Return: 180, Outcome: pmlin.OK},
			{Process: 2, Kind: pmlin.Read, Addrs: []uint64{10, 11}, Call: 150, Return: 200, Outcome: pmlin.Returned, Values: []uint64{0x100001, 0}},
			{Process: 1, Kind: pmlin.Read, Addrs: []uint64{11}, Call: 190, Return: 210, Outcome: pmlin.Returned, Values: []uint64{0x100002}}}},
			[]string{"operation 1 (process 2 read) read address 11 = 0, which operation 0 (process 1 cas) replaced, so the read came first"}},
		{"lost write", pmlin.History{Operations: []pmlin.Operation{read(3, 20, 21, []uint64{1}, 0), cas(1, 0, 1, 1, 0, 5, pmlin.OK)}, Crashes: []int64{7, 15}},
			[]string{"after crash 0", "the successful cas of operation 1, which returned at time 1, was lost at address 1"}},
	} {
		res := check(t, c.h, pmlin.Strict)
		if res.Linearizable || len(res.Anomalies) == 0 {
			t.Fatalf("%s: linearizable", c.name)
		}
		for _, a := range res.Anomalies {
			sentences := []string{a.Explanation}
			for _, e := range a.Edges {
				sentences = append(sentences, e.Reason)
			}
			for _, s := range sentences {
				if strings.Contains(s, "line") {
					t.Errorf("%s: names a line: %s", c.name, s)
				}
			}
			for _, i := range a.Ops {
				if !strings.Contains(a.Explanation, fmt.Sprintf("operation %d (process %d ", i, c.h.Operations[i].Process)) {
					t.Errorf("%s: operation %d of %v not named: %s", c.name, i, a.Ops, a.Explanation)
				}
			}
		}
		for _, w := range c.want {
			if !strings.Contains(res.Anomalies[0].Explanation, w) {
				t.Errorf("%s: %q not in %s", c.name, w, res.Anomalies[0].Explanation)
			}
		}
		// The report's titles too.
		var report bytes.Buffer
		if err := res.WriteReport(&report); err != nil {
			t.Fatal(err)
		}
		if title := fmt.Sprintf("anomaly 1: %s, operations %d, %d,", res.Anomalies[0].Kind, res.Anomalies[0].Ops[0], res.Anomalies[0].Ops[1]); !strings.Contains(report.String(), title) || strings.Contains(report.String(), "line") {
			t.Errorf("%s: the report names lines, or lacks %q:\n%s", c.name, title, report.String())
		}
	}

	// A hint: operation 1 read a value before its writer was called.
	res := check(t, pmlin.History{Operations: []pmlin.Operation{cas(1, 10, 11, 1, 0, 5, pmlin.OK), read(2, 0, 1, []uint64{1}, 5)}}, pmlin.Strict)
	if want := "operation 1 observed at address 1 the value that operation 0 wrote, but operation 0 was invoked only after operation 1 had returned"; !strings.HasPrefix(res.Hint, want) {
		t.Errorf("hint %q, want %q...", res.Hint, want)
	}

	// An error the analyzer finds names both operations.
	_, err := pmlin.Check(context.Background(), pmlin.History{Operations: []pmlin.Operation{cas(1, 0, 1, 1, 0, 5, pmlin.OK), cas(2, 2, 3, 1, 0, 5, pmlin.OK)}}, pmlin.Options{})
	if want := "operation 1: breaks Assumption 1: it writes 5 to address 1, as does the cas of operation 0"; !errors.Is(err, pmlin.ErrAssumption) || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestLineOfWriteHistory: Result.Line is the line of an operation's
// invocation in WriteHistory's text, whose header grows with InitWords,
// and WriteHistory writes what History.WriteTo writes.
func TestLineOfWriteHistory(t *testing.T) {
	h := pmlin.History{Init: 3, InitWords: map[uint64]uint64{}, Crashes: []int64{4}}
	for a := range uint64(12) {
		h.InitWords[a+100] = a + 1
	}
	h.Operations = []pmlin.Operation{read(2, 5, 6, []uint64{1}, 3), cas(1, 0, 1, 1, 3, 5, pmlin.Failed), read(1, 2, 3, []uint64{100, 111}, 1, 12)}
	res := check(t, h, pmlin.Strict)
	var text, direct bytes.Buffer
	if err := res.WriteHistory(&text); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteTo(&direct); err != nil || direct.String() != text.String() {
		t.Fatalf("WriteTo %v:\n%s\nWriteHistory:\n%s", err, direct.String(), text.String())
	}
	lines := strings.Split(text.String(), "\n")
	for i := range h.Operations {
		if l := res.Line(i); l < 1 || int(l) > len(lines) || !strings.HasSuffix(lines[l-1], fmt.Sprintf("# op %d", i)) {
			t.Errorf("Line(%d) = %d:\n%s", i, l, text.String())
		}
	}
	if !strings.Contains(text.String(), "crash  # crash 0\n") {
		t.Errorf("no crash line:\n%s", text.String())
	}

	// A history of objects: its version 2 text, after a line per object.
	objects := pmlin.History{Objects: []model.Object{{Name: "q", Model: "queue"}, {Name: "r", Model: "queue"}}, Crashes: []int64{25},
		Operations: []pmlin.Operation{qop(2, "deq", 30, 40, pmlin.Returned, nil, vals(7)), qop(1, "enq", 10, 20, pmlin.Returned, vals(7), okv)}}
	res = check(t, objects, pmlin.Strict)
	text.Reset()
	if err := res.WriteHistory(&text); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(text.String(), "\n")
	for i := range objects.Operations {
		if l := res.Line(i); l < 1 || int(l) > len(lines) || !strings.HasSuffix(lines[l-1], fmt.Sprintf("# op %d", i)) {
			t.Errorf("objects: Line(%d) = %d:\n%s", i, l, text.String())
		}
	}
}

// TestWriteHTMLWords: the HTML report of a history of words draws the
// operations with their values, read again from the events checked.
func TestWriteHTMLWords(t *testing.T) {
	res := check(t, pmlin.History{Operations: []pmlin.Operation{cas(1, 0, 5, 1, 0, 0x7777, pmlin.OK), read(2, 6, 10, []uint64{1}, 0)}}, pmlin.Strict)
	var b bytes.Buffer
	if err := res.WriteHTML(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "0x7777") {
		t.Fatalf("the report lacks the cas's new value 0x7777 (%d bytes)", b.Len())
	}
}
