package lin_test

// A definition-level brute force for version 2 histories, the oracle the
// checker of this package is compared against. It shares no code with the
// checker and no reading of the rules: it restates, from
// docs/history-format.md ("Optional operations and their windows") and
// package history's Mode, what a linearizable history is, and tries every
// candidate:
//
// A history is linearizable in mode M iff there is a subset S of its
// optional operations (cut off by a crash or by the end, or answered `?`)
// and a total order of the returned operations and S such that
//  1. the order respects real time: a precedes b whenever a returned and
//     a's response comes before b's invocation;
//  2. every operation of S lies in its mode's window (below);
//  3. the order, run through the objects' sequential specifications
//     (oracle_spec_test.go), gives every returned operation its recorded
//     results (an operation of S may get any result its model allows, and
//     must be able to take effect where it stands).
//
// The windows, by event positions (the positions of model.Op and
// model.Crash):
//   - an operation cut off by a crash, strict: before the crash, that is
//     before every operation invoked after the crash's position;
//   - cut off by a crash, recoverable (recoverOrder, docs/history-format.md
//     "Optional operations and their windows" as of s29-lin 20a8db7, and
//     version 1's reading, package history's Mode): not a bound but an
//     order: the operation precedes its process's next operation that is
//     in the linearization (returned, or in S); a next operation left out
//     passes the order on to the one after it. Only that first staying
//     operation is ordered: when it was answered `?` (itself unbounded),
//     the cut-off operation may take effect after what follows it. Three
//     other readings were on the table at some point of the day, and the
//     brute force computes them too (recoverReading) so that the tests can
//     count where they differ (TestOracleRecoverableReadings): a bound at
//     the invocation of the process's next operation whatever its fate
//     (recoverNext: this oracle's brief, and the checker's first reading);
//     a bound at the invocation of its next staying operation
//     (recoverStays: the shared format's "before its process's next
//     operation that stays", read as a bound); and an order before every
//     staying operation up to and including the process's next returned
//     one (recoverChain: the checker's reading between 23:44 and 00:12,
//     which differs from recoverOrder only through `?` operations: 5
//     histories in 540,000, /work/wt/notes/lin-bugs.md). The order
//     readings tie objects together (not local); the brute force has one
//     order for all objects anyway;
//   - cut off by a crash, durable; cut off by the end of the history, in
//     every mode; answered `?`, in every mode: anywhere after its
//     invocation. A `?` response ends nothing: the operation may even take
//     effect after its process's next operations (Jepsen's :info), so its
//     response position constrains nothing either.
//
// The search: for every subset S, a depth-first enumeration of the orders
// of the chosen operations, abandoning a prefix as soon as it breaks (1),
// (2) or (3) (every extension of a broken prefix is broken too, so this
// enumerates exactly the orders that pass). There is no memoisation and no
// partitioning: the order is one order of every object's operations
// together, so the brute force does not rely on locality either.

import (
	"bufio"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// bruteMax is the most operations the brute force takes: every subset of
// the optional ones times every order, fine at 10 for a hand-written
// history (Round-Up's figures have 8), too slow for tens of thousands of
// generated ones, which have at most genMax (oracle_gen_test.go).
const bruteMax = 10

// recoverReading is how the brute force reads the recoverable window.
type recoverReading int

const (
	recoverNext  recoverReading = iota // bounded by the next op's invocation
	recoverStays                       // bounded by the next staying op's invocation
	recoverChain                       // ordered before the staying ops up to the next returned one
	recoverOrder                       // ordered before the next staying op (the decided reading)
	nReadings
)

var readingNames = [nReadings]string{"next invocation", "next staying invocation", "order up to the next returned op", "order before the next staying op"}

// bruteForce decides h in mode by the definition above.
func bruteForce(h *model.History, mode history.Mode) (bool, error) {
	return bruteForceReading(h, mode, recoverOrder)
}

func bruteForceReading(h *model.History, mode history.Mode, reading recoverReading) (bool, error) {
	n := len(h.Ops)
	if n > bruteMax {
		return false, fmt.Errorf("brute force: %d operations, at most %d", n, bruteMax)
	}
	specs := make([]*seqSpec, len(h.Objects))
	for i, obj := range h.Objects {
		s, err := newSpec(obj)
		if err != nil {
			return false, err
		}
		specs[i] = s
	}
	var returned, optional uint32
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Object < 0 || op.Object >= len(specs) {
			return false, fmt.Errorf("%s: no object %d", h.Where(i), op.Object)
		}
		if !specs[op.Object].takesArgs(op.Name, len(op.Args)) {
			return false, fmt.Errorf("%s: model %s has no operation %q of %d arguments", h.Where(i), h.Objects[op.Object].Model, op.Name, len(op.Args))
		}
		if i > 0 && h.Ops[i-1].Call >= op.Call {
			return false, fmt.Errorf("%s: operations not sorted by invocation", h.Where(i))
		}
		if op.Status == model.Returned {
			returned |= 1 << i
		} else {
			optional |= 1 << i
		}
	}
	initial := make([]any, len(specs))
	for i, s := range specs {
		initial[i] = s.initial
	}
	// Every subset of the optional operations, optional itself first.
	for sub := optional; ; sub = (sub - 1) & optional {
		chosen := returned | sub
		pred := precedence(h, mode, reading, chosen)
		if searchOrders(h, specs, chosen, pred, 0, initial) {
			return true, nil
		}
		if sub == 0 {
			return false, nil
		}
	}
}

