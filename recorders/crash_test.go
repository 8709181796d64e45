package recorders

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/merge"
)

// The tests of the logs that survive a kill (README, "Logs that survive a
// kill"): crash_child.c and crash_child.py keep a persistent MwCAS in a
// file mapping and record it into log files; the tests kill them with
// SIGKILL at moments drawn from a seed, restart them, and gather the logs
// with pmlin gather's package.

// child runs one generation of a crash child: SIGKILLed after delay (from
// its start), unless it ends first, or run to its end (delay 0). It
// reports whether a kill, this one or the child's own, ended it.
func child(t *testing.T, argv []string, logs string, delay time.Duration) bool {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PMLIN_LOG_DIR="+logs, "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	if delay == 0 {
		err = <-done
	} else {
		select {
		case err = <-done:
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			err = <-done
		}
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
		return true
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	return false
}

// gather gathers a log directory (or files) and writes the history.
func gather(t *testing.T, out string, paths ...string) (*merge.Merged, error) {
	t.Helper()
	m, err := merge.Gather(paths...)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

// tornCuts counts the torn records Gather reported cutting.
func tornCuts(m *merge.Merged) int {
	n := 0
	for _, note := range m.Notes() {
		n += strings.Count(note, "a torn record cut")
	}
	return n
}

// crashRuns kills and restarts a crash child: runs trials of 1 to 3
// killed generations and a last one that only recovers and reads, each
// history gathered and checked. A kill comes after a delay drawn from the
// seed: one in four is the test's SIGKILL, up to early after the child's
// start (it may come before the child opened its logs, or while it opens
// them); the others the child's own SIGKILL, up to late after its threads
// started (selfKill: the child's flag, which takes the delay in the unit
// given): a kill while the threads record, at a moment that a parent's
// signal, late by a scheduler's whim, would not hit, with a history of a
// few thousand operations. It returns how many histories were not
// linearizable, the torn records cut over all of them, and the kills that
// came before the child's end; a gather that fails, or a correct child's
// history that is not linearizable, fails the test.
func crashRuns(t *testing.T, argv []string, trials int, early, late time.Duration, selfKill string, unit time.Duration, seed uint64, bug bool, stopAtFirst bool) (violations, cuts, kills int) {
	rng := rand.New(rand.NewPCG(seed, 32))
	for trial := range trials {
		dir := t.TempDir()
		logs, state := filepath.Join(dir, "logs"), filepath.Join(dir, "state")
		args := append(append([]string{}, argv...), state, "--seed", fmt.Sprint(rng.Uint64()%1000))
		if bug {
			args = append(args, "--bug")
		}
		gens := 1 + rng.IntN(3)
		for range gens {
			a, delay := args, time.Duration(1+rng.Int64N(int64(early)))
			if rng.IntN(4) > 0 {
				a = append(append([]string{}, args...), selfKill, fmt.Sprint(float64(1+rng.Int64N(int64(late)))/float64(unit)))
				delay = time.Minute // the child kills itself
			}
			if child(t, a, logs, delay) {
				kills++
			}
		}
		child(t, append(args, "--recover-only"), logs, 0)
		hist := filepath.Join(dir, "h.hist")
		m, err := gather(t, hist, logs)
		if err != nil {
			t.Fatalf("trial %d: gather: %v", trial, err)
		}
		cuts += tornCuts(m)
		res, err := check(t, hist)
		if err != nil {
			t.Fatalf("trial %d: %s: %v", trial, hist, err)
		}
		if !res.Linearizable {
			if !bug {
				out, _ := os.ReadFile(hist)
				t.Fatalf("trial %d: the correct MwCAS is not linearizable after %d kills (%s):\n%s", trial, gens, res.Anomalies[0].Kind, clip(string(out)))
			}
			violations++
			if stopAtFirst {
				return violations, cuts, kills
			}
		}
	}
	return violations, cuts, kills
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:2000] + "\n...\n" + s[len(s)-2000:]
	}
	return s
}

