package pmlintest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/lockmwcas"
	"github.com/pmlin/pmlin/pmlintest"
)

func TestMain(m *testing.M) { os.Exit(pmlintest.Main(m, lockmwcas.Target())) }

// fakeT records what Fuzz reports instead of failing the test.
type fakeT struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeT) Helper()             {}
func (f *fakeT) Logf(string, ...any) {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
}

func TestFuzzPasses(t *testing.T) {
	pmlintest.Fuzz(t, lockmwcas.Target(), pmlintest.FuzzOptions{Runs: 5, Out: t.TempDir(), Flags: []string{"--ops", "200"}})
}

// TestFuzzFails: a planted bug fails the test, with the report, the kept
// files and the replay command.
func TestFuzzFails(t *testing.T) {
	dir := t.TempDir()
	f := &fakeT{TB: t}
	pmlintest.Fuzz(f, lockmwcas.Target(), pmlintest.FuzzOptions{Mutant: "data-unflushed", Duration: 20 * time.Second, Out: dir})
	if !f.failed || !strings.Contains(f.msg, "found a violation in target lockmwcas") || !strings.Contains(f.msg, "replay") {
		t.Fatalf("failed %v: %s", f.failed, f.msg)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "lockmwcas-data-unflushed-run-*"))
	if len(kept) < 5 {
		t.Fatalf("kept %v", kept)
	}
	for _, k := range kept {
		if !strings.Contains(f.msg, k) {
			t.Fatalf("%s kept but not named:\n%s", k, f.msg)
		}
	}
	f = &fakeT{TB: t}
	pmlintest.Fuzz(f, lockmwcas.Target(), pmlintest.FuzzOptions{Mutant: "nope"})
	if !f.failed || !strings.Contains(f.msg, "could not run (exit 2)") || !strings.Contains(f.msg, "unknown mutant") {
		t.Fatalf("failed %v: %s", f.failed, f.msg)
	}
}

// TestFuzzKillMode: the child processes are this test binary, which
// TestMain turns into a child when asked.
func TestFuzzKillMode(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	pmlintest.Fuzz(t, lockmwcas.Target(), pmlintest.FuzzOptions{Runs: 2, CrashMode: "kill", Out: t.TempDir(), Flags: []string{"--ops", "300"}})
}
