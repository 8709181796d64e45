package pmlintest_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmlintest"
)

// errT records what Check reports instead of failing the test.
type errT struct {
	testing.TB
	msgs []string
}

func (f *errT) Helper() {}
func (f *errT) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// torn is a history with a torn read: operations 0 and 1 form a cycle.
func torn() pmlin.History {
	return pmlin.History{Operations: []pmlin.Operation{
		{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{10, 11}, Expected: []uint64{0, 0}, New: []uint64{0x100001, 0x100002}, Call: 100, Return: 180, Outcome: pmlin.OK},
		{Process: 2, Kind: pmlin.Read, Addrs: []uint64{10, 11}, Call: 150, Return: 200, Outcome: pmlin.Returned, Values: []uint64{0x100001, 0}},
	}}
}

// kept lists the files a failure message names.
func kept(msg string) []string {
	var out []string
	for _, l := range strings.Split(msg, "\n") {
		if f := strings.Fields(l); len(f) > 0 && filepath.IsAbs(f[0]) {
			out = append(out, f[0])
		}
	}
	return out
}

func TestCheckPasses(t *testing.T) {
	h := torn()
	h.Operations[1].Values[1] = 0x100002
	f := &errT{TB: t}
	if res := pmlintest.Check(f, h, pmlin.Options{}); res == nil || !res.Linearizable || len(f.msgs) != 0 {
		t.Fatalf("%+v %v", res, f.msgs)
	}
	if ents, _ := os.ReadDir(t.ArtifactDir()); len(ents) != 0 {
		t.Fatalf("a pass kept %v", ents)
	}
}

// TestCheckKeepsArtifacts: a violation fails the test with the report and
// the paths of the history, the report and the HTML report, in the test's
// artifact directory.
func TestCheckKeepsArtifacts(t *testing.T) {
	f := &errT{TB: t}
	res := pmlintest.Check(f, torn(), pmlin.Options{})
	if res == nil || res.Linearizable || len(f.msgs) != 1 {
		t.Fatalf("%+v %v", res, f.msgs)
	}
	msg := f.msgs[0]
	files := kept(msg)
	if !strings.Contains(msg, "history: NOT LINEARIZABLE") || len(files) != 3 {
		t.Fatalf("%s", msg)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil || filepath.Dir(p) != t.ArtifactDir() {
			t.Fatalf("%s: %v", p, err)
		}
		switch filepath.Ext(p) {
		case ".hist":
			if !strings.Contains(string(b), "2 inv read 10 11  # op 1") {
				t.Fatalf("%s:\n%s", p, b)
			}
		case ".html":
			if !strings.Contains(string(b), "<html") {
				t.Fatalf("%s is not the HTML report", p)
			}
		case ".txt":
			if !strings.Contains(string(b), "anomaly 1: cycle") {
				t.Fatalf("%s:\n%s", p, b)
			}
		}
	}
	// Without -artifacts, ArtifactDir is removed after the test: the
	// message says so, and how to keep the files.
	withFlag := flag.Lookup("test.artifacts").Value.String() == "true"
	if note := strings.Contains(msg, "removed after the test: go test -artifacts keeps them, or set PMLIN_ARTIFACTS=DIR"); note == withFlag {
		t.Fatalf("-artifacts %v, message:\n%s", withFlag, msg)
	}
}

// TestCheckArtifactsEnv: PMLIN_ARTIFACTS=DIR keeps the files in
// DIR/TEST-NAME, every check's under its own name.
func TestCheckArtifactsEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(pmlintest.ArtifactsEnv, dir)
	f := &errT{TB: t}
	pmlintest.Check(f, torn(), pmlin.Options{})
	pmlintest.Check(f, torn(), pmlin.Options{})
	if len(f.msgs) != 2 {
		t.Fatal(f.msgs)
	}
	want := filepath.Join(dir, "TestCheckArtifactsEnv")
	for k, msg := range f.msgs {
		files := kept(msg)
		suffix := ""
		if k == 1 {
			suffix = "-2"
		}
		if len(files) != 3 || files[0] != filepath.Join(want, "history"+suffix+".hist") || strings.Contains(msg, "removed after the test") {
			t.Fatalf("check %d: %s", k, msg)
		}
	}
}

