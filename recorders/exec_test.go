package recorders

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/internal/shellword"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/target"
)

// The examples that record themselves into logs that survive a kill
// (c/example/persistent_mwcas.c, python/example/persistent_mwcas.py),
// crash-fuzzed by pmlin fuzz --exec as a user runs it: the correct MwCAS
// is clean over its runs, the one with --bug is caught, and the finding's
// replay command runs.

// pmlinCmd runs pmlin's command line in this process, with the built-in
// target cmd/pmlin has first (--exec uses none).
func pmlinCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = cli.Command{Targets: []*target.Target{mwcas.Target()}, Stdout: &o, Stderr: &e}.Run(context.Background(), args)
	return code, o.String(), e.String()
}

// fuzzSummary is what these tests read of pmlin fuzz --json's last line.
type fuzzSummary struct {
	Runs, Operations, Crashes, Violations int64
	Exec, Target, Shard                   string
	Finding                               *struct {
		Seed            string
		History, Replay string
		Verdict         struct{ Linearizable *bool }
	}
}

// fuzzExec runs pmlin fuzz --exec command --json with more flags, and
// returns its exit status and summary.
func fuzzExec(t *testing.T, command string, flags ...string) (int, fuzzSummary, string) {
	t.Helper()
	code, out, errs := pmlinCmd(t, append([]string{"fuzz", "--exec", command, "--json"}, flags...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var s fuzzSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("pmlin fuzz --exec %q %v: exit %d, no JSON summary (%v):\n%s\n%s", command, flags, code, err, out, errs)
	}
	return code, s, out + errs
}

// testExecExample fuzzes the example command with more flags: clean over
// runs runs, then caught with --bug within bugSeconds; the finding's
// replay runs.
func testExecExample(t *testing.T, command string, runs int, bugSeconds string, more ...string) {
	out := t.TempDir()
	code, s, said := fuzzExec(t, command, append([]string{"--runs", strconv.Itoa(runs), "--seconds", "120", "--out", out}, more...)...)
	if code != 0 || s.Runs != int64(runs) || s.Violations != 0 || s.Finding != nil {
		t.Fatalf("correct %s: exit %d, %d runs, %d violations, want 0, %d, 0:\n%s", command, code, s.Runs, s.Violations, runs, said)
	}
	// Each run kills the program several times, but a start that ends by
	// itself before its kill is not a crash, and how many do depends on
	// the machine's speed (a fast CI machine ended starts first): the
	// test asks only that some kill landed, which a campaign whose kills
	// never land fails.
	if s.Crashes == 0 || s.Operations == 0 || s.Exec != command {
		t.Errorf("correct %s: %d crashes, %d operations over %d runs, exec %q:\n%s", command, s.Crashes, s.Operations, runs, s.Exec, said)
	}
	t.Logf("correct: %d runs, %d crashes, %d operations clean", s.Runs, s.Crashes, s.Operations)

	bug := command + " --bug"
	began := time.Now()
	code, s, said = fuzzExec(t, bug, append([]string{"--seconds", bugSeconds, "--out", out}, more...)...)
	if code != 1 || s.Violations != 1 || s.Finding == nil || s.Finding.Verdict.Linearizable == nil || *s.Finding.Verdict.Linearizable {
		t.Fatalf("%s: exit %d, %d violations, want 1 and a finding not linearizable:\n%s", bug, code, s.Violations, said)
	}
	t.Logf("--bug caught in run %d (%s)", s.Runs, time.Since(began))
	f := s.Finding
	base := strings.TrimSuffix(f.History, ".hist")
	script := readFile(t, base+".replay.sh")
	for _, want := range []string{"--exec " + shellword.Join([]string{bug}), "--seed " + f.Seed, "# The run's seed is " + f.Seed, "  kill 1: ", "are the machine's", "\ncd "} {
		if !strings.Contains(script, want) {
			t.Errorf("the replay script lacks %q:\n%s", want, script)
		}
	}
	if h := readFile(t, f.History); !strings.Contains(h, "\ncrash\n") || !strings.Contains(h, "# pmlin run --exec ") {
		t.Errorf("the kept history has no crash line or no replay comment:\n%.2000s", h)
	}
	// The replay's first command (pmlin run, which the script runs in
	// this directory) re-records a history: the program is killed at the
	// same delays, and the interleaving is the machine's, so it may or may
	// not violate again; it must gather and check.
	replay, _, _ := strings.Cut(f.Replay, " && ")
	args, err := shellword.Split(replay)
	if err != nil || len(args) < 2 || args[1] != "run" {
		t.Fatalf("replay %q: %v", f.Replay, err)
	}
	again := filepath.Join(t.TempDir(), "again.hist")
	for i, a := range args {
		if a == "-o" {
			args[i+1] = again
		}
	}
	if code, o, e := pmlinCmd(t, append(args[1:], "--check")...); code != 0 && code != 1 {
		t.Errorf("the replay %q: exit %d:\n%s%s", replay, code, o, e)
	} else if !strings.Contains(readFile(t, again), "\ncrash\n") {
		t.Errorf("the replay's history has no crash line")
	}
}

// TestFuzzExecC: the C persistent MwCAS, built with gcc, under pmlin fuzz
// --exec; and a campaign's two shards run its runs between them.
func TestFuzzExecC(t *testing.T) {
	t.Parallel()
	bin := compile(t, "gcc", "c11", "c/example/persistent_mwcas.c")
	testExecExample(t, bin, testenv.Count(0, 5, 50), "120")

	// --bool records failures without their address (rule 6: a cas of 2
	// words is withdrawn): still clean, and --bug still caught (its torn
	// MwCAS shows in the reads).
	if code, s, said := fuzzExec(t, bin+" --bool", "--runs", "2", "--out", t.TempDir()); code != 0 || s.Runs != 2 {
		t.Errorf("--bool: exit %d, %d runs, want 0 and 2:\n%s", code, s.Runs, said)
	}
	if code, _, said := fuzzExec(t, bin+" --bool --bug", "--seconds", "120", "--out", t.TempDir()); code != 1 {
		t.Errorf("--bool --bug: exit %d, want 1:\n%s", code, said)
	}

	var total int64
	for i := range 2 {
		shard := strconv.Itoa(i) + "/2"
		code, s, said := fuzzExec(t, bin+" --ops 300", "--runs", "5", "--shard", shard, "--out", t.TempDir())
		if code != 0 || s.Shard != shard {
			t.Fatalf("--shard %s: exit %d, shard %q:\n%s", shard, code, s.Shard, said)
		}
		total += s.Runs
	}
	if total != 5 {
		t.Errorf("the shards 0/2 and 1/2 of --runs 5 ran %d runs between them, want 5", total)
	}
}

// TestFuzzExecQueue: the C persistent queue, recorded as version 2
// operations (an object of model queue), under pmlin fuzz --exec: the
// gathered histories are of version 2 and decided by the exact checker;
// the correct queue is clean, --bug (tail advanced before the slot is
// written) caught in strict and recoverable mode (durable too with
// PMLIN_LONG=1).
func TestFuzzExecQueue(t *testing.T) {
	t.Parallel()
	bin := compile(t, "gcc", "c11", "c/example/persistent_queue.c")
	// 2000 operations a thread and start at most: a start that outlives
	// its kill's window records no more, so that a history (of up to 7
	// starts) stays small enough to check in a second under -race.
	bin += " --ops 2000"
	testExecExample(t, bin, testenv.Count(0, 5, 50), "120")
	modes := []string{"recoverable"}
	if testenv.Long() {
		modes = append(modes, "durable")
	}
	for _, mode := range modes {
		if code, s, said := fuzzExec(t, bin+" --bug", "--mode", mode, "--seconds", "120", "--out", t.TempDir()); code != 1 || s.Finding == nil {
			t.Errorf("--bug --mode %s: exit %d, want 1 and a finding:\n%s", mode, code, said)
		}
	}
	// The history is version 2, and pmlin run --exec --check decides it.
	// Whether a kill lands before a start ends by itself is the machine's
	// timing (a fast machine finishes a short start inside the kill's
	// window), so a few seeds are tried until one history has a crash.
	hist := filepath.Join(t.TempDir(), "q.hist")
	var h, o, e string
	for seed := 3; seed < 8; seed++ {
		var code int
		code, o, e = pmlinCmd(t, "run", "--exec", bin, "--seed", strconv.Itoa(seed), "-o", hist, "--check")
		if code != 0 {
			t.Fatalf("pmlin run --exec --check --seed %d: exit %d:\n%s%s", seed, code, o, e)
		}
		if h = readFile(t, hist); strings.Contains(h, "\ncrash\n") {
			break
		}
	}
	if !strings.Contains(h, "\npmlin-history v2\nobject q queue cap=4\n") || !strings.Contains(h, " inv q enq ") || !strings.Contains(h, "\ncrash\n") {
		t.Errorf("the run's history is not a version 2 history of q with crashes:\n%.2000s", h)
	}
	if !regexp.MustCompile(`operations \(0 reads, 0 cas, 0 swaps, \d+ on objects\)`).MatchString(o + e) {
		t.Errorf("pmlin run's summary does not count the operations on objects:\n%s%s", o, e)
	}
	if !strings.Contains(o+e, "LINEARIZABLE (strict mode, exact search)") {
		t.Errorf("pmlin run --check did not print the exact checker's verdict:\n%s%s", o, e)
	}
}

// TestFuzzExecPython: the Python persistent MwCAS under pmlin fuzz
// --exec.
func TestFuzzExecPython(t *testing.T) {
	t.Parallel()
	py := tool(t, "python3")
	src, err := filepath.Abs("python/example/persistent_mwcas.py")
	if err != nil {
		t.Fatal(err)
	}
	sources(t, src, "python/pmlin_recorder.py")
	// -B: nothing written into the source tree. Three kills a run: each
	// start of the interpreter costs a tenth of a second or more.
	testExecExample(t, shellword.Join([]string{py, "-B", src}), testenv.Count(0, 3, 30), "120", "--crashes", "3")
}

// TestFuzzExecPythonQueue: the Python persistent queue (version 2
// operations recorded by pmlin_recorder) under pmlin fuzz --exec.
func TestFuzzExecPythonQueue(t *testing.T) {
	t.Parallel()
	py := tool(t, "python3")
	src, err := filepath.Abs("python/example/persistent_queue.py")
	if err != nil {
		t.Fatal(err)
	}
	sources(t, src, "python/pmlin_recorder.py")
	testExecExample(t, shellword.Join([]string{py, "-B", src}), testenv.Count(0, 3, 30), "120", "--crashes", "3")
}

// TestFuzzExecUsage: --exec's flags are refused where they do not belong,
// with a message that says why.
func TestFuzzExecUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fuzz", "--exec", "true", "--threads", "3"}, "--threads: not with --exec"},
		{[]string{"fuzz", "--exec", "true", "--systematic"}, "--systematic: not with --exec"},
		{[]string{"fuzz", "--kill-within", "1ms"}, "--kill-within goes with --exec"},
		{[]string{"fuzz", "--exec", ""}, "no program"},
		{[]string{"fuzz", "--exec", "no-such-program-pmlin"}, "no-such-program-pmlin"},
		{[]string{"run", "--exec", "true", "--format", "binary"}, "--format: not with --exec"},
	} {
		code, o, e := pmlinCmd(t, c.args...)
		if code != 2 || !strings.Contains(e, c.want) {
			t.Errorf("pmlin %s: exit %d, want 2 and %q:\n%s%s", shellword.Join(c.args), code, c.want, o, e)
		}
	}
	if _, err := os.Stat("pmlin-out"); err == nil {
		t.Error("a refused command made pmlin-out")
	}
}

