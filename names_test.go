package pmlin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
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
	// In the caller's terms: timestamps, not a file's lines or pmlin merge.
	if !strings.Contains(res.Hint, "Call and Return timestamps is not the real-time order") || strings.Contains(res.Hint, "line") || strings.Contains(res.Hint, "merge") {
		t.Errorf("hint %q: not in the Go API's terms", res.Hint)
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

// objectHistory is a version 2 text's operations (one per line: "P inv
// OBJ NAME ARGS...", "P ret RESULTS..." or "?", "crash"), each step timed
// by its line, listed to the caller in reverse order of invocation: the
// caller's indexes are not the order of the text Check would write.
func objectHistory(t *testing.T, objs []model.Object, text string) pmlin.History {
	t.Helper()
	h := pmlin.History{Objects: objs}
	open := map[int]int{}
	values := func(fs []string) []model.Value {
		var vs []model.Value
		for _, f := range fs {
			v, err := model.ParseValue(f)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		return vs
	}
	for k, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f, at := strings.Fields(line), int64(10*(k+1))
		if f[0] == "crash" {
			h.Crashes = append(h.Crashes, at)
			continue
		}
		var p int
		fmt.Sscan(f[0], &p)
		switch op := &h.Operations; f[1] {
		case "inv":
			obj := slices.IndexFunc(objs, func(o model.Object) bool { return o.Name == f[2] })
			open[p] = len(*op)
			*op = append(*op, pmlin.Operation{Process: p, Object: obj, Name: f[3], Args: values(f[4:]), Call: at, Outcome: pmlin.Pending})
		case "ret":
			o := &(*op)[open[p]]
			o.Return, o.Outcome = at, pmlin.Returned
			if f[2] == "?" {
				o.Outcome = pmlin.Unknown
			} else {
				o.Results = values(f[2:])
			}
		}
	}
	slices.Reverse(h.Operations)
	return h
}

// TestObjectSentencesNameOperations: Check of a history of objects names
// the caller's operations and crashes by index in every sentence its
// engines make (the queue's, the unique-value engine's, the search's, the
// synchronisation objects' pairing and two-step forms, their stuck
// operations, an undecided reason), never a line of the version 2 text it
// did not write; the operations named are the anomaly's.
func TestObjectSentencesNameOperations(t *testing.T) {
	q := []model.Object{{Name: "q", Model: "queue"}}
	x := []model.Object{{Name: "x", Model: "exchanger"}}
	for _, c := range []struct {
		name string
		objs []model.Object
		text string
		mode pmlin.Mode
		// want: in the first anomaly's explanation, or in the error;
		// operations are numbered in reverse order of invocation.
		want     []string
		kind     string
		ops      []int // of the first anomaly
		undecide bool
	}{
		{name: "queue: lost element", objs: q, text: "1 inv q enq 1\n1 ret ok\n2 inv q enq 2\n2 ret ok\n1 inv q deq\n1 ret 2\n",
			want: []string{"deq -> 2 at operation 0", "enq 1 -> ok at operation 2"}, kind: "nonlinearizable", ops: []int{2, 1, 0}},
		{name: "map: wrong get (unique values)", objs: []model.Object{{Name: "m", Model: "map"}},
			text: "1 inv m put 7 100\n1 ret nil\n2 inv m get 7\n2 ret 100\n1 inv m remove 7\n1 ret 100\n2 inv m get 7\n2 ret 100\n",
			want: []string{"at operation 0", "at operation 1"}, kind: "nonlinearizable"},
		{name: "counter: the search", objs: []model.Object{{Name: "c", Model: "counter"}},
			text: "1 inv c add 1\n1 ret ok\n2 inv c get\n2 ret 2\n",
			want: []string{"get -> 2 at operation 0 must take effect", "(from add 1 -> ok at operation 1)"}, kind: "nonlinearizable", ops: []int{0}},
		{name: "queue: durable through a crash", objs: q, mode: pmlin.Durable,
			text: "1 inv q enq 7\n1 ret ok\n2 inv q deq\ncrash\n3 inv q deq\n3 ret 8\n",
			want: []string{"deq -> 8 at operation 0"}, kind: "nonlinearizable", ops: []int{0}},
		{name: "exchanger: an exchange nobody gave", objs: x,
			text: "1 inv x exchange 1\n2 inv x exchange 2\n2 ret 1\n1 ret 2\n3 inv x exchange 3\n3 ret 1\n",
			want: []string{"exchange 3 -> 1 (operation 0, process 3) could not be paired"}, kind: "nonlinearizable", ops: []int{0}},
		{name: "exchanger: two-step form, recoverable", objs: x, mode: pmlin.Recoverable,
			text: "1 inv x exchange 1\ncrash\n1 inv x exchange 2\n2 inv x exchange 3\n1 ret 3\n2 ret 2\n3 inv x exchange 9\n3 ret 1\n",
			want: []string{"No synchronisation linearisation", "at operation 0"}, kind: "nonlinearizable"},
		{name: "channel: stuck", objs: []model.Object{{Name: "c", Model: "channel"}},
			text: "1 inv c send 5\n2 inv c recv\n1 ret ok\n2 ret 5\n3 inv c send 6\n4 inv c recv\n",
			want: []string{"send 6 (cut off) (operation 1, process 3)", "recv (cut off) (operation 0"}, kind: "stuck", ops: []int{1, 0}},
		{name: "exchanger: stuck in two-step form", objs: x, mode: pmlin.Recoverable,
			text: "1 inv x exchange 1\ncrash\n1 inv x exchange 2\n2 inv x exchange 3\n1 ret 3\n2 ret 2\n4 inv x exchange 7\n5 inv x exchange 8\n6 inv x exchange 5\n7 inv x exchange 6\n6 ret 6\n",
			want: []string{"exchange 7 (cut off) (operation 3, process 4) never returned, while exchange 8 (cut off) (operation 2, process 5)"}, kind: "stuck", ops: []int{3, 2}},
		{name: "channel: undecided in two-step form", objs: []model.Object{{Name: "x", Model: "channel"}}, mode: pmlin.Recoverable,
			text: "0 inv x send 2\n1 inv x send 1\ncrash\n1 inv x send 3\ncrash\n1 inv x send 1\n0 inv x recv\ncrash\n1 inv x recv\n1 ret ?\n1 inv x recv\n1 ret 3\n0 inv x send 3\n0 ret fail\n",
			want: []string{"could have paired (such as those at operation 7 and operation 3)"}, undecide: true},
	} {
		h := objectHistory(t, c.objs, c.text)
		res, err := pmlin.Check(context.Background(), h, pmlin.Options{Mode: c.mode})
		if c.undecide {
			if !errors.Is(err, pmlin.ErrUndecided) {
				t.Fatalf("%s: %v, want undecided", c.name, err)
			}
			sentenceNames(t, c.name, err.Error(), len(h.Operations), c.want)
			continue
		}
		if err != nil || len(res.Anomalies) == 0 {
			t.Fatalf("%s: %v %+v", c.name, err, res)
		}
		a := res.Anomalies[0]
		if a.Kind != c.kind || c.ops != nil && !slices.Equal(a.Ops, c.ops) {
			t.Errorf("%s: anomaly %s of %v, want %s of %v", c.name, a.Kind, a.Ops, c.kind, c.ops)
		}
		for _, a := range res.Anomalies {
			sentenceNames(t, c.name, a.Explanation, len(h.Operations), nil)
			for _, i := range a.Ops {
				if !strings.Contains(a.Explanation, fmt.Sprintf("operation %d", i)) && a.Kind == "stuck" {
					t.Errorf("%s: operation %d of %v not named: %s", c.name, i, a.Ops, a.Explanation)
				}
			}
		}
		sentenceNames(t, c.name, a.Explanation, len(h.Operations), c.want)
		var report bytes.Buffer
		if err := res.WriteReport(&report); err != nil {
			t.Fatal(err)
		}
		sentenceNames(t, c.name+" (report)", report.String(), len(h.Operations), nil)
	}
}

// sentenceNames checks that s names no line, only operations among n,
// and holds each of want.
func sentenceNames(t *testing.T, name, s string, n int, want []string) {
	t.Helper()
	if l := regexp.MustCompile(`\blines? \d`).FindString(s); l != "" {
		t.Errorf("%s: names %s: %s", name, l, s)
	}
	for _, m := range regexp.MustCompile(`operation (\d+)`).FindAllStringSubmatch(s, -1) {
		if i, _ := strconv.Atoi(m[1]); i >= n {
			t.Errorf("%s: names operation %d of %d: %s", name, i, n, s)
		}
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s: %q not in %s", name, w, s)
		}
	}
}
