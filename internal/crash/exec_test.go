package crash

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/shellword"
)

// The tests of RunExec's side of the protocol of pmlin fuzz --exec, with
// programs written in sh: what each start is told, how it is killed, and
// what a program that fails, crashes, hangs or breaks the protocol
// becomes. A program that records (the examples of recorders/) is tested
// in package recorders and by pmlin fuzz --exec in package cli.

// script writes an sh program into a directory of the test's and returns
// the --exec command that runs it with the directory as its argument.
func script(t *testing.T, body string) (command, dir string) {
	t.Helper()
	dir = t.TempDir()
	p := filepath.Join(dir, "prog.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nD=\"$1\"\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return shellword.Join([]string{p, dir}), dir
}

func execFor(command string, kills int) Exec {
	return Exec{Command: command, Kills: kills, KillWithin: 2 * time.Millisecond, Timeout: 5 * time.Second, Dir: os.Getenv("TMPDIR")}
}

// TestExecProtocol: each start gets its role (run, run, ..., recover), the
// run's log and state directories (the same for every start; the state
// kept across them), a PMLIN_SEED of its own drawn from the run's seed,
// and the ready descriptor; a start of role run that says it is ready is
// killed, its whole process group with it, before the next one starts;
// the run's directory is gone afterwards; a recovering start that fails
// is an anomaly quoting what it said.
func TestExecProtocol(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `
n=$(cat "$D/starts" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$D/starts"
[ -d "$PMLIN_LOG_DIR" ] && echo x >> "$PMLIN_STATE_DIR/kept"
echo "$PMLIN_ROLE $PMLIN_LOG_DIR $PMLIN_STATE_DIR $PMLIN_SEED $PMLIN_READY_FD $(wc -l < "$PMLIN_STATE_DIR/kept")" > "$D/env-$n"
# alive: the last start's child is there and not a zombie
if [ -f "$D/child" ] && [ -r "/proc/$(cat "$D/child")/stat" ] && ! sed 's/.*) //' "/proc/$(cat "$D/child")/stat" | grep -q '^Z'; then echo alive > "$D/child-$n"; fi
if [ "$PMLIN_ROLE" = recover ]; then echo "recovery went wrong" >&2; exit 3; fi
sleep 30 &
echo $! > "$D/child"
echo ready >&3
wait
`)
	x := execFor(cmd, 3)
	out, err := RunExec(context.Background(), x, 42)
	if err != nil {
		t.Fatal(err)
	}
	if out.Run.Crashes != 3 || len(out.Kills) != 3 {
		t.Fatalf("%d kills landed of %v", out.Run.Crashes, out.Kills)
	}
	delays, seeds := x.plan(42)
	for i, k := range out.Kills {
		if !k.Landed || k.Drawn != delays[i] || k.Sent < k.Drawn || k.Drawn > x.KillWithin {
			t.Errorf("kill %d: %+v, drawn %v", i+1, k, delays[i])
		}
	}
	var logDir, stateDir string
	for n := 1; n <= 4; n++ {
		env := strings.Fields(readString(t, filepath.Join(dir, "env-"+strconv.Itoa(n))))
		role := RoleRun
		if n == 4 {
			role = RoleRecover
		}
		if len(env) != 6 || env[0] != role || env[3] != strconv.FormatUint(seeds[n-1], 10) || env[4] != "3" {
			t.Fatalf("start %d was told %q, want role %s, seed %d, ready descriptor 3", n, env, role, seeds[n-1])
		}
		if env[5] != strconv.Itoa(n) {
			t.Errorf("start %d found %s lines in its state directory, one of each start: it was not kept", n, env[5])
		}
		if n == 1 {
			logDir, stateDir = env[1], env[2]
		} else if env[1] != logDir || env[2] != stateDir {
			t.Errorf("start %d: log and state directories %s %s, the first start's %s %s", n, env[1], env[2], logDir, stateDir)
		}
		if _, err := os.Stat(filepath.Join(dir, "child-"+strconv.Itoa(n))); err == nil {
			t.Errorf("start %d began while a process of the start before it was alive", n)
		}
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("the run's directory is still there: %v", err)
	}
	if got := len(out.Run.Anomalies); got != 1 {
		t.Fatalf("anomalies %+v", out.Run.Anomalies)
	}
	a := out.Run.Anomalies[0]
	if a.Kind != Corrupt || !strings.Contains(a.Explanation, "exit status 3") || !strings.Contains(a.Explanation, "recovery went wrong") {
		t.Errorf("anomaly %s: %s", a.Kind, a.Explanation)
	}
	for _, want := range []string{"# pmlin run --exec ", "--seed 42 --crashes 3 --kill-within 2ms", "--exec-timeout 5s", "start 2 (PMLIN_ROLE=run): ready ", "start 4 (PMLIN_ROLE=recover): exit status 3"} {
		if !strings.Contains(string(out.History), want) {
			t.Errorf("the history's comments lack %q:\n%s", want, out.History)
		}
	}
	if out.Gathered {
		t.Error("gathered logs that were never written")
	}
	// The same seed draws the same delays and seeds; another seed others.
	if d2, s2 := x.plan(42); !slices.Equal(d2, delays) || !slices.Equal(s2, seeds) {
		t.Error("the plan of seed 42 changed")
	}
	if d3, s3 := x.plan(43); slices.Equal(d3, delays) || slices.Equal(s3, seeds) {
		t.Error("seeds 42 and 43 drew the same plan")
	}
	if len(slices.Compact(slices.Clone(seeds))) != len(seeds) {
		t.Errorf("two starts got one seed: %v", seeds)
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExecFailures: what a program does wrong is an anomaly of its run
// (corrupt or stuck, with what it said), never pmlin's error; and the run
// stops at it. A program that breaks the protocol is an error that says
// what the protocol wants.
func TestExecFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		timeout    time.Duration
		kind       analyzer.Kind
		want       []string // in the explanation (anomaly) or the error
		starts     int
	}{
		{"fails before ready", `echo "cannot map the state" >&2; exit 4`, 0, Corrupt,
			[]string{"start 1 (PMLIN_ROLE=run) failed before it was ready (exit status 4): cannot map the state"}, 1},
		{"crashes by itself", `echo ready >&3; echo "oops" >&2; kill -SEGV $$; sleep 5`, 0, Corrupt,
			[]string{"start 1 (PMLIN_ROLE=run) failed by itself after it was ready (killed by signal segmentation fault): oops"}, 1},
		{"fails after ready", `echo ready >&3; exit 9`, 0, Corrupt,
			[]string{"failed by itself after it was ready (exit status 9): it said nothing on standard error"}, 1},
		{"not ready in time", `echo "waiting for a lock" >&2; sleep 30`, 300 * time.Millisecond, Stuck,
			[]string{`start 1 (PMLIN_ROLE=run) did not say it was ready (a line "ready" on descriptor $PMLIN_READY_FD) within 300ms`, "waiting for a lock"}, 1},
		{"recovery stuck", `if [ "$PMLIN_ROLE" = recover ]; then sleep 30; fi; echo ready >&3; sleep 30`, 300 * time.Millisecond, Stuck,
			[]string{"start 3 (PMLIN_ROLE=recover), which recovers and reads the state back, did not end within 300ms"}, 3},
		{"ends without saying ready", `exit 0`, 0, "",
			[]string{`start 1 (PMLIN_ROLE=run) ended (exit status 0) without saying it was ready`, "pmlin_ready()"}, 1},
		{"records nothing", `[ "$PMLIN_ROLE" = run ] && echo ready >&3; exit 0`, 0, "",
			[]string{"left no log in $PMLIN_LOG_DIR", "pmlin_open_logs"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd, dir := script(t, `echo x >> "$D/starts"`+"\n"+c.body+"\n")
			x := execFor(cmd, 2)
			if strings.Contains(c.name, "by itself") || strings.Contains(c.name, "after ready") {
				// The kill comes seconds after ready (seed 1 draws 5.3 s
				// of 10 s): the program's own end comes first.
				x.KillWithin = 10 * time.Second
			}
			if c.timeout > 0 {
				x.Timeout = c.timeout
			}
			out, err := RunExec(context.Background(), x, 1)
			if starts := strings.Count(readString(t, filepath.Join(dir, "starts")), "x"); starts != c.starts {
				t.Errorf("%d starts, want %d", starts, c.starts)
			}
			if c.kind == "" {
				if err == nil {
					t.Fatalf("no error; anomalies %+v", out.Run.Anomalies)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Run.Anomalies) != 1 || out.Run.Anomalies[0].Kind != c.kind {
				t.Fatalf("anomalies %+v, want one %s", out.Run.Anomalies, c.kind)
			}
			for _, w := range c.want {
				if e := out.Run.Anomalies[0].Explanation; !strings.Contains(e, w) {
					t.Errorf("explanation %q lacks %q", e, w)
				}
			}
			v, err := out.Decide(context.Background(), 0)
			if err != nil || !v.Violated() || v.Check != nil {
				t.Errorf("verdict %+v, %v: want a violation, not checked", v, err)
			}
		})
	}
}

// TestExecCanceled: a context that ends during a start kills it and ends
// the run, canceled.
func TestExecCanceled(t *testing.T) {
	t.Parallel()
	cmd, dir := script(t, `echo $$ > "$D/pid"; sleep 30`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := RunExec(ctx, execFor(cmd, 1), 1)
	if err != nil || !out.Run.Canceled {
		t.Fatalf("%+v, %v: want a canceled run", out, err)
	}
	// Generous for a loaded machine; the start sleeps 30 s when not killed.
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run ended %v after it began", d)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(readString(t, filepath.Join(dir, "pid"))))
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("process %d is still alive", pid)
	}
}

// TestExecCheck: an Exec that cannot run is refused before it runs.
func TestExecCheck(t *testing.T) {
	ok := execFor("sh -c true", 1)
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		x    Exec
		want string
	}{
		{Exec{Command: "", Kills: 1, Timeout: time.Second}, "no program"},
		{Exec{Command: "  ", Kills: 1, Timeout: time.Second}, "no program"},
		{Exec{Command: "sh 'x", Kills: 1, Timeout: time.Second}, "not closed"},
		{Exec{Command: "sh; rm x", Kills: 1, Timeout: time.Second}, "no shell syntax"},
		{Exec{Command: "sh", Kills: 0, Timeout: time.Second}, "at least once"},
		{Exec{Command: "sh", Kills: 1, KillWithin: -1, Timeout: time.Second}, "not negative"},
		{Exec{Command: "sh", Kills: 1}, "must be positive"},
		{Exec{Command: "./no-such-program-here", Kills: 1, Timeout: time.Second}, "no-such-program-here"},
	} {
		if err := c.x.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.x, err, c.want)
		}
	}
	for cmd, name := range map[string]string{
		"./persistent_mwcas --bug":             "persistent_mwcas",
		"python3 ex/persistent_mwcas.py --bug": "persistent_mwcas",
		"python3 -u -B ex/persistent_mwcas.py": "persistent_mwcas",
		"python3 -m mod":                       "python3",
		"prog --flag":                          "prog",
		"'/opt/my prog/run me' x":              "run_me",
		"/usr/bin/env":                         "env",
	} {
		if got := (Exec{Command: cmd}).Name(); got != name {
			t.Errorf("Name of %q = %q, want %q", cmd, got, name)
		}
	}
}
