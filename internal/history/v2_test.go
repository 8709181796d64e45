package history_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// withoutLinesV2 is h without what depends on the file it was read from:
// its name and lines.
func withoutLinesV2(h *model.History) *model.History {
	c := *h
	c.Name = ""
	c.Objects = append([]model.Object(nil), h.Objects...)
	for i := range c.Objects {
		c.Objects[i].Line = 0
	}
	c.Ops = append([]model.Op(nil), h.Ops...)
	for i := range c.Ops {
		c.Ops[i].Line, c.Ops[i].RetLine = 0, 0
	}
	c.Crashes = append([]model.Crash(nil), h.Crashes...)
	for i := range c.Crashes {
		c.Crashes[i].Line = 0
	}
	return &c
}

func readV2(t *testing.T, name string) *model.History {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.ReadV2(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// roundTripV2 writes h in both syntaxes, reads each back and wants h,
// and wants a second writing to be the first byte for byte.
func roundTripV2(t *testing.T, h *model.History) {
	t.Helper()
	for _, syn := range []history.Format{history.Text, history.JSONL} {
		var out bytes.Buffer
		if err := history.WriteV2(&out, h, syn); err != nil {
			t.Fatalf("%v: %v", syn, err)
		}
		h2, err := history.ReadV2(bytes.NewReader(out.Bytes()), "out")
		if err != nil {
			t.Fatalf("%v: the written history is refused: %v\n%s", syn, err, out.String())
		}
		if !reflect.DeepEqual(withoutLinesV2(h), withoutLinesV2(h2)) {
			t.Fatalf("%v: round trip changed the history:\n%+v\n%+v\n%s", syn, *withoutLinesV2(h), *withoutLinesV2(h2), out.String())
		}
		var again bytes.Buffer
		if err := history.WriteV2(&again, h2, syn); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), again.Bytes()) {
			t.Fatalf("%v: writing it again differs:\n%s\n%s", syn, out.String(), again.String())
		}
	}
}

// TestV2Testdata reads every version 2 history under testdata/v2: each
// text file and its JSON Lines twin, where there is one, hold the same
// history, and each round-trips through both writers.
func TestV2Testdata(t *testing.T) {
	files, _ := filepath.Glob("testdata/v2/*.hist")
	if len(files) < 9 {
		t.Fatalf("%d version 2 histories under testdata/v2", len(files))
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			h := readV2(t, name)
			if len(h.Ops) == 0 {
				t.Fatal("no operation")
			}
			roundTripV2(t, h)
			twin := strings.TrimSuffix(name, ".hist") + ".jsonl"
			if _, err := os.Stat(twin); err == nil {
				if hj := readV2(t, twin); !reflect.DeepEqual(withoutLinesV2(h), withoutLinesV2(hj)) {
					t.Fatalf("%s and %s differ:\n%+v\n%+v", name, twin, *withoutLinesV2(h), *withoutLinesV2(hj))
				}
			}
		})
	}
}

// TestV2SpecExample checks the example of history-format.md, "Version 2",
// against the History its lines mean, written out by hand.
func TestV2SpecExample(t *testing.T) {
	h := readV2(t, "testdata/v2/spec-example.hist")
	n := model.Number
	ok, nilv := model.Sym(model.OK), model.Sym(model.Nil)
	want := &model.History{
		Name: "testdata/v2/spec-example.hist",
		Objects: []model.Object{
			{Name: "q", Model: "queue", Line: 3},
			{Name: "m", Model: "map", Line: 4},
		},
		Ops: []model.Op{
			{Proc: 1, Object: 0, Name: "enq", Args: []model.Value{n(0x100001)}, Results: []model.Value{ok}, Call: 0, Return: 2, Crash: -1, Line: 5, RetLine: 7},
			{Proc: 2, Object: 0, Name: "deq", Results: []model.Value{n(0x100001)}, Call: 1, Return: 3, Crash: -1, Line: 6, RetLine: 8},
			{Proc: 1, Object: 1, Name: "put", Args: []model.Value{n(7), n(0x200001)}, Results: []model.Value{nilv}, Call: 4, Return: 5, Crash: -1, Line: 9, RetLine: 10},
			{Proc: 2, Object: 1, Name: "get", Args: []model.Value{n(7)}, Results: []model.Value{n(0x200001)}, Call: 7, Return: 8, Crash: -1, Line: 12, RetLine: 13},
			{Proc: 3, Object: 0, Name: "deq", Status: model.Unknown, Call: 9, Return: 10, Crash: -1, Line: 14, RetLine: 15},
		},
		Crashes: []model.Crash{{Pos: 6, Line: 11}},
		Events:  11,
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", *h, *want)
	}
}

