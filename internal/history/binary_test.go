package history_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/wire"
)

// convert converts in to text (binary false) or to a binary history.
func convert(t testing.TB, in []byte, toBinary bool) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	var dst history.EventWriter = history.NewWriter(&out)
	if toBinary {
		dst = history.NewBinaryWriter(&out)
	}
	_, err := history.Convert(context.Background(), dst, bytes.NewReader(in), "in", history.Options{})
	return out.Bytes(), err
}

// TestBinaryRoundTrip converts every test history to binary and back: the
// text is the text converted to text (each line where it was: the
// operations keep their names), and the events are the same.
func TestBinaryRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.hist")
	more, _ := filepath.Glob("testdata/*.jsonl")
	for _, name := range append(files, more...) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			in, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			txt, terr := convert(t, in, false)
			bin, berr := convert(t, in, true)
			if (terr == nil) != (berr == nil) {
				t.Fatalf("to text: %v; to binary: %v", terr, berr)
			}
			if terr != nil {
				if !strings.HasPrefix(name, "testdata/bad-") {
					t.Fatal(terr)
				}
				return
			}
			back, err := convert(t, bin, false)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, txt) {
				t.Fatalf("binary back to text:\n%s\nthe text as text:\n%s", back, txt)
			}
			if strings.HasSuffix(name, ".hist") && bytes.Count(txt, []byte("\n")) != bytes.Count(in, []byte("\n")) {
				t.Fatalf("%d lines became %d", bytes.Count(in, []byte("\n")), bytes.Count(txt, []byte("\n")))
			}
			h1, err := history.ReadAll(bytes.NewReader(in), "in")
			if err != nil {
				t.Fatal(err)
			}
			h2, err := history.ReadAll(bytes.NewReader(bin), "bin")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h1, h2) {
				t.Fatalf("the binary history reads as\n%+v\nnot\n%+v", h2, h1)
			}
		})
	}
}

// binFile builds binary histories by hand.
type binFile struct{ b []byte }

// binaryMagicV1 starts a version 1 file, whose stream records are a
// header word (rec) and a timestamp word: the tests written for version 1
// build such files (newBin), which pmlin still reads.
const binaryMagicV1 = "\x89PMLINB1"

func newBin() *binFile { return &binFile{b: []byte(binaryMagicV1)} }

// newBin2 starts a version 2 file, whose stream records start with one
// word (srec2).
func newBin2() *binFile { return &binFile{b: []byte(wire.Magic)} }

func (f *binFile) words(ws ...uint64) *binFile {
	for _, w := range ws {
		f.b = binary.LittleEndian.AppendUint64(f.b, w)
	}
	return f
}

func (f *binFile) block(typ, flags int, field uint32, payload ...uint64) *binFile {
	return f.words(uint64(typ)|uint64(flags)|uint64(field)<<32, uint64(len(payload))).words(payload...)
}

func (f *binFile) end(lines uint64) []byte { return f.block(wire.BlockEnd, 0, 0, lines).b }

func rec(kind, k int) uint64 { return wire.SerialHead(kind, k, 0) }

func srec(kind, k int, proc int32) uint64 { return wire.SerialHead(kind, k, proc) }

// srec2 is the head word of a version 2 stream record.
func srec2(kind, k int, ts uint64) uint64 { return wire.StreamHead(kind, k, ts) }

// text is a text record of s.
func text(s string) []uint64 {
	out := []uint64{rec(wire.RecText, len(s))}
	for i := 0; i < len(s); i += 8 {
		var w [8]byte
		copy(w[:], s[i:])
		out = append(out, binary.LittleEndian.Uint64(w[:]))
	}
	return out
}