// precedence gives, for each chosen operation b, the chosen operations
// that must precede it: by real time (1) and by the windows (2).
func precedence(h *model.History, mode history.Mode, reading recoverReading, chosen uint32) []uint32 {
	pred := make([]uint32, len(h.Ops))
	before := func(a, b int) { pred[b] |= 1 << a }
	for a := range h.Ops {
		if chosen&(1<<a) == 0 {
			continue
		}
		opA := &h.Ops[a]
		// next: the first operation of a's process invoked after a, of
		// any fate (recoverNext) or staying (chosen).
		next := -1
		for b := a + 1; b < len(h.Ops); b++ {
			if h.Ops[b].Proc == opA.Proc && (reading == recoverNext || chosen&(1<<b) != 0) {
				next = b
				break
			}
		}
		for b := range h.Ops {
			if b == a || chosen&(1<<b) == 0 {
				continue
			}
			opB := &h.Ops[b]
			switch {
			case opA.Status == model.Returned:
				if opA.Return < opB.Call {
					before(a, b)
				}
			case opA.Status == model.CutOff && opA.Crash >= 0 && mode == history.Strict:
				if h.Crashes[opA.Crash].Pos < opB.Call {
					before(a, b)
				}
			case opA.Status == model.CutOff && opA.Crash >= 0 && mode == history.Recoverable && next >= 0:
				switch reading {
				case recoverNext, recoverStays:
					if h.Ops[next].Call <= opB.Call {
						before(a, b)
					}
				case recoverOrder:
					if b == next {
						before(a, b)
					}
				}
			}
		}
		if opA.Status == model.CutOff && opA.Crash >= 0 && mode == history.Recoverable && reading == recoverChain {
			for b := a + 1; b < len(h.Ops); b++ {
				if h.Ops[b].Proc != opA.Proc || chosen&(1<<b) == 0 {
					continue
				}
				before(a, b)
				if h.Ops[b].Status == model.Returned {
					break
				}
			}
		}
	}
	return pred
}

// searchOrders extends the order prefix placed (whose objects' states are
// states) by every chosen operation whose predecessors are all placed, and
// reports whether some extension places every chosen operation.
func searchOrders(h *model.History, specs []*seqSpec, chosen uint32, pred []uint32, placed uint32, states []any) bool {
	if placed == chosen {
		return true
	}
	for left := chosen &^ placed; left != 0; left &= left - 1 {
		b := bits.TrailingZeros32(left)
		if pred[b]&^placed != 0 {
			continue
		}
		op := &h.Ops[b]
		sp := specs[op.Object]
		if sp.outcomes != nil {
			// Every effect the model allows, each a branch of the search;
			// a returned operation keeps those that give its results.
			for _, o := range sp.outcomes(states[op.Object], op.Name, op.Proc, op.Args) {
				if op.Status == model.Returned && !slices.Equal(o.res, op.Results) {
					continue
				}
				ns := slices.Clone(states)
				ns[op.Object] = o.next
				if searchOrders(h, specs, chosen, pred, placed|1<<b, ns) {
					return true
				}
			}
			continue
		}
		var next any
		var ok bool
		if op.Status == model.Returned && sp.accept != nil {
			next, ok = sp.accept(states[op.Object], op.Name, op.Args, op.Results)
		} else {
			var res []model.Value
			next, res, ok = sp.apply(states[op.Object], op.Name, op.Proc, op.Args)
			ok = ok && (op.Status != model.Returned || slices.Equal(res, op.Results))
		}
		if !ok {
			continue
		}
		ns := slices.Clone(states)
		ns[op.Object] = next
		if searchOrders(h, specs, chosen, pred, placed|1<<b, ns) {
			return true
		}
	}
	return false
}