// TestV2Words checks how version 1 lines in a version 2 file are held:
// the object words brought in by the first of them, init lines as its
// parameters, cas words as address, expected, new triples, a failure as
// fail, the address, the values; a crash cutting an operation off, the
// end another.
func TestV2Words(t *testing.T) {
	in := "pmlin-history v2\ninit 0x10\ninit 1=2 0x3=0x1000\n1 inv cas 1:2:5 3:0x1000:6\n2 inv swap 1:7\n1 ret fail 3 2 9\n3 inv read 1\n3 ret 5\ncrash\n1 inv read 3\n"
	h, err := history.ReadV2(strings.NewReader(in), "w.hist")
	if err != nil {
		t.Fatal(err)
	}
	n := model.Number
	want := &model.History{
		Name:    "w.hist",
		Objects: []model.Object{{Name: "words", Model: "words", Params: []model.Param{{Key: "init", Value: "16"}, {Key: "1", Value: "2"}, {Key: "3", Value: "0x1000"}}}},
		Ops: []model.Op{
			{Proc: 1, Name: "cas", Args: []model.Value{n(1), n(2), n(5), n(3), n(0x1000), n(6)}, Results: []model.Value{model.Sym(model.Fail), n(3), n(2), n(9)}, Call: 0, Return: 2, Crash: -1, Line: 4, RetLine: 6},
			{Proc: 2, Name: "swap", Args: []model.Value{n(1), n(7)}, Status: model.CutOff, Call: 1, Return: -1, Crash: 0, Line: 5},
			{Proc: 3, Name: "read", Args: []model.Value{n(1)}, Results: []model.Value{n(5)}, Call: 3, Return: 4, Crash: -1, Line: 7, RetLine: 8},
			{Proc: 1, Name: "read", Args: []model.Value{n(3)}, Status: model.CutOff, Call: 6, Return: -1, Crash: -1, Line: 10},
		},
		Crashes: []model.Crash{{Pos: 5, Line: 9}},
		Events:  7,
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", *h, *want)
	}
	roundTripV2(t, h)
}

// TestVersion tells version 2 files from the rest by their first line
// that is not blank or a comment.
func TestVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"pmlin-history v2\n", 2},
		{"# a comment\n\n  pmlin-history\tv2  # here\r\nobject q queue\n", 2},
		{`{"header":"pmlin-history v2"}` + "\n", 2},
		{"# c\n" + `{"header": "pmlin-history v2"}  # c` + "\n", 2},
		{"pmlin-history v1\n", 1},
		{`{"header":"pmlin-history v1"}`, 1},
		{"1 inv read 1\npmlin-history v2\n", 1},
		{"", 1},
		{"# only a comment", 1},
		{"pmlin-history v2 extra\n", 1},
		{"\x89PMLINB2", 1},
	} {
		br := bufio.NewReader(strings.NewReader(c.in))
		if got := history.Version(br); got != c.want {
			t.Errorf("Version(%q) = %d, want %d", c.in, got, c.want)
		}
		if rest, _ := io.ReadAll(br); string(rest) != c.in {
			t.Errorf("Version(%q) consumed input", c.in)
		}
	}
}

