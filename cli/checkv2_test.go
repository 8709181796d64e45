package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/model"
)

// v2JSONOf decodes check --json's verdict of a version 2 history, refusing
// any field the contract does not name.
func v2JSONOf(t *testing.T, out string) report.ObjectsVerdict {
	t.Helper()
	var v report.ObjectsVerdict
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("not one verdict object: %v\n%s", err, out)
	}
	return v
}

// TestCheckV2Testdata: every version 2 history under internal/history/testdata/v2,
// text and JSON Lines, gets its verdict in every mode, with one object per
// object of the file; those that tell the modes apart, and Round-Up's
// bug, are judged as their comments say.
func TestCheckV2Testdata(t *testing.T) {
	files, _ := filepath.Glob("../internal/history/testdata/v2/*")
	if len(files) < 12 {
		t.Fatalf("%d files", len(files))
	}
	// Exit status per mode: strict, recoverable, durable.
	want := map[string][3]int{
		"register-durable.hist":     {1, 1, 0},
		"register-recoverable.hist": {1, 0, 0},
		"kqueue-crash-modes.hist":   {1, 0, 0},
		"kqueue-roundup-bug.hist":   {1, 1, 1},
		"exchanger-fig9.hist":       {1, 1, 1},
		"channel-prop12.hist":       {1, 1, 1},
		"channel-fig10.hist":        {1, 1, 1}, // linearizable, stuck
		"channel-sec3.hist":         {1, 1, 1}, // linearizable, stuck
	}
	for _, f := range files {
		for m, mode := range []string{"strict", "recoverable", "durable"} {
			code, out, errs := pmlin(t, "", "check", "--json", "--mode", mode, f)
			exp := want[filepath.Base(f)][m]
			if code != exp {
				t.Errorf("%s, %s: exit %d, want %d\n%s%s", f, mode, code, exp, out, errs)
				continue
			}
			v := v2JSONOf(t, out)
			engine := []string{"exact", "queue", "unique", "mixed"}
			if strings.HasPrefix(filepath.Base(f), "exchanger") || strings.HasPrefix(filepath.Base(f), "channel") {
				engine = []string{"sync"}
			}
			if v.Version != 2 || !slices.Contains(engine, v.Engine) || v.Mode.String() != mode || v.Linearizable != (exp == 0 || v.Stuck > 0) || len(v.Objects) == 0 {
				t.Errorf("%s, %s: %+v", f, mode, v)
			}
			if (len(v.Anomalies) > 0) == v.Linearizable {
				t.Errorf("%s, %s: linearizable %v with %d anomalies", f, mode, v.Linearizable, len(v.Anomalies))
			}
		}
	}
}

