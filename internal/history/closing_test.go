package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// A recording of two operations by a recorder that promises its closing
// line, in its three endings and cut short in three ways.
const (
	promised    = "pmlin-history v1\n# a recorder\nrecording 2 operations\n1 inv read 1\n1 ret 0\n2 inv read 1 23\n2 ret 0 0\n"
	complete    = promised + "end\n# after the end, comments may follow\n\n"
	interrupted = "pmlin-history v1\nrecording 9 operations\n1 inv read 1\n1 ret 0\ninterrupted after 1 of 9 operations\n"
)

// readCut reads in with the Reader's options and the workers of
// readEvents, and returns its events (formatted) and Cut's error, for
// every way of reading it: sequentially, in parallel with chunks of a
// line or two and of the whole input (whose lines after the first the
// Reader applies as the workers decoded them), and with Prefix or not
// (then Next's last error is Cut's).
func readCut(t *testing.T, in string) ([]string, error) {
	t.Helper()
	var first []string
	var firstCut error
	for i, chunk := range []int{0, 16, 4096} {
		for _, prefix := range []bool{false, true} {
			r := NewReader(strings.NewReader(in), "t", Options{Prefix: prefix})
			if chunk > 0 {
				defer r.Parallel(2)()
				r.par.chunk = chunk
			}
			var evs []string
			var end error
			for {
				ev, err := r.Next()
				if err != nil {
					end = err
					break
				}
				evs = append(evs, fmt.Sprintf("%v %d %d %v %v %v %v", ev.Kind, ev.Line, ev.Proc, ev.Op, ev.Addrs, ev.Values, ev.OK))
			}
			cut := r.Cut()
			switch {
			case prefix && end != io.EOF:
				t.Fatalf("chunk %d, Prefix: %v, not EOF", chunk, end)
			case !prefix && cut == nil && end != io.EOF:
				t.Fatalf("chunk %d: %v", chunk, end)
			case !prefix && cut != nil && (end == nil || end.Error() != cut.Error()):
				t.Fatalf("chunk %d: Next ends with %v, Cut says %v", chunk, end, cut)
			}
			if i == 0 && !prefix {
				first, firstCut = evs, cut
			} else if strings.Join(evs, "|") != strings.Join(first, "|") || (cut == nil) != (firstCut == nil) || cut != nil && cut.Error() != firstCut.Error() {
				t.Fatalf("chunk %d, Prefix %v: %v, %v; sequentially %v, %v", chunk, prefix, evs, cut, first, firstCut)
			}
		}
	}
	return first, firstCut
}

func TestRecordingComplete(t *testing.T) {
	evs, cut := readCut(t, complete)
	if cut != nil || len(evs) != 4 {
		t.Fatalf("%v, %v", evs, cut)
	}
	// Without the promise, a history means what it always meant: a last
	// line without a line break is read, nothing is cut short.
	evs, cut = readCut(t, "1 inv read 1\n1 ret 0\n2 inv read 1 2")
	if cut != nil || len(evs) != 3 {
		t.Fatalf("no promise: %v, %v", evs, cut)
	}
}

