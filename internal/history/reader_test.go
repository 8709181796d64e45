package history_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pmlin/pmlin/internal/history"
)

// copyEvent deep-copies ev (the Reader reuses its slices), with empty
// slices normalized to nil so that events compare with reflect.DeepEqual.
func copyEvent(ev *history.Event) history.Event {
	c := *ev
	norm := func(s []uint64) []uint64 {
		if len(s) == 0 {
			return nil
		}
		return slices.Clone(s)
	}
	c.Addrs, c.Expected, c.New, c.Values = norm(ev.Addrs), norm(ev.Expected), norm(ev.New), norm(ev.Values)
	c.Interrupted = nil
	if len(ev.Interrupted) > 0 {
		c.Interrupted = slices.Clone(ev.Interrupted)
	}
	return c
}

// readEvents reads every event of in. On a malformed input it returns the
// events before the error and the error.
func readEvents(in string, opts history.Options) ([]history.Event, *history.Reader, error) {
	r := history.NewReader(strings.NewReader(in), "t.hist", opts)
	var evs []history.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, r, nil
		}
		if err != nil {
			return evs, r, err
		}
		evs = append(evs, copyEvent(ev))
	}
}

// checkErr asserts that err is a *history.Error at line in file t.hist
// whose message contains msg, rendered as "file:line: msg" (or
// "file:line:column: msg" when the column is known), and whose kind is
// one of the malformed-input kinds.
func checkErr(t *testing.T, err error, line int64, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want an error at line %d containing %q", line, msg)
	}
	var he *history.Error
	if !errors.As(err, &he) {
		t.Fatalf("error %v (%T) is not a *history.Error", err, err)
	}
	if he.File != "t.hist" || he.Line != line || !strings.Contains(he.Msg, msg) {
		t.Fatalf("error %q: want t.hist:%d: ...%s...", err, line, msg)
	}
	want := fmt.Sprintf("%s:%d: %s", he.File, he.Line, he.Msg)
	switch {
	case line == 0:
		want = fmt.Sprintf("%s: %s", he.File, he.Msg)
	case he.Column > 0:
		want = fmt.Sprintf("%s:%d:%d: %s", he.File, he.Line, he.Column, he.Msg)
	}
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
	if !errors.Is(err, history.ErrMalformed) {
		t.Fatalf("error %q is of no malformed-input kind (Err %v)", err, he.Err)
	}
}

