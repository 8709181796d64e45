package history_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/wire"
)

// script makes random calls of an EventWriter: a header (with initial
// values or not), comments, crashes, invocations of reads, cas and swaps
// and their responses of every kind; mostly well-formed, and with bad
// set, now and then not (a response with nothing pending or of the wrong
// kind, a repeated address, a failure blaming another address, a count of
// values that does not match).
func script(rng *rand.Rand, bad bool, w history.EventWriter) {
	init := map[uint64]uint64{}
	for range rng.IntN(3) * rng.IntN(10) {
		init[rng.Uint64N(40)] = rng.Uint64N(1 << 40)
	}
	w.Header(rng.Uint64N(2)*rng.Uint64(), init)
	pending := map[int32]history.OpKind{}
	k := map[int32]int{}
	words := func(n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = rng.Uint64N(50)
			if bad && rng.IntN(30) == 0 && i > 0 {
				out[i] = out[0] // a repeated address
			}
			for j := 0; j < i && !bad; j++ {
				if out[j] == out[i] {
					out[i], j = rng.Uint64N(1<<20), -1
				}
			}
		}
		return out
	}
	vals := func(n int) []uint64 {
		if bad && rng.IntN(30) == 0 {
			n++
		}
		out := make([]uint64, n)
		for i := range out {
			out[i] = rng.Uint64() >> rng.IntN(64)
		}
		return out
	}
	for range 40 + rng.IntN(60) {
		p := int32(rng.IntN(4))
		if bad && rng.IntN(40) == 0 {
			p = int32(rng.IntN(1<<20)) - 1<<10 // another process, or not a process id
		}
		switch op, ok := pending[p]; {
		case bad && rng.IntN(200) == 0:
			w.Header(rng.Uint64N(2), nil) // a second header
		case rng.IntN(25) == 0:
			w.Crash()
			clear(pending)
		case rng.IntN(15) == 0:
			w.Comment(fmt.Sprintf("comment %d", rng.IntN(100)))
		case rng.IntN(30) == 0:
			line := []string{"", "  # a line as it is", "\t"}[rng.IntN(3)]
			if bad && rng.IntN(3) == 0 {
				line = "garbage 1 2"
			}
			w.TextLine([]byte(line))
		case !ok && !(bad && rng.IntN(20) == 0):
			n := 1 + rng.IntN(5)
			k[p] = n
			switch rng.IntN(3) {
			case 0:
				w.InvokeRead(p, words(n))
				pending[p] = history.Read
			case 1:
				w.InvokeCAS(p, words(n), vals(n), vals(n))
				pending[p] = history.CAS
			default:
				w.InvokeSwap(p, words(n), vals(n))
				pending[p] = history.Swap
			}
		default:
			delete(pending, p)
			if bad && rng.IntN(20) == 0 {
				op = history.OpKind(1 + rng.IntN(3)) // maybe the wrong kind
			}
			switch r := rng.IntN(3); {
			case op != history.CAS:
				w.ReturnRead(p, vals(k[p]))
			case r == 0:
				w.ReturnOK(p)
			case r == 1:
				w.ReturnFail(p, rng.Uint64N(50))
			default:
				w.ReturnFailValues(p, rng.Uint64N(50), vals(k[p]))
			}
		}
	}
}

// drain reads every event of r, copied, and the error that ended it (nil
// at the end of the history).
func drain(r *history.Reader) ([]history.Event, error) {
	var evs []history.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, copyEvent(ev))
	}
}

// drainSteps is drain by NextStep: every step as the Event it stands for
// (stepEvent), and the error that ended them.
func drainSteps(r *history.Reader) ([]history.Event, error) {
	var evs []history.Event
	for {
		st, err := r.NextStep()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, stepEvent(st))
	}
}

// TestStepsOfEveryFormat: NextStep of a Reader of text, JSON Lines or a
// binary history (none of which Steps) gives the events Next gives, or the
// same error: the Reader hands over the Event it decoded in place, so
// every path of Next must decode into that one Event.
func TestStepsOfEveryFormat(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.hist")
	more, _ := filepath.Glob("testdata/*.jsonl")
	for _, name := range append(files, more...) {
		in, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		inputs := map[string][]byte{name: in}
		if bin, err := convert(t, in, true); err == nil {
			inputs[name+" (binary)"] = bin
		}
		for what, data := range inputs {
			want, wantErr := drain(history.NewReader(bytes.NewReader(data), what, history.Options{}))
			r := history.NewReader(bytes.NewReader(data), what, history.Options{})
			got, gotErr := drainSteps(r)
			if !reflect.DeepEqual(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("%s: the steps are\n%+v (%v)\nthe events\n%+v (%v)", what, got, gotErr, want, wantErr)
			}
			if history.ReaderStepsOnly(r) {
				t.Fatalf("%s: a Reader of a file Steps", what)
			}
		}
	}
}