// parseV2 reads the version 2 text of a small test history, as the format
// describes it, into a model.History: the tests' own reader, so that the
// brute force's self-tests depend on no reader of the project. It takes
// only what the tests write (object, inv, ret, ret ?, crash, comments).
func parseV2(text string) (*model.History, error) {
	h := &model.History{}
	objects := map[string]int{}
	pending := map[int64]int{} // process -> index in h.Ops
	sc := bufio.NewScanner(strings.NewReader(text))
	line := int64(0)
	for sc.Scan() {
		line++
		f := strings.Fields(strings.SplitN(sc.Text(), "#", 2)[0])
		if len(f) == 0 || f[0] == "pmlin-history" {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...))
		}
		switch {
		case f[0] == "object":
			if len(f) < 3 {
				return nil, bad("object needs a name and a model")
			}
			obj := model.Object{Name: f[1], Model: f[2], Line: line}
			for _, p := range f[3:] {
				k, v, ok := strings.Cut(p, "=")
				if !ok {
					return nil, bad("param %q is not key=value", p)
				}
				obj.Params = append(obj.Params, model.Param{Key: k, Value: v})
			}
			objects[f[1]] = len(h.Objects)
			h.Objects = append(h.Objects, obj)
		case f[0] == "crash":
			for p, i := range pending {
				h.Ops[i].Crash = len(h.Crashes)
				delete(pending, p)
			}
			h.Crashes = append(h.Crashes, model.Crash{Pos: h.Events, Line: line})
			h.Events++
		default:
			if len(f) < 2 {
				return nil, bad("short line")
			}
			p, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, bad("%q is not a process", f[0])
			}
			switch f[1] {
			case "inv":
				if len(f) < 4 {
					return nil, bad("inv needs an object and an operation")
				}
				if _, busy := pending[p]; busy {
					return nil, bad("process %d invokes with an operation pending", p)
				}
				o, ok := objects[f[2]]
				if !ok {
					return nil, bad("undeclared object %q", f[2])
				}
				op := model.Op{Proc: p, Object: o, Name: f[3], Status: model.CutOff, Call: h.Events, Return: -1, Crash: -1, Line: line}
				for _, s := range f[4:] {
					v, err := model.ParseValue(s)
					if err != nil {
						return nil, bad("%v", err)
					}
					op.Args = append(op.Args, v)
				}
				pending[p] = len(h.Ops)
				h.Ops = append(h.Ops, op)
			case "ret":
				i, ok := pending[p]
				if !ok {
					return nil, bad("process %d returns with nothing pending", p)
				}
				delete(pending, p)
				op := &h.Ops[i]
				op.Return, op.RetLine = h.Events, line
				if len(f) == 3 && f[2] == "?" {
					op.Status = model.Unknown
					break
				}
				op.Status = model.Returned
				op.Results = []model.Value{}
				for _, s := range f[2:] {
					v, err := model.ParseValue(s)
					if err != nil {
						return nil, bad("%v", err)
					}
					op.Results = append(op.Results, v)
				}
			default:
				return nil, bad("%q is neither inv nor ret", f[1])
			}
			h.Events++
		}
	}
	return h, sc.Err()
}

// renderV2 writes h as version 2 text, for failure messages (and parseV2
// reads it back).
func renderV2(h *model.History) string {
	ev := make([]string, h.Events)
	for _, c := range h.Crashes {
		ev[c.Pos] = "crash"
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		inv := fmt.Sprintf("%d inv %s %s", op.Proc, h.Objects[op.Object].Name, op.Name)
		for _, a := range op.Args {
			inv += " " + a.String()
		}
		ev[op.Call] = inv
		switch op.Status {
		case model.Unknown:
			ev[op.Return] = fmt.Sprintf("%d ret ?", op.Proc)
		case model.Returned:
			ret := fmt.Sprintf("%d ret", op.Proc)
			for _, r := range op.Results {
				ret += " " + r.String()
			}
			ev[op.Return] = ret
		}
	}
	var b strings.Builder
	b.WriteString("pmlin-history v2\n")
	for _, o := range h.Objects {
		fmt.Fprintf(&b, "object %s %s", o.Name, o.Model)
		for _, p := range o.Params {
			fmt.Fprintf(&b, " %s=%s", p.Key, p.Value)
		}
		b.WriteString("\n")
	}
	for _, e := range ev {
		b.WriteString(e + "\n")
	}
	return b.String()
}

