package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/testenv"
)

// lostAfterCrash fails in every mode: 0x1010 was enqueued before the
// crashes and the contents after them misses it. The map is noise.
var lostAfterCrash = filepath.Join("..", "internal", "shrink", "testdata", "lost-after-crash.hist")

// TestCheckV2Shrink: check --shrink of a version 2 history writes the
// few operations that still fail, which fail on their own; a
// linearizable history (here: in durable mode) gets none, and an existing
// file is not replaced without --force.
func TestCheckV2Shrink(t *testing.T) {
	dir := t.TempDir()
	in := lostAfterCrash
	out := filepath.Join(dir, "s.hist")
	code, stdout, errs := pmlin(t, "", "check", "--shrink", out, in)
	if code != 1 || !strings.Contains(stdout, "NOT LINEARIZABLE") ||
		!strings.Contains(errs, "pmlin: shrunk 11 operations to 3 (object q, 2 crashes, 8 lines; 1-minimal; ") {
		t.Fatalf("exit %d\n%s%s", code, stdout, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 inv q enq 0x1010", "1 ret ok", "crash", "2 inv q enq 0x1013", "2 ret ok", "crash", "4 inv q contents", "4 ret 0x1013"}
	var got []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(strings.Split(l, "#")[0]); l != "" && l != "pmlin-history v2" && !strings.HasPrefix(l, "object ") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || !strings.Contains(string(b), "# line 4\n") || strings.Contains(string(b), "object m") {
		t.Errorf("shrunk:\n%s", b)
	}
	// Its check names the lines of the original too.
	if code, stdout, _ := pmlin(t, "", "check", out); code != 1 || !strings.Contains(stdout, "object q (queue): NOT LINEARIZABLE, 3 operations") ||
		!regexp.MustCompile(`anomaly 1: nonlinearizable, object q, operations at lines [\d ]+ \(lines 4 18 22 of the original\)`).MatchString(stdout) {
		t.Errorf("check of the shrunk history: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := pmlin(t, "", "check", "--json", out); code != 1 || !strings.Contains(stdout, `"original_ops":[4,18,22]`) {
		t.Errorf("check --json of the shrunk history: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := pmlin(t, "", "check", "--json", in); code != 1 || strings.Contains(stdout, `"original_ops"`) {
		t.Errorf("check --json of the original names original lines: exit %d\n%s", code, stdout)
	}
	if code, _, errs := pmlin(t, "", "check", "--shrink", out, in); code != 2 || !strings.Contains(errs, "the file exists (use --force") {
		t.Errorf("replaced without --force: exit %d %s", code, errs)
	}
	// Fails in recoverable mode only (and strict): the shrunk history in
	// the mode asked; none in durable mode, where it is linearizable.
	rec := writeFile(t, "rec.hist", "pmlin-history v2\nobject q queue\n1 inv q enq 1\ncrash\n1 inv q enq 2\n1 ret ok\n2 inv q deq\n2 ret 2\n2 inv q deq\n2 ret 1\n")
	d := filepath.Join(dir, "d.hist")
	if code, _, errs := pmlin(t, "", "check", "--mode", "durable", "--shrink", d, rec); code != 0 || !strings.Contains(errs, "nothing to shrink: the history is linearizable (no "+d+" written)") {
		t.Errorf("durable: exit %d %s", code, errs)
	}
	if _, err := os.Stat(d); err == nil {
		t.Errorf("%s written for a linearizable history", d)
	}
	if code, _, errs := pmlin(t, "", "check", "--mode", "recoverable", "--shrink", d, rec); code != 1 || !strings.Contains(errs, "shrunk 4 operations to 4 (object q, 1 crash") {
		t.Errorf("recoverable: exit %d %s", code, errs)
	}
	if code, _, _ := pmlin(t, "", "check", "--mode", "recoverable", d); code != 1 {
		t.Errorf("the shrunk history passes in recoverable mode")
	}
	// Stuck operations of a synchronisation object (exit 1, every object
	// linearizable) are not shrunk.
	stuck := writeFile(t, "stuck.hist", "pmlin-history v2\nobject c channel\n1 inv c send 5\n2 inv c recv\n2 ret 5\n")
	s := filepath.Join(dir, "stuck-shrunk.hist")
	if code, _, errs := pmlin(t, "", "check", "--shrink", s, stuck); code != 1 || !strings.Contains(errs, "nothing to shrink: every object is linearizable, and stuck operations are not shrunk") {
		t.Errorf("stuck: exit %d %s", code, errs)
	}
}

// TestFuzzShrinksStructureFindings: a planted bug of each built-in data
// structure is kept with a shrunk history of a few operations, listed, in
// the campaign's mode, that still fails; each of its invocations names a
// line of the kept history that holds the same invocation. With
// PMLIN_LONG=1, every planted bug of both, seed 1, 60 s each (those not
// found, or found only by the run itself, corrupt or stuck, are skipped).
func TestFuzzShrinksStructureFindings(t *testing.T) {
	type fuzzCase struct{ target, mutant, mode string }
	cases := []fuzzCase{
		{"dqueue", "link-unflushed", "strict"},
		{"dqueue", "mark-unflushed", "durable"},
		{"levelhash", "insert-token-early", "recoverable"},
	}
	seconds := "120"
	if testenv.Long() {
		cases, seconds = nil, "120"
		for _, target := range []string{"dqueue", "levelhash"} {
			_, out, _ := pmlin(t, "", "mutants", "--target", target)
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				cases = append(cases, fuzzCase{target, strings.Fields(l)[0], "strict"})
			}
		}
	}
	for _, c := range cases {
		dir := t.TempDir()
		code, out, errs := pmlin(t, "", "fuzz", "--target", c.target, "--mutant", c.mutant, "--mode", c.mode, "--seed", "1", "--seconds", seconds, "--jobs", "1", "--out", dir)
		if testenv.Long() && (code == 0 || !strings.Contains(out, "nonlinearizable, object")) {
			t.Logf("%v: exit %d, no violation of the checker's to shrink", c, code)
			continue
		}
		if code != 1 {
			t.Fatalf("%v: exit %d\n%s%s", c, code, out, errs)
		}
		m, _ := filepath.Glob(filepath.Join(dir, "*.shrunk.hist"))
		if len(m) != 1 || !strings.Contains(out, m[0]+"   the shrunk history: the few operations that still fail (") {
			t.Fatalf("%v: no shrunk history kept or listed: %v\n%s", c, m, out)
		}
		if code, out, _ := pmlin(t, "", "check", "--mode", c.mode, m[0]); code != 1 {
			t.Errorf("%v: the shrunk history passes: exit %d\n%s", c, code, out)
		}
		shrunk, _ := os.ReadFile(m[0])
		kept, _ := os.ReadFile(strings.TrimSuffix(m[0], ".shrunk.hist") + ".hist")
		keptLines := strings.Split(string(kept), "\n")
		ops := 0
		note := regexp.MustCompile(`^(\d+ inv .*?)\s+# line (\d+)$`)
		for _, l := range strings.Split(string(shrunk), "\n") {
			if !strings.Contains(l, " inv ") {
				continue
			}
			ops++
			s := note.FindStringSubmatch(l)
			if s == nil {
				t.Fatalf("%v: %q names no line", c, l)
			}
			n, _ := strconv.Atoi(s[2])
			if n < 1 || n > len(keptLines) || keptLines[n-1] != s[1] {
				t.Errorf("%v: %q: line %d of the kept history is not that invocation", c, l, n)
			}
		}
		if ops == 0 || ops > 6 {
			t.Errorf("%v: %d operations shrunk:\n%s", c, ops, shrunk)
		}
		t.Logf("%v: %d operations", c, ops)
	}
}