// TestWellFormedness covers every rule of docs/history-format.md: each
// input is either valid (line 0, with its number of events) or rejected at
// the given line with a message containing msg.
func TestWellFormedness(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		line   int64  // 0: valid
		msg    string // part of the error message
		events int    // for a valid input
	}{
		// Empty and trivial inputs.
		{name: "empty file", in: "", events: 0},
		{name: "blank lines only", in: "\n\n   \n\t\n", events: 0},
		{name: "comments only", in: "# a comment\n#\n   # indented\n", events: 0},
		{name: "header only", in: "pmlin-history v1\n", events: 0},
		{name: "header without newline", in: "pmlin-history v1", events: 0},

		// Header.
		{name: "header after comments and blanks", in: "# c\n\n  pmlin-history v1  \n1 inv read 1\n", events: 1},
		{name: "header with tab", in: "pmlin-history\tv1\n", events: 0},
		{name: "header after an event", in: "1 inv read 1\npmlin-history v1\n", line: 2, msg: "first line"},
		{name: "header after init", in: "init 0\npmlin-history v1\n", line: 2, msg: "first line"},
		{name: "header after crash", in: "crash\npmlin-history v1\n", line: 2, msg: "first line"},
		{name: "header twice", in: "pmlin-history v1\npmlin-history v1\n", line: 2, msg: "first line"},
		{name: "unsupported version", in: "pmlin-history v2\n", line: 1, msg: `unsupported history version "v2"`},
		{name: "unsupported version V1", in: "# x\npmlin-history V1\n", line: 2, msg: "unsupported"},
		{name: "header without version", in: "pmlin-history\n", line: 1, msg: "header"},
		{name: "header with extra word", in: "pmlin-history v1 extra\n", line: 1, msg: "header"},

		// Initial values.
		{name: "init default", in: "pmlin-history v1\ninit 5\n1 inv read 1\n1 ret 5\n", events: 2},
		{name: "init pairs", in: "init 1=2 3=0x4\ninit 0x10=18446744073709551615\n", events: 0},
		{name: "init default and pairs", in: "init 7\ninit 1=2\n", events: 0},
		{name: "init pairs then default", in: "init 1=2\ninit 7\n", events: 0},
		{name: "init default twice", in: "init 0\ninit 0\n", line: 2, msg: "default initial value is given twice"},
		{name: "init pair twice on one line", in: "init 1=2 1=3\n", line: 1, msg: "given twice"},
		{name: "init pair twice on two lines", in: "init 1=2\n\ninit 1=3\n", line: 3, msg: "given twice"},
		{name: "init pair twice hex and decimal", in: "init 16=2 0x10=3\n", line: 1, msg: "given twice"},
		{name: "init after first event", in: "1 inv read 1\ninit 0\n", line: 2, msg: "init after the first event"},
		{name: "init pair after first event", in: "1 inv read 1\n1 ret 0\ninit 1=2\n", line: 3, msg: "init after the first event"},
		{name: "init after crash", in: "crash\ninit 0\n", line: 2, msg: "init after the first event"},
		{name: "init without value", in: "init\n", line: 1, msg: "init needs"},
		{name: "init default mixed with pair", in: "init 5 1=2\n", line: 1, msg: "not address=value"},
		{name: "init pair without value", in: "init 1=\n", line: 1, msg: "initial value"},
		{name: "init pair without address", in: "init =1\n", line: 1, msg: "address"},
		{name: "init pair with two =", in: "init 1=2=3\n", line: 1, msg: "not a number"},
		{name: "init default not a number", in: "init x\n", line: 1, msg: "not a number"},

		// Comments, line endings, blanks.
		{name: "trailing comments", in: "1 inv read 1 # why\n1 ret 0#no space\n", events: 2},
		{name: "comment with UTF-8", in: "# héllo ✓ 世界\n1 inv read 1 # ✓\n", events: 1},
		{name: "comment with invalid UTF-8", in: "1 inv read 1\n# bad \xff\xfe\n", line: 2, msg: "not valid UTF-8"},
		{name: "trailing comment with invalid UTF-8", in: "\n\n1 inv read 1 # \xc3\n", line: 3, msg: "not valid UTF-8"},
		{name: "CRLF", in: "pmlin-history v1\r\ninit 0\r\n1 inv read 1 2\r\n1 ret 0 0\r\n\r\ncrash\r\n", events: 3},
		{name: "CRLF without final newline", in: "1 inv read 1\r\n1 ret 0", events: 2},
		{name: "bare CR inside a line", in: "1 inv read 1\r2 inv read 2\n", line: 1, msg: "unexpected character"},
		{name: "tabs and runs of blanks", in: "\t1\tinv  read\t \t1   2\t\n  1 ret\t0 \t 0  \n", events: 2},
		{name: "blank lines count", in: "\n\n\n1 ret 0\n", line: 4, msg: "no pending operation"},
		{name: "non-ASCII outside a comment", in: "1 inv read 1é\n", line: 1, msg: "unexpected character"},

		// Numbers.
		{name: "hex and decimal", in: "1 inv cas 0x10:0X0:0xaBcD 17:0:4096\n1 ret ok\n", events: 2},
		{name: "leading zeros", in: "1 inv read 007 0x0008\n1 ret 00 0x0\n", events: 2},
		{name: "max uint64 decimal", in: "1 inv read 18446744073709551615\n1 ret 18446744073709551615\n", events: 2},
		{name: "max uint64 hex", in: "1 inv read 0xffffffffffffffff\n1 ret 0xFFFFFFFFFFFFFFFF\n", events: 2},
		{name: "long hex with leading zeros", in: "1 inv read 0x00000000000000000000001\n", events: 1},
		{name: "decimal overflow", in: "1 inv read 18446744073709551616\n", line: 1, msg: "does not fit in 64 bits"},
		{name: "decimal overflow big", in: "1 inv read 1\n1 ret 99999999999999999999999\n", line: 2, msg: "does not fit in 64 bits"},
		{name: "hex overflow", in: "1 inv read 0x10000000000000000\n", line: 1, msg: "does not fit in 64 bits"},
		{name: "init value overflow", in: "init 1=18446744073709551616\n", line: 1, msg: "does not fit in 64 bits"},
		{name: "cas new value overflow", in: "1 inv cas 1:0:0x1ffffffffffffffff\n", line: 1, msg: "does not fit in 64 bits"},
		{name: "bare 0x", in: "1 inv read 0x\n", line: 1, msg: "not a number"},
		{name: "bad hex digit", in: "1 inv read 0x1g\n", line: 1, msg: "not a number"},
		{name: "negative number", in: "1 inv read -1\n", line: 1, msg: "is negative"},
		{name: "plus sign", in: "1 inv read +1\n", line: 1, msg: "not a number"},
		{name: "underscore", in: "1 inv read 1_000\n", line: 1, msg: "not a number"},
		{name: "float", in: "1 inv read 1.5\n", line: 1, msg: "not a number"},
		{name: "octal-looking 0o", in: "1 inv read 0o7\n", line: 1, msg: "not a number"},

		// Process ids.
		{name: "process 0", in: "0 inv read 1\n0 ret 0\n", events: 2},
		{name: "process max", in: "2147483647 inv read 1\n2147483647 ret 0\n", events: 2},
		{name: "process leading zeros", in: "01 inv read 1\n1 ret 0\n", events: 2},
		{name: "process too large", in: "2147483648 inv read 1\n", line: 1, msg: "larger than 2147483647"},
		{name: "process far too large", in: "99999999999 inv read 1\n", line: 1, msg: "process id"},
		{name: "process hex", in: "0x1 inv read 1\n", line: 1, msg: "process id"},
		{name: "process negative", in: "-1 inv read 1\n", line: 1, msg: "process id \"-1\" is negative"},
		{name: "process with letters", in: "1a inv read 1\n", line: 1, msg: "process id"},
		{name: "process alone", in: "1\n", line: 1, msg: "expected inv or ret"},
		{name: "process with unknown verb", in: "1 call read 1\n", line: 1, msg: "expected inv or ret"},

		// Invocations.
		{name: "inv without op", in: "1 inv\n", line: 1, msg: "inv needs read, cas or swap"},
		{name: "inv unknown op", in: "1 inv write 1\n", line: 1, msg: "unknown operation"},
		{name: "read k=0", in: "1 inv read\n", line: 1, msg: "no address"},
		{name: "cas k=0", in: "1 inv cas\n", line: 1, msg: "no address"},
		{name: "read duplicate address", in: "1 inv read 10 11 10\n", line: 1, msg: "address 10 appears twice"},
		{name: "read duplicate address hex", in: "1 inv read 16 0x10\n", line: 1, msg: "appears twice"},
		{name: "cas duplicate address", in: "1 inv cas 10:0:1 10:1:2\n", line: 1, msg: "address 10 appears twice"},
		{name: "cas word with two fields", in: "1 inv cas 10:0\n", line: 1, msg: "not address:expected:new"},
		{name: "cas word with four fields", in: "1 inv cas 10:0:1:2\n", line: 1, msg: "not address:expected:new"},
		{name: "cas word with one field", in: "1 inv cas 10\n", line: 1, msg: "not address:expected:new"},
		{name: "cas word empty expected", in: "1 inv cas 10::1\n", line: 1, msg: "expected value"},
		{name: "cas word empty address", in: "1 inv cas :0:1\n", line: 1, msg: "address"},
		{name: "cas word empty new", in: "1 inv cas 10:0:\n", line: 1, msg: "new value"},
		{name: "cas word with blank inside", in: "1 inv cas 10: 0:1\n", line: 1, msg: "not address:expected:new"},
		{name: "swap", in: "1 inv swap 10:5 11:0x6\n1 ret 0 0\n", events: 2},
		{name: "swap k=0", in: "1 inv swap\n", line: 1, msg: "swap invocation with no address"},
		{name: "swap duplicate address", in: "1 inv swap 10:1 10:2\n", line: 1, msg: "address 10 appears twice"},
		{name: "swap word with one field", in: "1 inv swap 10\n", line: 1, msg: "not address:new"},
		{name: "swap word shaped like a cas word", in: "1 inv swap 10:0:1\n", line: 1, msg: "swap word \"10:0:1\" is not address:new"},
		{name: "swap word empty new", in: "1 inv swap 10:\n", line: 1, msg: "new value"},
		{name: "swap word bad address", in: "1 inv swap x:1\n", line: 1, msg: "address \"x\" is not a number"},

		// Alternation of inv and ret per process.
		{name: "ret without inv", in: "1 ret 0\n", line: 1, msg: "process 1 returns but has no pending operation"},
		{name: "ret of another process", in: "1 inv read 1\n2 ret 0\n", line: 2, msg: "process 2 returns but has no pending"},
		{name: "two ret", in: "1 inv read 1\n1 ret 0\n1 ret 0\n", line: 3, msg: "no pending operation"},
		{name: "two inv", in: "1 inv read 1\n# c\n1 inv read 2\n", line: 3, msg: "operation of line 1 is pending"},
		{name: "interleaved processes", in: "1 inv read 1\n2 inv read 1\n2 ret 0\n1 ret 0\n", events: 4},
		{name: "read ret too few", in: "1 inv read 1 2 3\n1 ret 0 0\n", line: 2, msg: "has 3 addresses but returns 2 values"},
		{name: "read ret too many", in: "1 inv read 1\n1 ret 0 0\n", line: 2, msg: "has 1 addresses but returns 2 values"},
		{name: "read ret none", in: "1 inv read 1\n1 ret\n", line: 2, msg: "returns 0 values"},
		{name: "read ret ok", in: "1 inv read 1\n1 ret ok\n", line: 2, msg: "not a number"},
		{name: "cas ret ok", in: "1 inv cas 1:0:5\n1 ret ok\n", events: 2},
		{name: "cas ret fail", in: "1 inv cas 1:0:5 2:0:6\n1 ret fail 2\n", events: 2},
		{name: "cas ret fail hex address", in: "1 inv cas 16:0:5\n1 ret fail 0x10\n", events: 2},
		{name: "cas ret fail other address", in: "1 inv cas 1:0:5 2:0:6\n1 ret fail 3\n", line: 2, msg: "fails at address 3, which is not one of its addresses"},
		{name: "cas ret fail without address", in: "1 inv cas 1:0:5\n1 ret fail\n", line: 2, msg: "must return"},
		{name: "cas ret fail too few values", in: "1 inv cas 1:0:5 2:0:6\n1 ret fail 1 2\n", line: 2, msg: "the cas of line 1 has 2 addresses but its failure reports 1 values"},
		{name: "cas ret fail too many values", in: "1 inv cas 1:0:5\n1 ret fail 1 2 3\n", line: 2, msg: "has 1 addresses but its failure reports 2 values"},
		{name: "cas ret fail with values", in: "1 inv cas 1:0:5 2:0:6\n1 ret fail 2 0 7\n", events: 2},
		{name: "cas ret fail with values at another address", in: "1 inv cas 1:0:5 2:0:6\n1 ret fail 3 0 7\n", line: 2, msg: "fails at address 3, which is not one of its addresses"},
		{name: "cas ret fail with a bad value", in: "1 inv cas 1:0:5\n1 ret fail 1 ok\n", line: 2, msg: "reported value \"ok\" is not a number"},
		// A failure reporting its own expected value at the blamed
		// address contradicts itself: an anomaly, not an input error.
		{name: "cas ret fail reporting the expected value", in: "1 inv cas 1:0:5\n1 ret fail 1 0\n", events: 2},
		{name: "cas ret fail bad address", in: "1 inv cas 1:0:5\n1 ret fail x\n", line: 2, msg: "not a number"},
		{name: "cas ret ok extra", in: "1 inv cas 1:0:5\n1 ret ok 1\n", line: 2, msg: "must return"},
		{name: "cas ret values", in: "1 inv cas 1:0:5\n1 ret 5\n", line: 2, msg: "must return"},
		{name: "cas ret nothing", in: "1 inv cas 1:0:5\n1 ret\n", line: 2, msg: "must return"},
		{name: "cas ret OK uppercase", in: "1 inv cas 1:0:5\n1 ret OK\n", line: 2, msg: "must return"},
		{name: "swap ret too few", in: "1 inv swap 1:5 2:6\n1 ret 0\n", line: 2, msg: "the swap of line 1 has 2 addresses but returns 1 values"},
		{name: "swap ret none", in: "1 inv swap 1:5\n1 ret\n", line: 2, msg: "returns 0 values"},
		{name: "swap ret ok", in: "1 inv swap 1:5\n1 ret ok\n", line: 2, msg: "returned value \"ok\" is not a number"},
		{name: "swap ret fail", in: "1 inv swap 1:5\n1 ret fail 1\n", line: 2, msg: "not a number"},

		// Crashes.
		{name: "crash", in: "crash\ncrash\n", events: 2},
		{name: "crash with argument", in: "crash now\n", line: 1, msg: "nothing after"},
		{name: "crash uppercase", in: "CRASH\n", line: 1, msg: "unknown directive"},
		{name: "ret after crash", in: "1 inv read 1\ncrash\n1 ret 0\n", line: 3, msg: "no pending operation"},
		{name: "cas ret after crash", in: "1 inv cas 1:0:5\n2 inv read 1\ncrash\n2 inv read 1\n2 ret 5\n1 ret ok\n", line: 6, msg: "process 1 returns but has no pending"},
		{name: "inv after crash by the interrupted process", in: "1 inv cas 1:0:5\ncrash\n1 inv read 1\n1 ret 5\n", events: 4},
		{name: "pending at the end", in: "1 inv cas 1:0:5\n2 inv read 1\n", events: 2},

		// Unknown directives.
		{name: "unknown directive", in: "1 inv read 1\nfoo bar\n", line: 2, msg: `unknown directive "foo"`},
		{name: "verb first", in: "inv read 1\n", line: 1, msg: "unknown directive"},
		{name: "JSON line in a text history", in: "1 inv read 1\n{\"crash\":true}\n", line: 2, msg: "unknown directive"},
		{name: "long unknown directive is clipped", in: strings.Repeat("z", 100) + "\n", line: 1, msg: strings.Repeat("z", 40) + "..."},

		// Binary input.
		{name: "NUL byte", in: "1 inv read 1\x00\n", line: 1, msg: "NUL byte"},
		{name: "NUL byte on line 2", in: "crash\n\x00\x00\x00\n", line: 2, msg: "NUL byte"},
		{name: "NUL byte in a comment", in: "# \x00\n", line: 1, msg: "NUL byte"},
		{name: "a few control characters", in: "1 inv read 1\n\x7f\x02\x01\n", line: 2, msg: "unexpected character"},
		{name: "control character", in: "1 inv read 1\x01\n", line: 1, msg: "unexpected character"},

		// Truncated last line.
		{name: "last line complete without newline", in: "1 inv read 1\n1 ret 0", events: 2},
		{name: "last line cut mid cas word", in: "1 inv cas 10:0", line: 1, msg: "not address:expected:new"},
		{name: "last line cut after colon", in: "1 inv read 1\n1 ret 0\n1 inv cas 10:0:", line: 3, msg: "new value"},
		{name: "last line cut mid read ret", in: "1 inv read 1 2\n1 ret 0", line: 2, msg: "returns 1 values"},
		{name: "last line cut mid fail", in: "1 inv cas 1:0:5\n1 ret fail", line: 2, msg: "must return"},
		{name: "last line cut mid header", in: "pmlin-history", line: 1, msg: "header"},
		{name: "last line cut mid hex", in: "1 inv read 0x", line: 1, msg: "not a number"},
		{name: "last line is a comment", in: "1 inv read 1\n# end", events: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs, _, err := readEvents(tc.in, history.Options{})
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(evs) != tc.events {
					t.Fatalf("%d events, want %d", len(evs), tc.events)
				}
				return
			}
			checkErr(t, err, tc.line, tc.msg)
		})
	}
}

