package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckExactWitness: --exact names the few operations that cannot be
// ordered, not the whole failing component.
func TestCheckExactWitness(t *testing.T) {
	code, out, errs := pmlin(t, "", "check", "--exact", "../examples/dirty-bit.hist")
	if code != 1 || !strings.Contains(out, "no linearization: the 2 operations at lines 8 12 cannot be ordered") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = pmlin(t, "", "check", "--exact", "--json", "../examples/dirty-bit.hist")
	var v struct {
		Failing []int64 `json:"failing"`
		Witness []int64 `json:"witness"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 1 || len(v.Failing) != 6 || len(v.Witness) != 2 {
		t.Fatalf("exit %d %v: %s", code, err, out)
	}
}

// TestCheckOutputs: --report, --dot and --shrink write their files, keep
// the verdict's exit status and standard output, and never overwrite a
// file without --force.
func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	html, dot, shrunk := filepath.Join(dir, "r.html"), filepath.Join(dir, "g.dot"), filepath.Join(dir, "s.hist")
	args := []string{"check", "--json", "--report", html, "--dot", dot, "--shrink", shrunk, "../examples/dirty-bit.hist"}
	code, out, errs := pmlin(t, "", args...)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	for _, f := range []string{html, dot, shrunk} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(errs, f) {
			t.Errorf("stderr does not mention %s:\n%s", f, errs)
		}
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), "NOT LINEARIZABLE") || !strings.Contains(string(page), `class="node hl"`) {
		t.Fatal("the report lacks the verdict or the highlighted operations")
	}
	g, _ := os.ReadFile(dot)
	if !strings.HasPrefix(string(g), "// pmlin check") || !strings.Contains(string(g), "digraph pmlin {") {
		t.Fatalf("dot:\n%s", g)
	}
	// The shrunk history is small, fails, and its comments say where from.
	text, _ := os.ReadFile(shrunk)
	if !strings.Contains(string(text), "# line ") || strings.Count(string(text), " inv ") > 3 {
		t.Fatalf("shrunk:\n%s", text)
	}
	if code, out, _ := pmlin(t, "", "check", shrunk); code != 1 || !strings.Contains(out, "cycle") {
		t.Fatalf("the shrunk history: exit %d\n%s", code, out)
	}
	// Its report names the original lines (from standard input too).
	for _, in := range []string{shrunk, "-"} {
		stdin := ""
		if in == "-" {
			stdin = string(text)
		}
		if code, out, _ := pmlin(t, stdin, "check", in); code != 1 || !strings.Contains(out, "(lines 12, 16 of the original)") {
			t.Fatalf("the shrunk history's report (%s) does not name the original lines: exit %d\n%s", in, code, out)
		}
	}

	// Existing files are kept, before any work, unless --force.
	before, _ := os.ReadFile(html)
	code, _, errs = pmlin(t, "", "check", "--report", html, "../examples/linearizable.hist")
	if code != 2 || !strings.Contains(errs, "--force") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if after, _ := os.ReadFile(html); string(after) != string(before) {
		t.Fatal("the report was overwritten without --force")
	}
	code, _, _ = pmlin(t, "", "check", "--force", "--report", html, "../examples/linearizable.hist")
	if after, _ := os.ReadFile(html); code != 0 || !strings.Contains(string(after), "No anomaly") {
		t.Fatalf("--force: exit %d", code)
	}
}

func TestCheckOutputsStdin(t *testing.T) {
	dir := t.TempDir()
	html, shrunk := filepath.Join(dir, "r.html"), filepath.Join(dir, "s.hist")
	in := "1 inv cas 10:0:0x100001\n1 ret ok\n2 inv read 11\n2 ret 0\n2 inv read 10\n2 ret 0\n"
	code, out, errs := pmlin(t, in, "check", "--report", html, "--shrink", shrunk, "-")
	if code != 1 || !strings.Contains(out, "<stdin>: NOT LINEARIZABLE") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), "1 inv cas 10:0:0x100001") {
		t.Fatal("the report lacks the values re-read from the copy of standard input")
	}
	text, _ := os.ReadFile(shrunk)
	if strings.Count(string(text), " inv ") != 2 {
		t.Fatalf("shrunk:\n%s", text)
	}
}

func TestCheckOutputsRefused(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, "h.hist", "1 inv read 3\n1 ret 0\n")
	out := filepath.Join(dir, "x")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"same file twice", []string{"check", "--report", out, "--dot", out, in}, 2, "same file"},
		{"overwrite the input", []string{"check", "--force", "--shrink", in, in}, 2, "overwrite the input"},
		{"with --exact", []string{"check", "--exact", "--report", out, in}, 2, "leave out --exact"},
		{"nothing to shrink", []string{"check", "--shrink", out, in}, 0, "nothing to shrink"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := pmlin(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatal("a file was written")
			}
		})
	}
}