// TestRecordingCutShort: a recording interrupted, or without its closing
// line, or cut in the middle of a line, is read as far as it goes, and
// then said to be cut short, naming the line.
func TestRecordingCutShort(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		events   int
		err      string
	}{
		{"interrupted", interrupted, 2, "t:5: the recording was interrupted after 1 of 9 operations"},
		{"no closing line", promised, 4, "t:7: the recording ends without its closing line (promised at line 3): it was cut short (2 operations, of the 2 it planned)"},
		// "2 ret 0 0" cut to "2 ret 0": the rest would read as a wrong
		// response; "2 inv read 1 23" cut to "2 inv read 1 2", as a
		// read of other words. Neither is read.
		{"cut in a line", promised[:len(promised)-3], 3, "t:7: the file ends in the middle of this line (it has no line break): the recording was cut short (2 operations before it, of the 2 it planned)"},
		{"cut in a number", promised[:len(promised)-len("3\n2 ret 0 0\n")], 2, "t:6: the file ends in the middle of this line"},
		{"cut in the closing line", complete[:strings.Index(complete, "end\n")+3], 4, "t:8: the file ends in the middle of this line"},
		{"json", `{"header":"pmlin-history v1"}` + "\n" + `{"recording":2}` + "\n" + `{"p":1,"inv":"read","addrs":[1]}` + "\n" + `{"interrupted":0,"of":"0x2"}` + "\n", 1,
			"t:4: the recording was interrupted after 0 of 2 operations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, cut := readCut(t, tc.in)
			var he *Error
			if len(evs) != tc.events || cut == nil || !strings.HasPrefix(cut.Error(), tc.err) || !errors.As(cut, &he) || !errors.Is(cut, ErrCutShort) || !errors.Is(cut, ErrMalformed) {
				t.Fatalf("%d events %v, cut %v", len(evs), evs, cut)
			}
			h, err := ReadAll(strings.NewReader(tc.in), "t")
			if h == nil || len(h.Ops) == 0 || err == nil || err.Error() != cut.Error() {
				t.Fatalf("ReadAll: %v, %v", h, err)
			}
		})
	}
}

func TestRecordingMalformed(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"1 inv read 1\nrecording 2 operations\n", "t:2: a recording line after the first event"},
		{"recording 2 operations\nrecording 2 operations\n", "t:2: the recording line is given twice (first at line 1)"},
		{"recording 2 operations\npmlin-history v1\n", "t:2: the pmlin-history header must be the first line"},
		{"recording 2\n", `t:1: the recording line is "recording <M> operations"`},
		{"recording x operations\n", `t:1:11: number of operations "x" is not a number`},
		{"end now\n", `t:1: the closing line is just "end"`},
		{"interrupted after 1 of 2\n", `t:1: the closing line of an interrupted recording is "interrupted after <N> of <M> operations"`},
		{"recording 1 operations\nend\n1 inv read 1\n", `t:3: the recording ended at line 2 ("end"): nothing but comments and blank lines may follow`},
		{"recording 1 operations\ninterrupted after 0 of 1 operations\ncrash\n", `t:3: the recording ended at line 2 ("interrupted")`},
		{"recording 1 operations\nend\nend\n", `t:3: the recording ended at line 2`},
		{`{"end":false}` + "\n", `t:1: the closing line is {"end":true}`},
		{`{"of":2}` + "\n", `t:1: a JSON line is exactly one of`},
		{`{"end":true,"of":2}` + "\n", `t:1: "of" belongs to an {"interrupted":N,"of":M} line`},
		{`{"interrupted":1}` + "\n", `t:1: the closing line of an interrupted recording is {"interrupted":N,"of":M}`},
		{`{"p":1,"inv":"read","addrs":[1],"end":true}` + "\n", `t:1: a JSON line is exactly one of`},
		{`{"end":true}` + "\n" + `{"p":1,"inv":"read","addrs":[1]}` + "\n", `t:2: the recording ended at line 1`},
	} {
		evs := readEvents(strings.NewReader(tc.in), Options{}, 0, 0)
		if last := evs[len(evs)-1]; !strings.HasPrefix(last, "error: "+tc.err) {
			t.Errorf("%q: %s", tc.in, last)
		}
	}
}

// writeRecording writes a recording of two operations with w, ending as
// closing says ("end", "interrupted" or "" for none).
func writeRecording(w EventWriter, closing string) {
	w.Header(0, nil)
	w.TextLine([]byte(RecordingLine(2)))
	w.InvokeRead(1, []uint64{1})
	w.ReturnRead(1, []uint64{0})
	w.InvokeCAS(2, []uint64{1}, []uint64{0}, []uint64{5})
	w.ReturnOK(2)
	switch closing {
	case "end":
		w.TextLine([]byte(EndLine))
	case "interrupted":
		w.TextLine([]byte(InterruptedLine(1, 2)))
	}
	w.Flush()
}

