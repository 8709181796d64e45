package merge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// rec is a record for a test log file: kind, n, timestamp, payload.
type rec struct {
	kind, n, ts uint64
	payload     []uint64
}

func inv(kind uint64, ts uint64, payload ...uint64) rec {
	k := uint64(len(payload))
	switch kind {
	case recInvCAS:
		k /= 3
	case recInvSwap:
		k /= 2
	}
	return rec{kind: kind, n: k, ts: ts, payload: payload}
}

func ret(ts uint64, values ...uint64) rec {
	return rec{kind: recRetValues, n: uint64(len(values)), ts: ts, payload: values}
}

func text(kind, ts uint64, s string) rec {
	b := []byte(s)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	r := rec{kind: kind, n: uint64(len(s)), ts: ts}
	for i := 0; i < len(b); i += 8 {
		r.payload = append(r.payload, binary.LittleEndian.Uint64(b[i:]))
	}
	return r
}

// genLog writes a log file as the recorders do (recorders/README.md, "The
// file format"): logs[0] is the recorder's own log, logs[i+1] thread i's;
// a nil header leaves the file without one.
func genLog(t *testing.T, path string, gen uint64, logs ...[]rec) {
	t.Helper()
	const recWords, threadWords = 2 * pageWords, 2 * pageWords
	threads := len(logs) - 1
	words := make([]uint64, pageWords+recWords+threads*threadWords)
	nonce := 0x1234567 * gen
	words[0], words[1], words[2], words[3], words[4], words[5] = logMagic, 1, logByteOrder, gen, uint64(threads), nonce
	words[6], words[7], words[8], words[9] = pageWords, recWords, threadWords, 4242
	for l, recs := range logs {
		base := pageWords
		if l > 0 {
			base += recWords + (l-1)*threadWords
		}
		pos := 0
		for _, r := range recs {
			w := append([]uint64{r.kind | r.n<<8, r.ts}, r.payload...)
			if int64(len(w)) != recordWords(r.kind, r.n) {
				t.Fatalf("a test record of kind %d, n %d has %d words", r.kind, r.n, len(w))
			}
			c := checkOf(nonce+uint64(l)*kLog, int64(pos), w)
			copy(words[base+pos:], w)
			words[base+pos] |= c<<32 | committed
			pos += len(w)
		}
	}
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	if gen == 0 { // no header
		clear(b[:8])
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func gathered(t *testing.T, paths ...string) (string, *Merged) {
	t.Helper()
	m, err := Gather(paths...)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String(), m
}

// TestGather: generations one after the other, a crash line after a
// killed one (which cuts off its pending operation), none after a closed
// one; initial values, comments at the top and among the steps, an
// in-process crash, a pending operation at a close.
func TestGather(t *testing.T) {
	dir := t.TempDir()
	g1, g2, g3 := filepath.Join(dir, "gen-000001.pmlog"), filepath.Join(dir, "gen-000002.pmlog"), filepath.Join(dir, "gen-000003.pmlog")
	genLog(t, g1, 1,
		[]rec{{kind: recInit, payload: []uint64{0}}, {kind: recInitWord, payload: []uint64{7, 5}}, text(recComment, 0, "run 1"), text(recComment, 25, "after the read")},
		[]rec{inv(recInvRead, 10, 7), ret(20, 5), inv(recInvCAS, 30, 7, 5, 0x100000001)},
		[]rec{inv(recInvRead, 15, 7)})
	genLog(t, g2, 2,
		[]rec{{kind: recCrash, ts: 150}, {kind: recClose, ts: 300}},
		[]rec{inv(recInvRead, 100, 7), ret(110, 0x100000001), inv(recInvSwap, 120, 7, 0x20000001)},
		[]rec{inv(recInvRead, 200, 7), ret(210, 5)})
	genLog(t, g3, 3,
		[]rec{{kind: recClose, ts: 500}},
		[]rec{inv(recInvRead, 400, 7)},
		[]rec{})
	got, m := gathered(t, dir)
	want := `pmlin-history v1
init 7=5
# generation 1: G1 (process 4242, 2 threads, 4 steps); killed, 2 operations pending: a crash line follows
# run 1
0 inv read 7
1 inv read 7
0 ret 5
# after the read
0 inv cas 7:5:0x100000001
crash
# generation 2: G2 (process 4242, 2 threads, 5 steps); closed
0 inv read 7
0 ret 0x100000001
0 inv swap 7:0x20000001
crash
1 inv read 7
1 ret 5
# generation 3: G3 (process 4242, 2 threads, 1 step); closed with 1 operation pending: a crash line follows
0 inv read 7
crash
`
	want = strings.NewReplacer("G1", g1, "G2", g2, "G3", g3).Replace(want)
	if i := strings.Index(got, "pmlin-history"); i < 0 || got[i:] != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(got, "# pmlin gather of 3 generations ("+dir+"), 2 of them followed by a crash line") {
		t.Fatalf("first line: %s", got[:strings.Index(got, "\n")])
	}
	if s := m.Stats(); s.Ops != 7 || s.Crashes != 3 || s.Processes != 2 || len(m.Notes()) != 3 {
		t.Fatalf("%+v %v", s, m.Notes())
	}
}

// TestGatherEmptyGeneration: a generation killed before its header was
// complete recorded nothing; a crash line follows it all the same.
func TestGatherEmptyGeneration(t *testing.T) {
	dir := t.TempDir()
	genLog(t, filepath.Join(dir, "gen-000001.pmlog"), 1, []rec{}, []rec{inv(recInvRead, 10, 1), ret(11, 0)})
	genLog(t, filepath.Join(dir, "gen-000002.pmlog"), 0, []rec{}, []rec{})
	os.WriteFile(filepath.Join(dir, "gen-000003.pmlog"), nil, 0o644) // created, not yet sized
	genLog(t, filepath.Join(dir, "gen-000004.pmlog"), 4, []rec{{kind: recClose, ts: 99}}, []rec{inv(recInvRead, 50, 1), ret(51, 0)})
	got, _ := gathered(t, dir)
	if n := strings.Count(got, "\ncrash\n"); n != 3 || strings.Count(got, "no header: the process was killed while opening its logs") != 2 {
		t.Fatalf("%d crash lines:\n%s", n, got)
	}
}

// TestGatherErrors: what Gather refuses, each error naming the file and,
// where a record is to blame, its byte offset.
func TestGatherErrors(t *testing.T) {
	const (
		thread0 = 8 * (pageWords + 2*pageWords) // thread 0's log in genLog's files
		reclog  = 8 * pageWords
	)
	for _, c := range []struct {
		name string
		gens map[string][][]rec // file name -> logs; a number before the name is its generation
		want string
		kind error
	}{
		{name: "a gap", gens: map[string][][]rec{"1 gen-000001.pmlog": {{}, {inv(recInvRead, 1, 1), ret(2, 0)}}, "3 gen-000003.pmlog": {{}, {inv(recInvRead, 10, 1), ret(11, 0)}}},
			want: "gen-000003.pmlog: generation 3 follows generation 1 (DIR/gen-000001.pmlog): the generations between them are missing"},
		{name: "a generation twice", gens: map[string][][]rec{"1 a.pmlog": {{}, {inv(recInvRead, 1, 1), ret(2, 0)}}, "1 b.pmlog": {{}, {inv(recInvRead, 10, 1), ret(11, 0)}}},
			want: "b.pmlog: generation 1 again (also DIR/a.pmlog)"},
		{name: "generations that overlap in time", gens: map[string][][]rec{"1 gen-000001.pmlog": {{}, {inv(recInvRead, 1, 1), ret(20, 0)}}, "2 gen-000002.pmlog": {{}, {inv(recInvRead, 20, 1), ret(21, 0)}}},
			want: fmt.Sprintf("gen-000002.pmlog: byte offset %d: generation 2 has a step at timestamp 20, not after the last step of generation 1 at DIR/gen-000001.pmlog, byte offset %d (timestamp 20): the generations overlap in time", thread0, thread0+24)},
		{name: "conflicting initial values", gens: map[string][][]rec{"1 gen-000001.pmlog": {{{kind: recInit, payload: []uint64{0}}}, {inv(recInvRead, 1, 1), ret(2, 0)}}, "2 gen-000002.pmlog": {{{kind: recInit, payload: []uint64{5}}}, {inv(recInvRead, 10, 1), ret(11, 0)}}},
			want: fmt.Sprintf("gen-000002.pmlog: byte offset %d: the default initial value 5 differs from 0 given at DIR/gen-000001.pmlog, byte offset %d", reclog, reclog)},
		{name: "a misuse the recorder refused", gens: map[string][][]rec{"1 gen-000001.pmlog": {{}, {inv(recInvRead, 1, 1), text(recError, 1, "thread 0 (process 0), step 2: a response with no pending invocation")}}},
			want: fmt.Sprintf("gen-000001.pmlog: byte offset %d: thread 0's log: the recorder refused a misuse and stopped recording: thread 0 (process 0), step 2: a response with no pending invocation", thread0+24)},
		{name: "a response across a kill", gens: map[string][][]rec{"1 gen-000001.pmlog": {{}, {inv(recInvRead, 1, 1)}}, "2 gen-000002.pmlog": {{}, {ret(10, 0)}}},
			want: fmt.Sprintf("gen-000002.pmlog: byte offset %d: process 0 responds to its operation at DIR/gen-000001.pmlog, byte offset %d, but the crash at DIR/gen-000001.pmlog (timestamp 1) comes between them", thread0, thread0)},
		{name: "a clock too coarse", gens: map[string][][]rec{"1 gen-000001.pmlog": {{}, {inv(recInvRead, 1, 1), ret(5, 0), inv(recInvRead, 5, 1), ret(9, 0)}, {inv(recInvRead, 1, 1), ret(5, 0), inv(recInvRead, 5, 1), ret(9, 0)}}},
			want: "responds and invokes its next operation at timestamp 5", kind: history.ErrCoarseClock},
		{name: "a step at a crash's timestamp", gens: map[string][][]rec{"1 gen-000001.pmlog": {{{kind: recCrash, ts: 5}}, {inv(recInvRead, 1, 1), ret(5, 0)}}},
			want: fmt.Sprintf("gen-000001.pmlog: byte offset %d: this step of process 0 has the timestamp 5 of the crash at DIR/gen-000001.pmlog, byte offset %d", thread0+24, reclog)},
		{name: "a response of the wrong kind", gens: map[string][][]rec{"1 gen-000001.pmlog": {{}, {inv(recInvRead, 1, 1), {kind: recRetOK, ts: 2}}}},
			want: fmt.Sprintf("gen-000001.pmlog: byte offset %d: ", thread0+24)},
		{name: "no operation", gens: map[string][][]rec{"1 gen-000001.pmlog": {{}, {}}},
			want: "no operation in the logs: nothing to gather"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, logs := range c.gens {
				var gen uint64
				fmt.Sscan(name, &gen)
				genLog(t, filepath.Join(dir, name[strings.Index(name, " ")+1:]), gen, logs...)
			}
			var files []string
			for name := range c.gens {
				files = append(files, filepath.Join(dir, name[strings.Index(name, " ")+1:]))
			}
			slices.Sort(files)
			_, err := Gather(files...)
			want := strings.ReplaceAll(c.want, "DIR", dir)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			if c.kind != nil && !errors.Is(err, c.kind) {
				t.Fatalf("%v is not %v", err, c.kind)
			}
		})
	}
	t.Run("no log files", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := Gather(dir); err == nil || !strings.Contains(err.Error(), "no log files (gen-NNNNNN.pmlog) in this directory") {
			t.Fatal(err)
		}
	})
}

