package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// TestReadAllOps checks every field of ReadAll's operations: positions in
// the event order, the crash that interrupted each, status and blamed
// address.
func TestReadAllOps(t *testing.T) {
	f, err := os.Open("testdata/crashes.hist")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.ReadAll(f, "crashes.hist")
	if err != nil {
		t.Fatal(err)
	}
	// testdata/crashes.hist, event positions:
	//  0 1 inv cas        line 5   crashed by crash 0
	//  1 2 inv read       line 6   crashed by crash 0
	//  2 3 inv cas        line 7
	//  3 3 ret ok         line 8
	//  4 crash            line 9
	//  5 1 inv read       line 10
	//  6 2 inv cas        line 11
	//  7 1 ret            line 12
	//  8 2 ret fail 1     line 13
	//  9 crash            line 14
	// 10 crash            line 15
	// 11 4 inv read       line 16  pending at the end
	want := []history.Op{
		{ID: 0, Line: 5, Proc: 1, Kind: history.CAS, Addrs: []uint64{1, 2}, Expected: []uint64{0x2000, 0x3000},
			New: []uint64{0x100001, 0x100002}, Status: history.Pending, Inv: 0, Ret: -1, Crash: 0},
		{ID: 1, Line: 6, Proc: 2, Kind: history.Read, Addrs: []uint64{1, 2}, Status: history.Pending, Inv: 1, Ret: -1, Crash: 0},
		{ID: 2, Line: 7, RetLine: 8, Proc: 3, Kind: history.CAS, Addrs: []uint64{3}, Expected: []uint64{0x1000},
			New: []uint64{0x300001}, Status: history.Succeeded, Inv: 2, Ret: 3, Crash: -1},
		{ID: 3, Line: 10, RetLine: 12, Proc: 1, Kind: history.Read, Addrs: []uint64{1, 2, 3},
			Values: []uint64{0x100001, 0x100002, 0x300001}, Status: history.Returned, Inv: 5, Ret: 7, Crash: -1},
		{ID: 4, Line: 11, RetLine: 13, Proc: 2, Kind: history.CAS, Addrs: []uint64{1}, Expected: []uint64{0x100001},
			New: []uint64{0x200001}, Status: history.Failed, FailAddr: 1, Inv: 6, Ret: 8, Crash: -1},
		{ID: 5, Line: 16, Proc: 4, Kind: history.Read, Addrs: []uint64{3}, Status: history.Pending, Inv: 11, Ret: -1, Crash: -1},
	}
	if len(h.Ops) != len(want) {
		t.Fatalf("%d ops, want %d", len(h.Ops), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(h.Ops[i], want[i]) {
			t.Errorf("op %d:\n got %+v\nwant %+v", i, h.Ops[i], want[i])
		}
	}
	if !reflect.DeepEqual(h.Crashes, []int{4, 9, 10}) {
		t.Errorf("Crashes = %v, want [4 9 10]", h.Crashes)
	}
	if h.Events != 12 {
		t.Errorf("Events = %d, want 12", h.Events)
	}
	if h.InitDefault != 0x1000 || !reflect.DeepEqual(h.Init, map[uint64]uint64{1: 0x2000, 2: 0x3000}) {
		t.Errorf("InitDefault %#x, Init %v", h.InitDefault, h.Init)
	}
	for a, v := range map[uint64]uint64{1: 0x2000, 2: 0x3000, 3: 0x1000, 77: 0x1000} {
		if h.InitValue(a) != v {
			t.Errorf("InitValue(%d) = %#x, want %#x", a, h.InitValue(a), v)
		}
	}
	// Real-time precedence as documented on Op: A precedes B iff
	// A.Ret >= 0 && A.Ret < B.Inv.
	precedes := func(a, b history.Op) bool { return a.Ret >= 0 && a.Ret < b.Inv }
	if !precedes(h.Ops[2], h.Ops[3]) || precedes(h.Ops[3], h.Ops[4]) || precedes(h.Ops[0], h.Ops[5]) {
		t.Error("precedence from Inv/Ret is wrong")
	}
	for s, name := range map[history.Status]string{history.Pending: "pending", history.Returned: "returned",
		history.Succeeded: "ok", history.Failed: "fail"} {
		if s.String() != name {
			t.Errorf("Status %d String() = %q, want %q", s, s.String(), name)
		}
	}
}

// TestReadAllEmpty: an empty file is a valid history without events.
func TestReadAllEmpty(t *testing.T) {
	for _, in := range []string{"", "pmlin-history v1\n", "# nothing\n\n"} {
		h, err := history.ReadAll(strings.NewReader(in), "e")
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if len(h.Ops) != 0 || len(h.Crashes) != 0 || h.Events != 0 || h.Init != nil || h.InitDefault != 0 {
			t.Errorf("%q: %+v", in, h)
		}
	}
}

// TestReadAllError: ReadAll returns the Reader's *Error.
func TestReadAllError(t *testing.T) {
	h, err := history.ReadAll(strings.NewReader("1 inv read 1\n1 ret 0\n1 ret 0\n"), "t.hist")
	if h != nil {
		t.Errorf("history %+v with an error", h)
	}
	checkErr(t, err, 3, "no pending operation")
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{history.Invoke.String(), "inv"}, {history.Return.String(), "ret"}, {history.Crash.String(), "crash"},
		{history.EventKind(9).String(), "EventKind(9)"},
		{history.Read.String(), "read"}, {history.CAS.String(), "cas"}, {history.OpKind(0).String(), "OpKind(0)"},
		{history.Text.String(), "text"}, {history.JSONL.String(), "jsonl"}, {history.Format(0).String(), "unknown"},
		{history.Strict.String(), "strict"}, {history.Recoverable.String(), "recoverable"},
		{history.Durable.String(), "durable"}, {history.Mode(7).String(), "Mode(7)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, m := range history.Modes {
		got, err := history.ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := history.ParseMode("eventual"); err == nil {
		t.Error("ParseMode(eventual): no error")
	}
	if e := (&history.Error{File: "f", Msg: "m"}); e.Error() != "f: m" {
		t.Errorf("line-less Error() = %q", e.Error())
	}
	if e := (&history.Error{File: "f", Line: 3, Msg: "m"}); e.Error() != "f:3: m" {
		t.Errorf("Error() = %q", e.Error())
	}
	if e := (&history.Error{File: "f", Line: 3, Column: 7, Err: history.ErrSyntax, Msg: "m"}); e.Error() != "f:3:7: m" || !errors.Is(e, history.ErrSyntax) {
		t.Errorf("Error() = %q, Unwrap %v", e.Error(), e.Unwrap())
	}
	for _, m := range history.Modes {
		b, err := json.Marshal(struct{ M history.Mode }{m})
		var back struct{ M history.Mode }
		if err != nil || string(b) != `{"M":"`+m.String()+`"}` || json.Unmarshal(b, &back) != nil || back.M != m {
			t.Errorf("mode %v as JSON: %s, %v, back %v", m, b, err, back.M)
		}
	}
	if _, err := history.Mode(7).MarshalText(); err == nil {
		t.Error("Mode(7).MarshalText: no error")
	}
	if err := json.Unmarshal([]byte(`"eventual"`), new(history.Mode)); err == nil {
		t.Error(`unmarshal "eventual": no error`)
	}
}

func TestExtract(t *testing.T) {
	text := `pmlin-history v1
init 9
1 inv cas 5:9:0x100001
2 inv read 5
crash
2 inv read 5
2 ret 0x100001
3 inv read 5
3 ret 0x100001
crash
`
	r := history.NewReader(strings.NewReader(text), "t", history.Options{})
	h, crashes, err := history.Extract(context.Background(), r, []int64{6, 3, 6}, func(l int64) bool { return l == 10 })
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != 2 || h.Ops[0].Line != 3 || h.Ops[0].Crash != 0 || h.Ops[1].Line != 6 || h.Ops[1].RetLine != 7 || h.InitDefault != 9 {
		t.Fatalf("%+v", h)
	}
	// Positions count the kept events: cas, crash 5, read, its ret, crash 10.
	if h.Ops[0].Inv != 0 || h.Ops[1].Inv != 2 || h.Ops[1].Ret != 3 || !slices.Equal(h.Crashes, []int{1, 4}) || h.Events != 5 {
		t.Fatalf("positions: %+v", h)
	}
	if !slices.Equal(crashes, []int64{5, 10}) {
		t.Fatalf("crashes %v", crashes)
	}
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := history.ReadAll(&buf, "x"); err != nil {
		t.Fatalf("extracted history is not well formed: %v", err)
	}
	// Without keepCrash, only the crash that cut off a kept operation.
	r = history.NewReader(strings.NewReader(text), "t", history.Options{})
	if h, crashes, err = history.Extract(context.Background(), r, []int64{8}, nil); err != nil || len(h.Ops) != 1 || len(crashes) != 0 {
		t.Fatalf("%+v %v %v", h, crashes, err)
	}
}

// TestOpLines: an operation renders as the Writer writes it.
func TestOpLines(t *testing.T) {
	text := "1 inv cas 5:0:0x100001 6:4095:4096\n2 inv read 5 6\n1 ret fail 6\n2 ret 0 0xfff\n3 inv cas 5:0:7\n3 ret ok\n4 inv read 5\n" +
		"5 inv swap 5:8 6:0x100009\n5 ret 7 4095\n6 inv cas 5:7:9 6:4095:10\n6 ret fail 5 8 0x100009\n7 inv swap 6:11\n"
	h, err := history.ReadAll(strings.NewReader(text), "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range h.Ops {
		inv, ret := h.Ops[i].Lines()
		got = append(got, inv+" | "+ret)
	}
	want := []string{"1 inv cas 5:0:0x100001 6:4095:0x1000 | 1 ret fail 6", "2 inv read 5 6 | 2 ret 0 4095",
		"3 inv cas 5:0:7 | 3 ret ok", "4 inv read 5 | ", "5 inv swap 5:8 6:0x100009 | 5 ret 7 4095",
		"6 inv cas 5:7:9 6:4095:10 | 6 ret fail 5 8 0x100009", "7 inv swap 6:11 | "}
	swap, fail := h.Ops[4], h.Ops[5]
	if swap.Kind != history.Swap || swap.Status != history.Returned || swap.Expected != nil ||
		!slices.Equal(swap.New, []uint64{8, 0x100009}) || !slices.Equal(swap.Values, []uint64{7, 4095}) {
		t.Errorf("swap %+v", swap)
	}
	if fail.Status != history.Failed || fail.FailAddr != 5 || !slices.Equal(fail.Values, []uint64{8, 0x100009}) {
		t.Errorf("failure that reports values %+v", fail)
	}
	if h.Ops[0].Values != nil || h.Ops[6].Status != history.Pending || h.Ops[6].Values != nil {
		t.Errorf("a failure without values has %v, a pending swap %+v", h.Ops[0].Values, h.Ops[6])
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for v, s := range map[uint64]string{0: "0", 4095: "4095", 4096: "0x1000", 1<<64 - 1: "0xffffffffffffffff"} {
		if history.FormatValue(v) != s {
			t.Errorf("FormatValue(%d) = %q, want %q", v, history.FormatValue(v), s)
		}
	}
}