// TestRecordingEveryWriter: the text, binary and in-memory writers write
// the directives as lines of the history (the binary as text records),
// which their readers take up alike; an in-memory recording's events stay
// on its fast path (Steps).
func TestRecordingEveryWriter(t *testing.T) {
	for _, closing := range []string{"end", "interrupted", ""} {
		var txt, bin bytes.Buffer
		writeRecording(NewWriter(&txt), closing)
		writeRecording(NewBinaryWriter(&bin), closing)
		var rc Recording
		writeRecording(&rc, closing)
		var fromRec bytes.Buffer
		rc.WriteTo(&fromRec)
		if fromRec.String() != txt.String() || !strings.Contains(txt.String(), "recording 2 operations\n") {
			t.Fatalf("%s: the recording writes\n%s\nthe writer\n%s", closing, fromRec.String(), txt.String())
		}
		var cuts []string
		for _, r := range []*Reader{NewReader(&txt, "t", Options{}), NewReader(&bin, "t", Options{}), rc.Reader("t", Options{}), rc.Reader("t", Options{})} {
			n, err := 0, error(nil)
			step := r.rec != nil && len(cuts) == 3
			if r.rec != nil && !r.stepsOnly() {
				t.Fatalf("%s: the directives turned the recording's Steps off", closing)
			}
			for err == nil {
				if step {
					_, err = r.NextStep()
				} else {
					_, err = r.Next()
				}
				n++
			}
			if n != 5 {
				t.Fatalf("%s: %d events before %v", closing, n-1, err)
			}
			cuts = append(cuts, err.Error())
		}
		want := map[string]string{"end": "EOF", "interrupted": "t:7: the recording was interrupted after 1 of 2 operations",
			"": "t:6: the recording ends without its closing line"}[closing]
		for _, c := range cuts {
			if !strings.HasPrefix(c, want) {
				t.Fatalf("%s: %q", closing, cuts)
			}
		}
	}
	// A line that may be an event turns Steps off; the directives do not.
	for line, none := range map[string]bool{"end": true, "  recording 3 operations": true, "interrupted after 1 of 2 operations": true,
		"# end": true, "": true, "init 1=2": true, "1 inv read 1": false, "crash": false, "ending": false} {
		if holdsNoEvent([]byte(line)) != none {
			t.Errorf("%q: holds no event %v", line, !none)
		}
	}
}

// TestRecordingConverted: the directives keep their lines through every
// conversion, JSON Lines to text included; a recording cut short is not
// converted (as any malformed input).
func TestRecordingConverted(t *testing.T) {
	jsonl := `{"header":"pmlin-history v1"}` + "\n" + `{"recording":2}` + "\n" + `{"p":1,"inv":"read","addrs":[1]}` + "\n" + `{"p":1,"ret":[0]}` + "\n" + `{"end":true}` + "\n"
	var txt bytes.Buffer
	if _, err := Convert(context.Background(), NewWriter(&txt), strings.NewReader(jsonl), "t", Options{}); err != nil {
		t.Fatal(err)
	}
	if want := "pmlin-history v1\nrecording 2 operations\n1 inv read 1\n1 ret 0\nend\n"; txt.String() != want {
		t.Fatalf("%q", txt.String())
	}
	var bin, back bytes.Buffer
	if _, err := Convert(context.Background(), NewBinaryWriter(&bin), strings.NewReader(complete), "t", Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(context.Background(), NewWriter(&back), &bin, "t", Options{}); err != nil || back.String() != complete {
		t.Fatalf("%v\n%s", err, back.String())
	}
	if _, err := Convert(context.Background(), NewWriter(io.Discard), strings.NewReader(interrupted), "t", Options{}); !errors.Is(err, ErrCutShort) {
		t.Fatalf("converted an interrupted recording: %v", err)
	}
}
