package recorders

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// withdrawChild records into a log file ($PMLIN_LOG_DIR) failures whose
// address is unknown (pmlin_ret_fail_unknown): a cas of two words
// (withdrawn), a cas of one word (blamed), a read; then a last cas of two
// words, which "free" withdraws too before it writes its own history and
// closes, and "kill" leaves pending (its invocation the log's last record)
// and ends without closing, as a kill would.
const withdrawChild = `#include "PMLIN_H"
#include <unistd.h>
int main(int argc, char **argv)
{
    uint64_t a2[2] = {10, 11}, e2[2] = {0, 0}, n2[2], a1[1] = {5}, e1[1] = {0}, n1[1], v[2] = {0, 0};
    pmlin_recorder *r = pmlin_new(1);
    pmlin_thread *t;
    if (argc != 2 || !r || pmlin_open_logs(r, NULL, 65536) != 0 || pmlin_set_init(r, 0) != 0)
        return 1;
    t = pmlin_thread_get(r, 0);
    n2[0] = pmlin_tag(t), n2[1] = pmlin_tag(t), n1[0] = pmlin_tag(t);
    pmlin_inv_cas(t, 2, a2, e2, n2);
    pmlin_ret_fail_unknown(t);
    pmlin_inv_cas(t, 1, a1, e1, n1);
    pmlin_ret_fail_unknown(t);
    pmlin_inv_read(t, 2, a2);
    pmlin_ret_read(t, v);
    n2[0] = pmlin_tag(t), n2[1] = pmlin_tag(t);
    pmlin_inv_cas(t, 2, a2, e2, n2);
    if (!strcmp(argv[1], "kill"))
        _exit(0);
    pmlin_ret_fail_unknown(t);
    if (pmlin_write(r, stdout) != 0) {
        fprintf(stderr, "%s\n", pmlin_error(r));
        return 1;
    }
    pmlin_free(r);
    return 0;
}
`