// TestCheckV2Violation: a queue's deq of a value never enqueued fails,
// in text (the object's verdict, the explanation naming the lines) and
// JSON (the anomaly's operations by line); the other object stays
// linearizable; so does a history with the same operations, answered.
func TestCheckV2Violation(t *testing.T) {
	h := "pmlin-history v2\nobject q queue\nobject c counter\n1 inv q enq 1\n1 ret ok\n2 inv c add 1\n2 ret ok\n1 inv q deq\n1 ret 2\n"
	f := writeFile(t, "bad.hist", h)
	code, out, errs := pmlin(t, "", "check", f)
	if code != 1 || errs != "" {
		t.Fatalf("exit %d, %s", code, errs)
	}
	for _, s := range []string{"NOT LINEARIZABLE (strict mode, exact search)", "object q (queue): NOT LINEARIZABLE, 2 operations",
		"object c (counter): linearizable, 1 operations", "anomaly 1: nonlinearizable, object q, operation", "deq -> 2 at line 8"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in\n%s", s, out)
		}
	}
	code, out, _ = pmlin(t, h, "check", "--json", "-")
	v := v2JSONOf(t, out)
	if code != 1 || v.File != "<stdin>" || v.Linearizable || len(v.Anomalies) != 1 {
		t.Fatalf("exit %d: %+v", code, v)
	}
	a := v.Anomalies[0]
	if a.Kind != "nonlinearizable" || a.Object != "q" || a.Model != "queue" || a.Failing != 8 || len(a.Ops) == 0 || a.Ops[len(a.Ops)-1] != 8 || !a.Minimal {
		t.Errorf("anomaly %+v", a)
	}
	if v.Objects[1].Name != "c" || !v.Objects[1].Linearizable || v.Objects[0].Linearizable || v.Objects[0].Verdict != "violation" {
		t.Errorf("objects %+v", v.Objects)
	}
	good := strings.Replace(h, "1 ret 2", "1 ret 1", 1)
	if code, out, errs := pmlin(t, good, "check", "-"); code != 0 || !strings.Contains(out, "<stdin>: LINEARIZABLE (strict mode, exact search)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// TestCheckV2Errors: malformed input, an unknown model, an operation its
// model does not have, a budget too small: exit 2, the file and line
// named, in text and as the JSON error object.
func TestCheckV2Errors(t *testing.T) {
	for _, c := range []struct {
		in, want, kind string
		line           int64
		args           []string
	}{
		{"pmlin-history v2\nobject q queue\n1 ret ok\n", "bad.hist:3: process 1 returns but has no pending operation", kindMalformed, 3, nil},
		{"pmlin-history v2\nobject q quue\n1 inv q deq\n", `bad.hist:2: object q: unknown model "quue"`, kindMalformed, 2, nil},
		{"pmlin-history v2\nobject q queue cap=x\n1 inv q deq\n", "bad.hist:2: object q: ", kindMalformed, 2, nil},
		{"pmlin-history v2\nobject q queue\n1 inv q push 1\n", `bad.hist:3: process 1: queue has no operation "push"`, kindMalformed, 3, nil},
		{"pmlin-history v2\nobject q queue\n1 inv q enq 1\n1 ret 5\n", "bad.hist:4: process 1: queue enq", kindMalformed, 4, nil},
		{"pmlin-history v2\nobject q queue\n", "bad.hist: no operation", kindMalformed, 0, nil},
		// cap=5: a queue the exact search decides (the queue engine, which
		// has no budget of states, takes unbounded ones).
		{"pmlin-history v2\nobject q queue cap=5\n1 inv q enq 1\n2 inv q enq 2\n1 ret ok\n2 ret ok\n3 inv q deq\n3 ret 2\n3 inv q deq\n3 ret 1\n",
			"bad.hist:2: undecided: object q: explored 1 states, the budget", kindUndecided, 2, []string{"--budget", "1"}},
		{"pmlin-history v2\nobject q queue\n1 inv q enq 1\n1 ret ok\n", "bad.hist:3: undecided: the search ran past its budget of 1ns (--budget)", kindUndecided, 3, []string{"--budget", "1ns"}},
		{"pmlin-history v2\nobject q queue\n1 inv q deq\n1 ret empty\n", "bad.hist: --dot is for version 1 histories", kindUsage, 0,
			[]string{"--dot", filepath.Join(t.TempDir(), "r.dot")}},
		{"pmlin-history v2\nobject q queue\n1 inv q deq\n1 ret empty\n", "bad.hist: --dot is for version 1 histories", kindUsage, 0,
			[]string{"--report", filepath.Join(t.TempDir(), "r.html"), "--shrink", filepath.Join(t.TempDir(), "s.hist"), "--dot", filepath.Join(t.TempDir(), "r.dot")}},
		// --shrink of a malformed history: the check's error, nothing written.
		{"pmlin-history v2\nobject q queue\n1 inv q enq 1\n1 ret 5\n", "bad.hist:4: process 1: queue enq", kindMalformed, 4,
			[]string{"--shrink", filepath.Join(t.TempDir(), "s.hist")}},
	} {
		f := writeFile(t, "bad.hist", c.in)
		code, out, errs := pmlin(t, "", append(append([]string{"check"}, c.args...), f)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, %q, want %q", c.in, code, errs, c.want)
			continue
		}
		code, out, _ = pmlin(t, "", append(append([]string{"check", "--json"}, c.args...), f)...)
		if e := errorObject(t, out); code != 2 || e.Kind != c.kind || e.Line != c.line || !strings.HasSuffix(e.File, "bad.hist") {
			t.Errorf("%q: exit %d, %+v", c.in, code, e)
		}
	}
}

// TestCheckV2MemoryBound: the searches' memos are bounded by half of
// --max-memory; past it the object is undecided (exit 2), never guessed.
func TestCheckV2MemoryBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("pmlin-history v2\nobject x register\n")
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "1 inv x write %d\n1 ret ok\n2 inv x read\n2 ret %d\n", i, i)
	}
	f := writeFile(t, "big.hist", b.String())
	if code, out, errs := pmlin(t, "", "check", f); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, _, errs := pmlin(t, "", "check", "--max-memory", "100K", f)
	if code != 2 || !strings.Contains(errs, "big.hist:2: undecided: object x: the searches' memos would take more than 51200 bytes") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	// A history whose size says it cannot fit is refused before it is read.
	code, out, errs := pmlin(t, "", "check", "--json", "--max-memory", "16K", f)
	if e := errorObject(t, out); code != 2 || e.Kind != kindUndecided || e.Line != 0 || !strings.Contains(e.Message, "too large for the memory available: checking it needs about") ||
		!strings.Contains(errs, "(estimated from its size), and --max-memory allows 16 KiB") {
		t.Fatalf("exit %d, %+v, %s", code, e, errs)
	}
}

