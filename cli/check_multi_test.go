package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/wire"
)

// TestCheckNoOperationFails: a history without any operation is a
// recorder's mistake, never a pass: exit 2, by the graph method and by
// --exact, in text and in JSON.
func TestCheckNoOperationFails(t *testing.T) {
	for _, in := range []string{"", "\n\n", "# the recorder never flushed\n", "pmlin-history v1\ninit 0\n", "crash\ncrash\n", `{"header":"pmlin-history v1"}` + "\n"} {
		for _, flags := range [][]string{nil, {"--exact"}, {"--json"}, {"--exact", "--json"}} {
			code, out, errs := pmlin(t, in, append(append([]string{"check"}, flags...), "-")...)
			if code != 2 || !strings.Contains(errs, "<stdin>: no operation: the history is empty") {
				t.Fatalf("%q %v: exit %d\n%s\n%s", in, flags, code, out, errs)
			}
			if len(flags) > 0 && flags[len(flags)-1] == "--json" {
				e := errorObject(t, out)
				if e.Kind != "malformed" || e.File != "<stdin>" || e.Line != 0 || !strings.HasPrefix(e.Message, "no operation") {
					t.Fatalf("%q %v: %+v", in, flags, e)
				}
			} else if strings.Contains(out, "LINEARIZABLE") {
				t.Fatalf("%q %v: a verdict was printed: %s", in, flags, out)
			}
		}
	}
}

// errorObject decodes the one error object of standard output.
func errorObject(t *testing.T, out string) checkErrorJSON {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var e errorJSON
	dec := json.NewDecoder(strings.NewReader(lines[len(lines)-1]))
	dec.DisallowUnknownFields()
	if len(lines) != 1 || dec.Decode(&e) != nil || e.Error.Kind == "" {
		t.Fatalf("standard output is not one error object: %q", out)
	}
	return e.Error
}

// TestCheckJSONErrors: with --json, exit 2 still prints one JSON object,
// whose kind tells what went wrong.
func TestCheckJSONErrors(t *testing.T) {
	malformed := writeFile(t, "bad.hist", "1 inv read 3\n1 ret 0 zz\n")
	coarse := coarseBinary(t)
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  checkErrorJSON
	}{
		{"malformed", []string{"check", "--json", malformed}, "", checkErrorJSON{Kind: "malformed", File: malformed, Line: 2, Column: 9, Message: `returned value "zz" is not a number (decimal or 0x hex)`}},
		{"assumption", []string{"check", "--json", "-"}, "1 inv cas 1:0:5\n1 ret ok\n2 inv cas 1:0:5\n2 ret ok\n", checkErrorJSON{Kind: "assumption", File: "<stdin>", Line: 3, Message: "breaks Assumption 1"}},
		{"assumption: a clock too coarse", []string{"check", "--json", coarse}, "", checkErrorJSON{Kind: "assumption", File: coarse, Line: 6, Message: "process 1 responds and invokes its next operation at timestamp 10, as process 0 does (its response at line 4)"}},
		{"io", []string{"check", "--json", "/nonexistent/x.hist"}, "", checkErrorJSON{Kind: "io", File: "/nonexistent/x.hist", Message: "no such file"}},
		{"usage: unknown flag", []string{"check", "--json", "--frobnicate", "-"}, "", checkErrorJSON{Kind: "usage", Message: "unknown flag: --frobnicate"}},
		{"usage: flag after", []string{"check", "--frobnicate", "--json", "-"}, "", checkErrorJSON{Kind: "usage", Message: "unknown flag"}},
		{"usage: no file", []string{"check", "--json"}, "", checkErrorJSON{Kind: "usage", Message: "check needs at least one FILE"}},
		{"usage: mode", []string{"check", "--json", "--mode", "eventual", "-"}, "", checkErrorJSON{Kind: "usage", Message: "unknown mode"}},
		{"usage: report with two files", []string{"check", "--json", "--report", "r.html", "a", "b"}, "", checkErrorJSON{Kind: "usage", Message: "take one FILE, and 2 were given"}},
		{"usage: stdin twice", []string{"check", "--json", "-", "-"}, "", checkErrorJSON{Kind: "usage", Message: "standard input) can be read once only"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := pmlin(t, tc.stdin, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			got := errorObject(t, out)
			if got.Kind != tc.want.Kind || got.File != tc.want.File || got.Line != tc.want.Line || got.Column != tc.want.Column || !strings.Contains(got.Message, tc.want.Message) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			if !strings.Contains(errs, "pmlin: ") {
				t.Fatalf("no message on standard error: %q", errs)
			}
		})
	}
	// Without --json, standard output stays empty.
	if code, out, _ := pmlin(t, "", "check", malformed); code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

// coarseBinary writes a binary history whose two streams each respond and
// invoke again at timestamp 10, which no order of lines states honestly.
func coarseBinary(t *testing.T) string {
	t.Helper()
	rec := func(kind int, ts uint64, payload ...uint64) []uint64 {
		return append([]uint64{wire.StreamHead(kind, 1, ts)}, payload...)
	}
	stream := func(recs ...[]uint64) (out []uint64) {
		for _, r := range recs {
			out = append(out, r...)
		}
		return out
	}
	var b bytes.Buffer
	w := history.NewBinaryWriter(&b)
	w.Header(0, nil)
	w.BeginSection([]int32{0, 1})
	w.StreamBlock(0, stream(rec(wire.RecInvCAS, 10, 1, 0, 5), rec(wire.RecRetOK, 10), rec(wire.RecInvRead, 10, 1), rec(wire.RecRetValues, 10, 5)), true)
	w.StreamBlock(1, stream(rec(wire.RecInvRead, 10, 1), rec(wire.RecRetValues, 10, 0), rec(wire.RecInvRead, 10, 1), rec(wire.RecRetValues, 10, 0)), true)
	w.EndSection(8)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "coarse.pmlb", b.String())
}