// TestV2Errors holds every rule of version 2 to its message: the first
// violation stops the reading with the file, the line and, in text, the
// column of the token to blame.
func TestV2Errors(t *testing.T) {
	const h = "pmlin-history v2\n"
	const q = h + "object q queue\n"
	const jh = `{"header":"pmlin-history v2"}` + "\n"
	const jq = jh + `{"object":"q","model":"queue"}` + "\n"
	long := h + "# " + strings.Repeat("x", history.DefaultMaxLineBytes) + "\n"
	for _, c := range []struct {
		in, want string
		kind     error
	}{
		// The header.
		{"", "t: no header: a version 2 history starts with the line \"pmlin-history v2\"", history.ErrSyntax},
		{"# just a comment\n", "t:1: no header", history.ErrSyntax},
		{"object q queue\n", "t:1: a version 2 history starts with the line \"pmlin-history v2\"", history.ErrSyntax},
		{"pmlin-history v1\n", "t:1:15: this is a version 1 history", history.ErrSyntax},
		{"pmlin-history v3\n", "t:1:15: unsupported history version \"v3\"", history.ErrSyntax},
		{h + "pmlin-history v2\n", "t:2:1: the pmlin-history header must be the first line", history.ErrIllFormed},
		// Characters and limits.
		{h + "object q\x01 queue\n", "t:2:9: unexpected character '\\x01'", history.ErrSyntax},
		{h + "crash # \xff\n", "t:2: comment is not valid UTF-8", history.ErrSyntax},
		{h + "crash\x00\n", "t:2: NUL byte", history.ErrSyntax},
		{long, "t:2: line longer than 1048576 bytes", history.ErrLimit},
		// Objects.
		{h + "object Q queue\n", "t:2:8: object name \"Q\" is not a name", history.ErrSyntax},
		{h + "object read register\n", "t:2:8: \"read\" cannot name an object", history.ErrIllFormed},
		{h + "object crash register\n", "t:2:8: \"crash\" cannot name an object", history.ErrIllFormed},
		{h + "object q Queue\n", "t:2:10: model name \"Queue\" is not a name", history.ErrSyntax},
		{h + "object q\n", "t:2: an object is declared as", history.ErrSyntax},
		{q + "object q stack\n", "t:3:8: object q is declared twice (first at line 2)", history.ErrIllFormed},
		{h + "object q queue cap\n", "t:2:16: parameter \"cap\" is not <param>=<value>", history.ErrSyntax},
		{h + "object q queue cap=1 cap=2\n", "t:2: object q: parameter cap is given twice", history.ErrIllFormed},
		{h + "object q queue Cap=1\n", "t:2: object q: a parameter's name starts with", history.ErrSyntax},
		{h + "object q queue cap=\n", "t:2: object q: parameter cap has no value", history.ErrSyntax},
		{h + "object w words init=x\n", "t:2: object w: model words: init=x: \"x\" is not a value", history.ErrIllFormed},
		{h + "object w words init=1 init=2\n", "t:2: object w: parameter init is given twice", history.ErrIllFormed},
		{h + "object w words 0x1=1 1=2\n", "t:2: object w: model words: the initial value of address 1 is given twice", history.ErrIllFormed},
		{h + "1 inv read 1\n1 ret 0\nobject words words\n", "t:4:8: object words is declared after the version 1 line of line 2", history.ErrIllFormed},
		{h + "object words queue\n1 inv read 1\n", "t:3: a version 1 line acts on the object words of model words, but words is a queue here (line 2)", history.ErrIllFormed},
		{h + "1 inv q enq 1\n", "t:2:7: object q is not declared", history.ErrIllFormed},
		{h + "1 inv q enq 1\nobject q queue\n", "t:2:7: object q is not declared", history.ErrIllFormed},
		{h + "1 inv Q enq 1\n", "t:2:7: \"Q\" is not an object's name, nor read, cas or swap", history.ErrSyntax},
		// Initial values (version 1's init lines: the object words).
		{h + "init 1\ninit 2\n", "t:3: model words: parameter init given twice", history.ErrIllFormed},
		{h + "init 1=2 0x1=3\n", "t:2: model words: the initial value of address 1 is given twice", history.ErrIllFormed},
		{h + "object words words init=3\ninit 4\n", "t:3: model words: parameter init given twice", history.ErrIllFormed},
		{q + "1 inv q deq\ninit 1\n", "t:4: init after the first event", history.ErrIllFormed},
		{h + "init 1=x\n", "t:2:8: initial value \"x\" is not a number", history.ErrSyntax},
		{h + "init\n", "t:2: init needs a value", history.ErrSyntax},
		// Events.
		{q + "1 inv q enq 1\n1 inv q deq\n", "t:4: process 1 invokes an operation while its operation of line 3 is pending", history.ErrIllFormed},
		{q + "1 ret ok\n", "t:3: process 1 returns but has no pending operation", history.ErrIllFormed},
		{q + "1 inv q enq 1\ncrash\n1 ret ok\n", "t:5: process 1 returns but has no pending operation: its operation of line 3 was cut off by the crash of line 4", history.ErrIllFormed},
		{q + "1 inv q enq 1\n1 ret ok\n1 ret ok\n", "t:5: process 1 returns but has no pending operation", history.ErrIllFormed},
		{q + "1 inv q enq x\n", "t:3:13: argument \"x\" is not a value", history.ErrSyntax},
		{q + "1 inv q enq -5\n", "t:3:13: argument \"-5\" is negative", history.ErrSyntax},
		{q + "1 inv q enq 18446744073709551616\n", "t:3:13: argument \"18446744073709551616\" does not fit in 64 bits", history.ErrSyntax},
		{q + "1 inv q deq\n1 ret 0x\n", "t:4:7: result \"0x\" is not a number", history.ErrSyntax},
		{q + "1 inv q deq\n1 ret ? 5\n", "t:4:9: process 1: an unknown response is \"ret ?\" alone", history.ErrSyntax},
		{q + "1 inv q deq\n1 ret\n", "t:4: process 1: a response has its results, or ? (unknown)", history.ErrSyntax},
		{q + "1 inv q Enq 1\n", "t:3:9: process 1: operation name \"Enq\" is not a name", history.ErrSyntax},
		{q + "1 inv q\n", "t:3: process 1: inv q needs an operation", history.ErrSyntax},
		{q + "1 inv\n", "t:3: process 1: inv needs an object", history.ErrSyntax},
		{q + "1 foo q\n", "t:3:3: process 1: expected inv or ret, found \"foo\"", history.ErrSyntax},
		{q + "1\n", "t:3: process 1: expected inv or ret", history.ErrSyntax},
		{q + "2147483648 inv q deq\n", "t:3:1: process id 2147483648 is larger than 2147483647", history.ErrSyntax},
		{q + "1x inv q deq\n", "t:3:1: process id \"1x\" is not a decimal integer", history.ErrSyntax},
		{q + "deq\n", "t:3:1: unknown directive \"deq\"", history.ErrSyntax},
		{q + "crash now\n", "t:3:7: a crash line has nothing after \"crash\"", history.ErrSyntax},
		{q + "recording 5 operations\n", "t:3:1: \"recording\": a recording that says whether it is complete is version 1 only", history.ErrSyntax},
		// Version 1 lines and words objects.
		{h + "1 inv read\n", "t:2: read invocation with no address", history.ErrIllFormed},
		{h + "1 inv read 1 0x1\n", "t:2: address 1 appears twice in one operation", history.ErrIllFormed},
		{h + "1 inv read 1 2\n1 ret 0\n", "t:3: process 1: the read of line 2 has 2 addresses but returns 1 values", history.ErrIllFormed},
		{h + "1 inv read 1\n1 ret ok\n", "t:3: process 1: the read of line 2 returns values (numbers), not \"ok\"", history.ErrIllFormed},
		{h + "1 inv swap 1:5 2:6\n1 ret 0\n", "t:3: process 1: the swap of line 2 has 2 addresses but returns 1 values", history.ErrIllFormed},
		{h + "1 inv cas 1:0:5\n1 ret fail 9\n", "t:3: process 1: the cas of line 2 fails at address 9, which is not one of its addresses", history.ErrIllFormed},
		{h + "1 inv cas 1:0:5 2:0:6\n1 ret fail 1 0\n", "t:3: process 1: the cas of line 2 has 2 addresses but its failure reports 1 values (one per address, or none)", history.ErrIllFormed},
		{h + "1 inv cas 1:0:5\n1 ret 5\n", "t:3: process 1: the cas of line 2 must return \"ok\", \"fail <address>\" or \"fail <address> <v1> ... <vk>\"", history.ErrIllFormed},
		{h + "1 inv cas 1:0:5\n1 ret ok 5\n", "t:3: process 1: the cas of line 2 must return", history.ErrIllFormed},
		{h + "1 inv cas 1:0:5 2:0\n", "t:2:17: cas word \"2:0\" is not address:expected:new", history.ErrSyntax},
		{h + "1 inv swap 1:0:5\n", "t:2:12: swap word \"1:0:5\" is not address:new", history.ErrSyntax},
		{h + "1 inv cas 1:x:5\n", "t:2:13: expected value \"x\" is not a number", history.ErrSyntax},
		{h + "1 inv read nil\n", "t:2:12: address \"nil\" is not a number", history.ErrSyntax},
		{h + "object w words\n1 inv w enq 1\n", "t:3:9: process 1: object w is of model words: its operations are read, cas and swap, not \"enq\"", history.ErrIllFormed},
		{h + "1 inv read" + manyWords(history.DefaultMaxWords+1) + "\n", "t:2: operation on 4097 words; at most 4096 are accepted", history.ErrLimit},
		// JSON Lines.
		{`{"p":1,"inv":"deq","object":"q"}` + "\n", "t:1: a version 2 history starts with the line", history.ErrSyntax},
		{`{"header":"pmlin-history v2","crash":true}` + "\n", "t:1: key \"crash\" does not belong on the header line", history.ErrSyntax},
		{`{"header":"pmlin-history v1"}` + "\n", "t:1: this is a version 1 history", history.ErrSyntax},
		{jh + `{"object":"q"}` + "\n", "t:2: an object is declared as {\"object\":NAME,\"model\":MODEL}", history.ErrSyntax},
		{jh + `{"object":"q","model":"queue","params":{"cap":true}}` + "\n", "t:2: parameter cap is true: a parameter's value is a string or an unsigned integer", history.ErrSyntax},
		{jh + `{"object":"q","model":"queue","params":{"cap":1,"cap":2}}` + "\n", "t:2: object q: parameter cap is given twice", history.ErrIllFormed},
		{jh + `{"object":"q","model":"queue","params":{"cap":"a b"}}` + "\n", "t:2: object q: the value of parameter cap has ' '", history.ErrSyntax},
		{jh + `{"object":"q","model":"queue","x":1}` + "\n", "t:2: unknown key \"x\"", history.ErrSyntax},
		{jh + `{"object":"q","object":"r","model":"queue"}` + "\n", "t:2: key \"object\" appears twice on the line", history.ErrSyntax},
		{jh + `{"object":"q","model":"queue","Model":"stack"}` + "\n", "t:2: key \"Model\" appears twice on the line", history.ErrSyntax},
		{jh + `{"object":"q","model":"queue","params":{"a":"{\"p\":1,"},"\u006dodel":"stack"}` + "\n", "t:2: key \"model\" appears twice on the line", history.ErrSyntax},
		{jh + `{"object":"q","model":"queue","params":{"model":1,"object":"[{\"model\":2}]"}}` + "\n" + `{"p":1,"inv":"enq","object":"q","args":[1]}` + "\n{\"p\":1,\"ret\":[\"ok\"]}\n1 inv\n", "t:5: expected a JSON object", history.ErrSyntax},
		{jh + `{"object":"q","model":"queue"` + "\n", "t:2: the JSON ends before its object or string does", history.ErrSyntax},
		{jh + `{"object":"q","model":7}` + "\n", "t:2: \"model\" is a number, expected a string naming it", history.ErrSyntax},
		{jh + `{"crash":true,"P":1}` + "\n", "t:2: unknown key \"P\" (a version 2 line's keys are header, object", history.ErrSyntax},
		{jh + `{"Crash":true}` + "\n", "t:2: unknown key \"Crash\"", history.ErrSyntax},
		{jh + `{"crash":true}}` + "\n", "t:2: more than one JSON value on the line (\"}\" after the object)", history.ErrSyntax},
		{jh + `{"crash":true,"init":0}` + "\n", "t:2: a JSON line is exactly one of", history.ErrSyntax},
		{jh + `{"crash":false}` + "\n", "t:2: a crash line is {\"crash\":true}", history.ErrSyntax},
		{jh + `{"crash":true,"args":[]}` + "\n", "t:2: key \"args\" does not belong on a crash line", history.ErrSyntax},
		{jh + "crash\n", "t:2: expected a JSON object", history.ErrSyntax},
		{jq + `{"p":1,"inv":"enq","args":[1]}` + "\n", "t:3: process 1: an operation names its object in \"object\"", history.ErrSyntax},
		{jq + `{"p":1,"inv":"enq","object":"r","args":[1]}` + "\n", "t:3: object r is not declared", history.ErrIllFormed},
		{jq + `{"p":1,"inv":"enq","object":"q","addrs":[1]}` + "\n", "t:3: key \"addrs\" does not belong on a generic invocation line", history.ErrSyntax},
		{jq + `{"p":1,"inv":"enq","object":"q","args":[true]}` + "\n", "t:3: argument true is not a value", history.ErrSyntax},
		{jq + `{"p":1,"inv":"enq","object":"q","args":[1.5]}` + "\n", "t:3: argument \"1.5\" is not a number", history.ErrSyntax},
		{jq + `{"p":1,"inv":"enq","object":"q","args":["x"]}` + "\n", "t:3: argument \"x\" is not a value", history.ErrSyntax},
		{jq + `{"p":1,"inv":"deq","object":"q","ret":"?"}` + "\n", "t:3: process 1: a line has exactly one of \"inv\" and \"ret\"", history.ErrSyntax},
		{jq + `{"p":"1","inv":"deq","object":"q"}` + "\n", "t:3: process id \"\\\"1\\\"\" is not a decimal integer", history.ErrSyntax},
		{jq + `{"p":1,"inv":"deq","object":"q"}` + "\n" + `{"p":1,"ret":"?","addr":1}` + "\n", "t:4: key \"addr\" does not belong on an unknown response line", history.ErrSyntax},
		{jq + `{"p":1,"inv":"deq","object":"q"}` + "\n" + `{"p":1,"ret":[]}` + "\n", "t:4: process 1: a response has its results, or ? (unknown)", history.ErrSyntax},
		{jq + `{"p":1,"ret":["ok"]}` + "\n", "t:3: process 1 returns but has no pending operation", history.ErrIllFormed},
		{jh + `{"p":1,"inv":"cas","words":[[1,0,5]]}` + "\n" + `{"p":1,"ret":"fail","addr":1,"values":[]}` + "\n", "t:3: process 1: \"values\" of a failed cas holds one value per address", history.ErrSyntax},
		{jh + `{"p":1,"inv":"cas","words":[[1,0,5]]}` + "\n" + `{"p":1,"ret":"fail"}` + "\n", "t:3: process 1: a failed cas names the address that differed in \"addr\"", history.ErrSyntax},
		{jh + `{"p":1,"inv":"cas","words":[[1,0,5]]}` + "\n" + `{"p":1,"ret":[5]}` + "\n", "t:3: process 1: the cas of line 2 returns \"ok\" or \"fail\"", history.ErrIllFormed},
		{jh + `{"p":1,"inv":"cas","words":[[1,0]]}` + "\n", "t:2: process 1: a cas word is [address, expected value, new value]", history.ErrSyntax},
		{jh + `{"p":1,"inv":"read","words":[[1,0]]}` + "\n", "t:2: key \"words\" does not belong on a read line", history.ErrSyntax},
		{jh + `{"p":1,"inv":"read","addrs":["ok"]}` + "\n", "t:2: address \"ok\" is not a number", history.ErrSyntax},
		{jh + `{"p":1,"inv":"read","addrs":[1]}` + "\n" + `{"p":1,"ret":[1,2]}` + "\n", "t:3: process 1: the read of line 2 has 1 addresses but returns 2 values", history.ErrIllFormed},
		{jh + `{"init":{"1":2,"1":3}}` + "\n", "t:2: model words: the initial value of address 1 is given twice", history.ErrIllFormed},
	} {
		_, err := history.ReadV2(strings.NewReader(c.in), "t")
		var he *history.Error
		if !errors.As(err, &he) {
			t.Errorf("%q: got %v, want an *Error %q", c.in, err, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got  %v\n want %s...", c.in, err, c.want)
		}
		if !errors.Is(err, c.kind) {
			t.Errorf("%q: %v is not of kind %v", c.in, err, c.kind)
		}
	}
}

// manyWords is " 0 1 ... n-1".
func manyWords(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(" " + strconv.Itoa(i))
	}
	return b.String()
}

