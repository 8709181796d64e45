package lin

import (
	"context"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// TestWindow is the table of docs/history-format.md, "Optional operations
// and their windows", in positions. The history:
//
//	pos 0  1 inv r write 1      returned at 1
//	pos 2  2 inv r write 2      cut off by the crash at 4; process 2 calls again at 5
//	pos 3  3 inv r write 3      cut off by the crash at 4; process 3 never calls again
//	pos 4  crash
//	pos 5  2 inv r read         answered ? at 6
//	pos 7  4 inv r write 4      pending at the end
func TestWindow(t *testing.T) {
	h := parse(t, `object r register
1 inv r write 1
1 ret ok
2 inv r write 2
3 inv r write 3
crash
2 inv r read
2 ret ?
4 inv r write 4`)
	type w struct {
		bound    int
		optional bool
	}
	u := w{unbounded, true}
	// per operation: strict, recoverable, durable
	want := [][3]w{
		{{1, false}, {1, false}, {1, false}}, // returned: its response
		{{4, true}, u, u},                    // crashed: recoverable is an order (processOrder), not a position
		{{4, true}, u, u},                    // crashed, no next call
		{u, u, u},                            // ?: durable in every mode
		{u, u, u},                            // cut off by the end
	}
	if len(h.Ops) != len(want) {
		t.Fatalf("%d ops", len(h.Ops))
	}
	for i := range h.Ops {
		for m, mode := range history.Modes {
			b, opt := window(h, &h.Ops[i], mode)
			if (w{b, opt}) != want[i][m] {
				t.Errorf("op %d (line %d), %s: bound %d optional %v, want %+v", i, h.Ops[i].Line, mode, b, opt, want[i][m])
			}
		}
	}
}

// TestWindowsDecide: the windows as verdicts. A write cut off by a crash
// whose effect is first seen after its process's next invocation is legal
// in durable mode only; after the crash but before that invocation, in
// recoverable and durable; before the crash, in every mode.
func TestWindowsDecide(t *testing.T) {
	cases := []struct {
		name string
		hist string
		want [3]Verdict // strict, recoverable, durable
	}{
		{"seen before the crash", `object r register
1 inv r write 5
2 inv r read
2 ret 5
crash`, [3]Verdict{L, L, L}},
		{"first seen after a read after the crash, before its process calls again", `object r register
1 inv r write 5
crash
2 inv r read
2 ret 0
2 inv r read
2 ret 5
1 inv r read
1 ret 5`, [3]Verdict{V, L, L}},
		{"seen only after its process called again", `object r register
1 inv r write 5
crash
1 inv r read
1 ret 0
2 inv r read
2 ret 5`, [3]Verdict{V, V, L}},
		{"the order passes over a next operation left out", `object r register
1 inv r write 5
crash
1 inv r write 6
crash
2 inv r read
2 ret 0
2 inv r read
2 ret 5`, [3]Verdict{V, L, L}},
		{"ordered before the next operation, not before its invocation", `object r register
1 inv r write 5
crash
1 inv r read
2 inv r read
2 ret 0
1 ret 5`, [3]Verdict{V, L, L}},
		{"the order holds when the next operation takes effect", `object r register
1 inv r write 5
crash
1 inv r write 6
2 inv r read
2 ret 6
2 inv r read
2 ret 5`, [3]Verdict{V, V, L}},
		{"the order holds across objects", `object a register
object b register
1 inv a write 1
crash
1 inv b write 2
1 ret ok
2 inv b read
2 ret 2
2 inv a read
2 ret 0
2 inv a read
2 ret 1`, [3]Verdict{V, V, L}},
		{"across objects, taking effect before the next operation", `object a register
object b register
1 inv a write 1
crash
2 inv a read
2 ret 0
1 inv b write 2
2 inv a read
2 ret 1
1 ret ok
2 inv b read
2 ret 2`, [3]Verdict{V, L, L}},
		{"a ? operation that stays ends the order: the cut-off one may follow what comes after", `object r register
1 inv r write 5
crash
1 inv r read
1 ret ?
1 inv r read
1 ret 0
2 inv r read
2 ret 5`, [3]Verdict{V, L, L}},
		{"a ? write that stays, late, lets the cut-off write follow what comes after", `object r register
1 inv r write 5
crash
1 inv r write 6
1 ret ?
1 inv r read
1 ret 0
2 inv r read
2 ret 5`, [3]Verdict{V, L, L}},
		{"across a map's partitions", `object m map
1 inv m put 1 5
crash
1 inv m put 2 6
1 ret nil
2 inv m get 2
2 ret 6
2 inv m get 1
2 ret nil
2 inv m get 1
2 ret 5`, [3]Verdict{V, V, L}},
		{"left out", `object r register
1 inv r write 5
crash
1 inv r read
1 ret 0`, [3]Verdict{L, L, L}},
		{"at most once", `object r register
1 inv r write 5
crash
2 inv r read
2 ret 5
2 inv r write 6
2 ret ok
2 inv r read
2 ret 5`, [3]Verdict{V, V, V}},
		{"? is durable in every mode", `object r register
1 inv r write 5
1 ret ?
1 inv r read
1 ret 0
2 inv r read
2 ret 5`, [3]Verdict{L, L, L}},
		{"pending at the end: any time after its invocation", `object q queue
1 inv q enq 3
2 inv q deq
2 ret 3`, [3]Verdict{L, L, L}},
		{"not before its invocation", `object q queue
2 inv q deq
2 ret 3
1 inv q enq 3`, [3]Verdict{V, V, V}},
		// A read of its process that could be placed at once (read-only,
		// returning what the register holds now) must not be: placed now it
		// would leave out the crashed write, which has to take effect after
		// the write of 7 and before the read.
		{"read-only placed at once would leave out a crashed op", `object r register
1 inv r write 5
crash
1 inv r read
3 inv r write 7
3 ret ok
2 inv r read
2 ret 5
2 inv r write 0
2 ret ok
1 ret 0`, [3]Verdict{V, L, L}},
		{"unknown result: whatever the model allows", `object c counter
1 inv c fetchadd 2
1 ret ?
2 inv c get
2 ret 2`, [3]Verdict{L, L, L}},
	}
	for _, c := range cases {
		for m, mode := range history.Modes {
			got := verdict(t, c.hist, mode)
			if got != c.want[m] {
				t.Errorf("%s, %s: %v, want %v", c.name, mode, got, c.want[m])
			}
		}
	}
}

// TestProcessOrder: which operations each cut-off one must precede, if it
// takes effect: its process's next ones, up to the first that returned.
func TestProcessOrder(t *testing.T) {
	h := parse(t, `object r register
1 inv r write 1
crash
1 inv r write 2
crash
2 inv r read
2 ret ?
1 inv r read
1 ret 2
1 inv r read
1 ret 2
2 inv r write 3`)
	all := make([]int, len(h.Ops))
	for i := range all {
		all[i] = i
	}
	got := processOrder(h, all, nil)
	want := [][]int{{1, 3}, {3}, nil, nil, nil, nil}
	if len(got) != len(want) {
		t.Fatalf("%d chains for %d ops", len(got), len(h.Ops))
	}
	for j := range want {
		if !slices.Equal(got[j], want[j]) {
			t.Errorf("op %d (line %d): must precede %v, want %v", j, h.Ops[j].Line, got[j], want[j])
		}
	}
	// A sub-history's own order: without op 3, op 0's chain ends nowhere.
	if got := processOrder(h, []int{0, 1, 2}, nil); !slices.Equal(got[0], []int{1}) || got[1] != nil {
		t.Errorf("sub-history: %v", got)
	}
}

// TestJoinedObjectsAnswer: when objects searched together because of
// process order fail, the object of the failing operation is the
// violation and the others are undecided, not linearizable: no search
// of their own answered for them.
func TestJoinedObjectsAnswer(t *testing.T) {
	h := parse(t, `object a register
object b register
object c register
1 inv a write 1
crash
1 inv b write 2
1 ret ok
2 inv b read
2 ret 2
2 inv a read
2 ret 0
2 inv a read
2 ret 1
3 inv c read
3 ret 0`)
	res, err := Check(context.Background(), h, Options{Mode: history.Recoverable})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Verdict{"a": Violation, "b": Undecided, "c": Linearizable}
	for _, o := range res.Objects {
		if o.Verdict != want[o.Name] {
			t.Errorf("object %s: %v (%s), want %v", o.Name, o.Verdict, o.Reason, want[o.Name])
		}
	}
	if res.Verdict != Violation {
		t.Errorf("verdict %v", res.Verdict)
	}
}
