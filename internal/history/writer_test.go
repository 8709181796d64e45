package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// genText writes a random well-formed history in text format v1, varying
// everything the format allows (hex or decimal, blanks, tabs, comments,
// CRLF, pending operations, crashes, large and small numbers), so that a
// round trip through the Writer exercises the Reader too. When jsonl is
// set it writes the JSON Lines twin instead.
func genText(rng *rand.Rand, jsonl bool) string {
	var b strings.Builder
	num := func(v uint64) string {
		switch {
		case jsonl && rng.IntN(2) == 0 && v < 1<<53:
			return fmt.Sprint(v)
		case jsonl && rng.IntN(2) == 0:
			return fmt.Sprintf("%q", fmt.Sprint(v))
		case jsonl:
			return fmt.Sprintf(`"%#x"`, v)
		case rng.IntN(2) == 0:
			return fmt.Sprint(v)
		case rng.IntN(2) == 0:
			return fmt.Sprintf("%#x", v)
		}
		return fmt.Sprintf("0X%X", v)
	}
	sep := func() string {
		if jsonl {
			return ","
		}
		return [...]string{" ", " ", " ", "  ", "\t", " \t "}[rng.IntN(6)]
	}
	eol := func() {
		if !jsonl && rng.IntN(8) == 0 {
			b.WriteString(" # comment")
		}
		if rng.IntN(6) == 0 {
			b.WriteString("\r")
		}
		b.WriteString("\n")
		if rng.IntN(10) == 0 {
			b.WriteString("\n# a comment line\n")
		}
	}
	value := func() uint64 {
		switch rng.IntN(4) {
		case 0:
			return uint64(rng.IntN(4096))
		case 1:
			return 4096 + uint64(rng.IntN(1<<20))
		case 2:
			return rng.Uint64()
		}
		return ^uint64(rng.IntN(3))
	}
	addrs := []uint64{0, 1, 2, 3, 10, 11, 4095, 4096, 0xdeadbeef, ^uint64(0)}
	procs := []int32{0, 1, 2, 7, history.MaxProc}[:1+rng.IntN(5)]

	if rng.IntN(2) == 0 {
		if jsonl {
			b.WriteString(`{"header":"pmlin-history v1"}`)
		} else {
			b.WriteString("pmlin-history v1")
		}
		eol()
	}
	if rng.IntN(2) == 0 {
		if jsonl {
			fmt.Fprintf(&b, `{"init":%s}`, num(value()))
		} else {
			fmt.Fprintf(&b, "init %s", num(value()))
		}
		eol()
	}
	if rng.IntN(2) == 0 {
		perm := rng.Perm(len(addrs))[:1+rng.IntN(len(addrs))]
		if jsonl {
			b.WriteString(`{"init":{`)
			for i, j := range perm {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `"%d":%s`, addrs[j], num(value()))
			}
			b.WriteString("}}")
		} else {
			b.WriteString("init")
			for _, j := range perm {
				fmt.Fprintf(&b, "%s%s=%s", sep(), num(addrs[j]), num(value()))
			}
		}
		eol()
	}
	type pend struct {
		cas, swap bool
		addrs     []uint64
	}
	pending := map[int32]*pend{}
	n := rng.IntN(60)
	for i := 0; i < n; i++ {
		if rng.IntN(25) == 0 {
			if jsonl {
				b.WriteString(`{"crash":true}`)
			} else {
				b.WriteString("crash")
			}
			eol()
			clear(pending)
			continue
		}
		p := procs[rng.IntN(len(procs))]
		values := func() {
			for j := range pending[p].addrs {
				if jsonl && j > 0 {
					b.WriteString(",")
				}
				if !jsonl {
					b.WriteString(sep())
				}
				b.WriteString(num(value()))
			}
		}
		if pd := pending[p]; pd != nil {
			switch {
			case !pd.cas:
				if jsonl {
					fmt.Fprintf(&b, `{"p":%d,"ret":[`, p)
				} else {
					fmt.Fprintf(&b, "%d%sret", p, sep())
				}
				values()
				if jsonl {
					b.WriteString("]}")
				}
			case rng.IntN(2) == 0:
				if jsonl {
					fmt.Fprintf(&b, `{"p":%d,"ret":"ok"}`, p)
				} else {
					fmt.Fprintf(&b, "%d%sret%sok", p, sep(), sep())
				}
			case rng.IntN(2) == 0: // a failure that reports values
				a := pd.addrs[rng.IntN(len(pd.addrs))]
				if jsonl {
					fmt.Fprintf(&b, `{"p":%d,"ret":"fail","addr":%s,"values":[`, p, num(a))
					values()
					b.WriteString("]}")
				} else {
					fmt.Fprintf(&b, "%d%sret%sfail%s%s", p, sep(), sep(), sep(), num(a))
					values()
				}
			default:
				a := pd.addrs[rng.IntN(len(pd.addrs))]
				if jsonl {
					fmt.Fprintf(&b, `{"p":%d,"ret":"fail","addr":%s}`, p, num(a))
				} else {
					fmt.Fprintf(&b, "%d%sret%sfail%s%s", p, sep(), sep(), sep(), num(a))
				}
			}
			delete(pending, p)
			eol()
			continue
		}
		k := 1 + rng.IntN(4)
		perm := rng.Perm(len(addrs))[:k]
		pd := &pend{cas: rng.IntN(2) == 0}
		pd.swap = !pd.cas && rng.IntN(3) == 0
		for _, j := range perm {
			pd.addrs = append(pd.addrs, addrs[j])
		}
		pending[p] = pd
		switch {
		case pd.swap && jsonl:
			fmt.Fprintf(&b, `{"p":%d,"inv":"swap","words":[`, p)
			for j, a := range pd.addrs {
				if j > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "[%s,%s]", num(a), num(value()))
			}
			b.WriteString("]}")
		case pd.swap:
			fmt.Fprintf(&b, "%d%sinv%sswap", p, sep(), sep())
			for _, a := range pd.addrs {
				fmt.Fprintf(&b, "%s%s:%s", sep(), num(a), num(value()))
			}
		case !pd.cas && jsonl:
			fmt.Fprintf(&b, `{"p":%d,"inv":"read","addrs":[`, p)
			for j, a := range pd.addrs {
				if j > 0 {
					b.WriteString(",")
				}
				b.WriteString(num(a))
			}
			b.WriteString("]}")
		case !pd.cas:
			fmt.Fprintf(&b, "%d%sinv%sread", p, sep(), sep())
			for _, a := range pd.addrs {
				b.WriteString(sep() + num(a))
			}
		case jsonl:
			fmt.Fprintf(&b, `{"p":%d,"inv":"cas","words":[`, p)
			for j, a := range pd.addrs {
				if j > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "[%s,%s,%s]", num(a), num(value()), num(value()))
			}
			b.WriteString("]}")
		default:
			fmt.Fprintf(&b, "%d%sinv%scas", p, sep(), sep())
			for _, a := range pd.addrs {
				fmt.Fprintf(&b, "%s%s:%s:%s", sep(), num(a), num(value()), num(value()))
			}
		}
		eol()
	}
	s := b.String()
	if rng.IntN(4) == 0 { // no newline at the end
		s = strings.TrimRight(s, "\r\n")
	}
	return s
}