// TestWriteV2Refuses checks that WriteV2 refuses, with nothing written,
// a History whose text would not read back as it.
func TestWriteV2Refuses(t *testing.T) {
	good := func() *model.History {
		return &model.History{
			Objects: []model.Object{{Name: "q", Model: "queue"}, {Name: "w", Model: "words"}},
			Ops: []model.Op{
				{Proc: 1, Object: 0, Name: "enq", Args: []model.Value{model.Number(1)}, Results: []model.Value{model.Sym(model.OK)}, Call: 0, Return: 1, Crash: -1},
				{Proc: 2, Object: 1, Name: "read", Args: []model.Value{model.Number(1)}, Status: model.CutOff, Call: 2, Return: -1, Crash: 0},
			},
			Crashes: []model.Crash{{Pos: 3}},
			Events:  4,
		}
	}
	var out bytes.Buffer
	if err := history.WriteV2(&out, good(), history.Text); err != nil {
		t.Fatalf("the good history: %v", err)
	}
	roundTripV2(t, good())
	for _, c := range []struct {
		name   string
		change func(h *model.History)
		want   string
	}{
		{"reserved object name", func(h *model.History) { h.Objects[0].Name = "read" }, `object name "read"`},
		{"two objects of one name", func(h *model.History) { h.Objects[1].Name = "q" }, "declared twice"},
		{"bad model name", func(h *model.History) { h.Objects[0].Model = "a b" }, "model name"},
		{"bad parameter", func(h *model.History) { h.Objects[0].Params = []model.Param{{Key: "cap", Value: "#"}} }, "parameter cap"},
		{"bad operation name", func(h *model.History) { h.Ops[0].Name = "Enq" }, `operation name "Enq"`},
		{"words operation", func(h *model.History) { h.Ops[1].Name = "get" }, `no operation "get"`},
		{"cas arguments", func(h *model.History) { h.Ops[1].Name = "cas" }, "a cas has 1 arguments"},
		{"symbol address", func(h *model.History) { h.Ops[1].Args[0] = model.Sym(model.Nil) }, "numbers, not nil"},
		{"two events at one position", func(h *model.History) { h.Crashes[0].Pos = 2 }, "two events at position 2"},
		{"a gap", func(h *model.History) { h.Events = 5 }, "position 4 holds no event"},
		{"return before call", func(h *model.History) { h.Ops[0].Call, h.Ops[0].Return = 1, 0 }, "returns (position 0) before"},
		{"cut off with a return", func(h *model.History) { h.Ops[1].Return = 4; h.Events = 5 }, "a response position 4"},
		{"returned without results", func(h *model.History) { h.Ops[0].Results = nil }, "has no result"},
		{"no such object", func(h *model.History) { h.Ops[0].Object = 2 }, "object 2, of 2"},
		{"process id", func(h *model.History) { h.Ops[0].Proc = -1 }, "process id -1"},
	} {
		h := good()
		c.change(h)
		var out bytes.Buffer
		err := history.WriteV2(&out, h, history.JSONL)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%s: wrote %q", c.name, out.String())
		}
	}
}

