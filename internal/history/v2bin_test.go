package history

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/wire"
	"github.com/pmlin/pmlin/model"
)

// toBinaryV2 converts the version 2 history text to a binary history.
func toBinaryV2(t *testing.T, name string, text []byte) []byte {
	t.Helper()
	var bin bytes.Buffer
	st, err := ConvertV2(&bin, bytes.NewReader(text), name, Binary)
	if err != nil {
		t.Fatalf("%s to binary: %v", name, err)
	}
	if st.Lines != int64(bytes.Count(text, []byte("\n"))) {
		t.Fatalf("%s: %d lines converted of %d", name, st.Lines, bytes.Count(text, []byte("\n")))
	}
	return bin.Bytes()
}

// TestBinaryV2RoundTrip: every version 2 history of testdata/v2 converts
// to binary and back to the same bytes (text: its lines that hold no
// event are text records as they are, "init 10=0x5" too) or to what it
// converts to (JSON Lines), reads to the same History, and is told
// version 2.
func TestBinaryV2RoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/v2/*")
	if len(files) < 25 {
		t.Fatalf("%d files under testdata/v2", len(files))
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		syntax := Text
		if strings.HasSuffix(f, ".jsonl") {
			syntax = JSONL
		}
		bin := toBinaryV2(t, f, text)
		if v := Version(bufio.NewReader(bytes.NewReader(bin))); v != 2 {
			t.Errorf("%s: Version of the binary history is %d", f, v)
		}
		var back, direct bytes.Buffer
		st, err := ConvertV2(&back, bytes.NewReader(bin), f, syntax)
		if err != nil || st.From != Binary {
			t.Fatalf("%s from binary: %v (from %v)", f, err, st.From)
		}
		ConvertV2(&direct, bytes.NewReader(text), f, syntax)
		if syntax == Text && !bytes.Equal(back.Bytes(), text) || syntax == JSONL && !bytes.Equal(back.Bytes(), direct.Bytes()) {
			t.Errorf("%s: text -> binary -> text differs:\n%s", f, back.Bytes())
		}
		hb, err := ReadV2(bytes.NewReader(bin), f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ht, _ := ReadV2(bytes.NewReader(text), f)
		if !reflect.DeepEqual(hb, ht) {
			t.Errorf("%s: the binary history reads to another History", f)
		}
	}
}

// binV2 is a binary history of the serial records recs (each a head then
// its payload), in one serial block, and an end block of lines.
func binV2(lines int, recs ...[]uint64) []byte {
	var serial []uint64
	for _, r := range recs {
		serial = append(serial, r...)
	}
	words := append([]uint64{wire.BlockHeader(wire.BlockSerial, 0, 0), uint64(len(serial))}, serial...)
	words = append(words, wire.BlockHeader(wire.BlockEnd, 0, 0), 1, uint64(lines))
	b := []byte(wire.Magic)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// textRec is a text record of line.
func textRec(line string) []uint64 {
	pay := make([]uint64, (len(line)+7)/8)
	packText(pay, []byte(line))
	return append([]uint64{wire.SerialHead(wire.RecText, len(line), 0)}, pay...)
}

// opRec is the record of kind (RecInvOp, RecRetOp) a Recording keeps of
// write's call.
func opRec(write func(rc *Recording)) []uint64 {
	var rc Recording
	write(&rc)
	return rc.words
}

// TestBinaryV2Malformed: a malformed binary history of version 2 is
// refused with an *Error: its structure's naming the byte offset, its
// events' naming the line (as their text's would).
func TestBinaryV2Malformed(t *testing.T) {
	head := [][]uint64{textRec("pmlin-history v2"), textRec("object q queue")}
	with := func(lines int, recs ...[]uint64) []byte { return binV2(lines, append(head[:2:2], recs...)...) }
	enq := opRec(func(rc *Recording) { rc.InvokeOp(1, "q", "enq", []model.Value{model.Number(5)}) })
	ok := opRec(func(rc *Recording) { rc.ReturnOp(1, []model.Value{model.Sym(model.OK)}, false) })
	good := with(4, enq, ok)
	if _, err := ReadV2(bytes.NewReader(good), "f"); err != nil {
		t.Fatalf("the well-formed history: %v", err)
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"undeclared object", with(3, opRec(func(rc *Recording) { rc.InvokeOp(1, "s", "add", nil) })), "f:3: object s is not declared"},
		{"response without invocation", with(3, ok), "f:3: process 1 returns but has no pending operation"},
		{"bad kind", with(3, []uint64{wire.SerialHead(12, 0, 1)}), "record kind 12 is not one of a serial block's (1 to 11) (binary history, byte offset 72, after line 2)"},
		{"kind 0", with(3, []uint64{0}), "record kind 0 is not one of a serial block's"},
		{"a section", nil, ""},
		{"end block's lines", with(3, enq, ok), "the end block does not hold the 4 lines read so far (binary history, byte offset 144, after line 4)"},
		{"no end block", good[:len(good)-24], "the file does not end with an end block: it was cut short (binary history, byte offset 144, after line 4)"},
		{"record past its block", binV2(1, append(textRec("pmlin-history v2")[:1], 0)[:1]), "runs past the end of its block (binary history, byte offset 24, after line 0)"},
		{"length not whole words", good[:len(good)-3], "not a multiple of 8 bytes"},
		{"text record with a process", with(3, []uint64{wire.SerialHead(wire.RecCrash, 0, 4)}), "a text or crash record's process field is 4, not 0"},
	}
	// A section block: refused (pmlin writes serial blocks only).
	sec := binV2(2, head...)
	sec = sec[:len(sec)-24]
	for _, w := range []uint64{wire.BlockHeader(wire.BlockSection, 0, 0), 1, 1, wire.BlockHeader(wire.BlockEnd, 0, 0), 1, 2} {
		sec = binary.LittleEndian.AppendUint64(sec, w)
	}
	tests[4].in, tests[4].want = sec, "a version 2 binary history holds no concurrent sections"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadV2(bytes.NewReader(tt.in), "f")
			var he *Error
			if !errors.As(err, &he) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadV2: %v, want an *Error with %q", err, tt.want)
			}
		})
	}
	// Cut short anywhere: refused, never read as a shorter history.
	for n := len(wire.Magic); n < len(good); n++ {
		if _, err := ReadV2(bytes.NewReader(good[:n]), "f"); err == nil || !strings.Contains(err.Error(), "binary history, byte offset") {
			t.Fatalf("cut at byte %d: %v", n, err)
		}
	}
}
