package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/wire"
)

// streamRecs builds stream records of either version: each record is its
// kind, k, timestamp and payload; version 1 writes a header word and a
// timestamp word, version 2 one head word (srec2).
func streamRecs(v1 bool, recs ...[]uint64) []uint64 {
	var out []uint64
	for _, r := range recs {
		kind, k, ts := int(r[0]), int(r[1]), r[2]
		if v1 {
			out = append(out, rec(kind, k), ts)
		} else {
			out = append(out, srec2(kind, k, ts))
		}
		out = append(out, r[3:]...)
	}
	return out
}

// TestBinaryVersionsReadAlike: the same section written with version 1
// and version 2 stream records reads as the same text, lines and order
// (ties broken as the format says, timestamps up to the largest a version
// 2 record holds, k = 255).
func TestBinaryVersionsReadAlike(t *testing.T) {
	const top = wire.MaxStamp
	addrs := make([]uint64, wire.MaxStreamK)
	vals := make([]uint64, wire.MaxStreamK)
	for i := range addrs {
		addrs[i] = uint64(100 + i)
	}
	wide := func(kind int, ts uint64, pay []uint64) []uint64 {
		return append([]uint64{uint64(kind), wire.MaxStreamK, ts}, pay...)
	}
	r := func(kind, k int, ts uint64, pay ...uint64) []uint64 {
		return append([]uint64{uint64(kind), uint64(k), ts}, pay...)
	}
	build := func(v1 bool) []byte {
		f := newBin()
		if !v1 {
			f = newBin2()
		}
		return f.block(wire.BlockSection, 0, 0, 5, 3).
			block(wire.BlockStream, 0, 1, streamRecs(v1, r(wire.RecInvRead, 1, 10, 1), r(wire.RecRetValues, 1, 20, 0))...).
			block(wire.BlockStream, 0, 0, streamRecs(v1, r(wire.RecInvCAS, 2, 5, 2, 0, 0x600000001, 3, 0, 0x600000002), r(wire.RecRetFailValues, 2, 10, 3, 0, 0x999))...).
			block(wire.BlockStream, wire.BlockLast, 1, streamRecs(v1, r(wire.RecInvSwap, 1, 20, 4, 0x400000001), r(wire.RecRetValues, 1, top, 0))...).
			block(wire.BlockStream, wire.BlockLast, 0, streamRecs(v1, r(wire.RecInvCAS, 1, 20, 1, 0, 0x600000003), r(wire.RecRetOK, 1, 30),
				wide(wire.RecInvRead, top-1, addrs), wide(wire.RecRetValues, top, vals))...).
			end(10)
	}
	v1, err := convert(t, build(true), false)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := convert(t, build(false), false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v1, v2) {
		t.Fatalf("version 1 reads as\n%s\nversion 2 as\n%s", v1, v2)
	}
	lines := strings.Split(string(v2), "\n")
	want := []string{"5 inv cas 2:0:0x600000001 3:0:0x600000002", "3 inv read 1", "5 ret fail 3 0 2457", "5 inv cas 1:0:0x600000003",
		"3 ret 0", "3 inv swap 4:0x400000001", "5 ret ok", "5 inv read 100 101 ", "5 ret 0 0 ", "3 ret 0", ""}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), v2)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) || w == "3 ret 0" && lines[i] != w {
			t.Fatalf("line %d: %q, want %q...\n%s", i+1, lines[i], w, v2)
		}
	}
}