// v2FuzzSeeds are valid and broken version 2 histories; the files under
// testdata/v2 are added too.
var v2FuzzSeeds = []string{
	"",
	"pmlin-history v2\n",
	"pmlin-history v2\nobject q queue cap=2\n1 inv q enq 1\n2 inv q deq\n1 ret ok\ncrash\n2 ret 1\n",
	"pmlin-history v2\r\nobject m map\r\n1 inv m put 1 nil\r\n1 ret ?\r\n",
	"pmlin-history v2\ninit 5\n1 inv read 1 2\n1 ret 5 5\n1 inv cas 1:5:6\n1 ret fail 1 7\n",
	"pmlin-history v2\nobject w words 1=2\n1 inv w swap 1:3\n1 ret 2\n",
	`{"header":"pmlin-history v2"}` + "\n" + `{"object":"s","model":"set","params":{"x":1}}` + "\n" + `{"p":1,"inv":"add","object":"s","args":[1]}` + "\n" + `{"p":1,"ret":"true"}` + "\n",
	`{"header":"pmlin-history v2"}` + "\n" + `{"init":{"1":2}}` + "\n" + `{"p":1,"inv":"cas","words":[[1,2,3]]}` + "\n" + `{"p":1,"ret":"fail","addr":1,"values":[4]}` + "\n" + `{"crash":true}` + "\n",
}

