package history_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/wire"
)

// fuzzSeeds are valid and broken histories in both syntaxes; the files
// under testdata are added too.
var fuzzSeeds = []string{
	"",
	"pmlin-history v1\n",
	"pmlin-history v2\n",
	"init 5\ninit 1=2 3=0x4\n1 inv read 1 3\n1 ret 2 4\n",
	"init 0\ninit 0\n",
	"1 inv cas 10:0:0x100001 11:0:0x100002\n2 inv read 10\n1 ret ok\n2 ret 0x100001\ncrash\n2 inv read 10 11\n2 ret 0x100001 0x100002\n",
	"1 inv cas 1:0:5\n1 ret ok\n1 inv cas 2:0:6\n2 inv cas 3:0:7\n1 ret fail 2\n2 ret ok\n",
	"1 inv cas 1:0:5 2:0:6\n1 ret fail 3\n",
	"1 inv read 1\ncrash\n1 ret 0\n",
	"1 inv cas 10:0",
	"1 inv read 1 1\n",
	"2147483648 inv read 1\n",
	"1 inv read 18446744073709551616\n",
	"1\tinv\tread 0xFFFFFFFFFFFFFFFF # c\r\n1 ret 0\r\n",
	"# \xff\n",
	"1 inv read 1\x00\n",
	`{"header":"pmlin-history v1"}` + "\n" + `{"init":{"10":"0x5"}}` + "\n" + `{"p":1,"inv":"read","addrs":[10]}` + "\n" + `{"p":1,"ret":["0x5"]}` + "\n",
	`{"p":1,"inv":"cas","words":[[10,0,"18446744073709551615"]]}` + "\n" + `{"p":1,"ret":"fail","addr":10}` + "\n" + `{"crash":true}` + "\n",
	`{"p":1,"crash":true}` + "\n",
	`{"p":1,"inv":"read","addrs":[-1]}` + "\n",
	`{"p":1,"inv":"read","addrs":[1],"x":0}` + "\n",
	`{"init":{"10":1,"10":2}}` + "\n",
	"{\n",
	"1 inv swap 10:0x100003 11:7\n2 inv read 10\n1 ret 0 0\n2 ret 0x100003\ncrash\n1 inv swap 10:5\n",
	"1 inv cas 10:0:5 11:0:6\n1 ret fail 10 7 0\n1 inv cas 10:7:8\n1 ret fail 10 7\n",
	"1 inv swap 10:5\n1 ret fail 10\n1 inv cas 1:0:5\n1 ret 0\n",
	"1 inv swap 10:0:5\n",
	`{"p":1,"inv":"swap","words":[[10,5],[11,"0x6"]]}` + "\n" + `{"p":1,"ret":[0,0]}` + "\n",
	`{"p":1,"inv":"cas","words":[[10,0,5],[11,0,6]]}` + "\n" + `{"p":1,"ret":"fail","addr":10,"values":[7,0]}` + "\n",
	`{"p":1,"inv":"cas","words":[[10,0,5]]}` + "\n" + `{"p":1,"ret":"fail","addr":10,"values":[]}` + "\n",
}

func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("testdata/*.hist")
	more, _ := filepath.Glob("testdata/*.jsonl")
	for _, name := range append(files, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.HasPrefix(in, []byte(wire.Magic[:6])) {
			return // a binary history: FuzzBinary
		}
		lines := int64(bytes.Count(in, []byte("\n")) + 1)
		evs, err := fuzzRead(t, in, history.Options{}, lines)
		// Tight limits must not panic either, nor accept more.
		small, serr := fuzzRead(t, in, history.Options{MaxLineBytes: 40, MaxWords: 2}, lines)
		if err != nil {
			if serr == nil {
				t.Fatalf("tight limits accept what the defaults reject: %v", err)
			}
			return
		}
		if serr == nil && !reflect.DeepEqual(evs, small) {
			t.Fatal("tight limits change the events")
		}
		// A well-formed history round-trips through the Writer.
		h1, err := history.ReadAll(bytes.NewReader(in), "fuzz")
		if err != nil {
			t.Fatalf("Reader accepts, ReadAll rejects: %v", err)
		}
		var out bytes.Buffer
		if _, err := h1.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		h2, err := history.ReadAll(bytes.NewReader(out.Bytes()), "out")
		if err != nil {
			t.Fatalf("written history rejected: %v\n%s", err, out.String())
		}
		if !reflect.DeepEqual(withoutLines(h1), withoutLines(h2)) {
			t.Fatalf("round trip changed the history:\n%s", out.String())
		}
		evs2, err := fuzzRead(t, out.Bytes(), history.Options{}, int64(bytes.Count(out.Bytes(), []byte("\n"))+1))
		if err != nil || len(evs2) != len(evs) {
			t.Fatalf("re-reading the output: %d events, %v; want %d", len(evs2), err, len(evs))
		}
		for i := range evs {
			a, b := evs[i], evs2[i]
			a.Line, a.InvLine, b.Line, b.InvLine = 0, 0, 0, 0
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("event %d:\n in  %+v\n out %+v", i, a, b)
			}
		}
	})
}

