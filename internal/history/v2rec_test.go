package history

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/wire"
	"github.com/pmlin/pmlin/model"
)

// recordV2 keeps the version 2 text history text in a Recording as a
// recorder would give it: operations of objects of models other than
// words by InvokeOp and ReturnOp, crashes by Crash, every other line
// (header, declarations, comments, words operations) by TextLine.
func recordV2(t *testing.T, name string, text []byte) *Recording {
	t.Helper()
	h, err := ReadV2(bytes.NewReader(text), name)
	if err != nil {
		t.Fatal(err)
	}
	inv, ret, crash := map[int64]int{}, map[int64]int{}, map[int64]bool{}
	for i, op := range h.Ops {
		if h.Objects[op.Object].Model != wordsModel {
			inv[op.Line] = i
			if op.RetLine > 0 {
				ret[op.RetLine] = i
			}
		}
	}
	for _, c := range h.Crashes {
		crash[c.Line] = true
	}
	rc := &Recording{}
	for i, l := range bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n")) {
		line := int64(i + 1)
		if j, ok := inv[line]; ok {
			op := &h.Ops[j]
			rc.InvokeOp(int32(op.Proc), h.Objects[op.Object].Name, op.Name, op.Args)
		} else if j, ok := ret[line]; ok {
			rc.ReturnOp(int32(h.Ops[j].Proc), h.Ops[j].Results, h.Ops[j].Status == model.Unknown)
		} else if crash[line] {
			rc.Crash()
		} else {
			rc.TextLine(l)
		}
	}
	return rc
}

// TestRecordingHistory: a Recording of every version 2 text history of
// testdata/v2 builds the History ReadV2 reads from the text (the same
// operations, values, lines and positions), and writes the text back
// byte for byte (every file there is written as pmlin writes it).
func TestRecordingHistory(t *testing.T) {
	files, _ := filepath.Glob("testdata/v2/*.hist")
	if len(files) < 20 {
		t.Fatalf("%d version 2 histories under testdata/v2", len(files))
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ReadV2(bytes.NewReader(text), f)
		if err != nil {
			t.Fatal(err)
		}
		rc := recordV2(t, f, text)
		got, err := rc.History(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the recording's History is not ReadV2's:\n got %+v\nwant %+v", f, got, want)
		}
		var out bytes.Buffer
		rc.WriteTo(&out)
		back, err := ReadV2(bytes.NewReader(out.Bytes()), f)
		if err != nil || !reflect.DeepEqual(back, want) {
			t.Errorf("%s: the recording's text does not read back to the history (%v):\n%s", f, err, out.Bytes())
		}
		if !bytes.Equal(out.Bytes(), text) {
			t.Errorf("%s: the recording's text is not the file's:\n%s", f, out.Bytes())
		}
	}
}

// TestRecordingHistoryErrors: the errors of recorded operations are
// ReadV2's of their text lines, at the same line (without a column: a
// record has no tokens), and malformed records are refused, never read.
func TestRecordingHistoryErrors(t *testing.T) {
	head := func(rc *Recording) {
		rc.TextLine([]byte("pmlin-history v2"))
		rc.TextLine([]byte("object q queue"))
	}
	one := []model.Value{model.Number(1)}
	tests := []struct {
		name string
		rec  func(rc *Recording)
		text string // the same history in text, whose error it is ("" none)
		want string
	}{
		{"undeclared object", func(rc *Recording) { head(rc); rc.InvokeOp(1, "s", "add", one) },
			"pmlin-history v2\nobject q queue\n1 inv s add 1\n", `:3: object s is not declared`},
		{"response without invocation", func(rc *Recording) { head(rc); rc.ReturnOp(1, one, false) },
			"pmlin-history v2\nobject q queue\n1 ret 1\n", `:3: process 1 returns but has no pending operation`},
		{"response after a crash", func(rc *Recording) { head(rc); rc.InvokeOp(1, "q", "enq", one); rc.Crash(); rc.ReturnOp(1, one, false) },
			"pmlin-history v2\nobject q queue\n1 inv q enq 1\ncrash\n1 ret 1\n", `:5: process 1 returns but has no pending operation: its operation of line 3 was cut off by the crash of line 4`},
		{"two invocations", func(rc *Recording) { head(rc); rc.InvokeOp(1, "q", "enq", one); rc.InvokeOp(1, "q", "deq", nil) },
			"pmlin-history v2\nobject q queue\n1 inv q enq 1\n1 inv q deq\n", `:4: process 1 invokes an operation while its operation of line 3 is pending`},
		{"no results", func(rc *Recording) { head(rc); rc.InvokeOp(1, "q", "deq", nil); rc.ReturnOp(1, nil, false) },
			"pmlin-history v2\nobject q queue\n1 inv q deq\n1 ret\n", `:4: process 1: a response has its results, or ? (unknown)`},
		{"no header", func(rc *Recording) { rc.InvokeOp(1, "q", "enq", one) },
			"", `:1: a version 2 history starts with the line "pmlin-history v2"`},
		{"bad operation name", func(rc *Recording) { head(rc); rc.InvokeOp(1, "q", "Enq", one) },
			"", `:3: process 1: operation name "Enq" is not a name`},
		{"not a value", func(rc *Recording) { head(rc); rc.InvokeOp(1, "q", "enq", []model.Value{{Sym: 9}}) },
			"", `:3: process 1: symbol 9 with number 0 is not one of the format's values`},
		{"a symbol with a number", func(rc *Recording) { head(rc); rc.InvokeOp(1, "q", "enq", []model.Value{{Sym: model.OK, N: 1}}) },
			"", `:3: process 1: symbol 2 with number 1 is not one of the format's values`},
		{"invocation's words disagree", func(rc *Recording) {
			head(rc)
			rc.recordOf(wire.RecInvOp, 3, 1, []uint64{wire.OpHead(1, 1, 3), 0, 0})
		}, "", `:3: process 1: an invocation's record of 3 words does not hold what its first word says`},
		{"response's words disagree", func(rc *Recording) {
			head(rc)
			rc.InvokeOp(1, "q", "deq", nil)
			rc.recordOf(wire.RecRetOp, 1, 1, []uint64{1})
		}, "", `:4: process 1: a response's record of 1 words does not hold what its first word says (1 results)`},
		{"names not zero-padded", func(rc *Recording) {
			head(rc)
			rc.recordOf(wire.RecInvOp, 2, 1, []uint64{wire.OpHead(0, 1, 3), 'q' | 'd'<<8 | 'e'<<16 | 'q'<<24 | 'x'<<32})
		}, "", `:3: process 1: an invocation's names are not zero-padded`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rc Recording
			tt.rec(&rc)
			_, err := rc.History("r")
			var he *Error
			if err == nil || !errors.As(err, &he) || !strings.Contains(err.Error(), "r"+tt.want) {
				t.Fatalf("History: %v, want an *Error with %q", err, tt.want)
			}
			if tt.text == "" {
				return
			}
			_, terr := ReadV2(strings.NewReader(tt.text), "r")
			var te *Error
			if !errors.As(terr, &te) || te.Msg != he.Msg || te.Line != he.Line || te.Err != he.Err {
				t.Errorf("the text's error is %v, the recording's %v", terr, err)
			}
		})
	}
}