// TestCrashLogsC kills crash_child.c at random moments, 1 to 3 times a
// history: every gathered history is well formed, and linearizable (the
// MwCAS with its redo record is correct across kills). Torn records must
// have been cut along the way (a kill lands often between a record's
// first word and its commit), and never read as data; with --bug (no
// redo record), some history must be caught.
func TestCrashLogsC(t *testing.T) {
	t.Parallel()
	bin := compile(t, "gcc", "c11", "c/test/crash_child.c")
	argv := []string{bin, "--log-bytes", "4194304", "--ops", "1000"}
	start := time.Now()
	v, cuts, kills := crashRuns(t, argv, 30, 2*time.Millisecond, 150*time.Microsecond, "--kill-after-us", time.Microsecond, 1, false, false)
	t.Logf("30 histories, %d kills, %d torn records cut, %d violations, %v", kills, cuts, v, time.Since(start))
	if kills < 30 {
		t.Fatalf("only %d kills came before the child's end: the test proved little", kills)
	}
	if cuts == 0 {
		t.Fatal("no kill left a torn record: the cut was never tried")
	}
	t.Run("bug", func(t *testing.T) {
		v, _, _ := crashRuns(t, append(argv, "--k", "3", "--pause", "2000"), 30, 3*time.Millisecond, 300*time.Microsecond, "--kill-after-us", time.Microsecond, 2, true, true)
		if v == 0 {
			t.Fatal("the MwCAS without its redo record was not caught in 30 histories")
		}
	})
}

// TestCrashLogsPython is TestCrashLogsC for crash_child.py, with fewer
// runs (a Python start takes a few hundred milliseconds).
func TestCrashLogsPython(t *testing.T) {
	t.Parallel()
	py := tool(t, "python3")
	sources(t, "python/pmlin_recorder.py", "python/test/crash_child.py")
	argv := []string{py, "python/test/crash_child.py", "--log-bytes", "1048576"}
	v, cuts, kills := crashRuns(t, argv, 6, 500*time.Millisecond, 100*time.Millisecond, "--kill-after-ms", time.Millisecond, 3, false, false)
	t.Logf("6 histories, %d kills, %d torn records cut, %d violations", kills, cuts, v)
	if kills == 0 {
		t.Fatal("no kill came before the child's end")
	}
}

