package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/lockmwcas"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/target"
)

// TestMain lets the test binary stand in for pmlin as the child process of
// the process-kill mode (selfCommand re-executes os.Executable with the
// hidden internal-worker subcommand), and as pmlin itself when
// asPmlinEnv is set (a replay script's program, a process killed while
// it writes).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "internal-worker" || os.Getenv(asPmlinEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		code := Command{Targets: testTargets, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}.Run(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// asPmlinEnv, set in its environment, makes the test binary run as pmlin.
const asPmlinEnv = "PMLIN_CLI_TEST_AS_PMLIN"

func TestRunDeterministic(t *testing.T) {
	args := []string{"run", "--threads", "3", "--ops", "200", "--words", "5", "--crashes", "2", "--seed", "0x2a"}
	code, out1, errs := pmlin(t, "", args...)
	if code != 0 || !strings.HasPrefix(out1, "pmlin-history v1\n") || !strings.Contains(errs, "200 operations") {
		t.Fatalf("exit %d\n%s\n%s", code, out1, errs)
	}
	_, out2, _ := pmlin(t, "", args...)
	if out1 != out2 {
		t.Fatal("same flags, different histories")
	}
	if strings.Count(out1, "\ncrash\n") != 2 {
		t.Fatal("want 2 crashes")
	}
	// To a file, and checked: the same bytes.
	p := filepath.Join(t.TempDir(), "h.hist")
	code, out, errs := pmlin(t, "", append(args, "-o", p, "--check")...)
	if code != 0 || !strings.Contains(out, "LINEARIZABLE") || errs != "" {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	b, _ := os.ReadFile(p)
	if string(b) != out1 {
		t.Fatal("-o wrote a different history")
	}
	code, out, _ = pmlin(t, "", "check", p)
	if code != 0 {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"run", "--mutant", "nope"}, 2, "unknown mutant"},
		{[]string{"run", "--sched", "fair"}, 2, "unknown scheduler"},
		{[]string{"run", "--policy", "most"}, 2, "unknown crash policy"},
		{[]string{"run", "--k", "9", "--words", "4"}, 2, "fewer than k"},
		{[]string{"run", "--crash-mode", "tsunami"}, 2, "crash-mode"},
		{[]string{"run", "--crash-at", "5", "--sched", "free"}, 2, "deterministic"},
		{[]string{"run", "--mode", "eventual", "--check"}, 2, "unknown mode"},
		{[]string{"run", "extra"}, 2, "unknown command"},
		{[]string{"run", "--ops", "300", "--mutant", "read-single-collect", "--seed", "5", "--check"}, 1, "NOT LINEARIZABLE"},
		{[]string{"fuzz", "--seconds", "0"}, 2, "must be positive"},
		{[]string{"run", "--target", "nope"}, 2, `unknown target "nope" (known: pmwcas, lockmwcas, levelhash, dqueue, pmlist)`},
		{[]string{"run", "--stripes", "2"}, 2, "--stripes is not a parameter of target pmwcas (its parameters: --descriptors, --stride, --line-offset)"},
		{[]string{"run", "--target", "lockmwcas", "--stripes", "0"}, 2, "--stripes 0: out of range"},
		{[]string{"run", "--target", "lockmwcas", "--mutant", "recovery-wrong-way"}, 2, "unknown mutant \"recovery-wrong-way\" of target lockmwcas"},
		{[]string{"mutants", "--target", "nope"}, 2, "unknown target"},
	}
	for _, tc := range tests {
		code, _, errs := pmlin(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%v: exit %d (want %d)\n%s", tc.args, code, tc.code, errs)
		}
	}
}

func TestMutantsCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		n    int
	}{{[]string{"mutants"}, 12}, {[]string{"mutants", "--target", "lockmwcas"}, 6}, {[]string{"targets"}, 5}, {[]string{"mutants", "--target", "dqueue"}, 13}, {[]string{"mutants", "--target", "pmlist"}, 7}} {
		code, out, _ := pmlin(t, "", tc.args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != tc.n {
			t.Fatalf("%v: exit %d\n%s", tc.args, code, out)
		}
		for _, l := range lines {
			name, desc, ok := strings.Cut(l, "  ")
			if !ok || strings.Contains(name, " ") || desc == "" {
				t.Fatalf("%v: line %q is not NAME  description", tc.args, l)
			}
		}
	}
	if _, out, _ := pmlin(t, "", "targets"); !strings.HasPrefix(out, "pmwcas  ") {
		t.Fatalf("the default target is not first:\n%s", out)
	}
}

