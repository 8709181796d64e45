package merge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

// logs builds inputs from name/content pairs.
func logs(pairs ...string) []Log {
	var out []Log
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Log{Name: pairs[i], R: strings.NewReader(pairs[i+1])})
	}
	return out
}

// merged merges and writes, without the first (comment) line.
func merged(t *testing.T, in []Log) string {
	t.Helper()
	m, err := Read(in)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "# pmlin merge of ") {
		t.Fatalf("no comment line first:\n%s", out)
	}
	return out[strings.IndexByte(out, '\n')+1:]
}

func TestRules(t *testing.T) {
	tests := []struct {
		name string
		in   []Log
		want string
		ties int64
	}{
		{"timestamps order the processes", logs(
			"a", "10 1 inv read 5\n40 1 ret 0\n",
			"b", "20 2 inv read 5\n30 2 ret 0\n"),
			"1 inv read 5\n2 inv read 5\n2 ret 0\n1 ret 0\n", 0},
		{"ties: invocations first, then by process id", logs(
			"a", "10 2 inv read 5\n20 2 ret 0\n",
			"b", "10 1 inv read 6\n20 1 ret 0\n",
			"c", "20 3 inv read 7\n30 3 ret 0\n"),
			"1 inv read 6\n2 inv read 5\n3 inv read 7\n1 ret 0\n2 ret 0\n3 ret 0\n", 3},
		{"a process's own order is kept on a tie", logs(
			// Process 1 returns and invokes at 20; process 2 invokes at
			// 20: 2's invocation goes first, and 1's ret stays before 1's inv.
			"a", "10 1 inv read 5\n20 1 ret 0\n20 1 inv read 6\n30 1 ret 0\n",
			"b", "20 2 inv read 7\n30 2 ret 0\n"),
			"1 inv read 5\n2 inv read 7\n1 ret 0\n1 inv read 6\n1 ret 0\n2 ret 0\n", 2},
		{"a response whose process invokes again at its timestamp goes first", logs(
			// Process 1 returns and invokes at 10, process 0 invokes and
			// returns at 10: 1's invocation must come before 0's response
			// (the order "0 inv, 0 ret, 1 ret, 1 inv" would claim that 0's
			// cas finished before 1's second read began).
			"a", "5 1 inv read 1\n10 1 ret 0\n10 1 inv read 1\n20 1 ret 0\n",
			"b", "10 0 inv cas 1:0:5\n10 0 ret ok\n"),
			"1 inv read 1\n0 inv cas 1:0:5\n1 ret 0\n1 inv read 1\n0 ret ok\n1 ret 0\n", 2},
		{"one file with a timestamp column, init and header", logs(
			"all", "pmlin-log v1\n# comment\ninit 7\ninit 3=0x10\n\n20 2 inv cas 3:0x10:0x200000001  # trailing\n10 1 inv read 3\n15 1 ret 0x10\n25 2 ret ok\n"),
			"pmlin-history v1\ninit 7\ninit 3=16\n1 inv read 3\n1 ret 0x10\n2 inv cas 3:0x10:0x200000001\n2 ret ok\n", 0},
		{"crashes from any log, pending operations interrupted", logs(
			"a", "10 1 inv cas 3:0:0x200000001\n40 1 inv read 3\n50 1 ret 0x200000001\n",
			"crashes", "30 crash\n",
			"b", "20 2 inv read 3\n"),
			"1 inv cas 3:0:0x200000001\n2 inv read 3\ncrash\n1 inv read 3\n1 ret 0x200000001\n", 0},
		{"same init in several logs", logs(
			"a", "init 0\ninit 1=5\n10 1 inv read 1\n20 1 ret 5\n",
			"b", "init 0\ninit 1=5\n"),
			"init 1=5\n1 inv read 1\n1 ret 5\n", 0},
		{"hex timestamps, tabs, CRLF and a byte order mark", logs(
			"a", "\uFEFF0x10\t1 inv read 1\r\n0x20 1   ret 0\r\n"),
			"1 inv read 1\n1 ret 0\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := merged(t, tc.in)
			got = strings.TrimPrefix(got, "pmlin-history v1\n")
			want := strings.TrimPrefix(tc.want, "pmlin-history v1\n")
			if got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
			for i := range tc.in {
				tc.in[i].R.(*strings.Reader).Seek(0, 0)
			}
			m, _ := Read(tc.in)
			if m.Stats().Ties != tc.ties {
				t.Errorf("ties %d, want %d", m.Stats().Ties, tc.ties)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []Log
		want string // the whole message starts with file:line
	}{
		{"clock backwards within a process", logs("t1", "10 1 inv read 1\n5 1 ret 0\n"),
			"t1:2: the clock goes backwards in process 1: 5 after 10 at line 1"},
		{"a process in two logs", logs("t1", "10 1 inv read 1\n", "t2", "20 1 ret 0\n"),
			"t2:1: process 1 also has steps in t1:1"},
		{"overlapping operations", logs("t1", "10 1 inv read 1\n20 1 inv read 2\n"),
			"t1:2: process 1 invokes an operation while its operation at line 1 (timestamp 10) is pending"},
		{"a response with nothing pending", logs("t1", "10 1 inv read 1\n20 1 ret 0\n30 1 ret 0\n"),
			"t1:3: process 1 responds with no pending operation"},
		{"a response after the crash that cut it off", logs("t1", "10 1 inv read 1\n30 1 ret 0\n", "c", "20 crash\n"),
			"t1:2: process 1 responds to its operation at line 1, but the crash at c:1 (timestamp 20) comes between them"},
		{"a step at the timestamp of a crash", logs("t1", "10 1 inv read 1\n20 1 ret 0\n", "c", "20 crash\n"),
			"t1:2: this step of process 1 has the timestamp 20 of the crash at c:1"},
		{"two processes respond and invoke again at one timestamp", logs(
			"t0", "10 0 inv cas 1:0:5\n10 0 ret ok\n10 0 inv read 1\n10 0 ret 5\n",
			"t1", "10 1 inv read 1\n10 1 ret 0\n10 1 inv read 1\n10 1 ret 0\n"),
			"t1:2: process 1 responds and invokes its next operation at timestamp 10, as process 0 does (its response at t0:2): which of their operations came first is unknown, and any order of these steps would invent it: the clock is too coarse for this history; use CLOCK_MONOTONIC or the TSC"},
		{"no timestamp: a history given to merge", logs("h", "# a history\n1 inv read 1\n1 ret 0\n"),
			"h:2: no timestamp or no process id: a log line is `<timestamp> <process> inv ...`, and this one has only one number, 1, before inv (a history, `1 inv ...`, needs no merge: `pmlin check` it)"},
		{"no process id, after a whole step", logs("l", "5 0 inv read 1\n10 ret 0\n"),
			"l:2: no process id: a log line is `<timestamp> <process> ret ...`, and this one has only one number, 10, before ret"},
		{"no process id, after the header", logs("l", "pmlin-log v1\n10 inv read 1\n"),
			"l:2: no process id: a log line is `<timestamp> <process> inv ...`, and this one has only one number, 10, before inv"},
		{"a history header", logs("h", "pmlin-history v1\n1 inv read 1\n"),
			"h:1: this is a history, not a log with timestamps"},
		{"a crash without timestamp", logs("h", "10 1 inv read 1\ncrash\n"),
			"h:2: a crash needs a timestamp too"},
		{"negative timestamp", logs("t", "-5 1 inv read 1\n"),
			`t:1: timestamp "-5" is negative`},
		{"fractional timestamp", logs("t", "1.25 1 inv read 1\n"),
			`t:1: timestamp "1.25" is not an integer`},
		{"timestamp too large", logs("t", "99999999999999999999 1 inv read 1\n"),
			`t:1: timestamp "99999999999999999999" does not fit in 64 bits`},
		{"not a timestamp", logs("t", "now 1 inv read 1\n"),
			`t:1: expected a timestamp (an unsigned integer) at the start of the line, found "now"`},
		{"JSON", logs("t", `{"ts": 1, "p": 1, "inv": "read", "addrs": [1]}`+"\n"),
			"t:1: JSON is not a log syntax"},
		{"no event after the timestamp", logs("t", "10\n"),
			"t:1: a timestamp with no event after it"},
		{"bad process id", logs("t", "10 -1 inv read 1\n"),
			`t:1: expected a process id (0 to 2147483647) or crash after the timestamp, found "-1"`},
		{"neither inv nor ret", logs("t", "10 1 invoke read 1\n"),
			"t:1: process 1: expected inv or ret"},
		{"malformed event, found by the history reader", logs("t", "10 1 inv read 1\n20 1 ret ok\n"),
			"t:2: "},
		{"fail blames an address the cas does not name", logs("t", "10 1 inv cas 1:0:0x200000001\n20 1 ret fail 2\n"),
			"t:2: "},
		{"conflicting initial values", logs("a", "init 1=5\n10 1 inv read 1\n", "b", "init 1=6\n"),
			"b:1: the initial value 6 of address 1 differs from 5 given at a:1"},
		{"conflicting default", logs("a", "init 0\n10 1 inv read 1\n", "b", "init 1\n"),
			"b:1: the default initial value 1 differs from 0 given at a:1"},
		{"malformed init", logs("a", "init 1=x\n"),
			"a:1: "},
		{"init after a step", logs("a", "10 1 inv read 1\ninit 0\n"),
			"a:2: init after the first event of this log"},
		{"header not first", logs("a", "init 0\npmlin-log v1\n"),
			"a:2: the pmlin-log header must be the first line"},
		{"unknown version", logs("a", "pmlin-log v2\n"),
			`a:1: unsupported log header "pmlin-log v2"`},
		{"binary", logs("a", "\x00\x01\x02"),
			"a:1: not text"},
		{"no operation at all", logs("a", "# nothing\n", "b", "10 crash\n"),
			"a, b: no operation in the logs"},
		{"no log", nil, "(no log): no operation in the logs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.in)
			var he *history.Error
			if !errors.As(err, &he) {
				t.Fatalf("got %v (%T), want a *history.Error", err, err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got  %q\nwant %q...", err, tc.want)
			}
		})
	}
}

// split turns a history's text into per-process logs (and one of crashes
// and init lines), the i-th event stamped ts(i).
func split(t *testing.T, text []byte, ts func(i int) uint64) []Log {
	t.Helper()
	files := map[string]*strings.Builder{}
	var names []string
	get := func(name string) *strings.Builder {
		if files[name] == nil {
			files[name] = &strings.Builder{}
			names = append(names, name)
		}
		return files[name]
	}
	get("crash+init").WriteString("pmlin-log v1\n")
	i := 0
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || f[0] == "pmlin-history" || strings.HasPrefix(f[0], "#"):
		case f[0] == "init":
			fmt.Fprintln(get("crash+init"), line)
		case f[0] == "crash":
			fmt.Fprintf(get("crash+init"), "%d crash\n", ts(i))
			i++
		default:
			fmt.Fprintf(get("p"+f[0]), "%d %s\n", ts(i), line)
			i++
		}
	}
	var out []Log
	for _, n := range names {
		out = append(out, Log{Name: n, R: strings.NewReader(files[n].String())})
	}
	return out
}

