package recorders

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/merge"
)

// tool finds a program on PATH; without it the test skips, or fails when
// CI is set (.ci/run sets it): CI must run these tests.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatalf("CI is set and %s is not installed (apt-get install -y gcc g++ python3)", name)
	}
	t.Skipf("%s is not installed; set CI=true to make this a failure", name)
	return ""
}

// run runs argv with stdin and a time limit.
func run(t *testing.T, stdin string, argv ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // nothing written into the source tree
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// sources reads the files a child process will use, so that the go test
// cache, which only sees what the test process opens, notices their edits.
func sources(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
}

// compile builds one C or C++ source with every warning an error.
func compile(t *testing.T, compiler, std, src string) string {
	t.Helper()
	cc := tool(t, compiler)
	sources(t, src, "c/pmlin.h")
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))+"-"+std)
	args := []string{"-std=" + std, "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-pthread", "-o", bin, src}
	if _, stderr, err := run(t, "", append([]string{cc}, args...)...); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, stderr)
	}
	return bin
}

// recorder is a way to run the example or the script driver of one
// language.
type recorder struct {
	name    string
	example []string // argv prefix
	script  []string
}

func cRecorder(t *testing.T) recorder {
	return recorder{
		name:    "C",
		example: []string{compile(t, "gcc", "c11", "c/example/mwcas_example.c")},
		script:  []string{compile(t, "gcc", "c11", "c/test/script.c")},
	}
}

func pythonRecorder(t *testing.T) recorder {
	py := tool(t, "python3")
	sources(t, "python/pmlin_recorder.py", "python/example/mwcas_example.py", "python/test/script.py")
	return recorder{
		name:    "Python",
		example: []string{py, "python/example/mwcas_example.py"},
		script:  []string{py, "python/test/script.py"},
	}
}

// check decides a history file with the analyzer.
func check(t *testing.T, path string) (*analyzer.Result, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return analyzer.Check(context.Background(), history.NewReader(f, path, history.Options{}), analyzer.Options{})
}

// mergeLog merges a recorder's unmerged log with `pmlin merge`'s package.
func mergeLog(t *testing.T, name, log string) string {
	t.Helper()
	m, err := merge.Read([]merge.Log{{Name: name, R: strings.NewReader(log)}})
	if err != nil {
		t.Fatalf("pmlin merge of the %s: %v", name, err)
	}
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// withoutComments drops comment lines, which differ between a recorder's
// own merge and pmlin merge.
func withoutComments(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The tests run in parallel: most of their time is spent waiting for gcc,
// g++ and python3.
func TestCExample(t *testing.T)      { t.Parallel(); testExample(t, cRecorder(t)) }
func TestPythonExample(t *testing.T) { t.Parallel(); testExample(t, pythonRecorder(t)) }

// maxBugTries bounds the runs of the buggy example until pmlin catches it.
// Each run of 400 operations is caught on its own: 1000 of 1000 seeds for
// the C example, on a 2-core machine with two CPU hogs and other tests
// running, and 1000 of 1000 for the Python one (the README's recorders
// section has the commands); the runs' interleavings are independent, so
// if a single run missed with probability as high as 1 in 10, five misses
// in a row would happen once in 100,000 test runs.
const maxBugTries = 5

// testExample runs a recorder's example: correct runs are linearizable and
// their logs merge by pmlin merge to the same history; the planted bug is
// caught; an existing file is not overwritten.
func testExample(t *testing.T, r recorder) {
	dir := t.TempDir()
	for i, flags := range [][]string{
		{"--seed", "1"},
		{"--seed", "2", "--crashes", "2"},
		{"--seed", "3", "--crashes", "3", "--threads", "3", "--words", "6", "--k", "3", "--ops", "300"},
	} {
		hist, log := filepath.Join(dir, fmt.Sprintf("ok%d.hist", i)), filepath.Join(dir, fmt.Sprintf("ok%d.log", i))
		argv := append(append(append([]string{}, r.example...), flags...), "-o", hist, "--log", log)
		if _, stderr, err := run(t, "", argv...); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr)
		}
		res, err := check(t, hist)
		if err != nil || !res.Linearizable {
			t.Fatalf("%s example %v: the correct MwCAS is not found linearizable (%v): %+v", r.name, flags, err, res)
		}
		if got, want := withoutComments(mergeLog(t, log, readFile(t, log))), withoutComments(readFile(t, hist)); got != want {
			t.Fatalf("%s example %v: pmlin merge of the log differs from the recorder's own merge", r.name, flags)
		}
	}
	t.Run("bug", func(t *testing.T) {
		for seed := 1; seed <= maxBugTries; seed++ {
			hist := filepath.Join(dir, fmt.Sprintf("bug%d.hist", seed))
			argv := append(append([]string{}, r.example...), "--bug", "--seed", fmt.Sprint(seed), "-o", hist)
			if _, stderr, err := run(t, "", argv...); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr)
			}
			res, err := check(t, hist)
			if err != nil {
				t.Fatalf("%s: %v", hist, err)
			}
			if !res.Linearizable {
				t.Logf("%s example --bug: caught at seed %d (%s)", r.name, seed, res.Anomalies[0].Kind)
				return
			}
		}
		t.Fatalf("%s example --bug: not caught in %d runs", r.name, maxBugTries)
	})
	t.Run("no overwrite", func(t *testing.T) {
		p := filepath.Join(dir, "keep.hist")
		os.WriteFile(p, []byte("precious\n"), 0o644)
		argv := append(append([]string{}, r.example...), "-o", p)
		if _, stderr, err := run(t, "", argv...); err == nil || !strings.Contains(stderr, "exists") {
			t.Fatalf("writing over an existing file: err %v, stderr %q", err, stderr)
		}
		if readFile(t, p) != "precious\n" {
			t.Fatal("the existing file was changed")
		}
	})
	t.Run("swaps and valued failures", func(t *testing.T) { testSwaps(t, r, dir) })
}

