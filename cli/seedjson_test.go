package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/crash"
)

// bigSeed is above 2^53: a reader whose JSON numbers are doubles (jq 1.6,
// JavaScript) rounds it to 18446744073709551616.
const bigSeed = uint64(18446744073709551557)

// lastObject decodes the last line of out into a generic map, so that a
// string and a number stay told apart.
func lastObject(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	dec := json.NewDecoder(strings.NewReader(lines[len(lines)-1]))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	return m
}

// TestSeedsAreJSONStrings: every seed of fuzz --json (the campaign's, the
// finding's, its verdict's run) and of run --json is a JSON string holding
// the exact decimal seed.
func TestSeedsAreJSONStrings(t *testing.T) {
	seed := strconv.FormatUint(bigSeed, 10)
	code, out, errs := pmlin(t, "", "fuzz", "--mutant", "dirty-spurious-failure", "--seed", seed, "--jobs", "1",
		"--seconds", "120", "--json", "--out", t.TempDir())
	if code != 1 {
		t.Fatalf("exit %d, expected a finding\n%s\n%s", code, out, errs)
	}
	sum := lastObject(t, out)
	if sum["seed"] != seed {
		t.Errorf("fuzz --json seed %#v, want the string %q", sum["seed"], seed)
	}
	f := sum["finding"].(map[string]any)
	run, err := f["run"].(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	runSeed := strconv.FormatUint(crash.RunSeed(bigSeed, run-1), 10)
	if f["seed"] != runSeed {
		t.Errorf("finding seed %#v, want the string %q", f["seed"], runSeed)
	}
	if s := f["verdict"].(map[string]any)["run"].(map[string]any)["seed"]; s != runSeed {
		t.Errorf("finding verdict's run seed %#v, want the string %q", s, runSeed)
	}
	if !strings.Contains(f["replay"].(string), "--seed "+runSeed+" ") {
		t.Errorf("the replay command %q has not the seed %s", f["replay"], runSeed)
	}

	code, out, errs = pmlin(t, "", "run", "--ops", "50", "--seed", seed, "--json", "-o", filepath.Join(t.TempDir(), "h.hist"))
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	if s := lastObject(t, out)["run"].(map[string]any)["seed"]; s != seed {
		t.Errorf("run --json run.seed %#v, want the string %q", s, seed)
	}
}