// FuzzReadV2 and FuzzReadV2JSON hold the version 2 reader of each syntax
// (seeded with its histories) to: never a panic; an error is an *Error
// that names a line of the input (but for an input with no line at all); a
// history read is written and read back unchanged, in both syntaxes.
func FuzzReadV2(f *testing.F)     { fuzzV2(f, false) }
func FuzzReadV2JSON(f *testing.F) { fuzzV2(f, true) }

func fuzzV2(f *testing.F, jsonl bool) {
	for _, s := range v2FuzzSeeds {
		if strings.HasPrefix(s, "{") == jsonl {
			f.Add([]byte(s))
		}
	}
	files, _ := filepath.Glob("testdata/v2/*")
	for _, name := range files {
		if strings.HasSuffix(name, ".jsonl") != jsonl {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := history.ReadV2(bytes.NewReader(in), "fuzz")
		if err != nil {
			var he *history.Error
			if !errors.As(err, &he) || !errors.Is(err, history.ErrMalformed) {
				t.Fatalf("not a malformed-input *Error: %v", err)
			}
			lines := int64(bytes.Count(in, []byte("\n")))
			if len(in) > 0 && in[len(in)-1] != '\n' {
				lines++
			}
			if he.Line < 1 && len(in) > 0 || he.Line > lines {
				t.Fatalf("line %d of %d: %v", he.Line, lines, err)
			}
			return
		}
		roundTripV2(t, h)
		// Converted line for line, it is the same history, lines and all.
		to := history.JSONL
		if jsonl {
			to = history.Text
		}
		var out bytes.Buffer
		if _, err := history.ConvertV2(&out, bytes.NewReader(in), "fuzz", to); err != nil {
			t.Fatalf("ConvertV2: %v", err)
		}
		h2, err := history.ReadV2(bytes.NewReader(out.Bytes()), "fuzz")
		if err != nil || !reflect.DeepEqual(h, h2) {
			t.Fatalf("ConvertV2 changed the history: %v\n%s", err, out.String())
		}
	})
}