// bruteCase is a hand-written history and the verdict of each mode,
// worked out by hand from the definition (the comment says how).
type bruteCase struct {
	name                         string
	text                         string
	strict, recoverable, durable bool
}

var bruteCases = []bruteCase{
	{"register sequential", `object r register
1 inv r write 1
1 ret ok
2 inv r read
2 ret 1`, true, true, true},
	{"register stale read", `object r register
1 inv r write 1
1 ret ok
2 inv r read
2 ret 0`, false, false, false},
	{"register concurrent read of old value", `object r register
1 inv r write 1
2 inv r read
2 ret 0
1 ret ok`, true, true, true},
	{"register init nil and cas", `object r register init=nil
1 inv r cas nil 3
1 ret ok
1 inv r cas nil 4
1 ret fail
2 inv r read
2 ret 3`, true, true, true},
	{"register cas succeeds on wrong value", `object r register init=2
1 inv r cas 1 3
1 ret ok`, false, false, false},
	// Cut off by a crash, then read 0 and 1 by another process: strict
	// puts the write before the crash, so read 0 fails (or, dropped, read 1
	// fails); p1 has no later op, so recoverable and durable place it
	// between the reads.
	{"write cut off, read old then new", `object r register
1 inv r write 1
crash
2 inv r read
2 ret 0
2 inv r read
2 ret 1`, false, true, true},
	// p1's next op reads 0: recoverable puts the write before it, so
	// p2's later read of 1 has no write after read 0; durable places it
	// after p1's read.
	{"write cut off before own process's read", `object r register
1 inv r write 1
crash
1 inv r read
1 ret 0
2 inv r read
2 ret 1`, false, false, true},
	// The readings of the recoverable window differ here (see
	// readingCases): p1's next op (read -> 1) is invoked before p2's read
	// -> 0; the order puts p2's read, the write, p1's read.
	{"recoverable order, not a bound", recoverOrderText, false, true, true},
	// p1's next op is cut off by the second crash and left out: the write
	// is free (see readingCases).
	{"recoverable next op left out", recoverStaysText, false, true, true},
	// p1's next op is a `?` read, which stays and goes after p1's read
	// -> 0: the write is ordered before it only (see readingCases).
	{"recoverable order ends at a ? op", recoverQText, false, true, true},
	// Pending at the end: anywhere after invocation, in every mode.
	{"write pending at the end", `object r register
1 inv r write 1
2 inv r read
2 ret 0
2 inv r read
2 ret 1`, true, true, true},
	// `?`: may take effect after its response, in every mode ...
	{"unknown write takes effect late", `object r register
1 inv r write 1
1 ret ?
2 inv r read
2 ret 0
2 inv r read
2 ret 1`, true, true, true},
	// ... but at most once, and never before its invocation.
	{"unknown write cannot be undone", `object r register
1 inv r write 1
1 ret ?
2 inv r read
2 ret 1
2 inv r read
2 ret 0`, false, false, false},
	{"unknown write before invocation", `object r register
2 inv r read
2 ret 1
1 inv r write 1
1 ret ?`, false, false, false},
	// A `?` op is not ordered before its process's next op even under
	// recoverable.
	{"unknown write after own process's next op", `object r register
1 inv r write 1
1 ret ?
1 inv r read
1 ret 0
2 inv r read
2 ret 1`, true, true, true},
	{"counter", `object c counter init=10
1 inv c add 2
1 ret ok
2 inv c fetchadd 3
2 ret 12
1 inv c get
1 ret 15`, true, true, true},
	{"counter lost add", `object c counter
1 inv c add 2
1 ret ok
2 inv c fetchadd 3
2 ret 0`, false, false, false},
	{"queue fifo violated", `object q queue
1 inv q enq 1
1 ret ok
1 inv q enq 2
1 ret ok
2 inv q deq
2 ret 2`, false, false, false},
	{"queue concurrent enqs", `object q queue
1 inv q enq 1
2 inv q enq 2
1 ret ok
2 ret ok
3 inv q deq
3 ret 2
3 inv q deq
3 ret 1
3 inv q deq
3 ret empty`, true, true, true},
	{"queue cap", `object q queue cap=1
1 inv q enq 1
1 ret ok
1 inv q enq 2
1 ret fail
2 inv q deq
2 ret 1`, true, true, true},
	{"queue cap exceeded", `object q queue cap=1
1 inv q enq 1
1 ret ok
1 inv q enq 2
1 ret ok`, false, false, false},
	{"queue empty while full", `object q queue
1 inv q enq 1
1 ret ok
2 inv q deq
2 ret empty`, false, false, false},
	{"stack lifo", `object s stack
1 inv s push 1
1 ret ok
1 inv s push 2
1 ret ok
2 inv s pop
2 ret 2
2 inv s pop
2 ret 1`, true, true, true},
	{"stack fifo violated", `object s stack
1 inv s push 1
1 ret ok
1 inv s push 2
1 ret ok
2 inv s pop
2 ret 1`, false, false, false},
	{"stack cap", `object s stack cap=1
1 inv s push 1
1 ret ok
1 inv s push 2
1 ret fail
1 inv s pop
1 ret 1`, true, true, true},
	{"pqueue least first", `object p pqueue
1 inv p insert 3
1 ret ok
1 inv p insert 1
1 ret ok
1 inv p insert 3
1 ret ok
2 inv p removemin
2 ret 1
2 inv p removemin
2 ret 3
2 inv p removemin
2 ret 3`, true, true, true},
	{"pqueue not least", `object p pqueue
1 inv p insert 3
1 ret ok
1 inv p insert 1
1 ret ok
2 inv p removemin
2 ret 3`, false, false, false},
	{"set", `object s set
1 inv s add 1
1 ret true
1 inv s add 1
1 ret false
2 inv s contains 1
2 ret true
2 inv s remove 1
2 ret true
2 inv s remove 1
2 ret false
1 inv s contains 1
1 ret false`, true, true, true},
	{"set added twice", `object s set
1 inv s add 1
1 ret true
2 inv s add 1
2 ret true`, false, false, false},
	{"map", `object m map
1 inv m put 1 5
1 ret nil
1 inv m get 1
1 ret 5
1 inv m put 1 6
1 ret 5
2 inv m putifabsent 1 7
2 ret 6
2 inv m remove 1
2 ret 6
2 inv m putifabsent 1 7
2 ret nil`, true, true, true},
	{"map keys independent", `object m map
1 inv m put 1 5
1 ret nil
1 inv m put 2 6
1 ret nil
2 inv m get 1
2 ret 6`, false, false, false},
	{"mutex", `object l mutex
1 inv l acquire
1 ret ok
1 inv l release
1 ret ok
2 inv l acquire
2 ret ok`, true, true, true},
	{"mutex held twice", `object l mutex
1 inv l acquire
1 ret ok
2 inv l acquire
2 ret ok`, false, false, false},
	{"mutex released by another", `object l mutex
1 inv l acquire
1 ret ok
2 inv l release
2 ret ok`, false, false, false},
	// An acquire cut off by a crash may be dropped, so p2 gets the lock;
	// had it taken effect, nobody released it.
	{"mutex acquire cut off", `object l mutex
1 inv l acquire
crash
2 inv l acquire
2 ret ok`, true, true, true},
	{"words", `object w words init=5 1=7
1 inv w read 0 1
1 ret 5 7
1 inv w cas 0 5 8 1 7 9
1 ret ok
2 inv w cas 0 8 1 1 0 2
2 ret fail 1 8 9
2 inv w cas 0 8 1 1 0 2
2 ret fail 1
2 inv w swap 1 3
2 ret 9
1 inv w read 1 2
1 ret 3 5`, true, true, true},
	{"words cas blames a matching word", `object w words
1 inv w cas 0 0 1 1 5 2
1 ret fail 0`, false, false, false},
	{"words cas reports wrong values", `object w words
1 inv w cas 0 0 1 1 5 2
1 ret fail 1 0 1`, false, false, false},
	{"words swap replaced wrong value", `object w words
1 inv w swap 0 1
1 ret 0
2 inv w swap 0 2
2 ret 0`, false, false, false},
	// Several objects: each is fine alone, but the real-time order joins
	// them only through the ops; here y's read is stale.
	{"two objects", `object x register
object y register
1 inv x write 1
1 ret ok
1 inv y write 2
1 ret ok
2 inv x read
2 ret 1
2 inv y read
2 ret 0`, false, false, false},
	// Two crashes: strict pins each write before its crash, so write 1
	// precedes write 2; the other modes may run write 1 last.
	{"two crashes", `object r register
1 inv r write 1
crash
2 inv r write 2
crash
3 inv r read
3 ret 2
3 inv r read
3 ret 1`, false, true, true},
}

