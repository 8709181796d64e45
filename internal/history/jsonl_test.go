package history_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// The same history in both syntaxes, line for line, so that even the line
// numbers of the events agree.
const twinText = `# the example of docs/history-format.md, and more
pmlin-history v1
init 0
init 12=0x5 13=7
1 inv read 10 11
1 ret 0 0
1 inv cas 10:0:0x100001 11:0:0x100002
2 inv read 10

1 ret ok
2 ret 0x100001
2 inv cas 12:5:0xfffffffffffffff1 13:7:18446744073709551615
2 ret fail 13
crash
2 inv read 10 11
2 ret 0x100001 0x100002
1 inv swap 10:0x100003 12:9
1 ret 0x100001 0xfffffffffffffff1
2 inv cas 10:0x100001:0x200001 11:0x100002:0x200002
2 ret fail 10 0x100003 0x100002
2147483647 inv cas 10:0x100001:9007199254740993
0 inv read 12
`

const twinJSONL = `# the example of docs/history-format.md, and more
{"header":"pmlin-history v1"}
{"init":0}
{"init":{"12":"0x5","13":7}}
{"p":1,"inv":"read","addrs":[10,11]}
{"p":1,"ret":[0,0]}
{"p":1,"inv":"cas","words":[[10,0,"0x100001"],[11,0,"0x100002"]]}
  {"p": 2, "inv": "read", "addrs": [10]}

{"p":1,"ret":"ok"}
{"p":2,"ret":["0x100001"]}
{"p":2,"inv":"cas","words":[[12,5,"0xfffffffffffffff1"],["13","7",18446744073709551615]]}
{"p":2,"ret":"fail","addr":"13"}
{"crash":true}
{"p":2,"inv":"read","addrs":[10,11]}
{"p":2,"ret":[1048577,"1048578"]}
{"p":1,"inv":"swap","words":[[10,"0x100003"],["0xc", 9]]}
{"p":1,"ret":["0x100001","0xfffffffffffffff1"]}
{"p":2,"inv":"cas","words":[[10,"0x100001","0x200001"],[11,"0x100002","0x200002"]]}
{"values":["0x100003", 1048578], "p":2, "ret":"fail", "addr":10}
{"p":2147483647,"inv":"cas","words":[[10,"1048577",9007199254740993]]}
{"p":0,"inv":"read","addrs":["0xc"]}
`

func TestJSONLTwin(t *testing.T) {
	tevs, tr, err := readEvents(twinText, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jevs, jr, err := readEvents(twinJSONL, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format() != history.Text || jr.Format() != history.JSONL {
		t.Errorf("formats %v and %v, want text and jsonl", tr.Format(), jr.Format())
	}
	if len(tevs) != 17 {
		t.Errorf("%d events, want 17", len(tevs))
	}
	if !reflect.DeepEqual(tevs, jevs) {
		for i := 0; i < max(len(tevs), len(jevs)); i++ {
			var a, b history.Event
			if i < len(tevs) {
				a = tevs[i]
			}
			if i < len(jevs) {
				b = jevs[i]
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("event %d:\n text  %+v\n jsonl %+v", i, a, b)
			}
		}
	}
	if !reflect.DeepEqual(tr.InitWords(), jr.InitWords()) || tr.InitDefault() != jr.InitDefault() {
		t.Errorf("initial values differ: %v %v / %v %v", tr.InitDefault(), tr.InitWords(), jr.InitDefault(), jr.InitWords())
	}
	// The in-memory histories agree too.
	th, err := history.ReadAll(strings.NewReader(twinText), "t")
	if err != nil {
		t.Fatal(err)
	}
	jh, err := history.ReadAll(strings.NewReader(twinJSONL), "t")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(th, jh) {
		t.Errorf("ReadAll differs:\n text  %+v\n jsonl %+v", th, jh)
	}
}

// TestTwinFiles: every testdata history that has a JSON Lines twin reads
// to the same events.
func TestTwinFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.jsonl")
	}
	for _, jf := range files {
		tf := strings.TrimSuffix(jf, ".jsonl") + ".hist"
		t.Run(filepath.Base(tf), func(t *testing.T) {
			tb, err := os.ReadFile(tf)
			if err != nil {
				t.Skip("no text twin")
			}
			jb, err := os.ReadFile(jf)
			if err != nil {
				t.Fatal(err)
			}
			tevs, _, terr := readEvents(string(tb), history.Options{})
			jevs, _, jerr := readEvents(string(jb), history.Options{})
			if fmt.Sprint(terr) != fmt.Sprint(jerr) {
				// Messages may differ by syntax; the place must not.
				if (terr == nil) != (jerr == nil) || lineOf(terr) != lineOf(jerr) {
					t.Fatalf("text: %v; jsonl: %v", terr, jerr)
				}
			}
			if !reflect.DeepEqual(tevs, jevs) {
				t.Fatalf("events differ:\n text  %+v\n jsonl %+v", tevs, jevs)
			}
		})
	}
}