// TestBinarySections checks the merge of a section's streams: by
// timestamp, invocations first on equal timestamps, then the stream
// listed first; blocks of the streams in any order.
func TestBinarySections(t *testing.T) {
	inv := func(ts, a uint64) []uint64 { return []uint64{rec(wire.RecInvRead, 1), ts, a} }
	ret := func(ts, v uint64) []uint64 { return []uint64{rec(wire.RecRetValues, 1), ts, v} }
	cat := func(rs ...[]uint64) (out []uint64) {
		for _, r := range rs {
			out = append(out, r...)
		}
		return out
	}
	f := newBin().
		block(wire.BlockSerial, 0, 0, srec(wire.RecInvRead, 1, 9), 1, srec(wire.RecRetValues, 1, 9), 0).
		block(wire.BlockSection, 0, 0, 5, 3). // stream 0 is process 5, stream 1 process 3
		block(wire.BlockStream, 0, 1, cat(inv(10, 1), ret(20, 0))...).
		block(wire.BlockStream, 0, 0, cat(inv(5, 2), ret(10, 0))...).
		block(wire.BlockStream, wire.BlockLast, 1, cat(inv(20, 3))...).
		block(wire.BlockStream, 0, 0, cat(inv(20, 4), ret(30, 0))...).
		block(wire.BlockSerial, 0, 0, srec(wire.RecCrash, 0, 0))
	got, err := convert(t, f.end(10), false)
	if err != nil {
		t.Fatal(err)
	}
	want := `9 inv read 1
9 ret 0
5 inv read 2
3 inv read 1
5 ret 0
5 inv read 4
3 ret 0
3 inv read 3
5 ret 0
crash
`
	if string(got) != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
}

// TestBinarySectionSwaps: swaps and failures that report values in the
// streams of a section, merged and written as the contract spells them.
func TestBinarySectionSwaps(t *testing.T) {
	f := newBin().
		block(wire.BlockSection, 0, 0, 1, 2).
		block(wire.BlockStream, 0, 0, rec(wire.RecInvSwap, 2), 3, 10, 0x100000001, 11, 0x100000002).
		block(wire.BlockStream, wire.BlockLast, 1, rec(wire.RecInvCAS, 1), 4, 10, 0, 0x200000001, rec(wire.RecRetFailValues, 1), 8, 10, 0x100000001).
		block(wire.BlockStream, wire.BlockLast, 0, rec(wire.RecRetValues, 2), 6, 0, 0)
	got, err := convert(t, f.end(4), false)
	if err != nil {
		t.Fatal(err)
	}
	want := `1 inv swap 10:0x100000001 11:0x100000002
2 inv cas 10:0:0x200000001
1 ret 0 0
2 ret fail 10 0x100000001
`
	if string(got) != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
	bin, err := convert(t, got, true)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := convert(t, bin, false); err != nil || string(back) != want {
		t.Fatalf("round trip: %v\n%s", err, back)
	}
}

