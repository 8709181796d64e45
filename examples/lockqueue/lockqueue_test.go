package lockqueue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/examples/lockqueue"
	"github.com/pmlin/pmlin/pmlintest"
	"github.com/pmlin/pmlin/target"
)

// TestMain lets this test binary be the child process of --crash-mode kill.
func TestMain(m *testing.M) { os.Exit(pmlintest.Main(m, lockqueue.Target())) }

// TestFuzz: the correct queue is clean (pmlintest, as a user's test).
func TestFuzz(t *testing.T) {
	pmlintest.Fuzz(t, lockqueue.Target(), pmlintest.FuzzOptions{Duration: 2 * time.Second})
}

// pmlin runs the CLI with the queue linked in.
func pmlin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	c := cli.Command{Name: "queuepmlin", Targets: []*target.Target{lockqueue.Target()}, Stdout: &out, Stderr: &errs}
	return c.Run(context.Background(), args), out.String(), errs.String()
}

// TestPlantedBugCaughtAndReplayed: pmlin fuzz catches the missing flush,
// explains it in the queue's terms, keeps the history and its shrunk
// history (a few operations that still fail), and the history's own pmlin
// run line records it again byte for byte.
func TestPlantedBugCaughtAndReplayed(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := pmlin(t, "fuzz", "--target", "lockqueue", "--mutant", "slot-unpersisted", "--seconds", "120", "--jobs", "1", "--out", dir, "--json")
	if code != 1 {
		t.Fatalf("fuzz: exit %d, want 1\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "nonlinearizable, object lockqueue") || !strings.Contains(errs, "contents ->") {
		t.Errorf("the report does not explain the lost element by the queue's contents:\n%s", errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct{ Finding struct{ History string } }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Finding.History == "" {
		t.Fatalf("summary %q: %v", lines[len(lines)-1], err)
	}
	kept, err := os.ReadFile(sum.Finding.History)
	if err != nil {
		t.Fatal(err)
	}
	if page, err := os.ReadFile(strings.TrimSuffix(sum.Finding.History, ".hist") + ".html"); err != nil || !strings.Contains(string(page), "lockqueue") {
		t.Errorf("no HTML report kept beside the history (%v)", err)
	}
	// The shrunk history: the lost element in a few operations, failing
	// on its own.
	shrunk := strings.TrimSuffix(sum.Finding.History, ".hist") + ".shrunk.hist"
	if b, err := os.ReadFile(shrunk); err != nil || strings.Count(string(b), " inv ") > 4 {
		t.Errorf("shrunk history (%v):\n%s", err, b)
	} else if code, out, _ := pmlin(t, "check", shrunk); code != 1 || !strings.Contains(out, "NOT LINEARIZABLE") {
		t.Errorf("check of the shrunk history: exit %d, want 1\n%s", code, out)
	}
	head := strings.SplitN(string(kept), "\n", 4)
	if head[0] != "pmlin-history v2" || head[1] != "object lockqueue queue" || !strings.HasPrefix(head[2], "# pmlin run ") {
		t.Fatalf("kept history starts %q", head[:3])
	}
	replay := filepath.Join(dir, "replay.hist")
	args := append(strings.Fields(strings.TrimPrefix(head[2], "# pmlin run ")), "-o", replay)
	if code, out, errs := pmlin(t, append([]string{"run"}, args...)...); code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
	again, err := os.ReadFile(replay)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(kept, again) {
		t.Errorf("the replay recorded another history (%d bytes, kept %d)", len(again), len(kept))
	}
	if code, out, errs := pmlin(t, "check", replay); code != 1 || !strings.Contains(out, "NOT LINEARIZABLE") {
		t.Errorf("check of the replay: exit %d, want 1\n%s%s", code, out, errs)
	}
}

// TestPrimitiveFlagsRefused: a data structure has no words or k.
func TestPrimitiveFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--target", "lockqueue", "--k", "3"},
		{"fuzz", "--target", "lockqueue", "--words", "16", "--runs", "1"},
		{"run", "--target", "lockqueue", "--keys", "4"}, // a queue has no keys
	} {
		code, _, errs := pmlin(t, args...)
		if code != 2 || !strings.Contains(errs, "lockqueue") {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errs)
		}
	}
	// A binary history holds a queue's operations too: run writes it,
	// check reads it.
	bin := filepath.Join(t.TempDir(), "h.pmlb")
	if code, _, errs := pmlin(t, "run", "--target", "lockqueue", "--format", "binary", "-o", bin); code != 0 {
		t.Errorf("run --format binary: exit %d\n%s", code, errs)
	} else if code, out, errs := pmlin(t, "check", bin); code != 0 || !strings.Contains(out, "object lockqueue (queue): linearizable") {
		t.Errorf("check of the binary history: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ := pmlin(t, "targets")
	if code != 0 || !strings.Contains(out, "lockqueue  ") || !strings.Contains(out, "[model queue]") {
		t.Errorf("targets: exit %d\n%s", code, out)
	}
}

// TestFuzzProcessKills: the correct queue is clean when a child process
// is killed with SIGKILL (its missing flushes cannot show there: the page
// cache survives), and a recovery that keeps the lock of the killed
// process is found stuck, in both crash modes, the report naming the
// operation as the history writes it.
func TestFuzzProcessKills(t *testing.T) {
	pmlintest.Fuzz(t, lockqueue.Target(), pmlintest.FuzzOptions{Duration: time.Second, CrashMode: "kill"})
	stuck := regexp.MustCompile(`stuck, operation at line \d+\n  (in the child process: )?process \d+'s (enq 0x[0-9a-f]+|deq) \(line \d+\) made`)
	for _, mode := range []string{"emulated", "kill"} {
		var out, errs bytes.Buffer
		c := cli.Command{Name: "queuepmlin", Targets: []*target.Target{lockqueue.Target()}, Stdout: &out, Stderr: &errs, Child: func(spec string) *exec.Cmd {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "PMLIN_TEST_CHILD="+spec)
			return cmd
		}}
		code := c.Run(context.Background(), []string{"fuzz", "--target", "lockqueue", "--crash-mode", mode, "--mutant", "lock-kept",
			"--seconds", "120", "--stuck-after", "200ms", "--stuck-accesses", "20000", "--out", t.TempDir()})
		if code != 1 || !stuck.MatchString(out.String()) {
			t.Errorf("%s, lock-kept: exit %d, want 1 (stuck, naming the operation)\n%s%s", mode, code, out.String(), errs.String())
		}
	}
}