// TestConvertV2 converts every version 2 history under testdata/v2 to the
// other syntax and back: the history read is the same, lines included
// (every operation keeps its line), and so are its comments.
func TestConvertV2(t *testing.T) {
	files, _ := filepath.Glob("testdata/v2/*")
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			in, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			h, err := history.ReadV2(bytes.NewReader(in), "x")
			if err != nil {
				t.Fatal(err)
			}
			from, to := history.Text, history.JSONL
			if strings.HasSuffix(name, ".jsonl") {
				from, to = to, from
			}
			var out bytes.Buffer
			st, err := history.ConvertV2(&out, bytes.NewReader(in), name, to)
			if err != nil {
				t.Fatal(err)
			}
			if st.From != from || st.Events != int64(h.Events) || st.Lines != int64(bytes.Count(in, []byte("\n"))) {
				t.Errorf("stats %+v", st)
			}
			h2, err := history.ReadV2(bytes.NewReader(out.Bytes()), "x")
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !reflect.DeepEqual(h, h2) {
				t.Fatalf("converted:\n%+v\n%+v\n%s", *h, *h2, out.String())
			}
			var back bytes.Buffer
			if _, err := history.ConvertV2(&back, bytes.NewReader(out.Bytes()), "x", from); err != nil {
				t.Fatal(err)
			}
			var comments []string
			for _, l := range strings.Split(string(in), "\n") {
				if c := strings.TrimSpace(l); strings.HasPrefix(c, "#") {
					comments = append(comments, c)
				}
			}
			for _, c := range comments {
				if !strings.Contains(out.String(), c) || !strings.Contains(back.String(), c) {
					t.Errorf("comment %q lost", c)
				}
			}
			h3, err := history.ReadV2(bytes.NewReader(back.Bytes()), "x")
			if err != nil || !reflect.DeepEqual(h, h3) {
				t.Fatalf("converted back: %v\n%s", err, back.String())
			}
		})
	}
}