// TestCheckV2AmongV1: a version 2 history checked beside version 1 ones,
// each on its own, the exit status the worst; --exact takes a version 2
// history to the same check (an unbounded queue of unique values: the
// queue engine).
func TestCheckV2AmongV1(t *testing.T) {
	v2 := writeFile(t, "q.hist", "pmlin-history v2\nobject q queue\n1 inv q deq\n1 ret 5\n")
	code, out, _ := pmlin(t, "", "check", "../examples/linearizable.hist", v2)
	if code != 1 || !strings.Contains(out, "q.hist: NOT LINEARIZABLE (strict mode, queue engine)") ||
		!strings.Contains(out, "pmlin check: 2 files: 1 linearizable, 1 not linearizable, 0 with an error; exit status 1") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if code, out, _ := pmlin(t, "", "check", "--exact", v2); code != 1 || !strings.Contains(out, "q.hist: NOT LINEARIZABLE") {
		t.Fatalf("--exact: exit %d\n%s", code, out)
	}
}

// TestCheckV2OwnModel: a pmlin of one's own (Command.Models) checks
// objects of its own models, beside the built-in ones.
func TestCheckV2OwnModel(t *testing.T) {
	// "once": fire -> ok the first time, fail after.
	once := func([]model.Param) (*model.Model, error) {
		return &model.Model{
			Init: func() []any { return []any{false} },
			Step: func(s any, op *model.Op) []any {
				fired := s.(bool)
				switch {
				case op.Status != model.Returned:
					return []any{true}
				case op.Results[0] == model.Sym(model.OK) && !fired, op.Results[0] == model.Sym(model.Fail) && fired:
					return []any{true}
				}
				return nil
			},
			Key: func(s any) string { return fmt.Sprint(s) },
			Validate: func(op *model.Op) error {
				if op.Name != "fire" || len(op.Args) != 0 {
					return fmt.Errorf("once has one operation, fire, without arguments")
				}
				return nil
			},
		}, nil
	}
	models := func(name string) model.Maker {
		if name == "once" {
			return once
		}
		return model.Builtin(name)
	}
	run := func(in string) (int, string, string) {
		var out, errs bytes.Buffer
		code := Command{Targets: testTargets, Models: models, Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errs}.Run(context.Background(), []string{"check", "-"})
		return code, out.String(), errs.String()
	}
	h := "pmlin-history v2\nobject o once\nobject q queue\n1 inv o fire\n2 inv o fire\n1 ret ok\n2 ret fail\n3 inv q deq\n3 ret empty\n"
	if code, out, errs := run(h); code != 0 || !strings.Contains(out, "object o (once): linearizable") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := run(strings.Replace(h, "2 ret fail", "2 ret ok", 1)); code != 1 || !strings.Contains(out, "object o (once): NOT LINEARIZABLE") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if code, _, errs := run(h + "4 inv o shoot\n"); code != 2 || !strings.Contains(errs, "<stdin>:10: process 4: once has one operation") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if code, _, errs := pmlin(t, h, "check", "-"); code != 2 || !strings.Contains(errs, `<stdin>:2: object o: unknown model "once"`) {
		t.Fatalf("the built-in pmlin: exit %d\n%s", code, errs)
	}
}