// TestBadTargets: targets that cannot be used are refused before any
// command runs.
func TestBadTargets(t *testing.T) {
	ok := mwcas.Target()
	clash := lockmwcas.Target()
	clash.Params = append(clash.Params, target.Param{Name: "threads", Default: "1"})
	noNew := lockmwcas.Target()
	noNew.New = nil
	halfObject := lockmwcas.Target()
	halfObject.Model = "queue" // with New and Open, no NewObject
	for _, tc := range []struct {
		targets []*target.Target
		err     string
	}{
		{[]*target.Target{ok, ok}, "two targets are called pmwcas"},
		{[]*target.Target{ok, clash}, "parameter --threads would hide the flag"},
		{[]*target.Target{noNew}, "New and Open must both be set"},
		{[]*target.Target{halfObject}, "sets NewObject and OpenObject, not New and Open"},
		{[]*target.Target{{Name: "Bad Name"}}, "lower-case letters"},
	} {
		var errb bytes.Buffer
		code := Command{Targets: tc.targets, Stderr: &errb}.Run(context.Background(), []string{"targets"})
		if code != 2 || !strings.Contains(errb.String(), tc.err) {
			t.Errorf("exit %d: %s (want %q)", code, errb.String(), tc.err)
		}
	}
}

func TestFuzzClean(t *testing.T) {
	code, out, errs := pmlin(t, "", "fuzz", "--runs", "10", "--ops", "200", "--json", "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var got fuzzJSON
	if err := jsonUnmarshal(lines[len(lines)-1], &got); err != nil {
		t.Fatal(err)
	}
	// (A run whose last segment crashed at a rare site, --rare-crash, has
	// one crash more.)
	if got.Runs != 10 || got.Operations != 2000 || got.Crashes < 10*crash.DefaultCrashes || got.Crashes > 10*(crash.DefaultCrashes+1) || got.Violations != 0 || got.Seconds <= 0 {
		t.Fatalf("%+v", got)
	}
	if !strings.Contains(errs, "no violation") {
		t.Fatalf("summary missing: %s", errs)
	}
}

// TestFuzzFindsAndReplays: a mutant of each target is found, the files
// are kept, and the replay command records the same history.
func TestFuzzFindsAndReplays(t *testing.T) {
	for _, tc := range [][2]string{{"pmwcas", "dirty-spurious-failure"}, {"lockmwcas", "read-skips-lock"}} {
		dir := t.TempDir()
		code, out, errs := pmlin(t, "", "fuzz", "--target", tc[0], "--mutant", tc[1], "--seconds", "120", "--out", dir, "--jobs", "1")
		if code != 1 || !strings.Contains(out, "VIOLATION") || !strings.Contains(out, "target "+tc[0]+" with planted bug "+tc[1]) {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		ents, _ := os.ReadDir(dir)
		var hist, replay string
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), tc[0]+"-"+tc[1]+"-run-") {
				t.Fatalf("kept %s", e.Name())
			}
			switch {
			case strings.HasSuffix(e.Name(), ".shrunk.hist"):
			case strings.HasSuffix(e.Name(), ".hist"):
				hist = filepath.Join(dir, e.Name())
			case strings.HasSuffix(e.Name(), ".replay.sh"):
				replay = filepath.Join(dir, e.Name())
			}
		}
		// The history, its text, JSON and HTML reports, the shrunk history
		// and the replay command.
		if len(ents) != 6 || hist == "" || replay == "" {
			t.Fatalf("kept %v", ents)
		}
		// The replay script, run as printed from another directory (with
		// the test binary as pmlin), records the same history beside the
		// kept one and checks it: NOT LINEARIZABLE, exit 1.
		if code, out := runReplay(t, replay, "PMLIN="+testExecutable(t)); code != 1 || !strings.Contains(out, "NOT LINEARIZABLE") {
			t.Fatalf("replay: exit %d\n%s", code, out)
		}
		a, _ := os.ReadFile(hist)
		b, _ := os.ReadFile(strings.TrimSuffix(hist, ".hist") + ".replay.hist")
		if string(a) != string(b) {
			t.Fatal("the replay recorded a different history")
		}
	}
}

