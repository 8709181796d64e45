package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunKeepsExistingOutput: run -o never replaces a file the user has,
// unless --force.
func TestRunKeepsExistingOutput(t *testing.T) {
	p := writeFile(t, "mine.hist", "my own notes\n")
	code, _, errs := pmlin(t, "", "run", "--ops", "20", "-o", p)
	if code != 2 || !strings.Contains(errs, p+": the file exists (use --force to overwrite it)") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(p); string(b) != "my own notes\n" {
		t.Fatalf("the file was changed: %q", b)
	}
	if code, _, errs := pmlin(t, "", "run", "--ops", "20", "--force", "-o", p); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(p); !strings.HasPrefix(string(b), "pmlin-history v1\n") {
		t.Fatalf("--force did not write the history: %q", b)
	}
}

// TestFuzzIgnoreNamesKnownKinds: a misspelt --ignore kind is a usage error,
// not an ignore list that silently ignores nothing.
func TestFuzzIgnoreNamesKnownKinds(t *testing.T) {
	code, _, errs := pmlin(t, "", "fuzz", "--runs", "1", "--ignore", "corupt")
	if code != 2 || !strings.Contains(errs, `unknown anomaly kind "corupt"`) || !strings.Contains(errs, "corrupt") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, _, errs := pmlin(t, "", "fuzz", "--runs", "1", "--ignore", "corrupt,stuck", "--out", t.TempDir()); code != 0 {
		t.Fatalf("known kinds: exit %d: %s", code, errs)
	}
}

// TestRunJSONAnomaliesNeverNull: the run's own anomalies are [] when
// there are none, like the analyzer's.
func TestRunJSONAnomaliesNeverNull(t *testing.T) {
	out := filepath.Join(t.TempDir(), "h.hist")
	code, stdout, errs := pmlin(t, "", "run", "--ops", "50", "--json", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Anomalies json.RawMessage `json:"anomalies"`
		Run       struct {
			Anomalies json.RawMessage `json:"anomalies"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &v); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if string(v.Anomalies) != "[]" || string(v.Run.Anomalies) != "[]" {
		t.Fatalf("anomalies %s, run.anomalies %s", v.Anomalies, v.Run.Anomalies)
	}
}

// TestFuzzInterruptedIsNotAPass: a campaign stopped before its budget says
// so and exits 2.
func TestFuzzInterruptedIsNotAPass(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	code := Command{Targets: testTargets, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}.
		Run(ctx, []string{"fuzz", "--seconds", "60", "--json", "--out", t.TempDir()})
	if code != 2 || !strings.Contains(errb.String(), "interrupted after") || !strings.Contains(out.String(), `"interrupted":true`) {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}
