package lin

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestExplanationQueue: the deq of line 9 returns the second value
// enqueued while the first was enqueued before it and nobody dequeues it.
// The sentence tells it from the whole history (the state after the two
// enqs); the shrunk witness is the deq alone, since without its enq its
// value comes from nowhere: removal is what minimal means.
func TestExplanationQueue(t *testing.T) {
	h := parse(t, `object q queue
object r register
1 inv q enq 0x100001
1 ret ok
3 inv r write 4
3 ret ok
2 inv q enq 0x100002
2 ret ok
1 inv q deq
1 ret 0x100002
3 inv r read
3 ret 4
2 inv q enq 5
2 ret ok`)
	res, err := Check(context.Background(), h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Violation || res.Objects[0].Verdict != Violation || res.Objects[1].Verdict != Linearizable {
		t.Fatalf("verdicts %v %v %v", res.Verdict, res.Objects[0].Verdict, res.Objects[1].Verdict)
	}
	e := res.Objects[0].Explanation
	var lines []int64
	for _, r := range e.Ops {
		lines = append(lines, r.Line)
	}
	if !e.Minimal || !slices.Equal(lines, []int64{9}) {
		t.Errorf("witness lines %v (minimal %v), want [9]", lines, e.Minimal)
	}
	if e.Failing.Line != 9 || !e.Impossible {
		t.Errorf("failing %+v impossible %v, want the deq of line 9, impossible", e.Failing, e.Impossible)
	}
	if e.State != "queue holding [0x100001 0x100002] (front first)" {
		t.Errorf("state %q", e.State)
	}
	t.Log(e.Text())
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(string(b))
}

// TestExplanationMinimal: the witness of a stale read is the write and the
// read, nothing else of the object.
func TestExplanationMinimal(t *testing.T) {
	h := parse(t, `object r register
3 inv r read
3 ret 0
1 inv r write 5
1 ret ok
2 inv r read
2 ret 0
4 inv r write 9
4 ret ok`)
	res, err := Check(context.Background(), h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := res.Objects[0].Explanation
	var lines []int64
	for _, r := range e.Ops {
		lines = append(lines, r.Line)
	}
	if res.Verdict != Violation || !e.Minimal || !slices.Equal(lines, []int64{4, 6}) {
		t.Fatalf("%v: witness lines %v (minimal %v), want [4 6]", res.Verdict, lines, e.Minimal)
	}
	res, err = Check(context.Background(), h, Options{NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Objects[0].Explanation; e.Minimal || len(e.Ops) != 4 {
		t.Errorf("NoShrink: %d operations, minimal %v; want all 4, not minimal", len(e.Ops), e.Minimal)
	}
}