// fuzzRead reads in, checking that an error names a line of the input and
// that the events form a well-formed stream (checked independently of the
// Reader's own bookkeeping).
func fuzzRead(t *testing.T, in []byte, opts history.Options, lines int64) ([]history.Event, error) {
	t.Helper()
	r := history.NewReader(bytes.NewReader(in), "fuzz", opts)
	type pend struct {
		op       history.OpKind
		line     int64
		addrs    []uint64
		expected []uint64
	}
	pending := map[int32]*pend{}
	procIndex := map[int32]int32{}
	var evs []history.Event
	last := int64(0)
	for {
		ev, err := r.Next()
		if err == io.EOF {
			if _, err2 := r.Next(); err2 != io.EOF {
				t.Fatalf("Next after EOF: %v", err2)
			}
			return evs, nil
		}
		if err != nil {
			var he *history.Error
			if !errors.As(err, &he) {
				t.Fatalf("error %v is a %T, not a *history.Error", err, err)
			}
			if he.Line < 1 || he.Line > lines || he.File != "fuzz" || he.Msg == "" {
				t.Fatalf("error %q names line %d of a %d-line input", err, he.Line, lines)
			}
			if _, err2 := r.Next(); err2 != err {
				t.Fatalf("error not sticky: %v then %v", err, err2)
			}
			return evs, err
		}
		if ev.Line <= last || ev.Line > lines {
			t.Fatalf("event at line %d after line %d (input has %d lines)", ev.Line, last, lines)
		}
		last = ev.Line
		switch ev.Kind {
		case history.Crash:
			clear(pending)
		case history.Invoke:
			if ev.Proc < 0 || pending[ev.Proc] != nil || len(ev.Addrs) == 0 || ev.InvLine != ev.Line {
				t.Fatalf("bad invocation %+v", *ev)
			}
			if ev.Op == history.CAS && (len(ev.Expected) != len(ev.Addrs) || len(ev.New) != len(ev.Addrs)) {
				t.Fatalf("bad cas %+v", *ev)
			}
			if ev.Op == history.Swap && (len(ev.Expected) != 0 || len(ev.New) != len(ev.Addrs)) {
				t.Fatalf("bad swap %+v", *ev)
			}
			if ev.Op == history.Read && (len(ev.Expected) != 0 || len(ev.New) != 0) {
				t.Fatalf("bad read %+v", *ev)
			}
			s := slices.Clone(ev.Addrs)
			slices.Sort(s)
			if len(slices.Compact(s)) != len(ev.Addrs) {
				t.Fatalf("duplicate addresses %+v", *ev)
			}
			idx, ok := procIndex[ev.Proc]
			if !ok {
				idx = int32(len(procIndex))
				procIndex[ev.Proc] = idx
			}
			if ev.ProcIndex != idx {
				t.Fatalf("process index %d, want %d", ev.ProcIndex, idx)
			}
			pending[ev.Proc] = &pend{ev.Op, ev.Line, slices.Clone(ev.Addrs), slices.Clone(ev.Expected)}
		case history.Return:
			p := pending[ev.Proc]
			if p == nil || p.op != ev.Op || p.line != ev.InvLine || !slices.Equal(p.addrs, ev.Addrs) ||
				!slices.Equal(p.expected, ev.Expected) || len(ev.New) != 0 || ev.ProcIndex != procIndex[ev.Proc] {
				t.Fatalf("return %+v does not match its invocation %+v", *ev, p)
			}
			delete(pending, ev.Proc)
			switch {
			case ev.Op != history.CAS && len(ev.Values) != len(ev.Addrs):
				t.Fatalf("%v returns %d values for %d addresses", ev.Op, len(ev.Values), len(ev.Addrs))
			case ev.Op == history.Swap && !ev.OK:
				t.Fatalf("a swap returns not ok")
			case ev.Op == history.CAS && ev.OK && len(ev.Values) != 0:
				t.Fatalf("a successful cas with values %v", ev.Values)
			case ev.Op == history.CAS && !ev.OK && !slices.Contains(ev.Addrs, ev.FailAddr):
				t.Fatalf("cas fails at %d, not one of %v", ev.FailAddr, ev.Addrs)
			case ev.Op == history.CAS && !ev.OK && len(ev.Values) != 0 && len(ev.Values) != len(ev.Addrs):
				t.Fatalf("failure reports %d values for %d addresses", len(ev.Values), len(ev.Addrs))
			}
		default:
			t.Fatalf("event kind %v", ev.Kind)
		}
		evs = append(evs, copyEvent(ev))
	}
}
