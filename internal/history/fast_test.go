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
		out = append(out, fmt.Sprintf("%v %d %d %d %v %v %v %v %v %v %v %d %d %v", ev.Kind, ev.Line, ev.Proc, ev.ProcIndex, ev.Op, ev.Addrs, ev.Expected, ev.New, ev.Values, ev.OK, ev.FailAddr, ev.InvLine, ev.OpID, ev.Interrupted))
	}
}

// TestFastPathEqualsGeneralPath feeds random, often malformed, lines to
// the reader with and without the fast path: events and errors must be the
// same.
func TestFastPathEqualsGeneralPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pieces := []string{"0", "1", "2", "07", "0x1", "0X1f", "12345678901", "2147483648", "18446744073709551615", "18446744073709551616",
		"0x10000000000000000", "0x00000000000000000001", "inv", "ret", "read", "cas", "ok", "fail", "1:0:5", "2:0:0x6", "1:1", "1:0:5:7",
		"3:0x:4", "x", "crash", " ", "\t", "  ", "-1", "5", "10", "0xffffffffffffffff", "1:0:0x10000000000000000", "okay", "failed",
		"swap", "swap", "1:5", "2:0x6", "1:", ":5", "fail 1 0", "fail 2 0 5", "fail 1 0 0 0"}
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

// TestFastJSONEqualsGeneralPath does the same for JSON Lines, with pieces
// that make valid, unusual and broken objects.
func TestFastJSONEqualsGeneralPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	keys := []string{`"p":1`, `"p":2`, `"p":"1"`, `"p":01`, `"p":-1`, `"p":2147483648`, `"p":1.0`,
		`"inv":"read"`, `"inv":"cas"`, `"inv":"write"`, `"addrs":[10,11]`, `"addrs":[10]`, `"addrs":[]`, `"addrs":["0x10"]`, `"addrs":[1e3]`,
		`"words":[[10,0,"0x100001"]]`, `"words":[[10,0]]`, `"words":[[11,0,5],[10,0,6]]`, `"words":[[10,"0x0",18446744073709551615]]`,
		`"ret":"ok"`, `"ret":"fail"`, `"ret":[0]`, `"ret":[0,0]`, `"ret":["0x100001"]`, `"ret":"okay"`, `"addr":10`, `"addr":"11"`,
		`"crash":true`, `"crash":false`, `"x":1`, `"\u0070":1`, `"ret":[18446744073709551616]`,
		`"inv":"swap"`, `"words":[[10,5]]`, `"words":[[10,5],[11,"0x6"]]`, `"words":[[10,5],[11,0,6]]`, `"words":[[10]]`,
		`"values":[0]`, `"values":[0,5]`, `"values":[]`, `"values":null`, `"values":["0x5",-1]`}
	for iter := 0; iter < 5000; iter++ {
		var b strings.Builder
		for l := 0; l < 1+rng.IntN(8); l++ {
			b.WriteString("{")
			for k := 0; k < 1+rng.IntN(4); k++ {
				if k > 0 {
					b.WriteString([]string{",", ", ", " ,"}[rng.IntN(3)])
				}
				b.WriteString(keys[rng.IntN(len(keys))])
			}
			b.WriteString([]string{"}", " }", "}x", "} "}[rng.IntN(4)])
			b.WriteString("\n")
		}
		text := b.String()
		fast, slow := readAllEvents(text, true), readAllEvents(text, false)
		if fmt.Sprint(fast) != fmt.Sprint(slow) {
			t.Fatalf("%q:\nfast %v\nslow %v", text, fast, slow)
		}
	}
}

// TestFastPathsTaken checks that canonical lines do take the fast paths
// (the equivalence tests pass even if a fast path never fires).
func TestFastPathsTaken(t *testing.T) {
	text := []string{"1 inv read 10 11", "1 ret 0 0x5", "2 inv cas 10:0:0x100001 11:5:7", "2 ret fail 11",
		"1 inv cas 10:0:1", "1 ret ok", "1 inv swap 10:0x100003 11:7", "1 ret 0x100001 0",
		"2 inv cas 10:0:0x100001 11:5:7", "2 ret fail 11 0x100003 7"}
	jsonl := []string{`{"p":1,"inv":"read","addrs":[10,11]}`, `{"p": 1, "ret": [0, "0x5"]}`,
		`{"inv":"cas","p":2,"words":[[10,0,"0x100001"],[11,5,7]]}`, `{"p":2,"ret":"fail","addr":11}`,
		`{"p":1,"inv":"cas","words":[[10,0,1]]}`, `{ "p" : 1 , "ret" : "ok" }`, `{"crash":true}`,
		`{"p":1,"inv":"swap","words":[[10,"0x100003"],[11,7]]}`, `{"p":1,"ret":["0x100001",0]}`,
		`{"p":2,"inv":"cas","words":[[10,0,"0x100001"],[11,5,7]]}`, `{"p":2,"values":["0x100003",7],"ret":"fail","addr":11}`}
	r := NewReader(strings.NewReader(""), "t", Options{})
	r.format = Text
	for _, l := range text {
		if _, ok, err := r.fastText([]byte(l)); !ok || err != nil {
			t.Errorf("text fast path not taken for %q (err %v)", l, err)
		}
	}
	r = NewReader(strings.NewReader(""), "t", Options{})
	r.format = JSONL
	for _, l := range jsonl {
		if _, ok, err := r.fastJSON([]byte(l)); !ok || err != nil {
			t.Errorf("JSON fast path not taken for %q (err %v)", l, err)
		}
	}
}
