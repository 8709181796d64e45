package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var e2e = flag.Bool("e2e", false, "run the end-to-end test: builds pmlin from mutated copies and fuzzes them (about a minute)")

// TestMutantTable checks every mutant against the module's current source:
// its anchor occurs once and the replacement changes one line; names are
// unique; every kind of mutant the test was written to cover has at least
// three.
func TestMutantTable(t *testing.T) {
	module, err := findModule()
	if err != nil {
		t.Fatal(err)
	}
	if len(mutants) < 60 {
		t.Fatalf("%d mutants, want at least 60", len(mutants))
	}
	names := map[string]bool{}
	kinds := map[string]int{}
	for _, m := range mutants {
		if names[m.Name] || m.Name == "" || m.Name == "control" || strings.ContainsAny(m.Name, " ,|") {
			t.Errorf("mutant name %q is empty, reserved, repeated or has a separator", m.Name)
		}
		names[m.Name] = true
		kinds[m.Kind]++
		if m.Desc == "" {
			t.Errorf("%s: no description", m.Name)
		}
		src, err := os.ReadFile(filepath.Join(module, m.File))
		if err != nil {
			t.Fatal(err)
		}
		out, line, err := m.apply(src)
		if err != nil {
			t.Error(err)
			continue
		}
		was, now := strings.Split(string(src), "\n"), strings.Split(string(out), "\n")
		if len(was) != len(now) || was[line-1] == now[line-1] {
			t.Errorf("%s: line %d is not the one that changed", m.Name, line)
		}
	}
	for _, k := range []string{kFlush, kFence, kDirty, kCASStore, kHelp, kNegate, kOffByOne, kLine} {
		if kinds[k] < 3 {
			t.Errorf("only %d mutants of kind %q", kinds[k], k)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	src := []byte("a\nb\nc\nb\n")
	for _, m := range []Mutant{
		{Name: "missing", Anchor: "x", Replace: "y"},
		{Name: "twice", Anchor: "b\n", Replace: "d\n"},
		{Name: "two lines", Anchor: "a\nb\nc", Replace: "x\nb\ny"},
		{Name: "line count", Anchor: "a\nb\nc", Replace: "a\nc"},
		{Name: "same", Anchor: "a\nb\nc", Replace: "a\nb\nc"},
		{Name: "empty", Anchor: "", Replace: "x"},
	} {
		if _, _, err := m.apply(src); err == nil {
			t.Errorf("%s: applied", m.Name)
		}
	}
	out, line, err := Mutant{Name: "ok", Anchor: "b\nc\n", Replace: "b\nz\n"}.apply(src)
	if err != nil || string(out) != "a\nb\nz\nb\n" || line != 3 {
		t.Fatalf("apply = %q, line %d, %v", out, line, err)
	}
}

// TestWorkspace copies a small module, leaving out .git and the output
// directory, and checks that a mutant is applied inside the copy only and
// undone even when the run fails.
func TestWorkspace(t *testing.T) {
	mod := t.TempDir()
	files := map[string]string{"go.mod": "module x\n", "mwcas/a.go": "package a\nconst X = 1\n", ".git/HEAD": "ref", "out/old.md": "old"}
	for name, text := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755)
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := newWorkspace(mod, t.TempDir(), filepath.Join(mod, "out"))
	if err != nil {
		t.Fatal(err)
	}
	for name, copied := range map[string]bool{"go.mod": true, "mwcas/a.go": true, ".git/HEAD": false, "out/old.md": false} {
		if _, err := os.Stat(filepath.Join(ws.dir, name)); (err == nil) != copied {
			t.Errorf("%s: copied = %v, want %v", name, err == nil, copied)
		}
	}
	m := Mutant{Name: "x", File: "mwcas/a.go", Anchor: "X = 1", Replace: "X = 2"}
	boom := errors.New("boom")
	line, err := ws.with(m, func() error {
		b, _ := os.ReadFile(filepath.Join(ws.dir, m.File))
		if !strings.Contains(string(b), "X = 2") {
			t.Error("mutant not applied in the copy")
		}
		return boom
	})
	if line != 2 || !errors.Is(err, boom) {
		t.Fatalf("with: line %d, %v", line, err)
	}
	for _, dir := range []string{ws.dir, mod} {
		if b, _ := os.ReadFile(filepath.Join(dir, m.File)); string(b) != files["mwcas/a.go"] {
			t.Errorf("%s holds %q after the run", dir, b)
		}
	}
}

// fakePmlin writes a shell script standing in for pmlin: it prints out on
// standard output, sleeps, and exits with code.
func fakePmlin(t *testing.T, out string, sleep float64, code int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pmlin")
	script := fmt.Sprintf("#!/bin/sh\necho progress >&2\ncat <<'EOF'\n%s\nEOF\nsleep %g\nexit %d\n", out, sleep, code)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFuzzOutcomes classifies campaigns of a stand-in pmlin by the exit
// statuses and JSON summary of the CLI contract.
func TestFuzzOutcomes(t *testing.T) {
	found := `{"runs":3,"violations":1,"finding":{"run":3,"after_seconds":0.25,"verdict":{"anomalies":[{"kind":"fork"},{"kind":"cycle"}]}}}`
	clean := `{"runs":40,"operations":40000,"crashes":240,"violations":0,"seconds":1}`
	cases := []struct {
		name, out string
		sleep     float64
		code      int
		want      ConfigResult
	}{
		{"killed", "text\n" + found, 0, 1, ConfigResult{Outcome: outKilled, AfterSeconds: 0.25, Anomaly: "fork", Runs: 3}},
		{"survived", clean, 0, 0, ConfigResult{Outcome: outSurvived, Runs: 40}},
		{"error", "", 0, 2, ConfigResult{Outcome: outError}},
		{"exit 1 without a finding", clean, 0, 1, ConfigResult{Outcome: outError, Runs: 40}},
		{"exit 0 with violations", found, 0, 0, ConfigResult{Outcome: outError, Runs: 3}},
		{"over budget", clean, 5, 0, ConfigResult{Outcome: outTimeout}},
	}
	ws := &workspace{dir: t.TempDir()}
	rn := &runner{seconds: 0.5, grace: 500 * time.Millisecond, seed: 1}
	for _, c := range cases {
		got := rn.fuzz(context.Background(), ws, fakePmlin(t, c.out, c.sleep, c.code), fuzzConfig{Name: "x"})
		if got.Outcome != c.want.Outcome || got.AfterSeconds != c.want.AfterSeconds || got.Anomaly != c.want.Anomaly || got.Runs != c.want.Runs {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if c.want.Outcome == outTimeout && got.WallSeconds > 5 {
			t.Errorf("%s: stopped after %.1f s", c.name, got.WallSeconds)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := parseConfig("wide=--words 64  --k 5")
	if err != nil || c.Name != "wide" || strings.Join(c.Args, " ") != "--words 64 --k 5" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"", "wide", "=--words 3", "a b=--k 2"} {
		if _, err := parseConfig(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := (options{configs: "defaults,nope"}).selectConfigs(); err == nil {
		t.Error("unknown built-in configuration accepted")
	}
	if ms, err := selectMutants(kFence); err != nil || len(ms) < 3 {
		t.Errorf("-only by kind: %d, %v", len(ms), err)
	}
	if _, err := selectMutants("no-such-mutant"); err == nil {
		t.Error("unknown mutant accepted")
	}
}

// TestSummaryAndMarkdown scores a made-up run and checks the rendering.
func TestSummaryAndMarkdown(t *testing.T) {
	configs := []fuzzConfig{{Name: "defaults"}, {Name: "durable", Args: []string{"--mode", "durable"}}}
	kill := func(c string, s float64, kind string) ConfigResult {
		return ConfigResult{Config: c, Outcome: outKilled, AfterSeconds: s, Anomaly: kind}
	}
	alive := func(c string) ConfigResult { return ConfigResult{Config: c, Outcome: outSurvived} }
	pass, fail := &TestResult{Outcome: outSurvived}, &TestResult{Outcome: outKilled, Failed: []string{"TestX"}}
	rs := []Result{
		{Mutant: Mutant{Name: "a", Kind: kFlush}, Fuzz: []ConfigResult{kill("defaults", 0.5, "cycle"), kill("durable", 0.1, "fork")}, Tests: fail},
		{Mutant: Mutant{Name: "b", Kind: kFence}, Fuzz: []ConfigResult{alive("defaults"), kill("durable", 3, "dangling")}, Tests: pass},
		{Mutant: Mutant{Name: "c", Kind: kFence}, Fuzz: []ConfigResult{alive("defaults"), alive("durable")}, Tests: fail},
		{Mutant: Mutant{Name: "d", Kind: kHelp}, Fuzz: []ConfigResult{{Config: "defaults", Outcome: outTimeout}, alive("durable")}, Tests: pass},
		{Mutant: Mutant{Name: "e", Kind: kDirty, Equivalent: "because"}, Fuzz: []ConfigResult{alive("defaults"), alive("durable")}, Tests: pass},
		{Mutant: Mutant{Name: "f", Kind: kDirty, Equivalent: "wrongly"}, Fuzz: []ConfigResult{kill("defaults", 1, "cycle"), alive("durable")}, Tests: pass},
		{Mutant: Mutant{Name: "g", Kind: kLine}, Build: "undefined: x"},
	}
	for i := range rs {
		rs[i].classify()
	}
	want := []string{vFuzz, vFuzz, vTestsOnly, vSurvived, vEquivalent, vRefuted, vNoCompile}
	for i, r := range rs {
		if r.Verdict != want[i] {
			t.Errorf("%s: verdict %q, want %q", r.Name, r.Verdict, want[i])
		}
	}
	s := summarize(rs, configs)
	if s.Mutants != 7 || s.Scored != 5 || s.FuzzKilled != 3 || s.TestsKilled != 2 || s.EitherKill != 4 || s.FuzzTimeouts != 1 {
		t.Fatalf("summary %+v", s)
	}
	// Earliest kills 0.1 (a), 3 (b), 1 (f); defaults alone 0.5 and 1.
	if s.MedianKill != 1 || s.MaxKill != 3 || s.FirstConfigKilled != 2 || s.FirstMedianKill != 0.75 || s.FirstMaxKill != 1 {
		t.Fatalf("times %+v", s)
	}
	if s.KilledByConfig["durable"] != 2 || s.OnlyConfig["durable"] != 1 || s.OnlyConfig["defaults"] != 1 || s.FuzzScore != 0.6 {
		t.Fatalf("by config %+v", s)
	}
	var b bytes.Buffer
	writeMarkdown(&b, &Report{Command: "cmd", Module: "/m", Seconds: 2, Seed: 1, Configs: configs, Results: rs, Summary: s})
	md := b.String()
	for _, frag := range []string{"| killed by fuzz (any configuration) | 3 | 60.0 % |", "- deleted fence: `c` (tests kill it);",
		"- skipped helping: `d` (defaults: timeout);", "`e` (equivalent): . because", "`f` (killed (equivalence refuted))",
		"| `a` | deleted flush | :0 |  | **0.5 s** cycle | **0.1 s** fork | **killed** TestX | killed by fuzz |", "median 1 s, max 3 s; defaults alone, median 0.75 s", "does not compile: undefined: x"} {
		if !strings.Contains(md, frag) {
			t.Errorf("markdown lacks %q:\n%s", frag, md)
		}
	}
}

// TestEndToEnd runs the tool on two mutants with short budgets: one that
// the default campaign kills at once, one argued equivalent. Not run by
// default (go test ./internal/mutmwcas -run EndToEnd -e2e).
func TestEndToEnd(t *testing.T) {
	if !*e2e {
		t.Skip("builds pmlin twice and fuzzes it: run with -e2e")
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := realMain([]string{"-only", "rec-forward-old,pstatus-keeps-dirty", "-configs", "defaults", "-seconds", "2", "-test-timeout", "60s", "-out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "mutation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Control == nil || rep.Control.Verdict != vSurvived || len(rep.Results) != 2 {
		t.Fatalf("control %+v, %d results", rep.Control, len(rep.Results))
	}
	if r := rep.Results[0]; r.Name != "rec-forward-old" || r.Verdict != vFuzz || r.Fuzz[0].Outcome != outKilled || r.Fuzz[0].Anomaly == "" {
		t.Errorf("rec-forward-old: %+v", r)
	}
	if r := rep.Results[1]; r.Verdict != vEquivalent {
		t.Errorf("pstatus-keeps-dirty: %+v", r)
	}
	t.Log(stdout.String())
}

// TestRescore takes a report whose mutant was not yet argued equivalent
// and scores it again with the table's argument.
func TestRescore(t *testing.T) {
	var eq Mutant
	for _, m := range mutants {
		if m.Equivalent != "" {
			eq = m
			break
		}
	}
	alive := []ConfigResult{{Config: "defaults", Outcome: outSurvived}}
	old := Mutant{Name: eq.Name, Kind: eq.Kind, File: eq.File, Desc: "old words"}
	rep := Report{Configs: []fuzzConfig{{Name: "defaults"}}, Results: []Result{
		{Mutant: old, Fuzz: alive, Verdict: vSurvived},
		{Mutant: Mutant{Name: "gone", Kind: kFlush}, Fuzz: []ConfigResult{{Config: "defaults", Outcome: outKilled, AfterSeconds: 2}}, Verdict: vFuzz},
	}}
	rep.Summary = summarize(rep.Results, rep.Configs)
	dir := t.TempDir()
	b, _ := json.Marshal(rep)
	in := filepath.Join(dir, "in.json")
	os.WriteFile(in, b, 0o644)
	var stdout bytes.Buffer
	if err := rescore(in, dir, &stdout); err != nil {
		t.Fatal(err)
	}
	var got Report
	b, _ = os.ReadFile(filepath.Join(dir, "mutation.json"))
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	r := got.Results[0]
	if r.Verdict != vEquivalent || r.Equivalent != eq.Equivalent || r.Desc != eq.Desc || got.Summary.Scored != 1 || got.Summary.FuzzScore != 1 || !got.Rescored {
		t.Fatalf("rescored %+v, summary %+v", r, got.Summary)
	}
	if !strings.Contains(stdout.String(), "argued equivalent (not refuted) | 1") {
		t.Fatalf("output:\n%s", stdout.String())
	}
}

// TestRescoreReadsNumericSeeds: the committed reports were written when a
// seed was a JSON number; rescore reads them, and writes the seed as a
// string (docs/cli-contract.md: 64-bit identifiers are strings).
func TestRescoreReadsNumericSeeds(t *testing.T) {
	b, err := os.ReadFile("baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["seed"].(float64); !ok {
		t.Skipf("baseline.json's seed is %#v, no longer a number: nothing to test", raw["seed"])
	}
	dir := t.TempDir()
	if err := rescore("baseline.json", dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "mutation.json"))
	raw = nil
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["seed"] != "1" {
		t.Fatalf("rescored seed %#v, want \"1\"", raw["seed"])
	}
}