// TestGatherEqualsOwnWrite: a C run that is not killed writes its history
// itself (pmlin_write) and leaves its log file; pmlin gather of the file
// gives the same history, but for comments.
func TestGatherEqualsOwnWrite(t *testing.T) {
	t.Parallel()
	bin := compile(t, "gcc", "c11", "c/test/crash_child.c")
	dir := t.TempDir()
	logs, own := filepath.Join(dir, "logs"), filepath.Join(dir, "own.hist")
	child(t, []string{bin, filepath.Join(dir, "state"), "--ops", "300", "--log-bytes", "1048576", "-o", own}, logs, 0)
	m, err := gather(t, filepath.Join(dir, "g.hist"), logs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := withoutComments(readFile(t, filepath.Join(dir, "g.hist"))), withoutComments(readFile(t, own)); got != want || !strings.Contains(want, " inv cas ") {
		t.Fatalf("gather:\n%s\nthe program's own write:\n%s", clip(got), clip(want))
	}
	if s := m.Stats().String(); !strings.Contains(s, "1 generation (0 followed by a crash line), 0 torn records cut") {
		t.Fatalf("stats: %s", s)
	}
}

// logFile makes a log file with crash_child.c: one worker thread, a few
// operations, closed; and returns its path and the offsets (in bytes) and
// sizes (in words) of thread 0's records, read from the file the way
// README's "The file format" says.
func logFile(t *testing.T, ops int) (path string, recs [][2]int64) {
	t.Helper()
	bin := compile(t, "gcc", "c11", "c/test/crash_child.c")
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	child(t, []string{bin, filepath.Join(dir, "state"), "--threads", "1", "--words", "3", "--ops", fmt.Sprint(ops),
		"--swaps", "30", "--log-bytes", "65536"}, logs, 0)
	return threadZero(t, filepath.Join(logs, "gen-000001.pmlog"))
}

// threadZero reads the log file at path (of 2 threads) and returns the
// byte offset and size in words of each record of thread 0's log.
func threadZero(t *testing.T, path string) (string, [][2]int64) {
	t.Helper()
	var recs [][2]int64
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	word := func(i int64) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	if word(0) != 0x31474C4E494C4D50 || word(4) != 2 {
		t.Fatalf("not a log file of 2 threads: %#x %d", word(0), word(4))
	}
	base := int64(word(6) + word(7)) // thread 0's log: after the header and the recorder's own
	for pos := base; word(pos) != 0; {
		head := word(pos)
		n, k := int64(0), int64(head>>8&0xFFFFFF)
		switch head & 0xFF {
		case 1, 4:
			n = 2 + k
		case 2:
			n = 2 + 3*k
		case 3:
			n = 2 + 2*k
		case 5:
			n = 2
		case 6:
			n = 3
		case 7:
			n = 3 + k
		case 8: // version 2: object, symbol mask, k args, the name's bytes (k | length << 8)
			n = 4 + k&0xFF + (k>>8+7)/8
		case 9:
			n = 3 + k
		case 10:
			n = 2
		default:
			t.Fatalf("record kind %d in thread 0's log", head&0xFF)
		}
		recs = append(recs, [2]int64{8 * pos, n})
		pos += n
	}
	return path, recs
}

// TestTornRecords tears every record of a thread's log at every byte of
// the order in which README's "Logs that survive a kill" says a record is
// written: its first word (kind and size), then its other words, then its
// first word again with the check and the commit bit (the bytes of each
// word in address order, as a byte-by-byte store would go; a C store of a
// word is whole). At every point short of the commit's last byte, gather
// cuts the record, names its byte offset and thread, and writes exactly
// the history of the log cut before it (nothing of the torn record is read
// as data); once committed, the record is in. Besides that order, the
// other words are also written in a random order, byte by byte. One
// record of each kind and size is torn (a log of 6 operations: reads,
// cas, swaps, successes and failures).
func TestTornRecords(t *testing.T) {
	t.Parallel()
	path, recs := logFile(t, 10)
	tearEach(t, path, recs)
}

// tearEach tears each record of thread 0's log (recs, at path) as
// TestTornRecords says.
func tearEach(t *testing.T, path string, recs [][2]int64) {
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// histories[i]: the history of the log cut before record i (the file
	// with records i on zeroed), gathered: what a torn record i must give.
	histories := make([]string, len(recs)+1)
	torn := filepath.Join(dir, "gen-000001.pmlog")
	if err := os.WriteFile(torn, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	tf, err := os.OpenFile(torn, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	begin, end := recs[0][0], recs[len(recs)-1][0]+8*recs[len(recs)-1][1]
	// write puts b's thread 0 records in the file: only they change.
	write := func(b []byte) {
		t.Helper()
		if _, err := tf.WriteAt(b[begin:end], begin); err != nil {
			t.Fatal(err)
		}
	}
	for i := range len(recs) + 1 {
		b := bytes.Clone(orig)
		if i < len(recs) {
			clear(b[recs[i][0]:end])
		}
		write(b)
		m, err := gather(t, filepath.Join(dir, "h"), torn)
		if err != nil {
			t.Fatalf("cut before record %d: %v", i, err)
		}
		if tornCuts(m) != 0 {
			t.Fatalf("cut before record %d: a torn record reported where none is", i)
		}
		histories[i] = withoutComments(readFile(t, filepath.Join(dir, "h")))
	}
	rng := rand.New(rand.NewPCG(4, 5))
	cases := 0
	kinds := map[[2]int64]bool{} // one record of each kind and size is torn
	for i, r := range recs {
		off, words := r[0], r[1]
		rec := orig[off : off+8*words]
		if kind := [2]int64{int64(rec[0]), words}; kinds[kind] {
			continue
		} else {
			kinds[kind] = true
		}
		first := binary.LittleEndian.Uint64(rec) & 0xFFFFFFFF // as stored before the commit
		var firstBytes [8]byte
		binary.LittleEndian.PutUint64(firstBytes[:], first)
		// The byte writes of the record, in order: (index, value).
		type put struct {
			at int
			v  byte
		}
		orders := [][]int{nil} // nil: address order of the other words
		orders = append(orders, rng.Perm(8*int(words)-8))
		for oi, order := range orders {
			var seq []put
			for j := range 8 {
				seq = append(seq, put{j, firstBytes[j]})
			}
			for j := range 8*int(words) - 8 {
				at := 8 + j
				if order != nil {
					at = 8 + order[j]
				}
				seq = append(seq, put{at, rec[at]})
			}
			for j := range 8 {
				seq = append(seq, put{j, rec[j]})
			}
			if oi > 0 {
				// Random orders: a few cut points, besides the commit.
				seq = seq[:len(seq)-8]
			}
			for cut := 0; cut <= len(seq); cut++ {
				if oi > 0 && cut%3 != 0 {
					continue
				}
				b := bytes.Clone(orig)
				clear(b[off:end])
				for _, p := range seq[:cut] {
					b[off+int64(p.at)] = p.v
				}
				write(b)
				cases++
				m, err := gather(t, filepath.Join(dir, "h"), torn)
				committed := oi == 0 && cut == len(seq)
				want := histories[i]
				if committed {
					want = histories[i+1]
				}
				if err != nil {
					t.Fatalf("record %d (byte offset %d, %d words) torn after %d of its %d byte writes (order %d): %v", i, off, words, cut, len(seq), oi, err)
				}
				if got := withoutComments(readFile(t, filepath.Join(dir, "h"))); got != want {
					t.Fatalf("record %d torn after %d of its byte writes (order %d): gathered\n%s\nwant\n%s", i, cut, oi, got, want)
				}
				notes := strings.Join(m.Notes(), "\n")
				switch {
				case committed || cut == 0:
					if tornCuts(m) != 0 {
						t.Fatalf("record %d, %d byte writes: a torn record reported: %s", i, cut, notes)
					}
				case !strings.Contains(notes, fmt.Sprintf("thread 0: a torn record cut (a ")) || !strings.Contains(notes, fmt.Sprintf("at byte offset %d)", off)):
					t.Fatalf("record %d torn after %d byte writes: the cut is not reported at byte offset %d: %s", i, cut, off, notes)
				}
			}
		}
	}
	t.Logf("%d records, %d of them torn, %d torn files gathered", len(recs), len(kinds), cases)
}

// TestDamagedLogs: what a kill cannot leave is an error naming the file and
// the byte offset, never a cut and never data: a committed record changed
// afterwards (a stray write of the program into its logs), data after the
// end of a log, a log that filled up (the recorder's own error record),
// and a file that is not a log.
func TestDamagedLogs(t *testing.T) {
	t.Parallel()
	path, recs := logFile(t, 4)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "gen-000001.pmlog")
	r := recs[3]
	end := recs[len(recs)-1][0] + 8*recs[len(recs)-1][1]
	for _, c := range []struct {
		name string
		at   int64
		want string
	}{
		{"a payload byte changed", r[0] + 8*r[1] - 1, fmt.Sprintf("%s: byte offset %d: thread 0's log is damaged: its record does not check out (did the program write over its logs?)", f, r[0])},
		{"a check bit changed", r[0] + 5, fmt.Sprintf("byte offset %d: thread 0's log is damaged: its record does not check out", r[0])},
		{"data after the end", end + 80, fmt.Sprintf("byte offset %d: thread 0's log is damaged: a word of data where no record was begun", end+80)},
		{"not a log", 0, "not a pmlin log file"},
	} {
		b := bytes.Clone(orig)
		b[c.at] ^= 0x10
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := merge.Gather(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	t.Run("a full log", func(t *testing.T) {
		bin := compile(t, "gcc", "c11", "c/test/crash_child.c")
		logs := filepath.Join(t.TempDir(), "logs")
		cmd := exec.Command(bin, filepath.Join(t.TempDir(), "state"), "--threads", "1", "--ops", "1000", "--log-bytes", "4096")
		cmd.Env = append(os.Environ(), "PMLIN_LOG_DIR="+logs)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "its log is full (4096 bytes)") {
			t.Fatalf("the program: %v %s", err, out)
		}
		_, err = merge.Gather(logs)
		want := regexp.MustCompile(`gen-000001\.pmlog: byte offset \d+: thread 0's log: the recorder refused a misuse and stopped recording: thread 0 \(process 0\), step \d+: its log is full \(4096 bytes\)`)
		if err == nil || !want.MatchString(err.Error()) {
			t.Fatalf("gather: %v", err)
		}
	})
}

// TestBufferLogs: logs in a caller's buffer (pmlin_open_buffer on a
// mapping of a file of the child's own) are log files pmlin gather reads,
// named one by one; a killed generation is cut off by a crash line.
func TestBufferLogs(t *testing.T) {
	t.Parallel()
	bin := compile(t, "gcc", "c11", "c/test/crash_child.c")
	dir := t.TempDir()
	state, a, b := filepath.Join(dir, "state"), filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	// Killed while its threads record (--ops: before its logs fill up).
	recorded := false
	for try := 0; try < 20 && !recorded; try++ {
		os.Remove(a)
		os.Remove(state)
		killed := child(t, []string{bin, state, "--ops", "2000", "--log-bytes", "1048576", "--buffer", a, "--generation", "1",
			"--kill-after-us", fmt.Sprint(100 + 50*try)}, "", time.Minute)
		m, err := merge.Gather(a)
		recorded = killed && err == nil && m.Stats().Ops > 10
	}
	if !recorded {
		t.Fatal("no kill came while the child recorded")
	}
	child(t, []string{bin, state, "--recover-only", "--log-bytes", "65536", "--buffer", b, "--generation", "2"}, "", 0)
	hist := filepath.Join(dir, "h.hist")
	m, err := gather(t, hist, b, a)
	if err != nil {
		t.Fatal(err)
	}
	text := readFile(t, hist)
	if i, j := strings.Index(text, "# generation 1: "+a), strings.Index(text, "# generation 2: "+b); i < 0 || j < i || !strings.Contains(text[i:j], "\ncrash\n") {
		t.Fatalf("the generations are not in order with a crash line between them:\n%s", clip(text))
	}
	if res, err := check(t, hist); err != nil || !res.Linearizable {
		t.Fatalf("%v %+v", err, res)
	}
	t.Log(m.Stats())
	if _, err := merge.Gather(a, a); err == nil || !strings.Contains(err.Error(), "are the same file") {
		t.Fatalf("a file twice: %v", err)
	}
}

// TestPythonTornWrites stops the Python recorder (os._exit: no clean-up,
// like a kill; the mapping keeps every store) after each of the writes
// (struct.pack_into calls) of a few records, in the order the module
// makes them: every gathered history is well formed, holds exactly the
// records committed before the stop, and the record the stop tore is cut
// and reported.
func TestPythonTornWrites(t *testing.T) {
	t.Parallel()
	// Each record is 4 writes: its first word, its payload, its
	// timestamp, its commit (3 for "ret ok", which has no payload).
	pythonTornWrites(t, `
rec.set_init(0)
`, `
t.inv_read([1, 2]); t.ret_read([0, 0])
n = t.tag()
t.inv_cas([(1, 0, n)]); t.ret_ok()
t.inv_swap([(2, t.tag())]); t.ret_swap([0])
t.inv_cas([(1, 0, t.tag())]); t.ret_fail(1, [n])
`, []string{"0 inv read 1 2", "0 ret 0 0", "0 inv cas 1:0:0x1", "0 ret ok", "0 inv swap 2:0x1", "0 ret 0", "0 inv cas 1:0:0x1", "0 ret fail 1 0x1"},
		[]int{4, 4, 4, 3, 4, 4, 4, 4})
}

// TestPythonTornWritesV2 is TestPythonTornWrites of version 2 records: an
// operation with arguments and without, its results, and ? (3 writes: no
// payload).
func TestPythonTornWritesV2(t *testing.T) {
	t.Parallel()
	pythonTornWrites(t, `
q = rec.object("q", "queue")
`, `
v = t.tag()
t.inv_op(q, "enq", [v]); t.ret_op(["ok"])
t.inv_op(q, "deq"); t.ret_unknown()
t.inv_op(q, "deq"); t.ret_op([v])
`, []string{"0 inv q enq 0x1", "0 ret ok", "0 inv q deq", "0 ret ?", "0 inv q deq", "0 ret 0x1"},
		[]int{4, 4, 4, 3, 4, 4})
}

// pythonTornWrites runs the Python recorder stopped after each of its
// writes to a log file (struct.pack_into) while record records (setup ran
// before the logs opened): the gathered history holds exactly the events
// of the records committed before the stop (events, each record writes[i]
// writes), and a stop inside a record reports it torn.
func pythonTornWrites(t *testing.T, setup, record string, events []string, writes []int) {
	py := tool(t, "python3")
	sources(t, "python/pmlin_recorder.py")
	script := `
import os, struct, sys
sys.path.insert(0, "python")
import pmlin_recorder as pr
rec = pr.Recorder(1)
` + setup + `
rec.open_logs(sys.argv[1], 65536)
stop, calls = int(sys.argv[2]), [0]
real = struct.pack_into
def counted(*a):
    real(*a)
    calls[0] += 1
    if calls[0] == stop:
        os._exit(0)
pr.struct = type("S", (), {"pack_into": staticmethod(counted), "unpack": staticmethod(struct.unpack)})
t = rec.thread(0)
` + record + `
print(calls[0])
`
	dir := t.TempDir()
	out, stderr, err := run(t, "", py, "-c", script, filepath.Join(dir, "all"), "0")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var total, want int
	for _, w := range writes {
		want += w
	}
	fmt.Sscan(out, &total)
	if total != want {
		t.Fatalf("%d writes for %d records, want %d", total, len(events), want)
	}
	tagged := regexp.MustCompile(`0x[0-9a-f]+`)
	for stop := 1; stop <= total; stop++ {
		logs := filepath.Join(dir, fmt.Sprint(stop))
		if _, stderr, err := run(t, "", py, "-c", script, logs, fmt.Sprint(stop)); err != nil {
			t.Fatalf("stop %d: %v\n%s", stop, err, stderr)
		}
		committed, boundary := 0, stop == 0
		for sum := 0; committed < len(writes) && sum+writes[committed] <= stop; committed++ {
			sum += writes[committed]
			boundary = sum == stop
		}
		m, err := merge.Gather(logs)
		if committed == 0 {
			if err == nil || !strings.Contains(err.Error(), "no operation") {
				t.Fatalf("stop %d, before the first commit: %v", stop, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("stop %d: %v", stop, err)
		}
		var b bytes.Buffer
		m.WriteTo(&b)
		var got []string
		for _, l := range strings.Split(withoutComments(b.String()), "\n") {
			if strings.HasPrefix(l, "0 ") {
				got = append(got, tagged.ReplaceAllString(l, "0x1"))
			}
		}
		if strings.Join(got, "\n") != strings.Join(events[:committed], "\n") {
			t.Fatalf("stop %d: events\n%s\nwant the %d committed\n%s", stop, strings.Join(got, "\n"), committed, strings.Join(events[:committed], "\n"))
		}
		// A stop after a record's first write and before its commit tore it.
		if torn, want := tornCuts(m), !boundary; (torn == 1) != want || torn > 1 ||
			want && !strings.Contains(strings.Join(m.Notes(), " "), "thread 0: a torn record cut") {
			t.Fatalf("stop %d (%d records committed): %d torn records reported: %v", stop, committed, torn, m.Notes())
		}
	}
}