func lineOf(err error) int64 {
	if he, ok := err.(*history.Error); ok {
		return he.Line
	}
	return -1
}

func TestJSONLWellFormedness(t *testing.T) {
	const (
		rd  = `{"p":1,"inv":"read","addrs":[10,11]}` + "\n"
		cas = `{"p":1,"inv":"cas","words":[[10,0,5],[11,0,6]]}` + "\n"
		swp = `{"p":1,"inv":"swap","words":[[10,5],[11,"0x6"]]}` + "\n"
	)
	tests := []struct {
		name   string
		in     string
		line   int64
		msg    string
		events int
	}{
		{name: "example", in: rd + `{"p":1,"ret":[0,0]}` + "\n" + cas + `{"p":1,"ret":"ok"}` + "\n{\"crash\":true}\n", events: 5},
		{name: "comments and blanks", in: "# c\n\n" + rd + "  # c\n" + `{"p":1,"ret":[0,0]} # trailing` + "\n", events: 2},
		{name: "CRLF", in: strings.ReplaceAll(rd+`{"p":1,"ret":[0,0]}`+"\n", "\n", "\r\n"), events: 2},
		{name: "no final newline", in: rd + `{"p":1,"ret":[0,0]}`, events: 2},
		{name: "header only", in: `{"header":"pmlin-history v1"}`, events: 0},
		{name: "string numbers above 2^53", in: `{"p":1,"inv":"read","addrs":["18446744073709551615","0xfffffffffffffffe"]}` + "\n" +
			`{"p":1,"ret":["9007199254740993",9007199254740993]}` + "\n", events: 2},

		// Bad JSON.
		{name: "truncated object", in: rd + `{"p":1,"ret":[0,0]`, line: 2, msg: "the JSON ends before its object"},
		{name: "not an object", in: rd + "[1,2]\n", line: 2, msg: "expected a JSON object"},
		{name: "text line in JSONL", in: rd + "1 ret 0 0\n", line: 2, msg: "expected a JSON object"},
		{name: "two objects on a line", in: `{"crash":true}{"crash":true}` + "\n", line: 1, msg: "more than one JSON value"},
		{name: "a stray close after the object", in: `{"p":1,"inv":"read","addrs":[1]}` + "\n" + `{"p":1,"ret":[0]}}]` + "\n", line: 2, msg: `more than one JSON value on the line ("}]" after the object)`},
		{name: "garbage after object", in: `{"crash":true} x` + "\n", line: 1, msg: ""},
		{name: "NUL in JSON", in: "{\"crash\":\x00true}\n", line: 1, msg: ""},
		{name: "unknown field", in: `{"p":1,"inv":"read","addrs":[1],"note":"x"}` + "\n", line: 1, msg: "unknown key \"note\""},
		{name: "unknown field alone", in: rd + `{"comment":"hi"}` + "\n", line: 2, msg: "unknown key \"comment\""},

		// Exactly one kind per line.
		{name: "empty object", in: "{}\n", line: 1, msg: "exactly one of"},
		{name: "crash and process", in: `{"p":1,"crash":true}` + "\n", line: 1, msg: "exactly one of"},
		{name: "header and init", in: `{"header":"pmlin-history v1","init":0}` + "\n", line: 1, msg: "exactly one of"},
		{name: "init and crash", in: `{"init":0,"crash":true}` + "\n", line: 1, msg: "exactly one of"},
		{name: "inv and ret", in: `{"p":1,"inv":"read","addrs":[1],"ret":[0]}` + "\n", line: 1, msg: `exactly one of "inv" and "ret"`},
		{name: "neither inv nor ret", in: `{"p":1}` + "\n", line: 1, msg: `exactly one of "inv" and "ret"`},
		{name: "crash false", in: `{"crash":false}` + "\n", line: 1, msg: "crash"},

		// Numbers.
		{name: "negative address", in: `{"p":1,"inv":"read","addrs":[-1]}` + "\n", line: 1, msg: "is negative"},
		{name: "negative string", in: `{"p":1,"inv":"read","addrs":["-1"]}` + "\n", line: 1, msg: "is negative"},
		{name: "negative value", in: rd + `{"p":1,"ret":[0,-5]}` + "\n", line: 2, msg: "is negative"},
		{name: "negative process", in: `{"p":-1,"inv":"read","addrs":[1]}` + "\n", line: 1, msg: "process id"},
		{name: "process too large", in: `{"p":2147483648,"inv":"read","addrs":[1]}` + "\n", line: 1, msg: "larger than"},
		{name: "process not an integer", in: `{"p":1.0,"inv":"read","addrs":[1]}` + "\n", line: 1, msg: "process id"},
		{name: "float value", in: `{"p":1,"inv":"read","addrs":[1.5]}` + "\n", line: 1, msg: "not a number"},
		{name: "exponent value", in: `{"p":1,"inv":"read","addrs":[1e3]}` + "\n", line: 1, msg: "not a number"},
		{name: "null value", in: `{"p":1,"inv":"read","addrs":[null]}` + "\n", line: 1, msg: "not a number"},
		{name: "bool value", in: `{"p":1,"inv":"read","addrs":[true]}` + "\n", line: 1, msg: "not a number"},
		{name: "overflow number", in: `{"p":1,"inv":"read","addrs":[18446744073709551616]}` + "\n", line: 1, msg: "does not fit in 64 bits"},
		{name: "overflow string", in: `{"p":1,"inv":"read","addrs":["0x10000000000000000"]}` + "\n", line: 1, msg: "does not fit in 64 bits"},
		{name: "string with blank", in: `{"p":1,"inv":"read","addrs":[" 1"]}` + "\n", line: 1, msg: "not a number"},
		{name: "hex without quotes", in: `{"p":1,"inv":"read","addrs":[0x10]}` + "\n", line: 1, msg: "a hex number is a JSON string"},

		// Header and init.
		{name: "header v2", in: `{"header":"pmlin-history v2"}` + "\n", line: 1, msg: "unsupported history version"},
		{name: "header garbage", in: `{"header":"hello"}` + "\n", line: 1, msg: "header"},
		{name: "header late", in: rd + `{"header":"pmlin-history v1"}` + "\n", line: 2, msg: "first line"},
		{name: "init map", in: `{"init":{"10":"0x5","0xb":7}}` + "\n" + rd + `{"p":1,"ret":[5,7]}` + "\n", events: 2},
		{name: "init twice", in: `{"init":0}` + "\n" + `{"init":1}` + "\n", line: 2, msg: "given twice"},
		{name: "init word twice", in: `{"init":{"10":1,"0xa":2}}` + "\n", line: 1, msg: "given twice"},
		{name: "init bad key", in: `{"init":{"x":1}}` + "\n", line: 1, msg: "not a number"},
		{name: "init after event", in: rd + `{"init":0}` + "\n", line: 2, msg: "init after the first event"},
		{name: "init array", in: `{"init":[1]}` + "\n", line: 1, msg: "not a number"},

		// Operations.
		{name: "read with words", in: `{"p":1,"inv":"read","words":[[1,0,5]]}` + "\n", line: 1, msg: `"addrs", not "words"`},
		{name: "cas with addrs", in: `{"p":1,"inv":"cas","addrs":[1]}` + "\n", line: 1, msg: `"words"`},
		{name: "cas word pair", in: `{"p":1,"inv":"cas","words":[[1,0]]}` + "\n", line: 1, msg: "[address, expected, new]"},
		{name: "read k=0", in: `{"p":1,"inv":"read","addrs":[]}` + "\n", line: 1, msg: "no address"},
		{name: "read no addrs", in: `{"p":1,"inv":"read"}` + "\n", line: 1, msg: "no address"},
		{name: "cas k=0", in: `{"p":1,"inv":"cas","words":[]}` + "\n", line: 1, msg: "no address"},
		{name: "duplicate address", in: `{"p":1,"inv":"read","addrs":[10,"0xa"]}` + "\n", line: 1, msg: "appears twice"},
		{name: "repeated key p", in: `{"p":1,"inv":"read","addrs":[3],"p":2}` + "\n", line: 1, msg: `key "p" appears twice`},
		{name: "repeated key addrs", in: `{"p":1,"inv":"read","addrs":[3],"addrs":[4]}` + "\n", line: 1, msg: `key "addrs" appears twice`},
		{name: "repeated key ret", in: rd + `{"p":1,"ret":[0],"ret":[5]}` + "\n", line: 2, msg: `key "ret" appears twice`},
		{name: "unknown op", in: `{"p":1,"inv":"write","addrs":[1]}` + "\n", line: 1, msg: "unknown operation"},
		{name: "addr on inv", in: `{"p":1,"inv":"read","addrs":[1],"addr":1}` + "\n", line: 1, msg: `"addr"`},
		{name: "ret without inv", in: `{"p":1,"ret":"ok"}` + "\n", line: 1, msg: "no pending operation"},
		{name: "ret after crash", in: rd + `{"crash":true}` + "\n" + `{"p":1,"ret":[0,0]}` + "\n", line: 3, msg: "no pending operation"},
		{name: "two inv", in: rd + rd, line: 2, msg: "is pending"},
		{name: "read ret count", in: rd + `{"p":1,"ret":[0]}` + "\n", line: 2, msg: "has 2 addresses but returns 1 values"},
		{name: "read ret ok", in: rd + `{"p":1,"ret":"ok"}` + "\n", line: 2, msg: "returns an array"},
		{name: "read ret with addr", in: rd + `{"p":1,"ret":[0,0],"addr":10}` + "\n", line: 2, msg: `"addr"`},
		{name: "ret with addrs", in: rd + `{"p":1,"ret":[0,0],"addrs":[10,11]}` + "\n", line: 2, msg: `no "addrs"`},
		{name: "cas ret values", in: cas + `{"p":1,"ret":[0,0]}` + "\n", line: 2, msg: `"ok" or "fail"`},
		{name: "cas ret other string", in: cas + `{"p":1,"ret":"yes"}` + "\n", line: 2, msg: `"ok" or "fail"`},
		{name: "cas ret fail", in: cas + `{"p":1,"ret":"fail","addr":11}` + "\n", events: 2},
		{name: "cas ret fail no addr", in: cas + `{"p":1,"ret":"fail"}` + "\n", line: 2, msg: `"addr"`},
		{name: "cas ret fail other addr", in: cas + `{"p":1,"ret":"fail","addr":12}` + "\n", line: 2, msg: "not one of its addresses"},
		{name: "cas ret ok with addr", in: cas + `{"p":1,"ret":"ok","addr":10}` + "\n", line: 2, msg: `no "addr"`},
		{name: "cas ret fail negative addr", in: cas + `{"p":1,"ret":"fail","addr":-10}` + "\n", line: 2, msg: "is negative"},
		{name: "cas ret fail with values", in: cas + `{"p":1,"ret":"fail","addr":11,"values":[0,"0x7"]}` + "\n", events: 2},
		{name: "cas ret fail with null values", in: cas + `{"p":1,"ret":"fail","addr":11,"values":null}` + "\n", events: 2},
		{name: "cas ret fail with too few values", in: cas + `{"p":1,"ret":"fail","addr":11,"values":[0]}` + "\n", line: 2, msg: "has 2 addresses but its failure reports 1 values"},
		{name: "cas ret fail with no values", in: cas + `{"p":1,"ret":"fail","addr":11,"values":[]}` + "\n", line: 2, msg: `"values" of a failed cas holds one value per address`},
		{name: "cas ret fail with a bad value", in: cas + `{"p":1,"ret":"fail","addr":11,"values":[0,-1]}` + "\n", line: 2, msg: "reported value"},
		{name: "cas ret ok with values", in: cas + `{"p":1,"ret":"ok","values":[0,0]}` + "\n", line: 2, msg: `no "addr" or "values"`},
		{name: "values on a read ret", in: rd + `{"p":1,"ret":[0,0],"values":[0,0]}` + "\n", line: 2, msg: `"values" belong to a failed cas's ret`},
		{name: "values on an inv", in: `{"p":1,"inv":"read","addrs":[1],"values":[0]}` + "\n", line: 1, msg: `"values" belong to a failed cas's ret`},
		{name: "swap", in: swp + `{"p":1,"ret":[0,"0x0"]}` + "\n", events: 2},
		{name: "swap with addrs", in: `{"p":1,"inv":"swap","addrs":[1]}` + "\n", line: 1, msg: `a swap has "words" ([address, new] pairs), not "addrs"`},
		{name: "swap word triple", in: `{"p":1,"inv":"swap","words":[[1,0,5]]}` + "\n", line: 1, msg: "a swap word is [address, new]"},
		{name: "swap word mixed", in: `{"p":1,"inv":"swap","words":[[1,5],[2,0,6]]}` + "\n", line: 1, msg: "a swap word is [address, new]"},
		{name: "cas word mixed", in: `{"p":1,"inv":"cas","words":[[1,0,5],[2,6]]}` + "\n", line: 1, msg: "[address, expected, new]"},
		{name: "swap k=0", in: `{"p":1,"inv":"swap","words":[]}` + "\n", line: 1, msg: "no address"},
		{name: "swap ret count", in: swp + `{"p":1,"ret":[0]}` + "\n", line: 2, msg: "the swap of line 1 has 2 addresses but returns 1 values"},
		{name: "swap ret ok", in: swp + `{"p":1,"ret":"ok"}` + "\n", line: 2, msg: "the swap of line 1 returns an array"},
		{name: "swap ret with addr", in: swp + `{"p":1,"ret":[0,0],"addr":10}` + "\n", line: 2, msg: `"addr"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs, r, err := readEvents(tc.in, history.Options{})
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(evs) != tc.events {
					t.Fatalf("%d events, want %d", len(evs), tc.events)
				}
				if len(evs) > 0 && r.Format() != history.JSONL {
					t.Fatalf("format %v, want jsonl", r.Format())
				}
				return
			}
			checkErr(t, err, tc.line, tc.msg)
		})
	}
}

// TestJSONLInitDuplicateKey: the text format rejects an initial value
// given twice; the JSON Lines twin ("the same events and the same rules")
// silently keeps the last of two equal keys, because encoding/json does.
func TestJSONLInitDuplicateKey(t *testing.T) {
	_, _, err := readEvents("init 10=1 10=2\n", history.Options{})
	checkErr(t, err, 1, "given twice")
	_, _, err = readEvents(`{"init":{"10":1,"10":2}}`+"\n", history.Options{})
	checkErr(t, err, 1, "given twice")
}