// testSwaps records swaps and failures that report values, which the
// format specifies; the analyzer is asked only once it reads them.
func testSwaps(t *testing.T, r recorder, dir string) {
	hist, log := filepath.Join(dir, "swap.hist"), filepath.Join(dir, "swap.log")
	argv := append(append([]string{}, r.example...), "--swaps", "30", "--fail-values", "--crashes", "1", "-o", hist, "--log", log)
	if _, stderr, err := run(t, "", argv...); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr)
	}
	text := readFile(t, hist)
	if !strings.Contains(text, " inv swap ") {
		t.Fatal("no swap recorded")
	}
	// Whether a run has failures at all depends on the interleaving (a
	// run on a busy machine may have none); each one it has must report
	// its k = 2 values: "<p> ret fail <a> <v1> <v2>".
	failures := 0
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[1] == "ret" && f[2] == "fail" {
			failures++
			if len(f) != 6 {
				t.Fatalf("a failure without its values: %q", l)
			}
		}
	}
	t.Logf("%d failures with values", failures)
	if got, want := withoutComments(mergeLog(t, log, readFile(t, log))), withoutComments(text); got != want {
		t.Fatal("pmlin merge of the log differs from the recorder's own merge")
	}
	res, err := check(t, hist)
	if err != nil || !res.Linearizable {
		t.Fatalf("%s example with swaps: not found linearizable (%v): %+v", r.name, err, res)
	}
}

// TestCPlusPlus compiles the header as C++ (C++11 and C++17) and checks
// what the C++ program records from std::thread.
func TestCPlusPlus(t *testing.T) {
	t.Parallel()
	for _, std := range []string{"c++11", "c++17"} {
		bin := compile(t, "g++", std, "c/test/cpp_check.cpp")
		out, stderr, err := run(t, "", bin)
		if err != nil {
			t.Fatalf("%s: %v\n%s", bin, err, stderr)
		}
		p := filepath.Join(t.TempDir(), "cpp.hist")
		os.WriteFile(p, []byte(out), 0o644)
		res, err := check(t, p)
		if err != nil || !res.Linearizable || res.Operations != 300 {
			t.Fatalf("%s: %v %+v", std, err, res)
		}
	}
}