func TestRunKillMode(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	quickChildren(t)
	for _, tg := range testTargets {
		code, out, errs := pmlin(t, "", "run", "--target", tg.Name, "--crash-mode", "kill", "--ops", "600", "--check", "-o", filepath.Join(t.TempDir(), "k.hist"))
		if code != 0 || !strings.Contains(out, "LINEARIZABLE") || !strings.Contains(out, "6 crashes") {
			t.Fatalf("%s: exit %d\n%s\n%s", tg.Name, code, out, errs)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func TestRunJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.hist")
	code, out, _ := pmlin(t, "", "run", "--ops", "300", "--mutant", "read-single-collect", "--seed", "5", "--json", "-o", p)
	var v verdictJSON
	if code != 1 || jsonUnmarshal(strings.TrimSpace(out), &v) != nil || v.Linearizable || len(v.Anomalies) == 0 || v.Run == nil {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestRunZeroMeansZero: a flag's value is the value. --crashes 0 records no
// crash, --reads 0 no read but the first of each thread (a CAS expects a
// value its thread read) and the final read of every word,
// --recovery-crash 0 never crashes a recovery; and the history's comment
// replays them as given.
func TestRunZeroMeansZero(t *testing.T) {
	code, out, errs := pmlin(t, "", "run", "--crashes", "0", "--reads", "0", "--ops", "200", "--seed", "9")
	if code != 0 || strings.Count(out, "\ncrash\n") != 0 || strings.Count(out, " inv read") != 4+1 || !strings.Contains(errs, "0 crashes") {
		t.Fatalf("exit %d, %d reads\n%s", code, strings.Count(out, " inv read"), errs)
	}
	if !strings.Contains(out, "--reads 0 --crashes 0 ") {
		t.Fatalf("comment: %s", strings.SplitN(out, "\n", 3)[1])
	}
	code, out, _ = pmlin(t, "", "run", "--recovery-crash", "0", "--crashes", "30", "--ops", "300", "--seed", "9")
	if code != 0 || strings.Count(out, "\ncrash\n") != 30 || strings.Contains(out, "recovery crashed") {
		t.Fatalf("exit %d: %d crashes, recovery crashed: %v", code, strings.Count(out, "\ncrash\n"), strings.Contains(out, "recovery crashed"))
	}
	code, out, _ = pmlin(t, "", "run", "--recovery-crash", "1", "--crashes", "5", "--ops", "300", "--seed", "9")
	if code != 0 || strings.Count(out, "recovery crashed") == 0 {
		t.Fatalf("exit %d: no recovery crashed with --recovery-crash 1", code)
	}
}

// TestShellJoin: the replay command survives sh, whatever the --out path.
func TestShellJoin(t *testing.T) {
	args := []string{"pmlin", "run", "--seed", "7", "-o", "out dir/it's $HOME`x`.hist", ""}
	line := shellJoin(args)
	if !strings.HasPrefix(line, "pmlin run --seed 7 -o '") {
		t.Fatalf("quoted what needs no quoting: %s", line)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	got, err := exec.Command("sh", "-c", "printf '%s\\n' "+line).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(args, "\n") + "\n"; string(got) != want {
		t.Fatalf("sh read %q, want %q", got, want)
	}
}

// TestCheckedRunExit: a checked run whose history the analyzer cannot
// decide exits 2 (UNDECIDED is not a pass), and its JSON says why; one
// with an anomaly of its own exits 1 whatever the analyzer says.
func TestCheckedRunExit(t *testing.T) {
	// Assumption 1 broken: the analyzer cannot decide.
	hist := []byte("1 inv cas 1:0:5\n1 ret ok\n2 inv cas 1:0:5\n2 ret ok\n")
	v, err := crash.Decide(context.Background(), &crash.Result{Operations: 2}, hist, history.Strict)
	if err != nil || v.Undecided == nil {
		t.Fatalf("%v %+v", err, v)
	}
	var ee *exitError
	if err := checkedExit(v); !errors.As(err, &ee) || ee.code != exitInput {
		t.Fatalf("undecided: %v, want exit 2", err)
	}
	var j struct {
		Linearizable bool
		Undecided    string
		Processes    *int
		Anomalies    []json.RawMessage
		Run          *crash.Result
	}
	if err := jsonUnmarshal(marshalLine(toJSON(v)), &j); err != nil || j.Linearizable || !strings.Contains(j.Undecided, "Assumption 1") ||
		j.Processes != nil || j.Anomalies == nil || j.Run == nil {
		t.Fatalf("%v: %s", err, marshalLine(toJSON(v)))
	}
	v.Anomalies = append(v.Anomalies, analyzer.Anomaly{Kind: crash.Stuck})
	if err := checkedExit(v); !errors.As(err, &ee) || ee.code != exitViolated {
		t.Fatalf("undecided with a stuck operation: %v, want exit 1", err)
	}
	v, err = crash.Decide(context.Background(), &crash.Result{Operations: 1}, []byte("1 inv cas 1:0:5\n1 ret ok\n"), history.Strict)
	if err != nil || checkedExit(v) != nil {
		t.Fatalf("linearizable: %v %v", err, checkedExit(v))
	}
}

// TestRunTextGolden: pmlin run's text history is byte for byte the one
// that pmlin recorded before the binary history and the TSC timestamps
// came (testdata/run-*.hist, written by that version with the flags
// below), so that text stays the interchange it was. The binary
// recording of the same flags converts to the same bytes. The pmwcas
// file was written again when mwcas's phase 2 took more steps (it
// persists its own write): the same format, another schedule.
func TestRunTextGolden(t *testing.T) {
	for _, tc := range []struct{ file, target, seed string }{
		{"run-pmwcas.hist", "pmwcas", "0x2b"},
		{"run-lockmwcas.hist", "lockmwcas", "0x2c"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--target", tc.target, "--threads", "3", "--ops", "60", "--words", "5", "--k", "2",
				"--crashes", "2", "--swaps", "0.3", "--fail-values", "--seed", tc.seed}
			code, got, errs := pmlin(t, "", args...)
			if code != 0 || got != string(want) {
				t.Fatalf("exit %d, %s\ngot:\n%s\nwant:\n%s", code, errs, got, want)
			}
			bin := filepath.Join(t.TempDir(), "h.pmlb")
			if code, _, errs := pmlin(t, "", append(args, "--format", "binary", "-o", bin)...); code != 0 {
				t.Fatalf("binary: exit %d, %s", code, errs)
			}
			if code, txt, errs := pmlin(t, "", "convert", bin); code != 0 || txt != string(want) {
				t.Fatalf("binary converted: exit %d, %s\n%s", code, errs, txt)
			}
		})
	}
}