const recoverOrderText = `object r register
1 inv r write 1
crash
1 inv r read
2 inv r read
2 ret 0
1 ret 1`

const recoverQText = `object r register
1 inv r write 1
crash
1 inv r read
1 ret ?
1 inv r read
1 ret 0
2 inv r read
2 ret 1`

const recoverStaysText = `object r register
1 inv r write 1
crash
1 inv r read
crash
2 inv r read
2 ret 0
2 inv r read
2 ret 1`

// readingCases are the recoverable verdicts of histories where the
// readings differ, by reading, worked out by hand.
var readingCases = []struct {
	name, text string
	want       [nReadings]bool // by recoverReading
}{
	// The order readings put p2's read, then the write, then p1's read.
	{"next op invoked before the other read", recoverOrderText, [nReadings]bool{false, false, true, true}},
	// Dropping p1's cut-off read frees the write from any bound, except
	// under recoverNext.
	{"next op cut off", recoverStaysText, [nReadings]bool{false, true, true, true}},
	// The `?` read stays, after p1's read -> 0, with the write just
	// before it; only the chain reading orders the write before the
	// returned read too.
	{"next op answered ?", recoverQText, [nReadings]bool{false, false, false, true}},
}

func TestOracleRecoverableReadingCases(t *testing.T) {
	for _, c := range readingCases {
		h, err := parseV2(c.text)
		if err != nil {
			t.Fatal(err)
		}
		for r, want := range c.want {
			got, err := bruteForceReading(h, history.Recoverable, recoverReading(r))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s, recoverable read as %s: brute force says %v, the hand-worked verdict is %v", c.name, readingNames[r], got, want)
			}
		}
	}
}