// scripts pin down the merge rules and the misuse errors; both recorders
// must give exactly want (standard output) or fail with err.
var scripts = []struct {
	name, script, want, err string
}{
	{name: "ties: invocations first, then the lower process id",
		script: "threads 3\nclock 10\ninv-read 2 5\ninv-read 1 6\nclock 20\nret-read 2 0\nret-read 1 0\ninv-read 0 7\nclock 30\nret-read 0 0\nwrite\n",
		want:   "pmlin-history v1\n1 inv read 6\n2 inv read 5\n0 inv read 7\n1 ret 0\n2 ret 0\n0 ret 0\n"},
	{name: "a thread's own order is kept on a tie",
		script: "threads 3\nclock 10\ninv-read 1 5\nclock 20\nret-read 1 0\ninv-read 1 6\ninv-read 2 7\nclock 30\nret-read 1 0\nret-read 2 0\nwrite\n",
		want:   "pmlin-history v1\n1 inv read 5\n2 inv read 7\n1 ret 0\n1 inv read 6\n1 ret 0\n2 ret 0\n"},
	{name: "ties: a response whose thread invokes again goes first",
		// Thread 1 returns and invokes at 10, thread 0 invokes and returns
		// at 10: 1's invocation goes before 0's response, which would
		// otherwise claim that 0's cas finished before 1's second read.
		script: "threads 2\nclock 5\ninv-read 1 1\nclock 10\nret-read 1 0\ninv-read 1 1\ninv-cas 0 1:0:5\nret-ok 0\nclock 20\nret-read 1 0\nwrite\n",
		want:   "pmlin-history v1\n1 inv read 1\n0 inv cas 1:0:5\n1 ret 0\n1 inv read 1\n0 ret ok\n1 ret 0\n"},
	{name: "a clock too coarse: two threads respond and invoke again at one timestamp",
		// Thread 1 really ran first; no order of the
		// lines can say that it might have.
		script: "threads 2\nclock 10\ninv-cas 0 1:0:5\nret-ok 0\ninv-read 0 1\nret-read 0 5\ninv-read 1 1\nret-read 1 0\ninv-read 1 1\nret-read 1 0\nwrite\n",
		err:    "process 1 responds and invokes its next operation at timestamp 10, as process 0 does: which of their operations came first is unknown, and any order of these steps would invent it: the clock is too coarse for this history"},
	{name: "reads, cas, initial values, tags and a crash",
		script: `threads 2
init 0
init 11=153 10=7
clock 1
inv-read 0 10 11
clock 2
ret-read 0 7 153
clock 3
inv-cas 0 10:7:0x100000001 11:153:0x100000002
clock 4
ret-ok 0
clock 5
inv-cas 1 10:7:0x200000001
clock 6
ret-fail 1 10
clock 7
inv-cas 0 10:0x100000001:0x100000003
clock 8
inv-read 1 10
clock 12
crash
clock 13
inv-read 1 11
clock 14
ret-read 1 0x100000002
tag 0
tag 1
tag 1
write
`,
		want: `0x100000001
0x200000001
0x200000002
pmlin-history v1
init 10=7 11=153
0 inv read 10 11
0 ret 7 153
0 inv cas 10:7:0x100000001 11:153:0x100000002
0 ret ok
1 inv cas 10:7:0x200000001
1 ret fail 10
0 inv cas 10:0x100000001:0x100000003
1 inv read 10
crash
1 inv read 11
1 ret 0x100000002
`},
	{name: "failures with the address unknown: one word blamed, more withdrawn",
		// Rule 6's weaker rule: thread 1's cas of one word blames it;
		// thread 0's cas of two words is left out, and its next read
		// follows as if it had never been invoked.
		script: `threads 2
clock 1
inv-cas 0 10:0:0x100000001 11:0:0x100000002
clock 2
inv-cas 1 12:0:0x200000001
clock 3
ret-fail 0
clock 4
ret-fail 1
clock 5
inv-read 0 10 11
clock 6
ret-read 0 0 0
write
`,
		want: `pmlin-history v1
1 inv cas 12:0:0x200000001
1 ret fail 12
0 inv read 10 11
0 ret 0 0
`},
	{name: "a failure with the address unknown answers a cas only",
		script: "threads 1\nclock 1\ninv-read 0 10 11\nret-fail 0\nwrite\n",
		err:    "step 2: the response of a cas answers a pending read"},
	{name: "a failure with the address unknown and nothing pending",
		script: "threads 1\nclock 1\nret-fail 0\nwrite\n",
		err:    "step 1: a response with no pending invocation"},
	{name: "swaps and failures with values",
		script: `threads 2
init 5
clock 1
inv-cas 1 10:5:0x200000001 11:5:0x200000002
clock 2
inv-swap 0 11:0x100000001
clock 3
ret-swap 0 5
clock 4
ret-fail 1 11 5 0x100000001
clock 5
inv-swap 0 10:0x100000002 11:0x100000003
clock 6
ret-swap 0 5 0x100000001
write
`,
		want: `pmlin-history v1
init 5
1 inv cas 10:5:0x200000001 11:5:0x200000002
0 inv swap 11:0x100000001
0 ret 5
1 ret fail 11 5 0x100000001
0 inv swap 10:0x100000002 11:0x100000003
0 ret 5 0x100000001
`},
	{name: "a response with nothing pending", script: "threads 1\nclock 1\nret-ok 0\nwrite\n",
		err: "a response with no pending invocation"},
	{name: "an invocation while one is pending", script: "threads 1\nclock 1\ninv-read 0 1\ninv-read 0 2\nwrite\n",
		err: "an invocation while the thread's previous operation is pending"},
	{name: "a response of the wrong kind", script: "threads 1\nclock 1\ninv-read 0 1\nret-ok 0\nwrite\n",
		err: "the response of a cas answers a pending read"},
	{name: "a failure blaming another address", script: "threads 1\nclock 1\ninv-cas 0 1:0:5\nret-fail 0 2\nwrite\n",
		err: "which the cas does not name"},
	{name: "an address twice", script: "threads 1\nclock 1\ninv-read 0 1 1\nwrite\n",
		err: "appears twice in one operation"},
	{name: "no address", script: "threads 1\nclock 1\ninv-read 0\nwrite\n",
		err: "an operation on no word"},
	{name: "a clock that goes backwards", script: "threads 1\nclock 5\ninv-read 0 1\nclock 3\nret-read 0 0\nwrite\n",
		err: "the clock went backwards"},
	{name: "nothing recorded", script: "threads 2\nwrite\n",
		err: "no operation was recorded"},
	{name: "a crash at the time of a later step", script: "threads 1\nclock 1\ninv-read 0 1\nclock 2\nret-read 0 0\nclock 3\ncrash\ninv-read 0 1\nret-read 0 0\nwrite\n",
		err: "has the timestamp of a step of process 0"},
	{name: "an operation pending at the end", script: "threads 2\nclock 1\ninv-read 0 1\ninv-read 1 1\nclock 2\nret-read 0 0\nwrite\n",
		err: "its last operation (step 1) is pending at the end: record its response, or call"},
	{name: "an operation cut off by a crash at the end",
		script: "threads 2\nclock 1\ninv-read 0 1\ninv-read 1 1\nclock 2\nret-read 0 0\nclock 3\ncrash\nwrite\n",
		want:   "pmlin-history v1\n0 inv read 1\n1 inv read 1\n0 ret 0\ncrash\n"},
	{name: "comments at the top and where they are made",
		script: "threads 2\ncomment first\nclock 1\ninv-read 0 1\nclock 2\nret-read 0 0\nclock 3\ncomment after a read\nclock 4\ninv-read 1 1\nclock 5\nret-read 1 0\nwrite\n",
		want:   "pmlin-history v1\n# first\n0 inv read 1\n0 ret 0\n# after a read\n1 inv read 1\n1 ret 0\n"},
	{name: "a crash while the clock stands still", script: "threads 1\nclock 5\ninv-read 0 1\nret-read 0 0\ncrash\nwrite\n",
		err: "the clock does not advance"},
}