// opInv is a version 2 invocation record: object id, op name, arguments
// (syms: the symbol mask).
func opInv(ts, obj uint64, op string, syms uint64, args ...uint64) rec {
	name := text(recComment, 0, op) // its name's words
	p := append(append([]uint64{obj, syms}, args...), name.payload...)
	return rec{kind: recInvOp, n: uint64(len(args)) | uint64(len(op))<<8, ts: ts, payload: p}
}

func opRet(ts, syms uint64, results ...uint64) rec {
	return rec{kind: recRetOp, n: uint64(len(results)), ts: ts, payload: append([]uint64{syms}, results...)}
}

// TestGatherV2: logs with object declarations give a version 2 history
// (its header, the objects, words' initial values, the events with
// numbers, symbols and ?) that history.ReadV2 reads; records that name no
// declared object, no symbol or no operation, and an object declared
// otherwise by a later generation, are errors at their byte offset.
func TestGatherV2(t *testing.T) {
	dir := t.TempDir()
	g1, g2 := filepath.Join(dir, "gen-000001.pmlog"), filepath.Join(dir, "gen-000002.pmlog")
	own := func(extra ...rec) []rec {
		return append([]rec{text(recObject, 0, "q queue cap=2"), text(recObject, 0, "r register init=nil"), {kind: recInitWord, payload: []uint64{7, 5}}}, extra...)
	}
	genLog(t, g1, 1, own(),
		[]rec{opInv(10, 0, "enq", 0, 0x100001), opRet(20, 1, 2), opInv(30, 1, "write", 1, 1)},
		[]rec{opInv(15, 0, "deq", 0), {kind: recRetUnknown, ts: 25}, inv(recInvRead, 40, 7), ret(45, 5)})
	genLog(t, g2, 2, own(rec{kind: recClose, ts: 300}),
		[]rec{opInv(100, 0, "deq", 0), opRet(110, 1<<0, 4)},
		[]rec{})
	got, _ := gathered(t, dir)
	want := `pmlin-history v2
object q queue cap=2
object r register init=nil
init 7=5
0 inv q enq 0x100001
1 inv q deq
0 ret ok
1 ret ?
0 inv r write nil
1 inv read 7
1 ret 5
crash
0 inv q deq
0 ret empty
`
	if withoutComments(got) != want {
		t.Fatalf("gathered\n%s\nwant\n%s", got, want)
	}
	if _, err := history.ReadV2(strings.NewReader(got), "g"); err != nil {
		t.Fatalf("the gathered history does not read as version 2: %v", err)
	}

	for _, c := range []struct {
		thread []rec
		own    []rec
		want   string
	}{
		{[]rec{opInv(10, 2, "enq", 0, 1)}, own(), "byte offset 12288: thread 0's log: an operation on object 2, but the recorder's own log declares 2 objects"},
		{[]rec{opInv(10, 0, "Enq", 0, 1)}, own(), `an operation name "Enq" that is not`},
		{[]rec{opInv(10, 0, "enq", 1, 9)}, own(), "value 1 is a symbol of code 9, which names none"},
		{[]rec{opInv(10, 0, "enq", 2, 1)}, own(), "a symbol mask 0x2 with bits beyond its 1 values"},
		{[]rec{opInv(10, 0, "enq", 0, 1)}, []rec{text(recObject, 0, "q queue cap=3")}, `object q is declared as "q queue cap=3" here, as "q queue cap=2" at `},
		{[]rec{opInv(10, 0, "enq", 0, 1)}, []rec{text(recObject, 0, "Q queue")}, `an object declaration "Q queue" that does not begin with a name`},
	} {
		d := t.TempDir()
		genLog(t, filepath.Join(d, "gen-000001.pmlog"), 1, own(rec{kind: recClose, ts: 5}), []rec{opInv(1, 0, "deq", 0), opRet(2, 1, 4)})
		genLog(t, filepath.Join(d, "gen-000002.pmlog"), 2, c.own, c.thread)
		_, err := Gather(d)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "gen-000002.pmlog") {
			t.Errorf("%v: want an error in gen-000002.pmlog with %q", err, c.want)
		}
	}
}

func withoutComments(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}
