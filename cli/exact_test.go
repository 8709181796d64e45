package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/histgen"
)

// hardText is a history the exact search needs thousands of states for:
// rounds of 12 concurrent cas on 12 words (round r moves each word from r
// to r+1), each followed by reads that join the words in a ring, the last
// read wrong, so that every subset of every round's cas is tried.
func hardText(rounds int) string {
	var b strings.Builder
	for r := range rounds {
		for p := range 12 {
			fmt.Fprintf(&b, "%d inv cas %d:%d:%d\n", p, p, r, r+1)
		}
		for p := range 12 {
			fmt.Fprintf(&b, "%d ret ok\n", p)
		}
		for k := range 3 {
			v := r + 1
			if r == rounds-1 && k == 2 {
				v = r
			}
			fmt.Fprintf(&b, "99 inv read %d %d %d %d %d\n99 ret %d %d %d %d %d\n",
				4*k, 4*k+1, 4*k+2, 4*k+3, (4*k+4)%12, r+1, r+1, r+1, r+1, v)
		}
	}
	return b.String()
}

// TestExactBudget: --budget bounds the exact search in states or in time,
// and a history it does not decide within it is undecided (exit 2), with
// the reason; without it, the same history is decided.
func TestExactBudget(t *testing.T) {
	path := writeFile(t, "hard.hist", hardText(2))
	code, out, errs := pmlin(t, "", "check", "--exact", path)
	if code != 1 || !strings.Contains(out, "NOT LINEARIZABLE (strict mode, exact search)") {
		t.Fatalf("no budget: exit %d\n%s%s", code, out, errs)
	}
	for _, c := range []struct{ budget, want string }{
		{"1000", "the state budget ran out in a component of"},
		{"1_000", "the state budget ran out in a component of"},
		{"1ns", "the time budget of 1ns ran out after"},
	} {
		code, out, _ := pmlin(t, "", "check", "--exact", "--json", "--budget", c.budget, path)
		if e := errorObject(t, out); code != 2 || e.Kind != kindUndecided || !strings.Contains(e.Message, c.want) || !strings.Contains(e.Message, "--budget") {
			t.Errorf("--budget %s: exit %d, %+v", c.budget, code, e)
		}
	}
	for _, bad := range []string{"lots", "0", "-5", "-1s"} {
		if code, _, errs := pmlin(t, "", "check", "--exact", "--budget", bad, path); code != 2 || !strings.Contains(errs, "--budget") {
			t.Errorf("--budget %s: exit %d, %s", bad, code, errs)
		}
	}
}

// TestExactMemoryBound: --exact holds --max-memory. A history whose one
// component of 20,000 operations needs some 100 MiB for its compiled
// constraints is refused before they are made (the history itself is
// read); one too large to read within the bound is refused before it is
// read (a file) or stopped while it is read (standard input); both
// undecided, never a guess, and quick.
func TestExactMemoryBound(t *testing.T) {
	var b bytes.Buffer
	if _, err := histgen.WriteLarge(&b, histgen.LargeConfig{Ops: 20_000, Procs: 8, Words: 1000, K: 3, ReadFraction: 0.5}, 1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wide.hist")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		bound, arg, want string
	}{
		{"64M", path, "to search a component of 20000 operations"},
		{"20M", path, "(estimated from its size)"},
		{"20M", "-", "to read it whole for the exact search"},
	} {
		stdin := ""
		if c.arg == "-" {
			stdin = b.String()
		}
		var out, errs bytes.Buffer
		code := Command{Targets: testTargets, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errs}.Run(ctx,
			[]string{"check", "--exact", "--json", "--max-memory", c.bound, c.arg})
		if e := errorObject(t, out.String()); code != 2 || e.Kind != kindUndecided ||
			!strings.Contains(e.Message, "too large for the memory available") || !strings.Contains(e.Message, c.want) || !strings.Contains(e.Message, "--max-memory allows") {
			t.Errorf("--max-memory %s %s: exit %d, %+v", c.bound, c.arg, code, e)
		}
	}
}

// TestExactProgress: on a terminal, the exact search shows the states it
// explored on standard error, and clears the bar at the end.
func TestExactProgress(t *testing.T) {
	path := writeFile(t, "hard.hist", hardText(3))
	var out, errs bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errs, stderrTTY: true}
	err := runExact(context.Background(), e, path, checkOptions{})
	if ee, ok := err.(*exitError); !ok || ee.code != exitViolated || !strings.Contains(out.String(), "NOT LINEARIZABLE") {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if s := errs.String(); !strings.Contains(s, "exact search of "+path) || !strings.Contains(s, "states") {
		t.Errorf("no progress on standard error: %q", s)
	}
}
