package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNumericFlagsRefuseNonsense: a value that means nothing (no job, a
// negative budget, more words per operation than words) is a usage
// error, exit 2, naming the flag and what is allowed, before any work:
// no output file is created.
func TestNumericFlagsRefuseNonsense(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fuzz", "--jobs", "0"}, `invalid argument "0" for "--jobs" flag: out of range (1 to 1024 allowed; leave --jobs out for the default)`},
		{[]string{"fuzz", "--jobs", "-3"}, `"-3" for "--jobs"`},
		{[]string{"fuzz", "--jobs", "1025"}, `"1025" for "--jobs"`},
		{[]string{"fuzz", "--jobs", "two"}, `"two" for "--jobs" flag: not an integer`},
		{[]string{"fuzz", "--seconds", "-5", "--runs", "3"}, `"-5" for "--seconds" flag: out of range (0 to 9223372036 allowed)`},
		{[]string{"fuzz", "--seconds", "NaN"}, `"NaN" for "--seconds" flag: not a finite number`},
		{[]string{"fuzz", "--seconds", "1e300"}, `"1e300" for "--seconds"`},
		{[]string{"fuzz", "--runs", "-1", "--seconds", "1"}, `"-1" for "--runs" flag: out of range (at least 0; 0: no limit)`},
		{[]string{"fuzz", "--seconds", "0", "--runs", "0"}, "--seconds or --runs must be positive"},
		{[]string{"run", "--threads", "0"}, "threads = 0 (1..1024 allowed)"},
		{[]string{"run", "--ops", "0"}, "ops = 0 (at least 1)"},
		{[]string{"run", "--k", "0"}, "k = 0 (1..64 allowed)"},
		{[]string{"run", "--words", "2", "--k", "3"}, "words = 2: fewer than k = 3"},
		{[]string{"gen", "--ops", "0", "-o", out}, `"0" for "--ops" flag: out of range (at least 1)`},
		{[]string{"gen", "--ops", "5", "--k", "3", "--words", "2", "-o", out}, "--k 3 is more than --words 2"},
		{[]string{"gen", "--ops", "5", "--procs", "6", "-o", out}, "--procs 6 is more than --ops 5"},
		{[]string{"gen", "--procs", "0", "-o", out}, `"0" for "--procs"`},
		{[]string{"gen", "--k", "5000", "-o", out}, `"5000" for "--k" flag: out of range (1 to 4096 allowed`},
		{[]string{"gen", "--words", "2000000000", "-o", out}, `"2000000000" for "--words"`},
		{[]string{"gen", "--reads", "1.5", "-o", out}, `"1.5" for "--reads" flag: out of range (0 to 1 allowed`},
		{[]string{"gen", "--crash-every", "-1", "-o", out}, `"-1" for "--crash-every"`},
		{[]string{"gen", "--plant-at", "-1", "-o", out}, `"-1" for "--plant-at"`},
		{[]string{"bench", "logging", "--reps", "-1", "--out", out}, `"-1" for "--reps" flag: out of range (at least 1; leave it out for the default)`},
		{[]string{"bench", "logging", "--k", "0", "--out", out}, `"0" for "--k" flag: out of range (1 to 64 allowed`},
		{[]string{"bench", "scale", "--points", "-2", "--out", out}, `"-2" for "--points"`},
		{[]string{"bench", "logging", "--duration", "-1s", "--out", out}, `"-1s" for "--duration" flag: out of range (at least 1ms`},
		{[]string{"bench", "porcupine", "--timeout", "0", "--out", out}, `"0" for "--timeout"`},
		{[]string{"bench", "fuzz", "--runs", "0", "--out", out}, `"0" for "--runs"`},
		{[]string{"bench", "scale", "--gomaxprocs", "-1", "--out", out}, `"-1" for "--gomaxprocs"`},
	}
	for _, tc := range tests {
		code, stdout, errs := pmlin(t, "", tc.args...)
		if code != 2 || !strings.Contains(errs, "pmlin: ") || !strings.Contains(errs, tc.want) {
			t.Errorf("pmlin %s: exit %d, stderr %q, want exit 2 and %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
		if stdout != "" {
			t.Errorf("pmlin %s: wrote %q to standard output", strings.Join(tc.args, " "), stdout)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("pmlin %s: created %s", strings.Join(tc.args, " "), out)
		}
	}
}

// TestNumericFlagsInRange: the bounds are inclusive, and the defaults that
// a user cannot give (--jobs 0: as many as the CPUs) still apply.
func TestNumericFlagsInRange(t *testing.T) {
	for _, args := range [][]string{
		{"fuzz", "--jobs", "1", "--runs", "2", "--ops", "20", "--seconds", "0"},
		{"fuzz", "--runs", "2", "--ops", "20"},
		{"gen", "--ops", "5", "--procs", "5", "--k", "3", "--words", "3", "--reads", "1"},
	} {
		if code, _, errs := pmlin(t, "", args...); code != 0 {
			t.Errorf("pmlin %s: exit %d\n%s", strings.Join(args, " "), code, errs)
		}
	}
}
