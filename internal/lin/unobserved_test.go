package lin_test

import (
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// TestUnobservedInserts: leaving out the optional inserts whose value no
// operation returned (unobserved.go) changes no verdict: on generated
// histories of the containers, in every mode, the checker agrees with the
// brute force, and some of those histories had such an insert to leave
// out (the agreement covers the rule, not only histories it skips).
func TestUnobservedInserts(t *testing.T) {
	n := testenv.Count(0, 1500, 10000)
	for mi, m := range []string{"queue", "stack", "pqueue"} {
		dropped := 0
		for i := range n {
			h := genSeeded(m, 100+mi, i)
			if hasUnobserved(h) {
				dropped++
			}
			for _, mode := range history.Modes {
				b, err := bruteForce(h, mode)
				if err != nil {
					t.Fatal(err)
				}
				where := func() string { return m + " seed (" + itoa(i) + ", " + itoa(100+mi) + ")" }
				if l := linVerdict(t, h, mode, lin.Options{}, where); l != b {
					t.Fatalf("%s, %v: lin says %v, the brute force %v\n%s", where(), mode, l, b, renderV2(h))
				}
			}
		}
		if dropped < n/20 {
			t.Errorf("%s: %d of %d histories had an unobserved optional insert", m, dropped, n)
		}
		t.Logf("%s: %d histories x 3 modes agree, %d with an unobserved optional insert", m, n, dropped)
	}
}

// hasUnobserved reports whether an unbounded container's history has an
// optional insert whose value no operation returned.
func hasUnobserved(h *model.History) bool {
	if len(h.Objects) != 1 || len(h.Objects[0].Params) != 0 {
		return false
	}
	seen := map[model.Value]bool{}
	for _, op := range h.Ops {
		if op.Status == model.Returned {
			for _, v := range op.Results {
				seen[v] = true
			}
		}
	}
	for _, op := range h.Ops {
		if op.Status != model.Returned && len(op.Args) == 1 && !seen[op.Args[0]] {
			return true
		}
	}
	return false
}

// TestUnobservedInsertsCost: two enqueues cut off by a crash, whose
// values nothing shows, then 60 enqueues and the contents: in durable and
// recoverable mode their windows stay open to the end, and the search
// without the rule (Generic) runs out of a budget of 2,000 states where
// the rule leaves them out and decides in under a hundred.
func TestUnobservedInsertsCost(t *testing.T) {
	text := "pmlin-history v2\nobject q queue\n0 inv q enq 1000\n1 inv q enq 999\ncrash\n"
	list := ""
	for i := 1; i <= 60; i++ {
		text += "2 inv q enq " + itoa(i) + "\n2 ret ok\n"
		list += " " + itoa(i)
	}
	text += "3 inv q contents\n3 ret" + list + "\n"
	h, err := parseV2(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []history.Mode{history.Durable, history.Recoverable} {
		res, err := lin.Check(t.Context(), h, lin.Options{Mode: mode, MaxStates: 2000})
		if err != nil || res.Verdict != lin.Linearizable || res.States > 100 {
			t.Errorf("%v: %v in %d states (%v), want linearizable in under 100", mode, res.Verdict, res.States, err)
		}
		res, err = lin.Check(t.Context(), h, lin.Options{Mode: mode, MaxStates: 2000, Generic: true})
		if err != nil || res.Verdict != lin.Undecided {
			t.Errorf("%v, without the rule: %v (%v), want undecided at 2,000 states", mode, res.Verdict, err)
		}
	}
}