// withoutLines clears what a round trip may change: line numbers.
func withoutLines(h *history.History) *history.History {
	c := *h
	c.Ops = make([]history.Op, len(h.Ops))
	for i, op := range h.Ops {
		op.Line, op.RetLine = 0, 0
		c.Ops[i] = op
	}
	return &c
}

// TestRoundTrip: ReadAll -> WriteTo -> ReadAll gives the same History
// (but for line numbers), and writing is then a fixpoint.
func TestRoundTrip(t *testing.T) {
	seeds := uint64(600)
	if testing.Short() {
		seeds = 100
	}
	for seed := uint64(0); seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 42))
		jsonl := seed%3 == 2
		in := genText(rng, jsonl)
		h1, err := history.ReadAll(strings.NewReader(in), "gen")
		if err != nil {
			t.Fatalf("seed %d: generated history rejected: %v\n%s", seed, err, in)
		}
		var out1 bytes.Buffer
		n, err := h1.WriteTo(&out1)
		if err != nil || n != int64(out1.Len()) {
			t.Fatalf("seed %d: WriteTo = %d, %v (wrote %d bytes)", seed, n, err, out1.Len())
		}
		h2, err := history.ReadAll(bytes.NewReader(out1.Bytes()), "out")
		if err != nil {
			t.Fatalf("seed %d: written history rejected: %v\n--- in\n%s\n--- out\n%s", seed, err, in, out1.String())
		}
		if !reflect.DeepEqual(withoutLines(h1), withoutLines(h2)) {
			t.Fatalf("seed %d: round trip changed the history\n--- in\n%s\n--- out\n%s\n h1 %+v\n h2 %+v", seed, in, out1.String(), h1, h2)
		}
		var out2 bytes.Buffer
		if _, err := h2.WriteTo(&out2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out1.Bytes(), out2.Bytes()) {
			t.Fatalf("seed %d: writing is not a fixpoint\n--- 1\n%s\n--- 2\n%s", seed, out1.String(), out2.String())
		}
		// The written file has no comments or blank lines: its event
		// stream is the original's, one event per line after the header.
		evs1, _, err := readEvents(in, history.Options{})
		if err != nil {
			t.Fatal(err)
		}
		evs2, _, err := readEvents(out1.String(), history.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs1) != len(evs2) {
			t.Fatalf("seed %d: %d events, then %d", seed, len(evs1), len(evs2))
		}
		header := int64(strings.Count(out1.String(), "\n") - len(evs2))
		for i := range evs1 {
			a, b := evs1[i], evs2[i]
			if b.Line != header+int64(i)+1 {
				t.Fatalf("seed %d: event %d at line %d of the output, want %d", seed, i, b.Line, header+int64(i)+1)
			}
			a.Line, a.InvLine, b.Line, b.InvLine = 0, 0, 0, 0
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d: event %d:\n in  %+v\n out %+v", seed, i, a, b)
			}
		}
	}
}