// TestErrorIsSticky: after an error, Next keeps returning it.
func TestErrorIsSticky(t *testing.T) {
	r := history.NewReader(strings.NewReader("1 ret 0\n1 inv read 1\n"), "t.hist", history.Options{})
	_, err1 := r.Next()
	checkErr(t, err1, 1, "no pending")
	for i := 0; i < 3; i++ {
		if _, err := r.Next(); err != err1 {
			t.Fatalf("call %d: %v, want the same error %v", i, err, err1)
		}
	}
}

// TestIOError: a failing io.Reader gives a *history.Error naming the
// place (the line being read) and wrapping the I/O error, not a kind of
// malformed input.
func TestIOError(t *testing.T) {
	in := io.MultiReader(strings.NewReader("1 inv read 1\n"), iotest.ErrReader(errors.New("disk on fire")))
	r := history.NewReader(in, "t.hist", history.Options{})
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	var he *history.Error
	if !errors.As(err, &he) || !strings.Contains(he.Msg, "disk on fire") {
		t.Fatalf("got %v, want a *history.Error with the I/O error", err)
	}
	if he.Line != 2 {
		t.Errorf("I/O error at line %d, want 2 (the line being read)", he.Line)
	}
	if errors.Is(err, history.ErrMalformed) || he.Err == nil || he.Err.Error() != "disk on fire" {
		t.Errorf("I/O error %v wraps %v", err, he.Err)
	}
}