// TestCheckV2Report: --report writes a version 2 history's HTML report
// (announced on standard error, the verdict and exit status as without
// it, from standard input too), refuses to replace a file without
// --force, before any work, and replaces it with --force.
func TestCheckV2Report(t *testing.T) {
	bad := "pmlin-history v2\nobject q queue\nobject c counter\n1 inv q enq 1\n1 ret ok\n2 inv c add 1\n2 ret ok\n1 inv q deq\n1 ret 2\n"
	good := "pmlin-history v2\nobject q queue\n1 inv q enq 1\n1 ret ok\n1 inv q deq\n1 ret 1\n"
	f := writeFile(t, "bad.hist", bad)
	html := filepath.Join(t.TempDir(), "r.html")
	code, out, errs := pmlin(t, "", "check", "--report", html, f)
	page, err := os.ReadFile(html)
	if code != 1 || err != nil || !strings.Contains(out, "object q (queue): NOT LINEARIZABLE") || !strings.Contains(errs, "pmlin: wrote the report "+html) {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errs)
	}
	for _, s := range []string{"<!DOCTYPE html>", `data-object="q"`, `data-object="c"`, `class="op hl fail"`, "NOT LINEARIZABLE"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("the report has no %q", s)
		}
	}
	code, out, errs = pmlin(t, good, "check", "--json", "--report", html, "-")
	if after, _ := os.ReadFile(html); code != 2 || errorObject(t, out).Kind != kindUsage || !strings.Contains(errs, "--report "+html+": the file exists (use --force") || string(after) != string(page) {
		t.Fatalf("without --force: exit %d, %q, %q", code, out, errs)
	}
	code, out, _ = pmlin(t, good, "check", "--json", "--force", "--report", html, "-")
	after, _ := os.ReadFile(html)
	if v := v2JSONOf(t, out); code != 0 || !v.Linearizable || !strings.Contains(string(after), "&lt;stdin&gt;: <span class=\"ok\">LINEARIZABLE") {
		t.Fatalf("--force: exit %d\n%s\n%s", code, out, after)
	}
	if m, _ := filepath.Glob(html + "*"); len(m) != 1 {
		t.Errorf("files left beside the report: %v", m)
	}
}

// TestCheckV2WordsAgreesWithExact: version 1 histories put in a version 2
// file (the header changed, every line kept: they act on the object
// words) get, from the exact search for any model, the verdict that
// pmlin check --exact gives the version 1 file, in every mode.
func TestCheckV2WordsAgreesWithExact(t *testing.T) {
	var files []string
	for _, g := range []string{"../examples/*.hist", "../internal/history/testdata/*.hist", "../internal/analyzer/testdata/chains/*.hist", "../internal/analyzer/testdata/opodis/*.hist"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 15 {
		t.Fatalf("%d files", len(files))
	}
	verdicts := map[int]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v2 strings.Builder
		v2.WriteString("pmlin-history v2\n")
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if !strings.HasPrefix(l, "pmlin-history") {
				v2.WriteString(l)
			}
		}
		for _, mode := range []string{"strict", "recoverable", "durable"} {
			want, _, _ := pmlin(t, "", "check", "--exact", "--mode", mode, f)
			code, out, errs := pmlin(t, v2.String(), "check", "--mode", mode, "-")
			if code != want {
				t.Errorf("%s, %s: exit %d as version 2, %d by check --exact\n%s%s", f, mode, code, want, out, errs)
			}
			verdicts[code]++
		}
	}
	if verdicts[0] == 0 || verdicts[1] == 0 {
		t.Errorf("verdicts %v: the files do not tell the checkers apart", verdicts)
	}
	t.Logf("exit statuses %v over %d files", verdicts, len(files))
}

// TestCheckV2Progress: on a terminal, a long search of a version 2 history
// shows its states and searches on standard error, and clears the line at
// the end (reported every millisecond here). The history: 14 writes answered ? and a read of a value none
// wrote, so the search tries every subset of the writes before it gives up.
func TestCheckV2Progress(t *testing.T) {
	var b strings.Builder
	b.WriteString("pmlin-history v2\nobject x register\n")
	for p := 1; p <= 14; p++ {
		fmt.Fprintf(&b, "%d inv x write %d\n", p, p)
	}
	for p := 1; p <= 14; p++ {
		fmt.Fprintf(&b, "%d ret ?\n", p)
	}
	b.WriteString("20 inv x read\n20 ret 99\n")
	path := writeFile(t, "slow.hist", b.String())
	var out, errs bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errs, stderrTTY: true, progressEvery: time.Millisecond}
	err := runCheck(context.Background(), e, path, checkOptions{})
	if ee, ok := err.(*exitError); !ok || ee.code != exitViolated {
		t.Fatalf("%v\n%s%s", err, out.String(), errs.String())
	}
	if s := errs.String(); !strings.Contains(s, "pmlin check: "+path+": ") || !strings.Contains(s, " states, ") || !strings.HasSuffix(s, "\r\033[K") {
		t.Errorf("no progress on standard error, or not cleared: %q", s)
	}
}
