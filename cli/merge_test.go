package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMergeCommand(t *testing.T) {
	dir := t.TempDir()
	t1 := filepath.Join(dir, "t1.log")
	t2 := filepath.Join(dir, "t2.log")
	os.WriteFile(t1, []byte("10 1 inv cas 5:0:0x200000001\n40 1 ret ok\n"), 0o644)
	os.WriteFile(t2, []byte("pmlin-log v1\n20 2 inv read 5\n30 2 ret 0x200000001\n"), 0o644)
	bad := filepath.Join(dir, "bad.log")
	os.WriteFile(bad, []byte("10 1 inv read 5\n5 1 ret 0\n"), 0o644)
	existing := filepath.Join(dir, "existing.hist")
	os.WriteFile(existing, []byte("keep me\n"), 0o644)
	out := filepath.Join(dir, "out.hist")
	nopid := filepath.Join(dir, "nopid.log")
	os.WriteFile(nopid, []byte("10 1 inv read 5\n20 inv read 5\n"), 0o644)
	// A clock too coarse: every step at 10.
	tie0, tie1 := filepath.Join(dir, "tie0.log"), filepath.Join(dir, "tie1.log")
	os.WriteFile(tie0, []byte("10 0 inv cas 1:0:5\n10 0 ret ok\n10 0 inv read 1\n10 0 ret 5\n"), 0o644)
	os.WriteFile(tie1, []byte("10 1 inv read 1\n10 1 ret 0\n10 1 inv read 1\n10 1 ret 0\n"), 0o644)

	want := "pmlin-history v1\n1 inv cas 5:0:0x200000001\n2 inv read 5\n2 ret 0x200000001\n1 ret ok\n"
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"to standard output", []string{"merge", t1, t2}, "", 0, want, "2 logs, 2 processes, 2 operations"},
		{"standard input", []string{"merge", "-", t2}, "10 1 inv cas 5:0:0x200000001\n40 1 ret ok\n", 0, want, "-> standard output"},
		{"to a file", []string{"merge", "-o", out, t1, t2}, "", 0, "", "-> " + out},
		{"never over an existing file", []string{"merge", "-o", existing, t1, t2}, "", 2, "", "the file exists (use --force to overwrite it)"},
		{"never over a log", []string{"merge", "-o", t1, "--force", t1, t2}, "", 2, "", "is one of the logs"},
		{"an error names file and line", []string{"merge", bad}, "", 2, "", bad + ":2: the clock goes backwards in process 1"},
		{"standard input twice", []string{"merge", "-", "-"}, "", 2, "", "standard input (-) given twice"},
		{"no argument", []string{"merge"}, "", 2, "", "requires at least 1 arg"},
		{"missing log", []string{"merge", filepath.Join(dir, "nope.log")}, "", 2, "", "no such file"},
		{"help", []string{"merge", "-h"}, "", 0, "invocations first", ""},
		{"the same log twice", []string{"merge", t1, t2, t1}, "", 2, "", t1 + " and " + t1 + " are the same file: give each log once"},
		{"the same log by another name", []string{"merge", t1, filepath.Join(dir, ".", "t1.log"), t2}, "", 2, "", " are the same file"},
		{"a line without its process id", []string{"merge", nopid}, "", 2, "", nopid + ":2: no process id: a log line is `<timestamp> <process> inv ...`, and this one has only one number, 20, before inv"},
		{"a clock too coarse", []string{"merge", tie0, tie1}, "", 2, "", tie1 + ":2: process 1 responds and invokes its next operation at timestamp 10, as process 0 does (its response at " + tie0 + ":2)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := pmlin(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me\n" {
		t.Fatal("an existing file was changed")
	}
	if b, _ := os.ReadFile(t1); !strings.HasPrefix(string(b), "10 1 inv cas") {
		t.Fatal("a log was changed")
	}
	// The merged file is a history pmlin checks.
	if code, stdout, stderr := pmlin(t, "", "check", out); code != 0 || !strings.Contains(stdout, "LINEARIZABLE") {
		t.Fatalf("check of the merged history: exit %d\n%s%s", code, stdout, stderr)
	}
	// --force replaces an existing output (not a log).
	if code, _, stderr := pmlin(t, "", "merge", "-o", existing, "--force", t1, t2); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(existing); !strings.Contains(string(b), want) {
		t.Fatalf("--force did not write the history:\n%s", b)
	}
	// A log given again as standard input.
	f, err := os.Open(t2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sout, serr bytes.Buffer
	code := Command{Targets: testTargets, Stdin: f, Stdout: &sout, Stderr: &serr}.Run(context.Background(), []string{"merge", t2, "-"})
	if code != 2 || !strings.Contains(serr.String(), t2+" and <stdin> are the same file") {
		t.Fatalf("a log as standard input too: exit %d: %s", code, serr.String())
	}
	// A failed merge leaves no output file behind.
	failed := filepath.Join(dir, "failed.hist")
	if code, _, _ := pmlin(t, "", "merge", "-o", failed, bad); code != 2 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(failed); !os.IsNotExist(err) {
		t.Fatal("a failed merge left a file")
	}
}