// TestCrashTestingGuide follows recorders/README.md, "Crash-testing your
// C/C++ program", as a new user would, in an empty directory: the sh
// block's gcc command builds the example, its pmlin commands run (in this
// process: the block's go build of pmlin is this test's own build) and
// exit as their comments say, and the first line of each output the
// section shows is what they print (numbers aside). The correct
// variant's --seconds is cut to 3 unless PMLIN_LONG is set.
func TestCrashTestingGuide(t *testing.T) {
	gcc := tool(t, "gcc")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	text := readFile(t, "README.md")
	_, sec, ok := strings.Cut(text, "\n## Crash-testing your C/C++ program\n")
	if !ok {
		t.Fatal("README.md has no section \"Crash-testing your C/C++ program\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, block, _ := strings.Cut(sec, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var shown []string // the first line of each output the section shows
	for _, part := range strings.Split(sec, "\n\n")[1:] {
		if strings.HasPrefix(part, "    pmlin fuzz: ") {
			first, _, _ := strings.Cut(strings.TrimPrefix(part, "    "), "\n")
			shown = append(shown, first)
		}
	}
	sources(t, "c/example/persistent_mwcas.c", "c/pmlin.h")
	t.Chdir(t.TempDir())
	number := regexp.MustCompile(`\d+(\.\d+)?`)
	exitComment := regexp.MustCompile(`#.*\bexit (\d)`)
	ran := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, comment, _ := strings.Cut(line, "#")
		args, err := shellword.Split(cmd)
		if err != nil || len(args) == 0 {
			t.Fatalf("README.md: %q: %v", line, err)
		}
		switch args[0] {
		case "go": // go build -o pmlin ./cmd/pmlin: this test's own build
			if strings.Join(args, " ") != "go build -o pmlin ./cmd/pmlin" {
				t.Errorf("README.md: %q: not the build of pmlin this test stands for", line)
			}
		case "gcc":
			for i, a := range args {
				if strings.HasPrefix(a, "recorders/") {
					args[i] = filepath.Join(root, a)
				}
			}
			if _, e, err := run(t, "", append([]string{gcc}, args[1:]...)...); err != nil {
				t.Fatalf("README.md: %q: %v\n%s", line, err, e)
			}
		case "./pmlin":
			m := exitComment.FindStringSubmatch("#" + comment)
			if m == nil {
				t.Fatalf("README.md: %q: no \"exit N\" in its comment", line)
			}
			args = args[1:]
			if !testenv.Long() && !strings.Contains(cmd, "--bug") {
				for i := range args[:len(args)-1] {
					if args[i] == "--seconds" {
						args[i+1] = "3"
					}
				}
			}
			code, out, errs := pmlinCmd(t, args...)
			if strconv.Itoa(code) != m[1] {
				t.Fatalf("README.md: %q: exit %d, its comment says %s:\n%s%s", line, code, m[1], out, errs)
			}
			if ran < len(shown) {
				want := "^" + number.ReplaceAllString(regexp.QuoteMeta(shown[ran]), `\d+(\.\d+)?`) + "$"
				if first, _, _ := strings.Cut(out, "\n"); !regexp.MustCompile(want).MatchString(first) {
					t.Errorf("README.md shows %q, %q printed %q", shown[ran], line, first)
				}
			}
			ran++
		default:
			t.Fatalf("README.md: %q: a command this test does not know", line)
		}
	}
	if ran != 2 || len(shown) != 2 {
		t.Fatalf("README.md's guide: ran %d pmlin commands, shows %d outputs; want 2 and 2", ran, len(shown))
	}
	if kept, _ := filepath.Glob("pmlin-out/persistent_mwcas-run-*.replay.sh"); len(kept) != 1 {
		t.Errorf("the guide's finding left %v, want one replay script in pmlin-out/", kept)
	}
}