// TestBinaryErrors: damaged or impossible binary histories are refused
// with an error that says what and where, never a panic.
func TestBinaryErrors(t *testing.T) {
	read1 := []uint64{srec(wire.RecInvRead, 1, 1), 7}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"version", []byte("\x89PMLINB3rest"), "another version"},
		{"no end", newBin().block(wire.BlockSerial, 0, 0, read1...).b, "cut short"},
		{"cut block", newBin().block(wire.BlockSerial, 0, 0, read1...).b[:20], "cut short"},
		{"end count", newBin().block(wire.BlockSerial, 0, 0, read1...).end(2), "counts 2 lines"},
		{"block type", newBin().block(9, 0, 0).end(0), "unknown block type 9"},
		{"block flags", newBin().block(wire.BlockSerial, wire.BlockLast, 0).end(0), "flags"},
		{"huge block", newBin().words(wire.BlockSerial, 1<<40).b, "at most"},
		{"stream outside", newBin().block(wire.BlockStream, 0, 0).end(0), "outside a section"},
		{"unknown stream", newBin().block(wire.BlockSection, 0, 0, 1).block(wire.BlockStream, 0, 1).end(0), "stream 1 in a section of 1"},
		{"two streams", newBin().block(wire.BlockSection, 0, 0, 1, 1).end(0), "two streams"},
		{"proc over", newBin().block(wire.BlockSection, 0, 0, 1<<31).end(0), "over"},
		{"after last", newBin().block(wire.BlockSection, 0, 0, 1).block(wire.BlockStream, wire.BlockLast, 0).block(wire.BlockStream, 0, 0).end(0), "after its last block"},
		{"back in time", newBin().block(wire.BlockSection, 0, 0, 1).
			block(wire.BlockStream, 0, 0, rec(wire.RecInvRead, 1), 5, 1).
			block(wire.BlockStream, 0, 0, rec(wire.RecRetValues, 1), 4, 0).end(2), "back in time"},
		{"record kind", newBin().block(wire.BlockSerial, 0, 0, 77).end(1), "unknown record kind 77"},
		{"crash in stream", newBin().block(wire.BlockSection, 0, 0, 1).block(wire.BlockStream, 0, 0, rec(wire.RecCrash, 0), 1).end(1), "unknown record kind 8"},
		{"k zero", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecInvRead, 0, 1)).end(1), "from 1 to"},
		{"cut record", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecInvRead, 2, 1), 7).end(1), "cut short by the end of its block"},
		{"text event", newBin().block(wire.BlockSerial, 0, 0, text("1 inv read 5")...).end(1), "only the header"},
		{"text crash", newBin().block(wire.BlockSerial, 0, 0, text("crash")...).end(1), "only the header"},
		{"text bad init", newBin().block(wire.BlockSerial, 0, 0, text("init x")...).end(1), "h.pmlb:1:6: initial value"},
		{"text newline", newBin().block(wire.BlockSerial, 0, 0, text("#\n")...).end(1), "line break"},
		{"text utf8", newBin().block(wire.BlockSerial, 0, 0, text("# \xff")...).end(1), "UTF-8"},
		{"text padding", newBin().block(wire.BlockSerial, 0, 0, rec(wire.RecText, 1), 0x0123).end(1), "padding"},
		{"ret k", newBin().block(wire.BlockSerial, 0, 0, append(read1, srec(wire.RecRetValues, 2, 1), 0, 0)...).end(2), "record of 2 words"},
		{"ret kind", newBin().block(wire.BlockSerial, 0, 0, append(read1, srec(wire.RecRetOK, 1, 1))...).end(2), "a cas's outcome"},
		{"ret nothing", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecRetOK, 1, 1)).end(1), "no pending operation"},
		{"fail addr", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecInvCAS, 1, 1), 7, 0, 5, srec(wire.RecRetFail, 1, 1), 8).end(2), "not one of its addresses"},
		{"swap ok", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecInvSwap, 1, 1), 7, 5, srec(wire.RecRetOK, 1, 1)).end(2), "the response to the swap of line 1 is a cas's outcome"},
		{"swap fails", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecInvSwap, 1, 1), 7, 5, srec(wire.RecRetFailValues, 1, 1), 7, 0).end(2), "is a cas's outcome"},
		{"fail values addr", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecInvCAS, 1, 1), 7, 0, 5, srec(wire.RecRetFailValues, 1, 1), 9, 0).end(2), "not one of its addresses"},
		{"fail values k", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecInvCAS, 2, 1), 7, 0, 5, 8, 0, 6, srec(wire.RecRetFailValues, 1, 1), 7, 0).end(2), "the operation has 2"},
		{"cas values", newBin().block(wire.BlockSerial, 0, 0, srec(wire.RecInvCAS, 1, 1), 7, 0, 5, srec(wire.RecRetValues, 1, 1), 0).end(2), "is values"},
		{"section open at end", newBin().block(wire.BlockSection, 0, 0, 1).block(wire.BlockStream, 0, 0, rec(wire.RecInvRead, 1), 5, 1).b, "cut short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := history.ReadAll(bytes.NewReader(tc.in), "h.pmlb")
			var he *history.Error
			if !errors.As(err, &he) || !strings.Contains(err.Error(), tc.want) || he.File != "h.pmlb" {
				t.Fatalf("error %v, want a *history.Error with %q", err, tc.want)
			}
		})
	}
}

