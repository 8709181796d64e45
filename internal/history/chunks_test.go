package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// readEvents reads every event of in, formatting each and the error that
// ends the reading (with its place and kind), sequentially (workers 0) or
// with workers decoding chunks of the given size.
func readEvents(in io.Reader, opts Options, workers, chunk int) []string {
	r := NewReader(in, "t", opts)
	if workers > 0 {
		stop := r.Parallel(workers)
		defer stop()
		r.par.chunk = chunk
	}
	return events(r)
}

// events reads every event of r, formatted as readEvents says.
func events(r *Reader) []string {
	var out []string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return append(out, fmt.Sprintf("EOF at line %d, format %v, counts %v", r.lastLine(), r.Format(), fmt.Sprint(r.counts())))
		}
		if err != nil {
			var e *Error
			kind := "?"
			if errors.As(err, &e) {
				kind = fmt.Sprintf("%d:%d %v", e.Line, e.Column, e.Err)
			}
			return append(out, "error: "+err.Error()+" "+kind)
		}
		out = append(out, fmt.Sprintf("%v %d %d %d %v %v %v %v %v %v %v %d %d %v", ev.Kind, ev.Line, ev.Proc, ev.ProcIndex, ev.Op, ev.Addrs, ev.Expected, ev.New, ev.Values, ev.OK, ev.FailAddr, ev.InvLine, ev.OpID, ev.Interrupted))
	}
}

// randomText is a random history in text or JSON Lines, often broken:
// pieces of valid lines, unusual spacing, comments, blank lines, CRLF,
// long lines, a last line without a newline.
func randomText(rng *rand.Rand) string {
	valid := []string{"1 inv read 10 11", "1 ret 0 0x5", "2 inv cas 10:0:0x100001 11:5:7", "2 ret fail 11", "2 ret ok",
		"1 inv cas 10:0:1", "1 ret ok", "1 inv swap 10:0x100003 11:7", "1 ret 0x100001 0", "crash", "3 inv read 10",
		"3 ret 0x100001", "2 ret fail 11 0x100003 7", "pmlin-history v1", "init 0", "init 10=5", "# a comment",
		"1 inv read 10 # c", "", "   ", "\t1 inv read 12", "1 inv read 10 10", "1 ret 0", "0x1 inv read 1",
		"4 inv cas 1:2", "4 inv swap 1:2:3", "5 inv read 18446744073709551616", "1 ret", "1 ret ok extra",
		"2147483648 inv read 1", "1 inv read 1\x00", "# \xff", "1 inv read " + strings.Repeat("1", 60)}
	jsonl := []string{`{"p":1,"inv":"read","addrs":[10,11]}`, `{"p": 1, "ret": [0, "0x5"]}`,
		`{"inv":"cas","p":2,"words":[[10,0,"0x100001"],[11,5,7]]}`, `{"p":2,"ret":"fail","addr":11}`,
		`{"p":1,"inv":"cas","words":[[10,0,1]]}`, `{ "p" : 1 , "ret" : "ok" }`, `{"crash":true}`,
		`{"p":1,"inv":"swap","words":[[10,"0x100003"],[11,7]]}`, `{"p":1,"ret":["0x100001",0]}`,
		`{"p":2,"values":["0x100003",7],"ret":"fail","addr":11}`, `{"header":"pmlin-history v1"}`, `{"init":{"10":5}}`,
		`{"p":1,"crash":true}`, `{"p":1,"inv":"read","addrs":[-1]}`, `{`, `{"p":3,"ret":[1]}x`}
	pool := valid
	if rng.IntN(3) == 0 {
		pool = jsonl
	}
	var b strings.Builder
	for l := 0; l < 1+rng.IntN(40); l++ {
		b.WriteString(pool[rng.IntN(len(pool))])
		switch rng.IntN(10) {
		case 0:
			// (and carriage returns that do not end the line)
			b.WriteString([]string{"\r\n", "\r\n", "\r\r\n", " \r\n", "\r1\n", "\r"}[rng.IntN(6)])
		case 1:
			b.WriteString(" ")
			b.WriteString(valid[rng.IntN(len(valid))])
			b.WriteString("\n")
		default:
			b.WriteString("\n")
		}
	}
	s := b.String()
	if rng.IntN(4) == 0 {
		s = strings.TrimRight(s, "\n") // a last line without a newline
	}
	return s
}

// TestParallelEqualsSequential reads random, often broken, histories with
// and without workers, with chunks of every small size so that lines fall
// across chunk boundaries: the same events, then the same end or the same
// error at the same line and column.
func TestParallelEqualsSequential(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for iter := 0; iter < 3000; iter++ {
		text := randomText(rng)
		opts := Options{}
		if rng.IntN(3) == 0 {
			opts = Options{MaxLineBytes: 8 + rng.IntN(60), MaxWords: 1 + rng.IntN(3)}
		}
		want := readEvents(strings.NewReader(text), opts, 0, 0)
		workers, chunk := 2+rng.IntN(3), 1+rng.IntN(120)
		// Reads of one byte at a time too, and the error of a reader
		// that fails.
		var in io.Reader = strings.NewReader(text)
		if rng.IntN(4) == 0 {
			in = iotest.OneByteReader(in)
		}
		got := readEvents(in, opts, workers, chunk)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q (opts %+v, %d workers, chunks of %d):\nparallel   %v\nsequential %v", text, opts, workers, chunk, got, want)
		}
	}
}

