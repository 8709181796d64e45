package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/dqueue"
	"github.com/pmlin/pmlin/internal/levelhash"
	"github.com/pmlin/pmlin/internal/pmlist"
	"github.com/pmlin/pmlin/lockmwcas"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/target"
)

// testTargets are the targets of command pmlin.
var testTargets = []*target.Target{mwcas.Target(), lockmwcas.Target(), levelhash.Target(), dqueue.Target(), pmlist.Target()}

// pmlin runs the command line in process, as command pmlin.
func pmlin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Command{Targets: testTargets, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb}.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"linearizable example", []string{"check", "../examples/linearizable.hist"}, "", 0, "LINEARIZABLE", ""},
		{"violation example", []string{"check", "../examples/dirty-bit.hist"}, "", 1, "NOT LINEARIZABLE", ""},
		{"stdin", []string{"check", "-"}, "1 inv read 3\n1 ret 0\n", 0, "<stdin>: LINEARIZABLE", ""},
		{"malformed names the line", []string{"check", "-"}, "1 inv read 3\n1 ret 0\n1 ret 0\n", 2, "", "<stdin>:3: process 1 returns but has no pending operation"},
		{"assumption names the line", []string{"check", "-"}, "1 inv cas 1:0:5\n1 ret ok\n2 inv cas 1:0:5\n2 ret ok\n", 2, "", "<stdin>:3: breaks Assumption 1"},
		{"missing file", []string{"check", "/nonexistent/x.hist"}, "", 2, "", "no such file"},
		{"no argument", []string{"check"}, "", 2, "", "check needs at least one FILE"},
		{"bad mode", []string{"check", "--mode", "eventual", "-"}, "", 2, "", "unknown mode"},
		{"unknown flag", []string{"check", "--frobnicate", "-"}, "", 2, "", "unknown flag"},
		{"unknown command", []string{"frobnicate"}, "", 2, "", "unknown command"},
		{"binary input", []string{"check", "-"}, "\x00\x01\x02\xff", 2, "", "<stdin>: this is binary data, not a pmlin history (byte 0x00 at offset 0 is not text"},
		{"modes differ: recoverable passes", []string{"check", "--mode", "recoverable", "-"}, "1 inv cas 10:0:0x100001\ncrash\n2 inv read 10\n2 ret 0\n2 inv read 10\n2 ret 0x100001\n", 0, "recoverable mode", ""},
		{"modes differ: strict fails", []string{"check", "--mode", "strict", "-"}, "1 inv cas 10:0:0x100001\ncrash\n2 inv read 10\n2 ret 0\n2 inv read 10\n2 ret 0x100001\n", 1, "cycle", ""},
		{"exact agrees", []string{"check", "--exact", "../examples/dirty-bit.hist"}, "", 1, "exact search", ""},
		{"exact decides without assumption 1", []string{"check", "--exact", "-"}, "1 inv cas 1:0:5\n1 ret ok\n2 inv cas 1:5:0\n2 ret ok\n3 inv read 1\n3 ret 0\n", 0, "LINEARIZABLE", ""},
		{"help", []string{"check", "-h"}, "", 0, "--mode", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := pmlin(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out, errs)
			}
		})
	}
}

// TestCheckJSONContract checks the fields docs/cli-contract.md promises.
func TestCheckJSONContract(t *testing.T) {
	code, out, _ := pmlin(t, "", "check", "--json", "../examples/dirty-bit.hist")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var v struct {
		Linearizable *bool   `json:"linearizable"`
		Mode         *string `json:"mode"`
		Operations   *int64  `json:"operations"`
		Anomalies    []struct {
			Kind        string   `json:"kind"`
			Ops         []int64  `json:"ops"`
			Words       []uint64 `json:"words"`
			Explanation string   `json:"explanation"`
		} `json:"anomalies"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v.Linearizable == nil || *v.Linearizable || v.Mode == nil || *v.Mode != "strict" || v.Operations == nil || *v.Operations != 6 {
		t.Fatalf("fields: %s", out)
	}
	if len(v.Anomalies) != 1 || v.Anomalies[0].Kind != "cycle" || len(v.Anomalies[0].Ops) != 2 || v.Anomalies[0].Explanation == "" || len(v.Anomalies[0].Words) != 1 {
		t.Fatalf("anomalies: %s", out)
	}
	code, out, _ = pmlin(t, "", "check", "--json", "../examples/linearizable.hist")
	if code != 0 || !strings.Contains(out, `"linearizable":true`) || !strings.Contains(out, `"anomalies":[]`) {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestCheckFile(t *testing.T) {
	p := writeFile(t, "h.jsonl", `{"p":1,"inv":"cas","words":[[10,0,"0x100001"]]}
{"p":1,"ret":"ok"}
{"p":2,"inv":"read","addrs":[10]}
{"p":2,"ret":[0]}
`)
	code, out, _ := pmlin(t, "", "check", p)
	if code != 1 || !strings.Contains(out, "cycle") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestGen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "g.hist")
	code, _, errs := pmlin(t, "", "gen", "--ops", "2000", "--procs", "4", "-o", p)
	if code != 0 || !strings.Contains(errs, "2000 operations") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, out, _ := pmlin(t, "", "check", p); code != 0 {
		t.Fatalf("generated history: exit %d: %s", code, out)
	}
	if code, _, errs := pmlin(t, "", "gen", "--ops", "10", "-o", p); code != 2 || !strings.Contains(errs, "--force") {
		t.Fatalf("overwrote without --force: exit %d %s", code, errs)
	}
	v := filepath.Join(dir, "v.hist")
	if code, _, errs := pmlin(t, "", "gen", "--ops", "2000", "--plant", "stale-read", "--plant-at", "1000", "-o", v); code != 0 || !strings.Contains(errs, "violation planted at line") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, out, _ := pmlin(t, "", "check", v); code != 1 || !strings.Contains(out, "NOT LINEARIZABLE") {
		t.Fatalf("planted violation: exit %d: %s", code, out)
	}
	if code, _, _ := pmlin(t, "", "gen", "--plant", "nonsense"); code != 2 {
		t.Fatalf("bad --plant accepted")
	}
}

// TestFuzzKeepsReportAndShrunkHistory: a violation found by fuzz is kept
// with its HTML report and a shrunk history that still fails.
func TestFuzzKeepsReportAndShrunkHistory(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := pmlin(t, "", "fuzz", "--mutant", "dirty-spurious-failure", "--seconds", "120", "--out", dir)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, suffix := range []string{".html", ".shrunk.hist"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
		if len(m) != 1 || !strings.Contains(out, m[0]) {
			t.Fatalf("no %s kept or listed: %v\n%s", suffix, m, out)
		}
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.shrunk.hist"))
	if code, out, _ := pmlin(t, "", "check", m[0]); code != 1 {
		t.Fatalf("the shrunk history passes: exit %d\n%s", code, out)
	}
}
