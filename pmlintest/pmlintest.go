// Package pmlintest is pmlin from go test: it fails the test with what
// pmlin found, and keeps the files a person needs to see it.
//
// Fuzz runs pmlin's fuzzing campaign (pmlin fuzz: run, crash, recover and
// check, over fresh seeds) on a target, a primitive linked into pmlin's
// harness (package target), and reports the finding, the files it kept
// and the command that replays it:
//
//	func TestFuzz(t *testing.T) {
//		pmlintest.Fuzz(t, mytarget.Target(), pmlintest.FuzzOptions{Duration: 5 * time.Second})
//	}
//
// Check checks a history the test recorded itself, from a primitive pmlin
// does not drive (package pmlin: operations with timestamps, and crashes),
// and keeps the history and its reports as test artifacts when it fails:
//
//	func TestMyStack(t *testing.T) {
//		ops := runWorkload(t) // []pmlin.Operation, with timestamps
//		pmlintest.Check(t, pmlin.History{Operations: ops}, pmlin.Options{})
//	}
package pmlintest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/target"
)

// childEnv carries the spec of a child process of the process-kill modes
// to the test binary that Main runs as that child.
const childEnv = "PMLIN_TEST_CHILD"

// FuzzOptions set up a Fuzz campaign. Each field is the flag of pmlin fuzz
// named beside it (docs/cli-contract.md); a zero field leaves the flag at
// its default.
type FuzzOptions struct {
	// Duration is the campaign's time budget (--seconds; default 30 s),
	// Runs the number of runs after which it stops (--runs; 0: no limit).
	Duration time.Duration
	Runs     int64
	// Mutant is a planted bug of the target to fuzz instead of its
	// correct code (--mutant).
	Mutant string
	// Mode is the completion rule for operations cut off by a crash
	// (--mode; the zero value is strict).
	Mode pmlin.Mode
	// CrashMode is how runs crash (--crash-mode): "emulated" (the
	// default), or "kill" and "kill-async", which run each segment in a
	// child process and need the test binary's TestMain to call Main.
	CrashMode string
	// Out is the directory where a finding's files are kept (--out;
	// default pmlin-out, in the test's directory).
	Out string
	// Flags are further flags of pmlin fuzz, for what the fields above do
	// not set: the workload's shape (--threads, --ops, ...), the
	// scheduler, the target's own parameters.
	Flags []string
}

// args is the command line of pmlin fuzz that o stands for, on target name.
func (o FuzzOptions) args(name string) []string {
	args := []string{"fuzz", "--target", name, "--json"}
	if o.Mode != pmlin.Strict {
		args = append(args, "--mode", o.Mode.String())
	}
	if o.Duration != 0 {
		args = append(args, "--seconds", strconv.FormatFloat(o.Duration.Seconds(), 'g', -1, 64))
	}
	if o.Runs != 0 {
		args = append(args, "--runs", strconv.FormatInt(o.Runs, 10))
	}
	for _, f := range []struct{ name, value string }{{"--mutant", o.Mutant}, {"--crash-mode", o.CrashMode}, {"--out", o.Out}} {
		if f.value != "" {
			args = append(args, f.name, f.value)
		}
	}
	return append(args, o.Flags...)
}

// Fuzz runs pmlin fuzz on tgt as opts set it up, and fails t if the
// campaign finds a violation: the message has the report, the files kept
// under opts.Out and the replay command, where pmlin stands for a pmlin
// with tgt linked in (cli.Main). It fails t too if the campaign cannot
// run, and logs its summary if it finds nothing. The process-kill modes
// need the test binary's TestMain to call Main.
func Fuzz(t testing.TB, tgt *target.Target, opts FuzzOptions) {
	t.Helper()
	var out, text bytes.Buffer
	cmd := cli.Command{Name: "pmlin", Targets: []*target.Target{tgt}, Stdout: &out, Stderr: &text, Child: childCommand}
	code := cmd.Run(t.Context(), opts.args(tgt.Name))
	switch code {
	case 0:
		t.Logf("%s", text.String())
	case 1:
		var sum struct {
			Finding struct {
				History, Replay string
			}
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
			t.Fatalf("pmlin fuzz found a violation, and its summary does not read (%v):\n%s", err, text.String())
			return
		}
		t.Fatalf("pmlin fuzz found a violation in target %s (history %s):\n%s\n(pmlin in the replay command: a pmlin with target %s linked in, see cli.Main)",
			tgt.Name, sum.Finding.History, text.String(), tgt.Name)
	default:
		msg := strings.TrimSpace(text.String())
		if strings.Contains(msg, "ended before it was ready") {
			msg += "\n(the process-kill modes re-execute the test binary: does its TestMain call pmlintest.Main?)"
		}
		t.Fatalf("pmlin fuzz could not run (exit %d):\n%s", code, msg)
	}
}

// Main is the body of TestMain for tests that fuzz in the process-kill
// modes (--crash-mode kill or kill-async), which run each segment of a run
// in a child process: this test binary again, where Main does the child's
// work on targets (among them the target being fuzzed) instead of running
// the tests. It returns the exit status.
//
//	func TestMain(m *testing.M) { os.Exit(pmlintest.Main(m, mytarget.Target())) }
func Main(m *testing.M, targets ...*target.Target) int {
	if spec := os.Getenv(childEnv); spec != "" {
		return crash.ChildMain(context.Background(), spec, os.Stdout, targets)
	}
	return m.Run()
}

// childCommand starts this test binary as a child process (see Main).
func childCommand(spec string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+spec, "GORACE="+testenv.ChildGORACE())
	return cmd
}
