package history

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// readAllEvents reads every event, formatting each, until EOF or error.
func readAllEvents(text string, fast bool) []string {
	r := NewReader(strings.NewReader(text), "t", Options{})
	r.noFast = !fast
	var out []string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			return append(out, "error: "+err.Error())
		}
		out = append(out, fmt.Sprintf("%v %d %d %d %v %v %v %v %v %v %v %d", ev.Kind, ev.Line, ev.Proc, ev.ProcIndex, ev.Op, ev.Addrs, ev.Expected, ev.New, ev.Values, ev.OK, ev.FailAddr, ev.InvLine))
	}
}

// TestFastPathEqualsGeneralPath feeds random, often malformed, lines to
// the reader with and without the fast path: events and errors must be the
// same.
func TestFastPathEqualsGeneralPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pieces := []string{"0", "1", "2", "07", "0x1", "0X1f", "12345678901", "2147483648", "18446744073709551615", "18446744073709551616",
		"0x10000000000000000", "0x00000000000000000001", "inv", "ret", "read", "cas", "ok", "fail", "1:0:5", "2:0:0x6", "1:1", "1:0:5:7",
		"3:0x:4", "x", "crash", " ", "\t", "  ", "-1", "5", "10", "0xffffffffffffffff", "1:0:0x10000000000000000", "okay", "failed"}
	for iter := 0; iter < 5000; iter++ {
		var b strings.Builder
		for l := 0; l < 1+rng.IntN(8); l++ {
			n := 1 + rng.IntN(7)
			for k := 0; k < n; k++ {
				if k > 0 {
					b.WriteString(" ")
				}
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			b.WriteString("\n")
		}
		text := b.String()
		fast, slow := readAllEvents(text, true), readAllEvents(text, false)
		if fmt.Sprint(fast) != fmt.Sprint(slow) {
			t.Fatalf("%q:\nfast %v\nslow %v", text, fast, slow)
		}
	}
}