// TestEventFields checks the decoded events of a small history field by
// field, including the dense process indexes and a Return's InvLine and
// Addrs.
func TestEventFields(t *testing.T) {
	in := `pmlin-history v1
init 0
7 inv read 10 11
7 ret 0 0
7 inv cas 10:0:0x100001 11:0:0x100002
3 inv read 10
7 ret ok
3 ret 0x100001
3 inv cas 11:0x100002:0x300001 10:0x100001:0x300002
3 ret fail 10
crash
7 inv swap 10:0x100003
7 ret 0x100001
3 inv cas 10:0x100001:0x300003 11:0x100002:0x300004
3 ret fail 10 0x100003 0x100002
`
	evs, r, err := readEvents(in, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Event{
		{Kind: history.Invoke, Line: 3, Proc: 7, ProcIndex: 0, Op: history.Read, Addrs: []uint64{10, 11}, InvLine: 3, OpID: 0},
		{Kind: history.Return, Line: 4, Proc: 7, ProcIndex: 0, Op: history.Read, Addrs: []uint64{10, 11}, Values: []uint64{0, 0}, InvLine: 3, OpID: 0},
		{Kind: history.Invoke, Line: 5, Proc: 7, ProcIndex: 0, Op: history.CAS, Addrs: []uint64{10, 11},
			Expected: []uint64{0, 0}, New: []uint64{0x100001, 0x100002}, InvLine: 5, OpID: 1},
		{Kind: history.Invoke, Line: 6, Proc: 3, ProcIndex: 1, Op: history.Read, Addrs: []uint64{10}, InvLine: 6, OpID: 2},
		{Kind: history.Return, Line: 7, Proc: 7, ProcIndex: 0, Op: history.CAS, Addrs: []uint64{10, 11}, Expected: []uint64{0, 0}, OK: true, InvLine: 5, OpID: 1},
		{Kind: history.Return, Line: 8, Proc: 3, ProcIndex: 1, Op: history.Read, Addrs: []uint64{10}, Values: []uint64{0x100001}, InvLine: 6, OpID: 2},
		{Kind: history.Invoke, Line: 9, Proc: 3, ProcIndex: 1, Op: history.CAS, Addrs: []uint64{11, 10},
			Expected: []uint64{0x100002, 0x100001}, New: []uint64{0x300001, 0x300002}, InvLine: 9, OpID: 3},
		{Kind: history.Return, Line: 10, Proc: 3, ProcIndex: 1, Op: history.CAS, Addrs: []uint64{11, 10},
			Expected: []uint64{0x100002, 0x100001}, FailAddr: 10, InvLine: 9, OpID: 3},
		{Kind: history.Crash, Line: 11, Proc: -1, ProcIndex: -1, OpID: -1},
		{Kind: history.Invoke, Line: 12, Proc: 7, ProcIndex: 0, Op: history.Swap, Addrs: []uint64{10}, New: []uint64{0x100003}, InvLine: 12, OpID: 4},
		{Kind: history.Return, Line: 13, Proc: 7, ProcIndex: 0, Op: history.Swap, Addrs: []uint64{10}, Values: []uint64{0x100001}, OK: true, InvLine: 12, OpID: 4},
		{Kind: history.Invoke, Line: 14, Proc: 3, ProcIndex: 1, Op: history.CAS, Addrs: []uint64{10, 11},
			Expected: []uint64{0x100001, 0x100002}, New: []uint64{0x300003, 0x300004}, InvLine: 14, OpID: 5},
		{Kind: history.Return, Line: 15, Proc: 3, ProcIndex: 1, Op: history.CAS, Addrs: []uint64{10, 11},
			Expected: []uint64{0x100001, 0x100002}, Values: []uint64{0x100003, 0x100002}, FailAddr: 10, InvLine: 14, OpID: 5},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i := range want {
		if fmt.Sprintf("%+v", evs[i]) != fmt.Sprintf("%+v", want[i]) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, evs[i], want[i])
		}
	}
	if r.Format() != history.Text {
		t.Errorf("format %v, want text", r.Format())
	}
	if ev, ops, cr := history.ReaderCounts(r); ev != 13 || ops != 6 || cr != 1 {
		t.Errorf("counts = %d, %d, %d; want 13, 6, 1", ev, ops, cr)
	}
	if history.ReaderProcesses(r) != 2 {
		t.Errorf("processes = %d, want 2", history.ReaderProcesses(r))
	}
	if history.ReaderLastLine(r) != 15 {
		t.Errorf("lastLine = %d, want 15", history.ReaderLastLine(r))
	}
}

