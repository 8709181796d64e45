package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/testenv"
)

// init lets the test binary stand in for pmlin as the child process of
// pmlin bench (which re-executes os.Executable with "bench child", or with
// "fuzz" for the fuzz suite); init runs before any TestMain.
func init() {
	if len(os.Args) > 2 && os.Args[1] == "bench" && os.Args[2] == "child" || len(os.Args) > 1 && os.Args[1] == "fuzz" {
		os.Exit(Command{Targets: testTargets, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}.Run(context.Background(), os.Args[1:]))
	}
}

// quickChildren makes the children, this test binary again, exit at once
// under the race detector (which otherwise sleeps a second at exit).
func quickChildren(t *testing.T) {
	t.Setenv("GORACE", testenv.ChildGORACE())
}

func TestBenchReduceHB(t *testing.T) {
	quickChildren(t)
	dir := t.TempDir()
	code, out, errs := pmlin(t, "", "bench", "reducehb", "--max-bytes", "40K", "--reps", "1", "--out", dir, "--work", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "reducehb: ") {
		t.Errorf("no progress on stderr: %q", errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	contract := []string{"log_bytes", "ops", "edges_reduced", "edges_naive", "seconds_reduced", "seconds_naive"}
	if h := strings.Fields(lines[0]); len(h) < len(contract) || !slices.Equal(h[:len(contract)], contract) {
		t.Errorf("table header %q", lines[0])
	}
	// The last line is the JSON object of docs/cli-contract.md.
	var v struct {
		Suite  string `json:"suite"`
		Points []map[string]any
		Files  []string `json:"files"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatalf("last line: %v\n%s", err, lines[len(lines)-1])
	}
	if v.Suite != "reducehb" || len(v.Points) != 3 {
		t.Fatalf("JSON %s", lines[len(lines)-1])
	}
	for _, p := range v.Points {
		for _, f := range contract {
			if _, ok := p[f]; !ok {
				t.Errorf("point without %s: %v", f, p)
			}
		}
	}
	for _, name := range []string{"reducehb.csv", "reducehb-time.png", "reducehb-edges.png", "reducehb.md"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(v.Files, filepath.Join(dir, name)) {
			t.Errorf("%s not in files %v", name, v.Files)
		}
		switch filepath.Ext(name) {
		case ".png":
			if !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("%s is not a PNG", name)
			}
		case ".csv":
			rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
			if err != nil || len(rows) != 4 || !slices.Equal(rows[0][:len(contract)], contract) {
				t.Errorf("%s: %v %v", name, rows, err)
			}
		}
	}
}

func TestBenchLoggingJSON(t *testing.T) {
	code, out, errs := pmlin(t, "", "bench", "logging", "--threads", "1,2", "--duration", "20ms", "--json", "-q")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if errs != "" {
		t.Errorf("stderr with --quiet: %q", errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var v map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ops_per_sec_plain", "ops_per_sec_logged", "overhead"} {
		if _, ok := v[f].(float64); !ok {
			t.Errorf("no number %s in %v", f, v)
		}
	}
}

// TestBenchLoggingSplit: --split reaches the suite (the JSON says so and
// has the dropped side's figures at every point), and its progress line
// names the dropped side.
func TestBenchLoggingSplit(t *testing.T) {
	code, out, errs := pmlin(t, "", "bench", "logging", "--threads", "2", "--emulate", "off", "--split", "--duration", "60ms", "--reps", "6", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var v struct {
		Split  bool             `json:"split"`
		Points []map[string]any `json:"points"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatal(err)
	}
	if !v.Split || len(v.Points) != 1 {
		t.Fatalf("split %v, %d points", v.Split, len(v.Points))
	}
	for _, f := range []string{"ops_per_sec_dropped", "overhead_dropped", "overhead_dropped_cpu"} {
		if _, ok := v.Points[0][f].(float64); !ok {
			t.Errorf("no number %s in %v", f, v.Points[0])
		}
	}
	if !strings.Contains(errs, "history dropped") {
		t.Errorf("progress without the dropped side: %s", errs)
	}
}

func TestBenchMwCAS(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := pmlin(t, "", "bench", "mwcas", "--threads", "1,2", "--ks", "1", "--duration", "10ms", "--out", dir, "-q")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "ops_per_sec") || !strings.Contains(out, "mutex") {
		t.Errorf("table:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "mwcas.png")); err != nil {
		t.Error(err)
	}
}

// TestBenchFuzz: the fuzz suite runs pmlin fuzz campaigns (this test
// binary standing in for pmlin, and for the baseline) and reports the
// fields of docs/cli-contract.md, a ratio near 1 between equals.
func TestBenchFuzz(t *testing.T) {
	quickChildren(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := pmlin(t, "", "bench", "fuzz", "--runs", "4", "--reps", "1", "--baseline", self, "--work", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "fuzz no-mix 1/1") {
		t.Errorf("no progress on stderr: %q", errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var v struct {
		Suite  string           `json:"suite"`
		Points []map[string]any `json:"points"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatalf("last line: %v\n%s", err, lines[len(lines)-1])
	}
	if v.Suite != "fuzz" || len(v.Points) != 4 {
		t.Fatalf("JSON %s", lines[len(lines)-1])
	}
	for _, p := range v.Points {
		for _, f := range []string{"runs", "crashes", "cpu_seconds_per_run", "crashes_per_cpu_second", "crashes_per_second",
			"baseline_cpu_seconds_per_run", "baseline_crashes_per_second", "ratio", "wall_ratio"} {
			if x, ok := p[f].(float64); !ok || x <= 0 {
				t.Errorf("%v: %s = %v", p["config"], f, p[f])
			}
		}
		if jobs, ok := p["jobs"].(float64); !ok || (p["config"] == "defaults") != (jobs == 0) {
			t.Errorf("%v: jobs %v (want 0, the default, for defaults alone)", p["config"], p["jobs"])
		}
		if p["runs"].(float64) != 4 || p["crashes"].(float64) != 24 {
			t.Errorf("%v: %v runs, %v crashes (want 4 runs of 6 crashes)", p["config"], p["runs"], p["crashes"])
		}
	}
	if code, _, errs := pmlin(t, "", "bench", "fuzz", "--runs", "1", "--baseline", filepath.Join(t.TempDir(), "nope")); code != 2 || !strings.Contains(errs, "baseline") {
		t.Errorf("a missing baseline: exit %d, %s", code, errs)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"bench"}, 2, "", "accepts 1 arg"},
		{[]string{"bench", "frobnicate"}, 2, "", "unknown suite"},
		{[]string{"bench", "scale", "--max-bytes", "lots"}, 2, "", "--max-bytes"},
		{[]string{"bench", "porcupine", "--sizes", "1k,x"}, 2, "", "--sizes"},
		{[]string{"bench", "scale", "--frobnicate"}, 2, "", "unknown flag"},
		{[]string{"bench", "-h"}, 0, "porcupine", ""},
	} {
		code, out, errs := pmlin(t, "", tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%v: exit %d (want %d)\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errs)
		}
	}
}

func TestParseBytesAndCounts(t *testing.T) {
	for s, want := range map[string]int64{"64K": 64 << 10, "1M": 1 << 20, "1G": 1 << 30, "1GiB": 1 << 30, "256MB": 256 << 20, "1000": 1000, "1.5k": 1536} {
		if got, err := parseBytes(s); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "-1M", "0"} {
		if _, err := parseBytes(s); err == nil {
			t.Errorf("parseBytes(%q) accepted", s)
		}
	}
	got, err := parseCounts("1k, 10k,100000,2M,4")
	if err != nil || !slices.Equal(got, []int{1000, 10000, 100000, 2000000, 4}) {
		t.Errorf("parseCounts: %v %v", got, err)
	}
	for _, s := range []string{"", "1,,2", "0", "a"} {
		if _, err := parseCounts(s); err == nil {
			t.Errorf("parseCounts(%q) accepted", s)
		}
	}
}