// TestDescribeKinds: the kinds of the errors end-to-end tests cannot
// easily provoke (the analyzer's search budget, the exact checker's,
// an interrupt, a read error).
func TestDescribeKinds(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind string
		line int64
	}{
		{&analyzer.UndecidedError{File: "f", Line: 7, Msg: "too many ways"}, "undecided", 7},
		{fmt.Errorf("f: %w (use pmlin check without --exact)", fmt.Errorf("%w: the state budget ran out", exact.ErrTooLarge)), "undecided", 0},
		{fmt.Errorf("interrupted"), "undecided", 0},
		{context.Canceled, "undecided", 0},
		{&history.Error{File: "f", Line: 3, Err: errors.New("disk on fire"), Msg: "read error: disk on fire"}, "io", 3},
		{&history.Error{File: "f", Line: 3, Err: history.ErrLimit, Msg: "line longer than"}, "malformed", 3},
		{&history.Error{File: "f", Line: 3, Err: history.ErrCoarseClock, Msg: "process 1 responds and invokes"}, "assumption", 3},
		{errors.New("something else"), "io", 0},
		{&analyzer.MemoryError{File: "f", Line: 9, Need: 2 << 20, Limit: 1 << 20, Source: "--max-memory"}, "undecided", 9},
	} {
		d := describe(tc.err, "f", kindIO)
		if d.Kind != tc.kind || d.Line != tc.line || d.File != "f" {
			t.Errorf("%v: %+v, want kind %s line %d", tc.err, d, tc.kind, tc.line)
		}
	}
}

// TestCheckSeveralFiles: one verdict per file, in order, the exit status
// the worst; with --json, one object per line, each naming its file.
func TestCheckSeveralFiles(t *testing.T) {
	good := "../examples/linearizable.hist"
	bad := "../examples/dirty-bit.hist"
	broken := writeFile(t, "broken.hist", "1 ret 0\n")
	empty := writeFile(t, "empty.hist", "# nothing\n")
	for _, tc := range []struct {
		files []string
		code  int
	}{
		{[]string{good, good}, 0},
		{[]string{good, bad, good}, 1},
		{[]string{bad, broken}, 2},
		{[]string{broken, good}, 2},
		{[]string{good, empty}, 2},
	} {
		for _, exactFlag := range []bool{false, true} {
			args := []string{"check"}
			if exactFlag {
				args = append(args, "--exact")
			}
			code, out, errs := pmlin(t, "", append(args, tc.files...)...)
			if code != tc.code {
				t.Fatalf("%v: exit %d, want %d\n%s\n%s", tc.files, code, tc.code, out, errs)
			}
			// The verdicts come in the order of the files, then the tally.
			pos := 0
			for _, f := range tc.files {
				if f == broken || f == empty {
					if !strings.Contains(errs, "pmlin: "+f+":") {
						t.Fatalf("%v: no error for %s: %s", tc.files, f, errs)
					}
					continue
				}
				i := strings.Index(out[pos:], f+": ")
				if i < 0 {
					t.Fatalf("%v: no verdict for %s after byte %d:\n%s", tc.files, f, pos, out)
				}
				pos += i + 1
			}
			// The tally's last words are the exit status the command
			// returns.
			var n [3]int
			for _, f := range tc.files {
				switch f {
				case good:
					n[0]++
				case bad:
					n[1]++
				default:
					n[2]++
				}
			}
			want := fmt.Sprintf("\npmlin check: %d files: %d linearizable, %d not linearizable, %d with an error; exit status %d\n",
				len(tc.files), n[0], n[1], n[2], code)
			if !strings.HasSuffix(out, want) {
				t.Fatalf("%v: the tally is not %q:\n%s", tc.files, want, out)
			}

			code, out, _ = pmlin(t, "", append(append(args, "--json"), tc.files...)...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != tc.code || len(lines) != len(tc.files) {
				t.Fatalf("%v --json: exit %d, %d lines:\n%s", tc.files, code, len(lines), out)
			}
			for i, l := range lines {
				var v struct {
					File         string
					Linearizable *bool
					Error        *checkErrorJSON
				}
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatal(err)
				}
				f := tc.files[i]
				switch {
				case f == broken || f == empty:
					if v.Error == nil || v.Error.File != f || v.Error.Kind != "malformed" {
						t.Fatalf("line %d: %s", i, l)
					}
				case v.File != f || v.Linearizable == nil || *v.Linearizable != (f == good):
					t.Fatalf("line %d: %s", i, l)
				}
			}
		}
	}
}