// TestCrashInterrupts: a crash lists the operations it cut off by their
// dense ids; a response names its operation's id. In text and JSON Lines.
func TestCrashInterrupts(t *testing.T) {
	for _, in := range []string{
		"1 inv read 1\n2 inv cas 1:0:5\n1 ret 0\n3 inv read 1\ncrash\n2 inv read 1\ncrash\ncrash\n",
		`{"p":1,"inv":"read","addrs":[1]}
{"p":2,"inv":"cas","words":[[1,0,5]]}
{"p":1,"ret":[0]}
{"p":3,"inv":"read","addrs":[1]}
{"crash":true}
{"p":2,"inv":"read","addrs":[1]}
{"crash":true}
{"crash":true}
`} {
		evs, _, err := readEvents(in, history.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range evs {
			got = append(got, fmt.Sprintf("%v %d %v", ev.Kind, ev.OpID, ev.Interrupted))
		}
		want := []string{"inv 0 []", "inv 1 []", "ret 0 []", "inv 2 []", "crash -1 [1 2]", "inv 3 []", "crash -1 [3]", "crash -1 []"}
		if !slices.Equal(got, want) {
			t.Errorf("%q:\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestErrorKindsAndColumns: each malformed input gets its kind, and text
// tokens their column.
func TestErrorKindsAndColumns(t *testing.T) {
	for _, tc := range []struct {
		in     string
		kind   error
		column int
	}{
		{"1 inv read x\n", history.ErrSyntax, 12},
		{"1 inv read 1 0x\n", history.ErrSyntax, 14},
		{"  1 inv cas 10::1\n", history.ErrSyntax, 16}, // an empty token: where it should be
		{"1 inv cas 10:0\n", history.ErrSyntax, 11},
		{"1 inv read 1\x01\n", history.ErrSyntax, 13},
		{"1 inv write 1\n", history.ErrSyntax, 7},
		{"foo\n", history.ErrSyntax, 1},
		{"2147483648 inv read 1\n", history.ErrSyntax, 1},
		{"1 ret 0\n", history.ErrIllFormed, 0},
		{"1 inv read 1\n1 ret 0 0\n", history.ErrIllFormed, 0},
		{"1 inv cas 1:0:5\n1 ret fail 2\n", history.ErrIllFormed, 0},
		{"1 inv cas 1:0:5\n1 ret 5\n", history.ErrIllFormed, 0},
		{"1 inv read 1 1\n", history.ErrIllFormed, 0},
		{"1 inv read 1\ninit 0\n", history.ErrIllFormed, 0},
		{`{"p":1,"ret":[0]}` + "\n", history.ErrIllFormed, 0},
		{`{"p":1,"inv":"read","addrs":["x"]}` + "\n", history.ErrSyntax, 0},
		{"1 inv read " + strings.Repeat("1 ", 5000) + "\n", history.ErrLimit, 0},
	} {
		_, _, err := readEvents(tc.in, history.Options{})
		var he *history.Error
		if !errors.As(err, &he) || !errors.Is(err, tc.kind) || !errors.Is(err, history.ErrMalformed) {
			t.Errorf("%.40q: %v (kind %v), want kind %v", tc.in, err, he.Err, tc.kind)
			continue
		}
		if he.Column != tc.column {
			t.Errorf("%.40q: %v: column %d, want %d", tc.in, err, he.Column, tc.column)
		}
	}
}

// TestInitValues: the header's initial values, through the Reader.
func TestInitValues(t *testing.T) {
	_, r, err := readEvents("init 0x1000\ninit 1=2 3=0x4\n1 inv read 1 3 5\n1 ret 2 4 0x1000\n", history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[uint64]uint64{1: 2, 3: 4, 5: 0x1000, 99: 0x1000} {
		if got := r.InitValue(a); got != want {
			t.Errorf("InitValue(%d) = %#x, want %#x", a, got, want)
		}
	}
	if r.InitDefault() != 0x1000 || len(r.InitWords()) != 2 {
		t.Errorf("InitDefault() = %#x, InitWords() = %v", r.InitDefault(), r.InitWords())
	}
	_, r, _ = readEvents("1 inv read 1\n", history.Options{})
	if r.InitDefault() != 0 || r.InitValue(1) != 0 {
		t.Errorf("default initial value is %#x, want 0", r.InitDefault())
	}
}

// TestReturnAddrsNotAliased is the regression test of a bug fixed in
// c71975f: a Return's Addrs aliased the buffer the next invocation filled,
// so another process's invocation overwrote the saved addresses of a
// pending cas and its "ret fail" was rejected.
func TestReturnAddrsNotAliased(t *testing.T) {
	in := "1 inv cas 1:0:5\n1 ret ok\n1 inv cas 2:0:6\n2 inv cas 3:0:7\n1 ret fail 2\n2 ret ok\n" +
		"1 inv read 4 5\n1 ret 0 0\n1 inv read 6 7\n2 inv read 8\n1 ret 0 0\n2 ret 0\n"
	evs, _, err := readEvents(in, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[4].Addrs; !slices.Equal(got, []uint64{2}) {
		t.Errorf("ret of line 5: Addrs %v, want [2]", got)
	}
	if got := evs[10].Addrs; !slices.Equal(got, []uint64{6, 7}) {
		t.Errorf("ret of line 11: Addrs %v, want [6 7]", got)
	}
}

// TestMaxWords: Options.MaxWords bounds k, the default is DefaultMaxWords.
func TestMaxWords(t *testing.T) {
	read := func(k int) string {
		var b strings.Builder
		b.WriteString("# k words\n1 inv read")
		for i := 0; i < k; i++ {
			fmt.Fprintf(&b, " %d", i)
		}
		b.WriteString("\n")
		return b.String()
	}
	cas := func(k int) string {
		var b strings.Builder
		b.WriteString("# k words\n1 inv cas")
		for i := 0; i < k; i++ {
			fmt.Fprintf(&b, " %d:0:%d", i, i+1)
		}
		b.WriteString("\n")
		return b.String()
	}
	for _, mk := range []func(int) string{read, cas} {
		if _, _, err := readEvents(mk(3), history.Options{MaxWords: 3}); err != nil {
			t.Errorf("k=3, MaxWords 3: %v", err)
		}
		_, _, err := readEvents(mk(4), history.Options{MaxWords: 3})
		checkErr(t, err, 2, "operation on 4 words; at most 3")
		if _, _, err := readEvents(mk(history.DefaultMaxWords), history.Options{}); err != nil {
			t.Errorf("k=DefaultMaxWords: %v", err)
		}
		_, _, err = readEvents(mk(history.DefaultMaxWords+1), history.Options{})
		checkErr(t, err, 2, "at most 4096")
	}
	// Duplicates among many words (the reader switches algorithm above 32).
	many := read(100)
	many = strings.TrimSuffix(many, "\n") + " 57\n"
	_, _, err := readEvents(many, history.Options{})
	checkErr(t, err, 2, "address 57 appears twice")
}

// TestMaxLineBytes: a line longer than Options.MaxLineBytes is rejected
// with its line number, whether it ends with a newline or the file ends.
func TestMaxLineBytes(t *testing.T) {
	const max = 64
	line := func(n int) string { // a valid read invocation of exactly n bytes
		s := "1 inv read 1"
		return s + strings.Repeat(" ", n-len(s))
	}
	opts := history.Options{MaxLineBytes: max}
	for _, tc := range []struct {
		name string
		in   string
		line int64
	}{
		{"short", "crash\n" + line(max-1) + "\n", 0},
		{"short at EOF", "crash\n" + line(max-1), 0},
		{"long", "crash\n\n" + line(max+1) + "\n1 ret 0\n", 3},
		{"long at EOF", "crash\n\n" + line(max+1), 3},
		{"much longer", "crash\n" + line(10*max) + "\n", 2},
		{"long comment", "# " + strings.Repeat("x", 2*max) + "\n", 1},
		{"long CRLF", "crash\r\n" + line(max+1) + "\r\n", 2},
		{"no newline", strings.Repeat("7", 5*max), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readEvents(tc.in, opts)
			if tc.line == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			checkErr(t, err, tc.line, "line longer than 64 bytes")
		})
	}
	// The default limit.
	_, _, err := readEvents("crash\n"+line(history.DefaultMaxLineBytes+1)+"\n", history.Options{})
	checkErr(t, err, 2, fmt.Sprintf("line longer than %d bytes", history.DefaultMaxLineBytes))
}

// TestMaxLineBytesSmall: with a limit below bufio's minimum buffer (16
// bytes) the last line of a file without a newline escapes the limit.
func TestMaxLineBytesSmall(t *testing.T) {
	opts := history.Options{MaxLineBytes: 4}
	_, _, err := readEvents("crash\n", opts)
	checkErr(t, err, 1, "line longer than 4 bytes")
	_, _, err = readEvents("crash", opts)
	checkErr(t, err, 1, "line longer than 4 bytes")
}

// TestLargeHistoryStreams: many events through the Reader, with line
// numbers counted right and nothing kept per event.
func TestLargeHistoryStreams(t *testing.T) {
	var b strings.Builder
	b.WriteString("pmlin-history v1\n")
	const n = 20000
	for i := 0; i < n; i++ {
		p := i % 7
		fmt.Fprintf(&b, "%d inv cas %d:0:%#x %d:0:%#x\n", p, 2*i, 0x100000+i, 2*i+1, 0x200000+i)
		fmt.Fprintf(&b, "%d ret ok\n", p)
		if i%1000 == 999 {
			b.WriteString("crash\n")
		}
	}
	b.WriteString("1 ret ok\n")
	evs, _, err := readEvents(b.String(), history.Options{})
	wantLine := int64(1 + 2*n + n/1000 + 1)
	checkErr(t, err, wantLine, "no pending")
	if len(evs) != 2*n+n/1000 {
		t.Errorf("%d events before the error, want %d", len(evs), 2*n+n/1000)
	}
}