// TestParallelReadError: a read error after some lines is reported at the
// same line, after the same events.
func TestParallelReadError(t *testing.T) {
	text := "1 inv read 1\n1 ret 0\n2 inv read 1\n2 ret 0\n3 inv read 1\n"
	for cut := 0; cut <= len(text); cut++ {
		broken := func() io.Reader {
			return io.MultiReader(strings.NewReader(text[:cut]), iotest.ErrReader(errors.New("disk on fire")))
		}
		want := readEvents(broken(), Options{}, 0, 0)
		for _, chunk := range []int{1, 5, 13, 1 << 10} {
			if got := readEvents(broken(), Options{}, 2, chunk); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("cut at %d, chunks of %d:\nparallel   %v\nsequential %v", cut, chunk, got, want)
			}
		}
	}
}

// TestParallelReadErrorLongLine: a read error within a line that is over
// the limit already is reported as the long line, as a sequential Reader
// does.
func TestParallelReadErrorLongLine(t *testing.T) {
	const limit = 20
	for n := limit - 3; n <= limit+4; n++ {
		text := "1 inv read 1\n" + strings.Repeat("7", n)
		broken := func() io.Reader {
			return io.MultiReader(strings.NewReader(text), iotest.ErrReader(errors.New("disk on fire")))
		}
		want := readEvents(broken(), Options{MaxLineBytes: limit}, 0, 0)
		for _, chunk := range []int{1, 5, 64} {
			if got := readEvents(broken(), Options{MaxLineBytes: limit}, 2, chunk); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("partial line of %d, chunks of %d:\nparallel   %v\nsequential %v", n, chunk, got, want)
			}
		}
	}
}

// TestParallelLongLines: lines at, just over and far over the limit, and
// a line longer than a chunk that is within the limit.
func TestParallelLongLines(t *testing.T) {
	for _, limit := range []int{20, 21, 64} {
		for n := limit - 3; n <= limit+4; n++ {
			for _, end := range []string{"\n", "\r\n", ""} {
				line := "1 inv read " + strings.Repeat("7", max(1, n-len("1 inv read ")))
				text := "2 inv read 1\n2 ret 0\n" + line + end + "1 ret 0\n"
				opts := Options{MaxLineBytes: limit}
				want := readEvents(strings.NewReader(text), opts, 0, 0)
				for _, chunk := range []int{1, 4, 16, 64} {
					if got := readEvents(strings.NewReader(text), opts, 2, chunk); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("limit %d, line of %d%q, chunks of %d:\nparallel   %v\nsequential %v", limit, len(line), end, chunk, got, want)
					}
				}
			}
		}
	}
}

// TestParallelStops: stopping a Reader part way, or after an error, ends
// its goroutines.
func TestParallelStops(t *testing.T) {
	before := runtime.NumGoroutine()
	var b strings.Builder
	for k := 0; k < 20000; k++ {
		fmt.Fprintf(&b, "1 inv read %d\n1 ret 0\n", k)
	}
	for _, text := range []string{b.String(), "1 ret 0\n" + b.String()} {
		r := NewReader(strings.NewReader(text), "t", Options{})
		stop := r.Parallel(3)
		r.par.chunk = 64
		for k := 0; k < 10; k++ {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		stop()
	}
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines left running (%d before)", n-before, before)
	}
}

// TestParallelDecodes checks that the workers do decode the plain lines
// (the equivalence tests pass even if they never do).
func TestParallelDecodes(t *testing.T) {
	for _, text := range []string{
		"1 inv read 10 11\n1 ret 0 0x5\n2 inv cas 10:0:0x100001 11:5:7\n2 ret fail 11\n1 inv swap 10:0x100003 11:7\n1 ret 0x100001 0\n",
		`{"p":1,"inv":"read","addrs":[10,11]}` + "\n" + `{"p":1,"ret":[0,"0x5"]}` + "\n" + `{"crash":true}` + "\n",
	} {
		r := NewReader(strings.NewReader(text), "t", Options{})
		stop := r.Parallel(2)
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		for _, rec := range r.par.cur.recs {
			if rec.kind == fastNone {
				t.Errorf("line %d of %q not decoded", rec.line, text)
			}
		}
		stop()
	}
}

// TestInMemorySized: a Reader of a history in memory sizes its buffer and
// its workers' chunks to the history, not to the longest line accepted
// (1 MiB) and a full chunk (512 KiB each, six for two workers): checking
// thousands of small histories (shrink, the differential tests) spent most
// of its time clearing them. The events are those of a sequential Reader.
// A bytes.Buffer, which may grow after NewReader, keeps the full sizes.
func TestInMemorySized(t *testing.T) {
	text := "1 inv read 10 11\n1 ret 0 0x5\n2 inv cas 10:0:0x100001 11:5:7\n2 ret ok\n"
	want := readEvents(strings.NewReader(text), Options{}, 0, 0)
	for _, in := range []func() io.Reader{
		func() io.Reader { return strings.NewReader(text) },
		func() io.Reader { return bytes.NewReader([]byte(text)) },
	} {
		r := NewReader(in(), "t", Options{})
		stop := r.Parallel(2)
		if r.br.Size() > len(text)+16 || r.par.chunk > len(text)+1 {
			t.Errorf("%T: buffer %d bytes, chunks %d bytes, for a history of %d", in(), r.br.Size(), r.par.chunk, len(text))
		}
		if got := events(r); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%T: with workers\n%v\nwant\n%v", in(), got, want)
		}
		stop()
	}
	var grows bytes.Buffer
	r := NewReader(&grows, "t", Options{})
	grows.WriteString("1 inv read")
	for a := range 100 {
		fmt.Fprintf(&grows, " %d", a)
	}
	grows.WriteString("\n")
	if ev, err := r.Next(); err != nil || len(ev.Addrs) != 100 {
		t.Errorf("a line written to a bytes.Buffer after NewReader: %v", err)
	}
}
