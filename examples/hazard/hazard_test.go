package hazard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/examples/hazard"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/pmlintest"
	"github.com/pmlin/pmlin/target"
)

// TestFuzz: the correct code is clean under the default campaign, whose
// runs stop a thread for good in half of them (the progress check) and
// hold writes back in a third (late writes): the hazard-slot wait is
// declared, so a reader stopped with a block protected is waited for,
// not reported.
func TestFuzz(t *testing.T) {
	pmlintest.Fuzz(t, hazard.Target(), pmlintest.FuzzOptions{Duration: 2 * time.Second})
}

// fuzz runs hazardpmlin's fuzz in process and returns its exit status and
// the kinds of the anomalies of its finding.
func fuzz(t *testing.T, args ...string) (int, []string) {
	t.Helper()
	var out, errs bytes.Buffer
	c := cli.Command{Name: "hazardpmlin", Targets: []*target.Target{hazard.Target()}, Stdout: &out, Stderr: &errs}
	code := c.Run(context.Background(), append([]string{"fuzz", "--json", "--out", t.TempDir()}, args...))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var sum struct {
		Finding *struct {
			Run     int64
			Verdict struct {
				Anomalies []struct{ Kind string }
			}
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("exit %d, no JSON summary: %v\n%s%s", code, err, out.String(), errs.String())
	}
	var kinds []string
	if sum.Finding != nil {
		for _, a := range sum.Finding.Verdict.Anomalies {
			kinds = append(kinds, a.Kind)
		}
		distinct := slices.Compact(slices.Sorted(slices.Values(kinds)))
		t.Logf("%v: exit %d, run %d, %d anomalies: %v", args, code, sum.Finding.Run, len(kinds), distinct)
	}
	return code, kinds
}

// TestMutantsCaught: each planted bug is found with seed 1 (and 2, 3
// with PMLIN_LONG=1), as
// what it is: a block reused under its reader as a violation of the
// history (a fork or a cycle), the undeclared wait as stuck (the
// progress check: the loop that waits for a stopped reader spins), the
// root acted on before it is durable as a violation after a crash.
func TestMutantsCaught(t *testing.T) {
	for _, m := range []struct {
		name  string
		kinds []string
	}{
		{"reuse-ignores-hazards", []string{"fork", "cycle", "unreachable-write", "dangling"}},
		{"wait-undeclared", []string{"stuck"}},
		{"root-unpersisted", []string{"fork", "cycle", "unreachable-write"}},
	} {
		seeds := []string{"1"}
		if testenv.Long() {
			seeds = append(seeds, "2", "3")
		}
		for _, seed := range seeds {
			code, kinds := fuzz(t, "--mutant", m.name, "--seed", seed, "--seconds", "120", "--jobs", "1")
			if code != 1 || !slices.ContainsFunc(kinds, func(k string) bool { return slices.Contains(m.kinds, k) }) {
				t.Errorf("%s, seed %s: exit %d, anomalies %v; want exit 1 and one of %v", m.name, seed, code, kinds, m.kinds)
			}
		}
	}
}

// TestGuide runs the hazardpmlin commands of docs/your-primitive.md
// (section "Lock-free targets") with the exit status each one's comment
// gives. Its Go blocks are checked against hazard.go by examples/shadow's
// TestReadmeGuide, which checks every Go block of the guide.
func TestGuide(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "your-primitive.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n## Lock-free targets\n")
	if i < 0 {
		t.Fatal("docs/your-primitive.md has no section Lock-free targets")
	}
	text = text[i+1:]
	if j := strings.Index(text[3:], "\n## "); j >= 0 {
		text = text[:j+3]
	}
	const prefix = "go run ./examples/hazard/cmd/hazardpmlin "
	exit := regexp.MustCompile(`#\s*exit (\d+)\s*$`)
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		m := exit.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%q says no exit status (# exit N)", line)
		}
		n++
		want, _ := strconv.Atoi(m[1])
		args := strings.Fields(strings.TrimPrefix(line[:len(line)-len(m[0])], prefix))
		t.Chdir(t.TempDir()) // fuzz keeps its files under ./pmlin-out
		var out, errs bytes.Buffer
		c := cli.Command{Name: "hazardpmlin", Targets: []*target.Target{hazard.Target()}, Stdout: &out, Stderr: &errs}
		if got := c.Run(context.Background(), args); got != want {
			t.Errorf("%s: exit %d, want %d\n%s%s", line, got, want, out.String(), errs.String())
		}
	}
	if n < 2 {
		t.Errorf("%d hazardpmlin commands in the section, want at least 2", n)
	}
}
