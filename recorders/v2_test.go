package recorders

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/merge"
)

// The version 2 operations of pmlin.h (pmlin_object, pmlin_inv_op,
// pmlin_ret_op, pmlin_ret_unknown; README, "Recording version 2
// operations"), recorded by c/test/v2_record.c.

// v2Want is the history c/test/v2_record.c records.
const v2Want = `pmlin-history v2
object q queue cap=2
object m map
object reg register init=nil
0 inv q enq 0x100001
1 inv q deq
0 ret ok
1 ret 0x100001
0 inv m put 7 5
0 ret nil
1 inv reg cas nil 3
1 ret ?
0 inv read 10
0 ret 0
1 inv q deq
1 ret empty
`

// v2Recorders are the drivers of the same version 2 recording: C11, C++11
// and Python (python/test/v2_record.py).
func v2Recorders(t *testing.T) [][]string {
	py := tool(t, "python3")
	sources(t, "python/pmlin_recorder.py", "python/test/v2_record.py")
	return [][]string{{compile(t, "gcc", "c11", "c/test/v2_record.c")}, {compileCPP(t, "c/test/v2_record.c")},
		{py, "-B", "python/test/v2_record.py"}}
}

// TestVersion2Record: pmlin_write (Recorder.write) writes the objects and
// their operations (symbols, numbers, ?, a version 1 step on the implicit
// words), in C, C++ and Python alike; the same records in mapped logs
// gather into the same history; pmlin check decides it with the exact
// checker.
func TestVersion2Record(t *testing.T) {
	t.Parallel()
	for _, rec := range v2Recorders(t) {
		bin := strings.Join(rec, " ")
		out, errs, err := run(t, "", append(rec, "write")...)
		if err != nil || out != v2Want {
			t.Fatalf("%s write: %v %s\ngot\n%s\nwant\n%s", bin, err, errs, out, v2Want)
		}
		logs := filepath.Join(t.TempDir(), "logs")
		if _, errs, err := run(t, "", append(rec, "mapped", logs)...); err != nil {
			t.Fatalf("%s mapped: %v %s", bin, err, errs)
		}
		hist := filepath.Join(t.TempDir(), "g.hist")
		if _, err := gather(t, hist, logs); err != nil {
			t.Fatal(err)
		}
		if got := withoutComments(readFile(t, hist)); got != v2Want {
			t.Fatalf("gathered\n%s\nwant\n%s", got, v2Want)
		}
		code, o, e := pmlinCmd(t, "check", hist)
		if code != 0 || !strings.Contains(o, "LINEARIZABLE (strict mode, exact search)") || !strings.Contains(o, "object q (queue): linearizable, 3 operations") {
			t.Errorf("pmlin check %s: exit %d:\n%s%s", hist, code, o, e)
		}
	}
}

// compileCPP compiles a C file as C++11 with g++.
func compileCPP(t *testing.T, src string) string {
	t.Helper()
	gpp := tool(t, "g++")
	bin := filepath.Join(t.TempDir(), "v2_record-cpp")
	if _, stderr, err := run(t, "", gpp, "-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-o", bin, src); err != nil {
		t.Fatalf("g++ %s: %v\n%s", src, err, stderr)
	}
	return bin
}

// TestVersion2Misuse: a misuse of the version 2 calls is refused with a
// message that says what was wrong, by pmlin.h and by the Python recorder.
func TestVersion2Misuse(t *testing.T) {
	t.Parallel()
	recs := v2Recorders(t)
	for _, c := range []struct {
		rec  []string
		want []string
	}{
		{recs[0], []string{
			"step 1: an operation on object 1, which pmlin_object did not return",
			"step 1: an operation name that is not [a-z][a-z0-9_-]*",
			"step 1: value 1 is neither a number (PMLIN_NUM) nor a symbol",
			"step 2: the response of a read answers a pending version 2 operation",
			"step 2: 0 values: an operation has at most 64 arguments, a response 1 to 64 results",
			"pmlin_object: a name and a model are [a-z][a-z0-9_-]*",
			"pmlin_object: object declared twice: q",
		}},
		{recs[2], []string{
			"step 1: an operation on object 1, which Recorder.object did not return",
			"step 1: an operation name 'Enq' that is not [a-z][a-z0-9_-]*",
			"step 1: value 1 ('maybe') is neither an unsigned 64-bit integer nor a symbol nil/ok/fail/empty/true/false",
			"step 2: the response of a read answers a pending version 2 operation",
			"step 2: a response with no result",
			"object: a name and a model are [a-z][a-z0-9_-]*",
			"object: object declared twice: q",
		}},
	} {
		for i, w := range c.want {
			_, errs, err := run(t, "", append(c.rec, "misuse", string(rune('0'+i)))...)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(errs, w) {
				t.Errorf("%v misuse %d: %v, %q; want exit 1 and %q", c.rec, i, err, errs, w)
			}
		}
		if _, _, err := run(t, "", append(c.rec, "misuse", string(rune('0'+len(c.want))))...); err == nil || err.(*exec.ExitError).ExitCode() != 3 {
			t.Errorf("%v misuse %d: %v, want exit 3 (a misuse this test does not know)", c.rec, len(c.want), err)
		}
	}
}

// TestTornRecordsV2 tears each version 2 record (an invocation with its
// name, a response with values, ? ) of a thread's log as TestTornRecords
// tears version 1's: gather cuts it, and never reads it as data.
func TestTornRecordsV2(t *testing.T) {
	t.Parallel()
	bin := compile(t, "gcc", "c11", "c/test/v2_record.c")
	logs := filepath.Join(t.TempDir(), "logs")
	if _, errs, err := run(t, "", bin, "mapped", logs); err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	path, recs := threadZero(t, filepath.Join(logs, "gen-000001.pmlog"))
	kinds := map[byte]bool{}
	b, _ := os.ReadFile(path)
	for _, r := range recs {
		kinds[b[r[0]]] = true
	}
	if !kinds[8] || !kinds[9] || !kinds[1] {
		t.Fatalf("thread 0's log holds record kinds %v, want 8 and 9 (version 2) and 1", kinds)
	}
	tearEach(t, path, recs)
}

// TestVersion2Declarations: every start of a program must declare its
// objects alike; gather names the record of one that does not.
func TestVersion2Declarations(t *testing.T) {
	t.Parallel()
	bin := compile(t, "gcc", "c11", "c/example/persistent_queue.c")
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	for _, c := range []string{"4", "5"} {
		cmd := exec.Command(bin, "--ops", "10", "--cap", c)
		cmd.Env = append(os.Environ(), "PMLIN_LOG_DIR="+logs, "PMLIN_STATE_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	_, err := merge.Gather(logs)
	if err == nil || !strings.Contains(err.Error(), "gen-000002.pmlog") ||
		!strings.Contains(err.Error(), `object q is declared as "q queue cap=5" here, as "q queue cap=4" at `) {
		t.Errorf("gather of two starts that declare q otherwise: %v", err)
	}
}