// TestV2DocExamples reads every version 2 example of
// docs/history-format.md and README.md (an indented block that starts
// with the header): each is a well-formed history, and the contract's
// example is testdata/v2/spec-example's, in text and JSON Lines in the
// format's documentation, in text in the README.
func TestV2DocExamples(t *testing.T) {
	var doc []byte
	for _, name := range []string{"../../docs/history-format.md", "../../README.md"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		doc = append(append(doc, b...), '\n')
	}
	var blocks []string
	var cur []string
	for _, l := range append(strings.Split(string(doc), "\n"), "") {
		if body, ok := strings.CutPrefix(l, "    "); ok && (len(cur) > 0 || body == "pmlin-history v2" || body == `{"header":"pmlin-history v2"}`) {
			cur = append(cur, body)
			continue
		}
		if len(cur) > 0 {
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
			cur = nil
		}
	}
	if len(blocks) < 3 {
		t.Fatalf("%d examples", len(blocks))
	}
	spec := withoutLinesV2(readV2(t, "testdata/v2/spec-example.hist"))
	specs := 0
	for _, b := range blocks {
		h, err := history.ReadV2(strings.NewReader(b), "doc")
		if err != nil {
			t.Errorf("%v\n%s", err, b)
			continue
		}
		if reflect.DeepEqual(withoutLinesV2(h), spec) {
			specs++
		}
	}
	if specs != 3 {
		t.Errorf("the spec example is %d of the doc's examples", specs)
	}
}

// TestV2CRLF: "\r\n" line endings, tabs and comments after events read as
// the plain text does, lines and all, in both syntaxes.
func TestV2CRLF(t *testing.T) {
	for _, name := range []string{"testdata/v2/spec-example.hist", "testdata/v2/words.jsonl"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lf, err := history.ReadV2(bytes.NewReader(b), "x")
		if err != nil {
			t.Fatal(err)
		}
		var crlf strings.Builder
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if l = strings.TrimSuffix(l, "\n"); l != "" && !strings.HasPrefix(l, "#") {
				if strings.HasSuffix(name, ".hist") { // (a JSON string keeps its spaces)
					l = strings.ReplaceAll(l, " ", " \t")
				}
				l = "\t" + l + "\t# c"
			}
			crlf.WriteString(l + "\r\n")
		}
		got, err := history.ReadV2(strings.NewReader(crlf.String()), "x")
		if err != nil || !reflect.DeepEqual(got, lf) {
			t.Fatalf("%s: %v\n%q", name, err, crlf.String())
		}
	}
}