// TestCheckCannotJudge: a history the method cannot judge fails the test
// with the operation to blame, and its text is kept.
func TestCheckCannotJudge(t *testing.T) {
	h := torn()
	h.Operations = append(h.Operations, pmlin.Operation{Process: 3, Kind: pmlin.CAS, Addrs: []uint64{10}, Expected: []uint64{0}, New: []uint64{0x100001},
		Call: 300, Return: 310, Outcome: pmlin.OK})
	f := &errT{TB: t}
	if res := pmlintest.Check(f, h, pmlin.Options{Name: "dup"}); res != nil || len(f.msgs) != 1 {
		t.Fatalf("%v %v", res, f.msgs)
	}
	msg := f.msgs[0]
	if !strings.Contains(msg, "dup cannot be checked: operation 2: breaks Assumption 1") || len(kept(msg)) != 1 || !strings.HasSuffix(kept(msg)[0], "dup.hist") {
		t.Fatalf("%s", msg)
	}
	// An operation without an outcome: named, nothing to keep.
	h.Operations[2].Outcome = 0
	f = &errT{TB: t}
	pmlintest.Check(f, h, pmlin.Options{})
	if len(f.msgs) != 1 || !strings.Contains(f.msgs[0], "operation 2: a cas cannot end Outcome(0)") || len(kept(f.msgs[0])) != 0 {
		t.Fatalf("%v", f.msgs)
	}
}

// TestCheckObjects: a history of objects (pmlin.History.Objects) fails
// the test the same way, keeping the history as checked (version 2 text,
// each invocation naming its index), the report and the HTML report (the
// object's timeline, its witness highlighted).
func TestCheckObjects(t *testing.T) {
	n := model.Number
	h := pmlin.History{
		Objects: []model.Object{{Name: "s", Model: "stack"}},
		Operations: []pmlin.Operation{
			{Process: 1, Name: "push", Args: []model.Value{n(1)}, Call: 10, Return: 20, Outcome: pmlin.Returned, Results: []model.Value{model.Sym(model.OK)}},
			{Process: 1, Name: "push", Args: []model.Value{n(2)}, Call: 30, Return: 40, Outcome: pmlin.Returned, Results: []model.Value{model.Sym(model.OK)}},
			{Process: 2, Name: "pop", Call: 50, Return: 60, Outcome: pmlin.Returned, Results: []model.Value{n(1)}},
		},
	}
	f := &errT{TB: t}
	res := pmlintest.Check(f, h, pmlin.Options{Name: "stack"})
	if res == nil || res.Linearizable || len(f.msgs) != 1 {
		t.Fatalf("%+v %v", res, f.msgs)
	}
	msg := f.msgs[0]
	files := kept(msg)
	if !strings.Contains(msg, "stack: NOT LINEARIZABLE") || !strings.Contains(msg, "object s (stack): NOT LINEARIZABLE") || len(files) != 3 {
		t.Fatalf("%s", msg)
	}
	for _, p := range files {
		b, _ := os.ReadFile(p)
		if filepath.Ext(p) == ".hist" && !strings.Contains(string(b), "2 inv s pop  # op 2") {
			t.Fatalf("%s:\n%s", p, b)
		}
		if filepath.Ext(p) == ".html" && (!strings.Contains(string(b), `data-object="s"`) || strings.Count(string(b), `<g class="op hl`) != 3) { // the witness: both pushes and the pop
			t.Fatalf("%s is not the report of s:\n%s", p, b)
		}
	}
	h.Operations[2].Results = []model.Value{n(2)}
	f = &errT{TB: t}
	if res := pmlintest.Check(f, h, pmlin.Options{}); res == nil || !res.Linearizable || len(f.msgs) != 0 {
		t.Fatalf("%+v %v", res, f.msgs)
	}
}