// TestRecordingOpText: WriteTo writes an object's operations as the
// text of version 2, an unknown response as "?", values as pmlin writes
// them, and a Writer given the same calls writes the same.
func TestRecordingOpText(t *testing.T) {
	var rc Recording
	var text bytes.Buffer
	w := NewWriter(&text)
	for _, ow := range []ObjectWriter{&rc, w} {
		ow.TextLine([]byte("pmlin-history v2"))
		ow.TextLine([]byte("object long-object-name map"))
		ow.InvokeOp(3, "long-object-name", "put", []model.Value{model.Number(4096), model.Number(7)})
		ow.ReturnOp(3, []model.Value{model.Sym(model.Nil)}, false)
		ow.InvokeOp(12, "long-object-name", "get", []model.Value{model.Number(4096)})
		ow.ReturnOp(12, []model.Value{model.Number(1)}, true)
	}
	w.Flush()
	want := "pmlin-history v2\nobject long-object-name map\n3 inv long-object-name put 0x1000 7\n3 ret nil\n12 inv long-object-name get 0x1000\n12 ret ?\n"
	var out bytes.Buffer
	rc.WriteTo(&out)
	if out.String() != want || text.String() != want {
		t.Errorf("recording's text:\n%s\nwriter's:\n%s\nwant:\n%s", out.String(), text.String(), want)
	}
}

// benchObjectRecording records a queue history shaped as a fuzz run of a
// data-structure target's (4 processes, 1000 operations).
func benchObjectRecording(rc *Recording) {
	rc.Reset()
	rc.TextLine([]byte("pmlin-history v2"))
	rc.TextLine([]byte("object dqueue queue"))
	arg := make([]model.Value, 1)
	res := []model.Value{model.Sym(model.OK)}
	for i := 0; i < 1000; i += 4 {
		for p := range int32(4) {
			if p%2 == 0 {
				arg[0] = model.Number(uint64(p+1)<<32 | uint64(i))
				rc.InvokeOp(p, "dqueue", "enq", arg)
			} else {
				rc.InvokeOp(p, "dqueue", "deq", nil)
			}
		}
		for p := range int32(4) {
			if p%2 == 0 {
				rc.ReturnOp(p, res, false)
			} else {
				rc.ReturnOp(p, []model.Value{model.Sym(model.Empty)}, false)
			}
		}
	}
}

// BenchmarkObjectHistory is the check's way to a model.History from a
// recording: built from the records (History) or, as before, written as
// text and read back (ReadV2).
func BenchmarkObjectHistory(b *testing.B) {
	var rc Recording
	b.Run("records", func(b *testing.B) {
		for b.Loop() {
			benchObjectRecording(&rc)
			if _, err := rc.History("<run>"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("text", func(b *testing.B) {
		var text bytes.Buffer
		for b.Loop() {
			benchObjectRecording(&rc)
			text.Reset()
			rc.WriteTo(&text)
			if _, err := ReadV2(bytes.NewReader(text.Bytes()), "<run>"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