// TestWithdrawnFailure: in a log file, a failure with the address unknown
// blames a one-word cas's address and withdraws a cas of more words, and
// pmlin gather gives the history the program wrote itself. Then the
// withdrawal is replayed on the file of a program that stopped with the
// cas pending, store by store in the order README's rule 6 gives (the
// first word without its commit bit, as C's one 8-byte store or as
// Python's one byte; the other words zeroed one by one, in C's word
// stores and in Python's bytes; the first word zeroed): before it the
// cas is pending at the kill, afterwards it is absent, and in between a
// torn record that gather cuts, never data.
func TestWithdrawnFailure(t *testing.T) {
	t.Parallel()
	cc := tool(t, "gcc")
	header, err := filepath.Abs("c/pmlin.h")
	if err != nil {
		t.Fatal(err)
	}
	sources(t, header)
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "withdraw.c"), filepath.Join(dir, "withdraw")
	if err := os.WriteFile(src, []byte(strings.Replace(withdrawChild, "PMLIN_H", header, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e, err := run(t, "", cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-o", bin, src); err != nil {
		t.Fatalf("gcc: %v\n%s", err, e)
	}
	start := func(mode string) (logs, own string) {
		t.Helper()
		logs = filepath.Join(t.TempDir(), "logs")
		if err := os.Mkdir(logs, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, mode)
		cmd.Env = append(os.Environ(), "PMLIN_LOG_DIR="+logs)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("withdraw %s: %v", mode, err)
		}
		return logs, string(out)
	}

	logs, own := start("free")
	const want = "pmlin-history v1\n0 inv cas 5:0:0x1000100000003\n0 ret fail 5\n0 inv read 10 11\n0 ret 0 0\n"
	if withoutComments(own) != want {
		t.Fatalf("the program wrote\n%s\nwant\n%s", own, want)
	}
	if _, err := gather(t, filepath.Join(dir, "g.hist"), logs); err != nil {
		t.Fatal(err)
	} else if got := withoutComments(readFile(t, filepath.Join(dir, "g.hist"))); got != want {
		t.Fatalf("gather gives\n%s\nwant\n%s", got, want)
	}

	logs, _ = start("kill")
	path := filepath.Join(logs, "gen-000001.pmlog")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	word := func(b []byte, i int64) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	// The pending cas: thread 0's record of kind 2 (inv cas) and k 2, the
	// last one of its log.
	var at int64
	for pos := int64(word(orig, 6) + word(orig, 7)); word(orig, pos) != 0; {
		at = pos
		k := int64(word(orig, pos) >> 8 & 0xFFFFFF)
		n := map[uint64]int64{1: 2 + k, 2: 2 + 3*k, 4: 2 + k, 5: 2, 6: 3}[word(orig, pos)&0xFF]
		if n == 0 {
			t.Fatalf("record %#x in thread 0's log", word(orig, pos))
		}
		pos += n
	}
	if word(orig, at)&0xFFFFFFFF != 2|2<<8 {
		t.Fatalf("thread 0's last record is %#x, not a cas of two words", word(orig, at))
	}
	const pending = "pmlin-history v1\n0 inv cas 5:0:0x1000100000003\n0 ret fail 5\n0 inv read 10 11\n0 ret 0 0\n" +
		"0 inv cas 10:0:0x1000100000004 11:0:0x1000100000005\ncrash\n"
	const gone = "pmlin-history v1\n0 inv cas 5:0:0x1000100000003\n0 ret fail 5\n0 inv read 10 11\n0 ret 0 0\ncrash\n"
	check := func(b []byte, what, want string, torn int) {
		t.Helper()
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "gen-000001.pmlog"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := gather(t, filepath.Join(d, "h"), d)
		if err != nil {
			t.Fatalf("%s: gather: %v", what, err)
		}
		if got := withoutComments(readFile(t, filepath.Join(d, "h"))); got != want || tornCuts(m) != torn {
			t.Fatalf("%s: gather gives (%d torn records cut, want %d)\n%s\nwant\n%s", what, tornCuts(m), torn, got, want)
		}
	}
	check(orig, "before the withdrawal", pending, 0)
	for _, lang := range []string{"C", "Python"} {
		b := bytes.Clone(orig)
		if lang == "C" {
			binary.LittleEndian.PutUint64(b[8*at:], word(b, at)&0xFFFFFFFF)
		} else {
			b[8*at+7] = 0
		}
		check(b, lang+": the commit bit cleared", gone, 1)
		for i := int64(1); i < 8; i++ { // the cas of 2 words: 8 words
			if lang == "C" {
				binary.LittleEndian.PutUint64(b[8*(at+i):], 0)
				check(b, lang+": zeroed to word "+string(rune('0'+i)), gone, 1)
				continue
			}
			for j := int64(0); j < 8; j++ {
				b[8*(at+i)+j] = 0
				check(b, lang+": zeroed to a byte of word "+string(rune('0'+i)), gone, 1)
			}
		}
		binary.LittleEndian.PutUint64(b[8*at:], 0)
		check(b, lang+": withdrawn", gone, 0)
	}
}

// TestPythonWithdrawnFailure: the Python recorder's withdrawal of a failed
// cas of two words with the address unknown (t.ret_fail()), stopped after
// each of its writes (os._exit, as a kill): before the first the cas is
// pending at the kill, after it a torn record is cut and the cas is gone,
// after the last nothing is torn; run to its end, the thread's next read
// takes the record's place and the history leaves the cas out.
func TestPythonWithdrawnFailure(t *testing.T) {
	t.Parallel()
	py := tool(t, "python3")
	sources(t, "python/pmlin_recorder.py")
	const script = `
import os, struct, sys
sys.path.insert(0, "python")
import pmlin_recorder as pr
rec = pr.Recorder(1)
rec.open_logs(sys.argv[1], 65536)
stop, calls = int(sys.argv[2]), [0]
t = rec.thread(0)
t.inv_read([1, 2]); t.ret_read([0, 0])
t.inv_cas([(1, 0, t.tag()), (2, 0, t.tag())])
real = struct.pack_into
def counted(*a):
    if calls[0] == stop:
        os._exit(0)
    real(*a)
    calls[0] += 1
pr.struct = type("S", (), {"pack_into": staticmethod(counted), "unpack": staticmethod(struct.unpack)})
t.ret_fail()
print(calls[0])
t.inv_read([2]); t.ret_read([0])
rec.close()
`
	dir := t.TempDir()
	const before = "pmlin-history v1\n0 inv read 1 2\n0 ret 0 0\n"
	for stop, want := range []string{
		before + "0 inv cas 1:0:0x1000100000001 2:0:0x1000100000002\ncrash\n",
		before + "crash\n", before + "crash\n",
		before + "crash\n",
		before + "0 inv read 2\n0 ret 0\n",
	} {
		logs := filepath.Join(dir, string(rune('a'+stop)))
		arg := string(rune('0' + stop))
		if stop == 4 {
			arg = "-1"
		}
		out, stderr, err := run(t, "", py, "-c", script, logs, arg)
		if err != nil {
			t.Fatalf("stop %s: %v\n%s", arg, err, stderr)
		}
		if stop == 4 && strings.TrimSpace(out) != "3" {
			t.Fatalf("the withdrawal made %q writes, want 3", out)
		}
		m, err := gather(t, filepath.Join(dir, arg+".hist"), logs)
		if err != nil {
			t.Fatalf("stop %s: gather: %v", arg, err)
		}
		torn := 0
		if stop == 1 || stop == 2 {
			torn = 1
		}
		if got := withoutComments(readFile(t, filepath.Join(dir, arg+".hist"))); got != want || tornCuts(m) != torn {
			t.Fatalf("stop %s: gather gives (%d torn records cut, want %d)\n%s\nwant\n%s", arg, tornCuts(m), torn, got, want)
		}
	}
}
