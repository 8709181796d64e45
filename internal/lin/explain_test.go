package lin

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/model"
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
	// Not the deq alone ("returned a value never enqueued"): the enq of
	// the value it should have returned stays, and the one it did return.
	if !e.Minimal || !slices.Equal(lines, []int64{3, 7, 9}) {
		t.Errorf("witness lines %v (minimal %v), want [3 7 9]", lines, e.Minimal)
	}
	if e.Failing.Line != 9 || !e.Impossible {
		t.Errorf("failing %+v impossible %v, want the deq of line 9, impossible", e.Failing, e.Impossible)
	}
	if e.State != "queue holding [0x100001 0x100002] (front first)" {
		t.Errorf("state %q", e.State)
	}
	if e.Expected != "0x100001" || len(e.Origins) != 1 || e.Origins[0].Line != 3 {
		t.Errorf("expected %q from %+v, want 0x100001 from line 3", e.Expected, e.Origins)
	}
	const want = "then deq -> 0x100002 at line 9 must take effect, and it cannot: there it returns 0x100001 (from enq 0x100001 -> ok at line 3)."
	if !strings.HasSuffix(e.Sentence, want) {
		t.Errorf("sentence %q does not end with %q", e.Sentence, want)
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

// TestWitnessMinimal: on generated histories with one corrupted result,
// the witness violates, and leaving out any one of its operations (the
// others keeping their places) leaves a linearizable set or one where a
// result lost the operation that gave it (a value from nowhere): checked
// here by searching the subsets directly, not by trusting Minimal.
func TestWitnessMinimal(t *testing.T) {
	for name, gen := range map[string]func(*rand.Rand, int) *model.History{
		"map": mapHistory, "queue": queueHistory, "register": registerHistory} {
		violations := 0
		for seed := range uint64(8) {
			r := rand.New(rand.NewPCG(seed, 3))
			h := gen(r, 150)
			corrupt := -1
			for i := len(h.Ops) / 3; i < len(h.Ops); i++ {
				op := &h.Ops[i]
				if op.Status == model.Returned && op.Results[0].Sym == model.Num && op.Name != "enq" {
					op.Results[0].N ^= 1 + uint64(r.IntN(2)) // often a value of the history
					corrupt = i
					break
				}
			}
			res, err := Check(context.Background(), h, Options{})
			if err != nil || corrupt < 0 {
				t.Fatal(err, corrupt)
			}
			if res.Verdict == Linearizable {
				continue // the corruption happened to be explainable
			}
			violations++
			e := res.Objects[0].Explanation
			if res.Verdict != Violation || !e.Minimal {
				t.Fatalf("%s seed %d: %v, minimal %v", name, seed, res.Verdict, e != nil && e.Minimal)
			}
			var ops []int
			for _, r := range e.Ops {
				ops = append(ops, r.Index)
			}
			sub := func(ops []int) Verdict {
				m, _ := model.Builtin(h.Objects[0].Model)(nil)
				bounds := make([]int, len(h.Ops))
				for i := range h.Ops {
					bounds[i], _ = window(h, &h.Ops[i], 0)
				}
				return search(context.Background(), h, &part{m: m, ops: ops, label: "test"}, bounds, &Options{}, &shared{}).verdict
			}
			if v := sub(ops); v != Violation {
				t.Fatalf("%s seed %d: the witness %v is %v", name, seed, ops, v)
			}
			for k := range ops {
				rest := append(append([]int(nil), ops[:k]...), ops[k+1:]...)
				if v := sub(rest); v != Linearizable && !Orphans(h, rest, ops) {
					t.Errorf("%s seed %d: the witness %v without %d is %v: not minimal", name, seed, ops, ops[k], v)
				}
			}
		}
		if violations < 4 {
			t.Errorf("%s: %d of 8 corrupted histories violate: the test tests little", name, violations)
		}
	}
}