// TestScripts holds the C and Python recorders to the same merge rules and
// errors, and checks that pmlin merge of their unmerged logs gives the
// history they merged themselves.
func TestScripts(t *testing.T) {
	t.Parallel()
	for _, r := range []recorder{cRecorder(t), pythonRecorder(t)} {
		for _, sc := range scripts {
			t.Run(r.name+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				// One run writes the history, then the unmerged log.
				out, stderr, err := run(t, strings.Replace(sc.script, "\nwrite\n", "\nwrite\nlog\n", 1), r.script...)
				if sc.err != "" {
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr, sc.err) {
						t.Fatalf("err %v, stderr %q; want exit 1 and %q", err, stderr, sc.err)
					}
					return
				}
				cut := strings.Index(out, "pmlin-log v1\n")
				if err != nil || cut < 0 || out[:cut] != sc.want {
					t.Fatalf("err %v %s\ngot\n%s\nwant\n%s", err, stderr, out, sc.want)
				}
				log := out[cut:]
				hist := withoutComments(sc.want[strings.Index(sc.want, "pmlin-history v1"):])
				if got := withoutComments(mergeLog(t, "log", log)); got != hist {
					t.Fatalf("pmlin merge of the log\n%s\ngives\n%s\nwant\n%s", log, got, hist)
				}
			})
		}
	}
}

