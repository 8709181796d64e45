package lin

import (
	"context"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// L and V abbreviate the expected verdicts of the tables.
const (
	L = Linearizable
	V = Violation
)

type modelCase struct {
	name string
	hist string
	want Verdict
}

// modelCases: per model, histories that are legal and histories that are
// not, each one differing from a legal one in as little as possible, so
// that each illegal case tests one rule of the model.
var modelCases = []modelCase{
	// register
	{"register read init", "object r register\n1 inv r read\n1 ret 0", L},
	{"register read wrong init", "object r register\n1 inv r read\n1 ret 1", V},
	{"register init param", "object r register init=nil\n1 inv r read\n1 ret nil", L},
	{"register write then read", "object r register\n1 inv r write 5\n1 ret ok\n2 inv r read\n2 ret 5", L},
	{"register stale read", "object r register\n1 inv r write 5\n1 ret ok\n2 inv r read\n2 ret 0", V},
	{"register concurrent read old", "object r register\n1 inv r write 5\n2 inv r read\n2 ret 0\n1 ret ok", L},
	{"register cas ok", "object r register\n1 inv r cas 0 3\n1 ret ok\n2 inv r read\n2 ret 3", L},
	{"register cas must fail", "object r register\n1 inv r cas 1 3\n1 ret ok", V},
	{"register cas fail", "object r register\n1 inv r cas 1 3\n1 ret fail\n2 inv r read\n2 ret 0", L},
	{"register cas cannot fail", "object r register\n1 inv r cas 0 3\n1 ret fail", V},
	{"register unknown write seen", "object r register\n1 inv r write 5\n1 ret ?\n2 inv r read\n2 ret 5\n3 inv r read\n3 ret 5", L},
	{"register unknown write maybe not", "object r register\n1 inv r write 5\n1 ret ?\n2 inv r read\n2 ret 0", L},
	{"register unknown write at most once", "object r register\n1 inv r write 5\n1 ret ?\n2 inv r read\n2 ret 5\n2 inv r write 6\n2 ret ok\n2 inv r read\n2 ret 5", V},
	{"register write of the value already there, placed late", "object r register\n1 inv r write 0\n2 inv r write 5\n2 ret ok\n1 ret ok\n3 inv r read\n3 ret 0", L},
	{"register read placed late", "object r register\n1 inv r read\n2 inv r write 5\n2 ret ok\n1 ret 5", L},
	{"map unknown put of the value already there, placed late", "object m map\n1 inv m put 1 0\n1 ret nil\n1 inv m put 1 0\n2 inv m put 1 5\n2 ret 0\n1 ret ?\n3 inv m get 1\n3 ret 0", L},
	// counter
	{"counter", "object c counter init=10\n1 inv c add 5\n1 ret ok\n1 inv c fetchadd 2\n1 ret 15\n2 inv c get\n2 ret 17", L},
	{"counter lost add", "object c counter\n1 inv c add 5\n1 ret ok\n2 inv c get\n2 ret 0", V},
	{"counter concurrent fetchadd", "object c counter\n1 inv c fetchadd 1\n2 inv c fetchadd 1\n2 ret 0\n1 ret 1", L},
	{"counter duplicate fetchadd", "object c counter\n1 inv c fetchadd 1\n2 inv c fetchadd 1\n2 ret 0\n1 ret 0", V},
	{"counter wraps", "object c counter init=0xffffffffffffffff\n1 inv c add 2\n1 ret ok\n1 inv c get\n1 ret 1", L},
	// queue
	{"queue fifo", "object q queue\n1 inv q enq 1\n1 ret ok\n1 inv q enq 2\n1 ret ok\n2 inv q deq\n2 ret 1\n2 inv q deq\n2 ret 2\n2 inv q deq\n2 ret empty", L},
	{"queue lifo is wrong", "object q queue\n1 inv q enq 1\n1 ret ok\n1 inv q enq 2\n1 ret ok\n2 inv q deq\n2 ret 2", V},
	{"queue concurrent enqs", "object q queue\n1 inv q enq 1\n2 inv q enq 2\n1 ret ok\n2 ret ok\n3 inv q deq\n3 ret 2\n3 inv q deq\n3 ret 1", L},
	{"queue empty while full", "object q queue\n1 inv q enq 1\n1 ret ok\n2 inv q deq\n2 ret empty", V},
	{"queue cap", "object q queue cap=1\n1 inv q enq 1\n1 ret ok\n1 inv q enq 2\n1 ret fail\n2 inv q deq\n2 ret 1", L},
	{"queue unbounded never full", "object q queue\n1 inv q enq 1\n1 ret fail", V},
	{"stack unbounded never full", "object s stack\n1 inv s push 1\n1 ret fail", V},
	{"queue fail not full", "object q queue cap=2\n1 inv q enq 1\n1 ret ok\n1 inv q enq 2\n1 ret fail", V},
	{"queue duplicate deq", "object q queue\n1 inv q enq 7\n1 ret ok\n2 inv q deq\n3 inv q deq\n2 ret 7\n3 ret 7", V},
	{"queue unknown enq", "object q queue\n1 inv q enq 7\n1 ret ?\n2 inv q deq\n2 ret empty\n2 inv q deq\n2 ret 7", L},
	{"queue unknown deq took", "object q queue\n1 inv q enq 7\n1 ret ok\n2 inv q deq\n2 ret ?\n3 inv q deq\n3 ret empty", L},
	// stack
	{"stack lifo", "object s stack\n1 inv s push 1\n1 ret ok\n1 inv s push 2\n1 ret ok\n2 inv s pop\n2 ret 2\n2 inv s pop\n2 ret 1\n2 inv s pop\n2 ret empty", L},
	{"stack fifo is wrong", "object s stack\n1 inv s push 1\n1 ret ok\n1 inv s push 2\n1 ret ok\n2 inv s pop\n2 ret 1", V},
	{"stack full", "object s stack cap=1\n1 inv s push 1\n1 ret ok\n1 inv s push 2\n1 ret fail\n1 inv s pop\n1 ret 1", L},
	// kqueue: enq 1, 2, 3 by one process, then deqs by another
	{"kqueue k=1 one step out of order", "object q kqueue k=1\n1 inv q enq 1\n1 ret ok\n1 inv q enq 2\n1 ret ok\n1 inv q enq 3\n1 ret ok\n2 inv q deq\n2 ret 2\n2 inv q deq\n2 ret 1\n2 inv q deq\n2 ret 3", L},
	{"kqueue k=1 oldest skipped twice", "object q kqueue k=1\n1 inv q enq 1\n1 ret ok\n1 inv q enq 2\n1 ret ok\n1 inv q enq 3\n1 ret ok\n2 inv q deq\n2 ret 2\n2 inv q deq\n2 ret 3", V},
	{"kqueue k=2 the same", "object q kqueue k=2\n1 inv q enq 1\n1 ret ok\n1 inv q enq 2\n1 ret ok\n1 inv q enq 3\n1 ret ok\n2 inv q deq\n2 ret 2\n2 inv q deq\n2 ret 3", L},
	{"kqueue k=1 two steps from the front", "object q kqueue k=1\n1 inv q enq 1\n1 ret ok\n1 inv q enq 2\n1 ret ok\n1 inv q enq 3\n1 ret ok\n2 inv q deq\n2 ret 3", V},
	{"kqueue k=1 concurrent enqs reorder", "object q kqueue k=1\n1 inv q enq 1\n2 inv q enq 2\n1 ret ok\n2 ret ok\n3 inv q deq\n3 ret 2\n3 inv q deq\n3 ret 1", L},
	{"kqueue enq cannot fail", "object q kqueue k=0\n1 inv q enq 1\n1 ret fail", V},
	{"kqueue empty only when empty", "object q kqueue k=3\n1 inv q enq 1\n1 ret ok\n2 inv q deq\n2 ret empty", V},
	// pqueue
	{"pqueue least first", "object p pqueue\n1 inv p insert 5\n1 ret ok\n1 inv p insert 2\n1 ret ok\n1 inv p insert 5\n1 ret ok\n2 inv p removemin\n2 ret 2\n2 inv p removemin\n2 ret 5\n2 inv p removemin\n2 ret 5\n2 inv p removemin\n2 ret empty", L},
	{"pqueue not least", "object p pqueue\n1 inv p insert 5\n1 ret ok\n1 inv p insert 2\n1 ret ok\n2 inv p removemin\n2 ret 5", V},
	{"pqueue duplicates kept", "object p pqueue\n1 inv p insert 5\n1 ret ok\n1 inv p insert 5\n1 ret ok\n2 inv p removemin\n2 ret 5\n2 inv p removemin\n2 ret empty", V},
	// set
	{"set", "object s set\n1 inv s add 1\n1 ret true\n1 inv s add 1\n1 ret false\n2 inv s contains 1\n2 ret true\n2 inv s remove 1\n2 ret true\n2 inv s contains 1\n2 ret false\n2 inv s remove 1\n2 ret false", L},
	{"set add twice true", "object s set\n1 inv s add 1\n1 ret true\n2 inv s add 1\n2 ret true", V},
	{"set keys independent", "object s set\n1 inv s add 1\n1 ret true\n2 inv s add 2\n2 ret true\n2 inv s contains 1\n2 ret true", L},
	{"set contains absent", "object s set\n1 inv s contains 3\n1 ret true", V},
	// map
	{"map", "object m map\n1 inv m put 1 10\n1 ret nil\n1 inv m put 1 11\n1 ret 10\n2 inv m get 1\n2 ret 11\n2 inv m remove 1\n2 ret 11\n2 inv m get 1\n2 ret nil", L},
	{"map stale get", "object m map\n1 inv m put 1 10\n1 ret nil\n2 inv m get 1\n2 ret nil", V},
	{"map putifabsent", "object m map\n1 inv m putifabsent 1 10\n1 ret nil\n1 inv m putifabsent 1 11\n1 ret 10\n1 inv m get 1\n1 ret 10", L},
	{"map putifabsent overwrote", "object m map\n1 inv m putifabsent 1 10\n1 ret nil\n1 inv m putifabsent 1 11\n1 ret 10\n1 inv m get 1\n1 ret 11", V},
	{"map put returns wrong previous", "object m map\n1 inv m put 1 10\n1 ret nil\n1 inv m put 1 11\n1 ret nil", V},
	{"map other key", "object m map\n1 inv m put 1 10\n1 ret nil\n2 inv m get 2\n2 ret nil", L},
	// mutex
	{"mutex", "object x mutex\n1 inv x acquire\n1 ret ok\n1 inv x release\n1 ret ok\n2 inv x acquire\n2 ret ok", L},
	{"mutex two holders", "object x mutex\n1 inv x acquire\n1 ret ok\n2 inv x acquire\n2 ret ok", V},
	{"mutex release by other", "object x mutex\n1 inv x acquire\n1 ret ok\n2 inv x release\n2 ret ok", V},
	{"mutex concurrent", "object x mutex\n1 inv x acquire\n2 inv x acquire\n1 ret ok\n1 inv x release\n1 ret ok\n2 ret ok", L},
	// words: version 1's semantics
	{"words cas then read", "object words words\n1 inv words cas 10:0:5 11:0:6\n1 ret ok\n2 inv words read 10 11\n2 ret 5 6", L},
	{"words torn read", "object words words\n1 inv words cas 10:0:5 11:0:6\n1 ret ok\n2 inv words read 10 11\n2 ret 5 0", V},
	{"words fail blame", "object words words init=1\n1 inv words cas 10:1:5 11:0:6\n1 ret fail 11 1 1", L},
	{"words fail blames an equal word", "object words words init=1\n1 inv words cas 10:1:5 11:0:6\n1 ret fail 10", V},
	{"words swap", "object words words 10=7\n1 inv words swap 10:8\n1 ret 7\n1 inv words read 10\n1 ret 8", L},
	{"words swap wrong old", "object words words\n1 inv words swap 10:8\n1 ret 7", V},
}

func TestModels(t *testing.T) {
	for _, c := range modelCases {
		t.Run(c.name, func(t *testing.T) {
			h := parse(t, c.hist)
			for _, mode := range history.Modes {
				res, err := Check(context.Background(), h, Options{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				if res.Verdict != c.want {
					t.Fatalf("%s: %v, want %v", mode, res.Verdict, c.want)
				}
				if c.want == Violation {
					var e *Explanation
					for _, o := range res.Objects {
						if o.Explanation != nil {
							e = o.Explanation
						}
					}
					if e == nil || e.Sentence == "" || len(e.Ops) == 0 {
						t.Fatalf("violation without an explanation: %+v", res)
					}
				}
			}
		})
	}
}

// TestNondeterministicInit: a model with several initial states is
// explained by any of them.
func TestBadInput(t *testing.T) {
	cases := []struct{ hist, want string }{
		{"object q queue cap=0", "test.hist:1: object q: model queue: cap=0"},
		{"object q queue size=3", `test.hist:1: object q: model queue has no parameter "size"`},
		{"object q fifo", `test.hist:1: object q: unknown model "fifo"`},
		{"object m map k=1", "model map takes no parameters"},
		{"object r register init=ok", "ok is not a number or nil"},
		{"object q queue\n1 inv q push 1\n1 ret ok", `test.hist:2: queue has no operation "push"`},
		{"object q queue\n1 inv q enq\n1 ret ok", "test.hist:2: queue enq takes 1 arguments, not 0"},
		{"object q queue\n1 inv q deq\n1 ret ok", "test.hist:2: queue deq: returns ok, not a number or empty"},
		{"object q queue\n1 inv q enq 1\n1 ret empty", "test.hist:2: queue enq: returns empty, not ok or fail"},
		{"object q queue\n1 inv q enq nil\n1 ret ok", "nil is not a number"},
		{"object m map\n1 inv m get 1\n1 ret 1 2", "returns 2 results, not one"},
		{"object w words\n1 inv w cas 1:0:1 1:0:2\n1 ret ok", "address 1 appears twice"},
		{"object w words\n1 inv w cas 1:0:1\n1 ret fail 2", "fails at address 2, which is not one of its own"},
		{"object w words\n1 inv w read 1 2\n1 ret 0", "returns 1 values"},
		{"object w words x=1", `model words has no parameter "x"`},
	}
	for _, c := range cases {
		_, err := Check(context.Background(), parse(t, c.hist), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.hist, err, c.want)
		}
	}
}

func verdict(t *testing.T, hist string, mode history.Mode) Verdict {
	t.Helper()
	res, err := Check(context.Background(), parse(t, hist), Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return res.Verdict
}