// TestBinaryErrorsV2: a version 2 stream record whose head word is
// impossible (k 0, an unknown kind), that goes back in time or is cut
// short is refused with an error naming its byte offset.
func TestBinaryErrorsV2(t *testing.T) {
	// The stream block's payload starts at byte 8 (magic) + 24 (the
	// section block: header, length, one id) + 16 (its header) = 48.
	const at = 48
	sec := func(recs ...uint64) []byte {
		return newBin2().block(wire.BlockSection, 0, 0, 1).block(wire.BlockStream, wire.BlockLast, 0, recs...).end(2)
	}
	read := srec2(wire.RecInvRead, 1, 5)
	for _, tc := range []struct {
		name string
		in   []byte
		at   int
		want string
	}{
		{"k zero", sec(srec2(wire.RecInvRead, 0, 5)), at, "a record of 0 words"},
		{"k zero in a response", sec(read, 7, srec2(wire.RecRetOK, 0, 6)), at + 16, "a record of 0 words"},
		{"kind zero", sec(srec2(0, 1, 5), 7), at, "unknown record kind 0"},
		{"crash in stream", sec(srec2(wire.RecCrash, 1, 5)), at, "unknown record kind 8"},
		{"text in stream", sec(srec2(wire.RecText, 1, 5), 7), at, "unknown record kind 9"},
		{"kind 15", sec(srec2(15, 1, 5), 7), at, "unknown record kind 15"},
		{"back in time", sec(read, 7, srec2(wire.RecRetValues, 1, 4), 0), at + 16, "back in time (timestamp 4 after 5)"},
		{"cut record", sec(srec2(wire.RecInvRead, 2, 5), 7), at, "cut short by the end of its block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := history.ReadAll(bytes.NewReader(tc.in), "h.pmlb")
			var he *history.Error
			if !errors.As(err, &he) || !strings.Contains(err.Error(), tc.want) || he.File != "h.pmlb" ||
				!strings.Contains(err.Error(), fmt.Sprintf("byte offset %d,", tc.at)) {
				t.Fatalf("error %v, want a *history.Error with %q at byte offset %d", err, tc.want, tc.at)
			}
		})
	}
	// k above the reader's bound, which is below 255 here.
	r := history.NewReader(bytes.NewReader(sec(srec2(wire.RecInvRead, 3, 5), 1, 2, 3)), "h.pmlb", history.Options{MaxWords: 2})
	_, err := r.Next()
	if err == nil || !strings.Contains(err.Error(), "from 1 to 2") || !strings.Contains(err.Error(), fmt.Sprintf("byte offset %d,", at)) {
		t.Fatalf("k 3 with at most 2: %v", err)
	}
}

// TestBinaryCoarseClock: the streams of a section are merged by the tie
// rule of recorders/README.md (rule 4), looking past the end of a block
// for a response's next record; two processes that each respond and
// invoke again at one timestamp are refused (ErrCoarseClock, not
// malformed), naming the line.
func TestBinaryCoarseClock(t *testing.T) {
	inv := func(ts uint64) []uint64 { return []uint64{wire.RecInvRead, 1, ts, 1} }
	ret := func(ts uint64) []uint64 { return []uint64{wire.RecRetValues, 1, ts, 0} }
	cas := func(ts uint64) []uint64 { return []uint64{wire.RecInvCAS, 1, ts, 1, 0, 0x100000001} }
	ok := func(ts uint64) []uint64 { return []uint64{wire.RecRetOK, 1, ts} }
	// Process 1 returns at 10, at the end of a block, and reads again at
	// 10; process 0 writes over [10, 10]: process 1's second read must
	// come before process 0's return, though process 0's stream is listed
	// first.
	f := newBin2().block(wire.BlockSection, 0, 0, 0, 1).
		block(wire.BlockStream, 0, 1, streamRecs(false, inv(5), ret(10))...).
		block(wire.BlockStream, wire.BlockLast, 0, streamRecs(false, cas(10), ok(10))...).
		block(wire.BlockStream, wire.BlockLast, 1, streamRecs(false, inv(10), ret(20))...)
	got, err := convert(t, f.end(6), false)
	if err != nil {
		t.Fatal(err)
	}
	want := "1 inv read 1\n0 inv cas 1:0:0x100000001\n1 ret 0\n1 inv read 1\n0 ret ok\n1 ret 0\n"
	if string(got) != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
	// Both return and invoke again at 10.
	f = newBin2().block(wire.BlockSection, 0, 0, 0, 1).
		block(wire.BlockStream, wire.BlockLast, 0, streamRecs(false, cas(10), ok(10), inv(10), ret(10))...).
		block(wire.BlockStream, wire.BlockLast, 1, streamRecs(false, inv(10), ret(10), inv(10), ret(10))...)
	_, err = convert(t, f.end(8), false)
	var he *history.Error
	if !errors.As(err, &he) || !errors.Is(err, history.ErrCoarseClock) || errors.Is(err, history.ErrMalformed) || he.Line != 5 ||
		!strings.Contains(he.Msg, "process 1 responds and invokes its next operation at timestamp 10, as process 0 does (its response at line 3)") {
		t.Fatalf("got %v", err)
	}
}