// TestCheckSeveralInterrupted: files after an interrupt are not checked,
// and the tally says so, with the exit status 2 of the interrupt.
func TestCheckSeveralInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	good := "../examples/linearizable.hist"
	code := Command{Targets: testTargets, Stdout: &out, Stderr: &errb}.Run(ctx, []string{"check", good, good, good})
	if code != 2 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if want := "pmlin check: 3 files: 0 linearizable, 0 not linearizable, 1 with an error, 2 not checked (interrupted); exit status 2\n"; !strings.HasSuffix(out.String(), want) {
		t.Fatalf("the tally is not %q:\n%s", want, out.String())
	}
}

// TestCheckHintsConcatenatedLogs: per-thread logs put one after the other
// are not a history of the run; the check says so instead of blaming the
// primitive alone. Standard input is kept in memory for the hint (up to
// stdinHintBytes), so it gets the same one.
func TestCheckHintsConcatenatedLogs(t *testing.T) {
	// Thread 1 read what thread 2 wrote; thread 2's log was appended after
	// thread 1's.
	concatenated := "1 inv read 10\n1 ret 0x200001\n1 inv cas 11:0:0x100001\n1 ret ok\n" +
		"2 inv cas 10:0:0x200001\n2 ret ok\n2 inv read 11\n2 ret 0x100001\n"
	p := writeFile(t, "cat.hist", concatenated)
	code, out, _ := pmlin(t, "", "check", p)
	if code != 1 || !strings.Contains(out, "\nhint: line 1 observed at address 10 the value that line 5 wrote, but line 5 was invoked only after line 1 had returned") ||
		!strings.Contains(out, "looks like per-thread logs concatenated, not merged") || !strings.Contains(out, "Check your merge or clock") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out, _ = pmlin(t, concatenated, "check", "-")
	if code != 1 || !strings.Contains(out, "Check your merge or clock") || !strings.Contains(out, "concatenated") {
		t.Fatalf("stdin: exit %d:\n%s", code, out)
	}
	code, out, _ = pmlin(t, "", "check", "--json", p)
	var v struct{ Hints []string }
	if code != 1 || json.Unmarshal([]byte(out), &v) != nil || len(v.Hints) != 1 || !strings.Contains(v.Hints[0], "pmlin merge") {
		t.Fatalf("--json: exit %d: %s", code, out)
	}
	// An ordinary violation gets no hint.
	if _, out, _ := pmlin(t, "", "check", "--json", "../examples/dirty-bit.hist"); strings.Contains(out, "hints") {
		t.Fatalf("a hint for a real violation: %s", out)
	}
}

// TestCheckJSONOutputFailure: when --report cannot be written after the
// verdict was printed, the verdict stays the one object; exit 2.
func TestCheckJSONOutputFailure(t *testing.T) {
	code, out, errs := pmlin(t, "", "check", "--json", "--report", "/nonexistent/dir/r.html", "../examples/dirty-bit.hist")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var v struct{ File string }
	if code != 2 || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &v) != nil || v.File == "" || !strings.Contains(errs, "r.html") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestCappedBuffer: past its bound the copy is dropped, never half kept,
// and the writer never fails.
func TestCappedBuffer(t *testing.T) {
	c := &cappedBuffer{max: 8}
	for _, p := range []string{"1234", "5678"} {
		if n, err := c.Write([]byte(p)); n != 4 || err != nil {
			t.Fatal(n, err)
		}
	}
	if c.over || c.buf.String() != "12345678" {
		t.Fatalf("at the bound: over %v, %q", c.over, c.buf.String())
	}
	if n, err := c.Write([]byte("9")); n != 1 || err != nil || !c.over || c.buf.Len() != 0 {
		t.Fatalf("past the bound: %d %v over %v len %d", n, err, c.over, c.buf.Len())
	}
	c.Write([]byte("x"))
	if c.buf.Len() != 0 {
		t.Fatal("wrote after going over")
	}
}