func TestOracleBruteForceHandWritten(t *testing.T) {
	for _, c := range bruteCases {
		h, err := parseV2(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, m := range history.Modes {
			want := [...]bool{c.strict, c.recoverable, c.durable}[m]
			got, err := bruteForce(h, m)
			if err != nil {
				t.Fatalf("%s, %v: %v", c.name, m, err)
			}
			if got != want {
				t.Errorf("%s, %v: brute force says %v, the hand-worked verdict is %v\n%s", c.name, m, got, want, c.text)
			}
		}
		// The renderer and the reader agree, so failure messages can be
		// pasted back into a test.
		if back, err := parseV2(renderV2(h)); err != nil || !slices.EqualFunc(back.Ops, h.Ops, sameOp) {
			t.Errorf("%s: render/parse round trip differs (%v)\n%s", c.name, err, renderV2(h))
		}
	}
}

func sameOp(a, b model.Op) bool {
	return a.Proc == b.Proc && a.Object == b.Object && a.Name == b.Name && slices.Equal(a.Args, b.Args) &&
		slices.Equal(a.Results, b.Results) && a.Status == b.Status && a.Call == b.Call && a.Return == b.Return && a.Crash == b.Crash
}

func TestOracleBruteForceRefuses(t *testing.T) {
	for _, text := range []string{
		"object r register\n1 inv r push 1\n1 ret ok\n",         // not a register op
		"object r register\n1 inv r write\n1 ret ok\n",          // arity
		"object r register size=2\n1 inv r read\n1 ret 0\n",     // unknown param
		"object q queue cap=x\n1 inv q deq\n1 ret empty\n",      // bad param
		"object k kqueue\n1 inv k deq\n1 ret empty\n",           // k is required
		"object k kqueue k=-1\n1 inv k deq\n1 ret empty\n",      // not a number
		"object k kqueue k=1 cap=2\n1 inv k deq\n1 ret empty\n", // no cap
		"object k kqueue k=1\n1 inv k push 1\n1 ret ok\n",       // not a kqueue op
		"object k stackk k=1\n1 inv k deq\n1 ret empty\n",       // not built in here
	} {
		h, err := parseV2(text)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bruteForce(h, history.Strict); err == nil {
			t.Errorf("brute force accepted\n%s", text)
		}
	}
	var long strings.Builder
	long.WriteString("object r register\n")
	for range bruteMax + 1 {
		long.WriteString("1 inv r read\n1 ret 0\n")
	}
	h, _ := parseV2(long.String())
	if _, err := bruteForce(h, history.Durable); err == nil {
		t.Errorf("brute force took %d operations", bruteMax+1)
	}
}