// TestRoundTrip splits random histories (crashes, pending operations,
// initial values) into per-process logs with increasing timestamps and
// merges them back: the same history, byte for byte.
func TestRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		cfg := histgen.RandomSmallConfig(seed)
		cfg.Ops *= 3
		h := histgen.Small(cfg, seed)
		if seed%3 == 0 {
			h.Init = map[uint64]uint64{0: 0x77, 2: 5}
		}
		if h.Events == 0 || len(h.Ops) == 0 {
			continue
		}
		text := histgen.Text(h)
		got := merged(t, split(t, text, func(i int) uint64 { return uint64(1000 + 7*i) }))
		if got != string(text) {
			t.Fatalf("seed %d: round trip differs\noriginal:\n%s\nmerged:\n%s", seed, text, got)
		}
	}
}

// TestStatsString checks the one-line summary, plurals included.
func TestStatsString(t *testing.T) {
	got := Stats{Logs: 1, Processes: 2, Ops: 1, Crashes: 2, Events: 5, Ties: 1}.String()
	want := "1 log, 2 processes, 1 operation, 2 crashes, 5 events; 1 timestamp tie between processes (invocations first)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// FuzzRead: any input either fails with a *history.Error or merges into a
// history the reader accepts, with as many events as the log had steps.
func FuzzRead(f *testing.F) {
	f.Add("10 1 inv read 1\n20 1 ret 0\n", "15 2 inv cas 1:0:0x200000001\n25 crash\n")
	f.Add("pmlin-log v1\ninit 0\n1 0 inv read 1 2\n1 0 ret 0 0\n", "1 1 inv read 1\n2 1 ret 0\n")
	f.Add("0x10 3 inv swap 1:5\n", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		m, err := Read(logs("a", a, "b", b))
		if err != nil {
			var he *history.Error
			if !errors.As(err, &he) {
				t.Fatalf("%v is not a *history.Error", err)
			}
			return
		}
		var out bytes.Buffer
		if _, err := m.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		h, err := history.ReadAll(&out, "merged")
		if err != nil {
			t.Fatalf("merged history does not read back: %v\n%s", err, out.String())
		}
		if int64(h.Events) != m.Stats().Events {
			t.Fatalf("%d events read back, %d merged", h.Events, m.Stats().Events)
		}
	})
}

// BenchmarkRead merges 8 per-thread logs of a 100k-operation history.
func BenchmarkRead(b *testing.B) {
	var text bytes.Buffer
	if _, err := histgen.WriteLarge(&text, histgen.LargeConfig{Ops: 100_000, Procs: 8, Words: 1000, K: 3, ReadFraction: 0.5}, 1); err != nil {
		b.Fatal(err)
	}
	files := map[string]*strings.Builder{}
	i := 0
	for _, line := range strings.Split(text.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[1] != "inv" && f[1] != "ret") {
			continue
		}
		if files[f[0]] == nil {
			files[f[0]] = &strings.Builder{}
		}
		files[f[0]].WriteString(strconv.Itoa(i) + " " + line + "\n")
		i++
	}
	b.SetBytes(int64(text.Len()))
	b.ResetTimer()
	for b.Loop() {
		var in []Log
		for n, f := range files {
			in = append(in, Log{Name: n, R: strings.NewReader(f.String())})
		}
		m, err := Read(in)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