// TestWriterFormat pins the Writer's output: addresses and process ids in
// decimal, values below 4096 in decimal and from 4096 on in hex, initial
// values in address order, at most 8 pairs a line.
func TestWriterFormat(t *testing.T) {
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	init := map[uint64]uint64{}
	for a := uint64(20); a > 10; a-- {
		init[a] = a * 1000
	}
	init[^uint64(0)] = 4095
	w.Header(4096, init)
	w.Comment("a comment")
	w.InvokeRead(0, []uint64{4095, 4096, ^uint64(0)})
	w.ReturnRead(0, []uint64{4095, 4096, ^uint64(0)})
	w.InvokeCAS(history.MaxProc, []uint64{5000, 1}, []uint64{0, 4096}, []uint64{4095, 0x100001})
	w.ReturnFail(history.MaxProc, 5000)
	w.InvokeCAS(3, []uint64{1}, []uint64{0x100001}, []uint64{0xdeadbeef})
	w.Crash()
	w.ReturnOK(3) // the Writer does not validate
	w.InvokeSwap(4, []uint64{1, 5000}, []uint64{7, 0x100002})
	w.ReturnRead(4, []uint64{0xdeadbeef, 4095})
	w.ReturnFailValues(5, 1, []uint64{4096, 0})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `pmlin-history v1
init 0x1000
init 11=0x2af8 12=0x2ee0 13=0x32c8 14=0x36b0 15=0x3a98 16=0x3e80 17=0x4268 18=0x4650
init 19=0x4a38 20=0x4e20 18446744073709551615=4095
# a comment
0 inv read 4095 4096 18446744073709551615
0 ret 4095 0x1000 0xffffffffffffffff
2147483647 inv cas 5000:0:4095 1:0x1000:0x100001
2147483647 ret fail 5000
3 inv cas 1:0x100001:0xdeadbeef
crash
3 ret ok
4 inv swap 1:7 5000:0x100002
4 ret 0xdeadbeef 4095
5 ret fail 1 0x1000 0
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	if w.Written() != int64(len(want)) {
		t.Errorf("Written() = %d, want %d", w.Written(), len(want))
	}
	// No init line for the default 0 and no words.
	buf.Reset()
	w = history.NewWriter(&buf)
	w.Header(0, nil)
	w.Flush()
	if buf.String() != "pmlin-history v1\n" {
		t.Errorf("header %q", buf.String())
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.after {
		n := f.after
		f.after = 0
		return n, errors.New("disk full")
	}
	f.after -= len(p)
	return len(p), nil
}

// TestWriterError: the first write error is sticky and reported by Flush
// (and by History.WriteTo).
func TestWriterError(t *testing.T) {
	w := history.NewWriter(&failWriter{after: 10})
	for i := 0; i < 100000; i++ { // more than the Writer buffers
		w.InvokeRead(1, []uint64{uint64(i)})
		w.ReturnRead(1, []uint64{0})
	}
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Flush() = %v, want the write error", err)
	}
	if err := w.Flush(); err == nil {
		t.Error("second Flush() forgot the error")
	}
	h, err := history.ReadAll(strings.NewReader("1 inv read 1\n1 ret 0\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteTo(&failWriter{after: 5}); err == nil {
		t.Error("WriteTo to a failing writer: no error")
	}
}