// TestCoarseClock runs each example with CLOCK_MONOTONIC_COARSE, whose
// tick spans thousands of steps: two threads that each return and start
// their next operation within one tick leave no honest order, and the
// recorder refuses to write the history, as pmlin merge refuses the log
// (history.ErrCoarseClock, exit 2). Before, the recorders wrote a history
// that pmlin checked NOT LINEARIZABLE. A run whose threads never shared a
// tick that way (a machine that ran them one after the other) must merge
// honestly: linearizable, as the recorder merged it; at least one of the
// runs must be refused.
func TestCoarseClock(t *testing.T) {
	t.Parallel()
	for _, r := range []struct {
		rec recorder
		ops string
	}{{cRecorder(t), "40000"}, {pythonRecorder(t), "4000"}} {
		t.Run(r.rec.name, func(t *testing.T) {
			refused := 0
			for seed := 1; seed <= 3; seed++ {
				dir := t.TempDir()
				hist, log := filepath.Join(dir, "h"), filepath.Join(dir, "l")
				argv := append(append([]string{}, r.rec.example...), "--coarse-clock", "--threads", "2", "--ops", r.ops,
					"--seed", fmt.Sprint(seed), "-o", hist, "--log", log)
				_, stderr, err := run(t, "", argv...)
				_, merr := merge.Read([]merge.Log{{Name: log, R: strings.NewReader(readFile(t, log))}})
				if err != nil {
					if !strings.Contains(stderr, "responds and invokes its next operation at timestamp") ||
						!strings.Contains(stderr, "the clock is too coarse for this history") {
						t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr)
					}
					if _, serr := os.Stat(hist); serr == nil {
						t.Fatal("a refused recording left a history")
					}
					if !errors.Is(merr, history.ErrCoarseClock) {
						t.Fatalf("the recorder refused the recording, pmlin merge of its log gives %v", merr)
					}
					refused++
					continue
				}
				if merr != nil {
					t.Fatalf("the recorder wrote the history, pmlin merge of its log gives %v", merr)
				}
				res, cerr := check(t, hist)
				if cerr != nil || !res.Linearizable {
					t.Fatalf("%s: a coarse clock's history merged dishonestly: %v %+v", strings.Join(argv, " "), cerr, res)
				}
			}
			if refused == 0 {
				t.Fatal("no run was refused: the threads never shared a tick, the test proved nothing")
			}
		})
	}
}