// TestRecordingIsTheText: a Recording given the calls a Writer is given
// writes the same text, and reads as the text does: the same events with
// the same lines, or the same error at the same line; it holds the serial
// block a BinaryWriter given the calls writes.
func TestRecordingIsTheText(t *testing.T) {
	var rec history.Recording // reused: Reset must leave nothing behind
	errs := 0
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 7))
		bad := seed%2 == 1
		var text bytes.Buffer
		w := history.NewWriter(&text)
		script(rng, bad, w)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		rec.Reset()
		script(rand.New(rand.NewPCG(seed, 7)), bad, &rec)
		var out bytes.Buffer
		if _, err := rec.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), text.Bytes()) {
			t.Fatalf("seed %d: the recording writes\n%s\nthe Writer\n%s", seed, out.String(), text.String())
		}
		// Its words are a binary history's serial block, as the
		// BinaryWriter writes it given the same calls, but for the k of a
		// response without values (0 in memory).
		var bin bytes.Buffer
		bw := history.NewBinaryWriter(&bin)
		script(rand.New(rand.NewPCG(seed, 7)), bad, bw)
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		words := make([]uint64, (bin.Len()-8)/8)
		binary.Read(bytes.NewReader(bin.Bytes()[8:]), binary.LittleEndian, words)
		for pos := 2; len(words) >= 2 && pos < 2+int(words[1]); {
			h := words[pos]
			kind, k := wire.SerialKind(h), wire.SerialK(h)
			if kind == wire.RecRetOK || kind == wire.RecRetFail {
				words[pos] = h &^ (wire.SerialKMask << 8)
			}
			pos += 1 + wire.RecWords(kind, k)
		}
		if got := history.RecordingWords(&rec); len(words) < 2 || int(words[1]) != len(got) || !slices.Equal(got, words[2:2+len(got)]) {
			t.Fatalf("seed %d: the recording holds %x, the binary history %x", seed, got, words)
		}
		want, wantErr := drain(history.NewReader(bytes.NewReader(text.Bytes()), "t.hist", history.Options{}))
		r := rec.Reader("t.hist", history.Options{})
		got, gotErr := drain(r)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: the recording reads\n%+v\nthe text\n%+v\n%s", seed, got, want, text.String())
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("seed %d: the recording reads with error %v, the text %v\n%s", seed, gotErr, wantErr, text.String())
		}
		if wantErr != nil {
			errs++
			if _, again := r.Next(); again != gotErr {
				t.Fatalf("seed %d: the error is not sticky: %v", seed, again)
			}
		}
	}
	if errs < 50 {
		t.Fatalf("only %d of the malformed scripts were malformed", errs)
	}
}

// stepEvent is the Event a Step stands for: its strided words split.
func stepEvent(st *history.Step) history.Event {
	ev := history.Event{Kind: st.Kind, Line: st.Line, Proc: st.Proc, ProcIndex: st.ProcIndex, Op: st.Op, OpID: st.OpID,
		InvLine: st.InvLine, Values: st.Values, OK: st.OK, FailAddr: st.FailAddr, Interrupted: st.Interrupted}
	for j := range st.K {
		ev.Addrs = append(ev.Addrs, st.Addrs[j*st.Stride])
		if len(st.Expected) > 0 {
			ev.Expected = append(ev.Expected, st.Expected[j*st.Stride])
		}
		if len(st.New) > 0 {
			ev.New = append(ev.New, st.New[j*st.Stride])
		}
	}
	return copyEvent(&ev)
}

// noText is a Recording that leaves out text lines.
type noText struct{ *history.Recording }

func (noText) TextLine([]byte) {}

// TestStepsAreTheEvents: NextStep of a Recording gives the events Next
// gives, with the same lines, or the same error at the same line, and
// leaves the recording as it was; a Recording with text lines does not
// Step (its NextStep gives Next's events in place, the same too).
func TestStepsAreTheEvents(t *testing.T) {
	var rec history.Recording
	stepped, errs := 0, 0
	for seed := range uint64(600) {
		bad := seed%2 == 1
		rec.Reset()
		var w history.EventWriter = &rec
		if seed%3 != 0 {
			w = noText{&rec} // most without text lines: those Step
		}
		script(rand.New(rand.NewPCG(seed, 7)), bad, w)
		var before bytes.Buffer
		if _, err := rec.WriteTo(&before); err != nil {
			t.Fatal(err)
		}
		want, wantErr := drain(rec.Reader("t.hist", history.Options{}))
		r := rec.Reader("t.hist", history.Options{})
		if history.ReaderStepsOnly(r) {
			stepped++ // the recording's words as views; else Next's events in place
		} else if _, ok := w.(noText); ok {
			t.Fatalf("seed %d: a recording without text lines does not Step\n%s", seed, before.String())
		}
		got, gotErr := drainSteps(r)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: the steps are\n%+v\nthe events\n%+v\n%s", seed, got, want, before.String())
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("seed %d: the steps end with error %v, the events %v\n%s", seed, gotErr, wantErr, before.String())
		}
		if gotErr != nil {
			errs++
			if _, again := r.NextStep(); again != gotErr {
				t.Fatalf("seed %d: the error is not sticky: %v", seed, again)
			}
		}
		var after bytes.Buffer
		if _, err := rec.WriteTo(&after); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after.Bytes(), before.Bytes()) {
			t.Fatalf("seed %d: reading the steps changed the recording", seed)
		}
	}
	if stepped < 200 || errs < 50 {
		t.Fatalf("only %d recordings stepped, %d of them malformed", stepped, errs)
	}
}