// FuzzBinary: any input after the magic is read without a panic; an
// accepted one converts to text and back to the same events.
func FuzzBinary(f *testing.F) {
	for _, s := range fuzzSeeds {
		if b, err := convert(f, []byte(s), true); err == nil {
			f.Add(false, b[len(wire.Magic):])
		}
	}
	f.Add(true, newBin().block(wire.BlockSection, 0, 0, 1, 2).
		block(wire.BlockStream, 0, 1, rec(wire.RecInvCAS, 1), 3, 1, 0, 9).
		block(wire.BlockStream, wire.BlockLast, 0, rec(wire.RecInvRead, 1), 3, 1, rec(wire.RecRetValues, 1), 4, 9).
		block(wire.BlockStream, 0, 1, rec(wire.RecRetFailValues, 1), 3, 1, 7).end(4)[len(wire.Magic):])
	f.Add(true, newBin().block(wire.BlockSection, 0, 0, 1, 2).
		block(wire.BlockStream, wire.BlockLast, 0, rec(wire.RecInvSwap, 2), 3, 10, 0x100000001, 11, 5, rec(wire.RecRetValues, 2), 5, 0, 0).
		block(wire.BlockStream, wire.BlockLast, 1, rec(wire.RecInvCAS, 1), 4, 10, 0, 6, rec(wire.RecRetFailValues, 1), 6, 10, 0x100000001).
		block(wire.BlockSerial, 0, 0, srec(wire.RecCrash, 0, 0), srec(wire.RecInvSwap, 1, 1), 10, 7).end(6)[len(wire.Magic):])
	f.Add(false, newBin2().block(wire.BlockSection, 0, 0, 1, 2).
		block(wire.BlockStream, 0, 1, srec2(wire.RecInvCAS, 1, 3), 1, 0, 9).
		block(wire.BlockStream, wire.BlockLast, 0, srec2(wire.RecInvRead, 1, 3), 1, srec2(wire.RecRetValues, 1, 4), 9).
		block(wire.BlockStream, 0, 1, srec2(wire.RecRetFailValues, 1, 3), 1, 7).end(4)[len(wire.Magic):])
	f.Add(false, newBin2().block(wire.BlockSection, 0, 0, 1, 2).
		block(wire.BlockStream, wire.BlockLast, 0, srec2(wire.RecInvSwap, 2, 3), 10, 0x100000001, 11, 5, srec2(wire.RecRetValues, 2, 5), 0, 0).
		block(wire.BlockStream, wire.BlockLast, 1, srec2(wire.RecInvCAS, 1, 4), 10, 0, 6, srec2(wire.RecRetFailValues, 1, wire.MaxStamp), 10, 0x100000001).
		block(wire.BlockSerial, 0, 0, srec(wire.RecCrash, 0, 0), srec(wire.RecInvSwap, 1, 1), 10, 7).end(6)[len(wire.Magic):])
	f.Fuzz(func(t *testing.T, v1 bool, in []byte) {
		magic := wire.Magic
		if v1 {
			magic = binaryMagicV1
		}
		in = append([]byte(magic), in...)
		var evs []history.Event
		r := history.NewReader(bytes.NewReader(in), "fuzz", history.Options{})
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var he *history.Error
				if !errors.As(err, &he) || he.File != "fuzz" || he.Msg == "" {
					t.Fatalf("error %v is not a *history.Error naming the file", err)
				}
				return
			}
			evs = append(evs, copyEvent(ev))
		}
		txt, err := convert(t, in, false)
		if err != nil {
			t.Fatalf("read, but not converted: %v", err)
		}
		evs2, err := fuzzRead(t, txt, history.Options{}, int64(bytes.Count(txt, []byte("\n"))+1))
		if err != nil || len(evs2) != len(evs) {
			t.Fatalf("the text form: %d events, %v; want %d\n%s", len(evs2), err, len(evs), txt)
		}
		for i := range evs {
			if !reflect.DeepEqual(evs[i], evs2[i]) {
				t.Fatalf("event %d:\n binary %+v\n text   %+v", i, evs[i], evs2[i])
			}
		}
	})
}

// TestBinaryRoundTripLarge: a history of many serial blocks (each holds
// about 32k words) converts to binary and back unchanged. Records that
// filled a block used to be written before their payload was filled.
func TestBinaryRoundTripLarge(t *testing.T) {
	var in bytes.Buffer
	in.WriteString("pmlin-history v1\n")
	tag := uint64(1)
	for i := 0; i < 12000; i++ {
		p := i % 5
		k := 1 + i%3
		if i%2 == 0 {
			fmt.Fprintf(&in, "%d inv read", p)
			for j := 0; j < k; j++ {
				fmt.Fprintf(&in, " %d", 10*j+p)
			}
			in.WriteString("\n")
			fmt.Fprintf(&in, "%d ret", p)
			for j := 0; j < k; j++ {
				fmt.Fprintf(&in, " %#x", tag+uint64(j)) // values need not make sense: the format is checked, not the history
			}
			in.WriteString("\n")
			continue
		}
		fmt.Fprintf(&in, "%d inv cas", p)
		for j := 0; j < k; j++ {
			fmt.Fprintf(&in, " %d:%#x:%#x", 10*j+p, tag, tag+1<<40)
			tag++
		}
		fmt.Fprintf(&in, "\n%d ret fail %d\n", p, p)
	}
	bin, err := convert(t, in.Bytes(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(bin) < 2*(8<<15) {
		t.Fatalf("only %d bytes: not several serial blocks", len(bin))
	}
	back, err := convert(t, bin, false)
	if err != nil {
		t.Fatal(err)
	}
	txt, err := convert(t, in.Bytes(), false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, txt) {
		a, b := strings.Split(string(txt), "\n"), strings.Split(string(back), "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("line %d: %q became %q", i+1, a[i], b[i])
			}
		}
		t.Fatalf("%d lines became %d", len(a), len(b))
	}
}