// TestHeaderIncludeOrders compiles a small two-thread program with the
// header included before, between and after system headers, as C11 and
// C17 in strict ISO mode (-std=c11: POSIX is not declared unless asked
// for before the first system header) and as C++11 and C++17, with every
// warning an error, and checks what it records.
func TestHeaderIncludeOrders(t *testing.T) {
	t.Parallel()
	const body = `
static pmlin_recorder *rec;

static void *worker(void *arg)
{
    pmlin_thread *t = pmlin_thread_get(rec, (int)(intptr_t)arg);
    uint64_t a[1] = {1}, v[1] = {0};
    pmlin_inv_read(t, 1, a);
    pmlin_ret_read(t, v);
    return NULL;
}

int main(void)
{
    pthread_t th[2];
    int i;
    rec = pmlin_new(2);
    if (pmlin_open_logs(rec, NULL, 65536) != 0)
        fprintf(stderr, "%s\n", pmlin_error(rec));
    for (i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0)
            return 1;
    for (i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    if (pmlin_write(rec, stdout) != 0) {
        fprintf(stderr, "%s\n", pmlin_error(rec));
        return 1;
    }
    pmlin_free(rec);
    return 0;
}
`
	orders := [][]string{
		{`"pmlin.h"`, "<pthread.h>"},
		{"<stdio.h>", `"pmlin.h"`, "<pthread.h>"},
		{"<pthread.h>", `"pmlin.h"`},
		{"<time.h>", "<pthread.h>", `"pmlin.h"`},
		{"<stdlib.h>", "<string.h>", "<stdint.h>", "<pthread.h>", `"pmlin.h"`},
		{"#define _POSIX_C_SOURCE 200809L", "<stdio.h>", `"pmlin.h"`, "<pthread.h>"},
	}
	header, err := filepath.Abs("c")
	if err != nil {
		t.Fatal(err)
	}
	sources(t, "c/pmlin.h")
	dir := t.TempDir()
	refused, gathered := 0, 0
	for i, order := range orders {
		var src strings.Builder
		for _, inc := range order {
			if !strings.HasPrefix(inc, "#") {
				inc = "#include " + inc
			}
			src.WriteString(inc + "\n")
		}
		src.WriteString(body)
		for _, c := range []struct{ compiler, std, ext string }{
			{"gcc", "c11", "c"}, {"gcc", "c17", "c"}, {"g++", "c++11", "cpp"}, {"g++", "c++17", "cpp"},
		} {
			name := fmt.Sprintf("order%d-%s", i, c.std)
			file := filepath.Join(dir, name+"."+c.ext)
			if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(dir, name)
			argv := []string{tool(t, c.compiler), "-std=" + c.std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-pthread", "-I", header, "-o", bin, file}
			if _, stderr, err := run(t, "", argv...); err != nil {
				t.Fatalf("%s, includes %v: %v\n%s", strings.Join(argv, " "), order, err, stderr)
			}
			logs := filepath.Join(dir, name+".logs")
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "PMLIN_LOG_DIR="+logs)
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s, includes %v: %v\n%s", c.std, order, err, e.String())
			}
			out, stderr := o.String(), e.String()
			p := filepath.Join(dir, name+".hist")
			os.WriteFile(p, []byte(out), 0o644)
			if res, err := check(t, p); err != nil || !res.Linearizable || res.Operations != 2 {
				t.Fatalf("%s, includes %v: %v %+v\n%s", c.std, order, err, res, out)
			}
			// The log file: where POSIX is declared (pmlin.h first, a
			// feature-test macro, C++), it must be there and gather to the
			// history the program wrote.
			posix := i == 0 || i == 5 || c.ext == "cpp"
			if stderr != "" {
				if posix || !strings.Contains(stderr, "pmlin_open_logs needs POSIX (open, ftruncate, mmap)") {
					t.Fatalf("%s, includes %v: %s", c.std, order, stderr)
				}
				refused++
				continue
			}
			gathered++
			m, err := merge.Gather(logs)
			if err != nil {
				t.Fatalf("%s, includes %v: gather: %v", c.std, order, err)
			}
			var g strings.Builder
			m.WriteTo(&g)
			if withoutComments(g.String()) != withoutComments(out) {
				t.Fatalf("%s, includes %v: gathered\n%s\nwritten\n%s", c.std, order, g.String(), out)
			}
		}
	}
	t.Logf("%d builds recorded into log files, %d said they need POSIX", gathered, refused)
}

// TestPythonThreadIndex: a thread index out of range (or not an int) is a
// RecordingError that says which threads there are, not an IndexError
// (nor, for -1, the last thread).
func TestPythonThreadIndex(t *testing.T) {
	t.Parallel()
	py := tool(t, "python3")
	sources(t, "python/pmlin_recorder.py")
	const script = `
import sys
sys.path.insert(0, "python")
from pmlin_recorder import Recorder, RecordingError
r = Recorder(2)
assert r.thread(1).pid == 1
for i in (2, -1, "0", True, None):
    try:
        r.thread(i)
    except RecordingError as e:
        print(e)
    else:
        print("no error for", repr(i))
`
	out, stderr, err := run(t, "", py, "-c", script)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := "thread 2: this recorder has threads 0 to 1\nthread -1: this recorder has threads 0 to 1\n" +
		"thread '0': this recorder has threads 0 to 1\nthread True: this recorder has threads 0 to 1\nthread None: this recorder has threads 0 to 1\n"
	if out != want {
		t.Fatalf("got\n%swant\n%s", out, want)
	}
}

// TestCReserveAndValidate holds pmlin.h to two promises, with a program
// that looks at a handle's private fields: pmlin_reserve allocates exactly
// the room asked for (it used to round up to a power of two, up to twice
// that) and touches its pages, so that recording 100,000 operations takes
// no page fault (it used to take one per 4 KiB of log); and pmlin_write
// refuses a log whose records do not check out (it used to write them as
// they were: a stray write of the program became a history).
func TestCReserveAndValidate(t *testing.T) {
	t.Parallel()
	const src = `
#include "pmlin.h"
#include <sys/resource.h>

static long faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

int main(void)
{
    pmlin_recorder *rec = pmlin_new(1);
    pmlin_thread *t = pmlin_thread_get(rec, 0);
    uint64_t a[2] = {1, 2}, v[2] = {0, 0};
    long i, before;
    if (pmlin_reserve(t, 100000, 2) != 0)
        return 1;
    printf("cap %zu words\n", t->cap);
    before = faults();
    for (i = 0; i < 100000; i++) {
        pmlin_inv_read(t, 2, a);
        pmlin_ret_read(t, v);
    }
    printf("%ld page faults\n", faults() - before);
    t->buf[3] ^= 1; /* the second address of the first record */
    if (pmlin_write(rec, stdout) == 0)
        return 1;
    printf("%s\n", pmlin_error(rec));
    pmlin_free(rec);
    return 0;
}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "reserve.c")
	os.WriteFile(file, []byte(src), 0o644)
	header, _ := filepath.Abs("c")
	sources(t, "c/pmlin.h")
	bin := filepath.Join(dir, "reserve")
	if _, stderr, err := run(t, "", tool(t, "gcc"), "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", header, "-o", bin, file); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	out, stderr, err := run(t, "", bin)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	var cap, faults int
	var msg string
	lines := strings.SplitN(out, "\n", 3)
	fmt.Sscanf(lines[0], "cap %d words", &cap)
	fmt.Sscanf(lines[1], "%d page faults", &faults)
	msg = lines[2]
	// 100,000 operations of up to k = 2 words: 5 + 4k words each.
	if want := 100000 * 13; cap != want {
		t.Errorf("pmlin_reserve(t, 100000, 2) made room for %d words, want %d", cap, want)
	}
	if faults > 20 { // the log alone would take 2,500
		t.Errorf("recording after pmlin_reserve took %d page faults", faults)
	}
	if !strings.Contains(msg, "thread 0's log is damaged at its word 0: the record there does not check out") {
		t.Errorf("pmlin_write of a damaged log: %q", msg)
	}
}
