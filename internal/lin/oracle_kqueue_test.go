package lin_test

// kqueue in the brute force: the queue relaxed by quasi factor K, read
// from docs/history-format.md ("The models", kqueue) and from Round-Up
// (Zhang, Chattopadhyay and Wang, Section V.A, the strict out-of-order
// semantics), not from the checker's model.
//
// The paper states two restrictions on a K-quasi permutation of a queue's
// deqs: (1) each deq returns a value at most K steps from the head; (2)
// the head is returned by one of the first K+1 deqs (its example with
// K = 1: after enq 1 2 3, the orders 2 1 3 and 1 3 2 pass, 2 3 1 breaks
// (2), 3 1 2 breaks (1)). The docs turn them into a sequential state:
// the elements in enqueue order and s, the deqs since the oldest became
// the oldest that returned another one. This file implements the docs'
// state as written and checks it against the paper's example and the
// docs' own (kqueueSpecCases), then against hand-worked concurrent
// histories (kqueueCases, the fixtures under internal/history/testdata/v2).
//
// The brute force's seqSpec.apply is a function: one next state per
// operation. A kqueue deq may remove any of the K+1 oldest elements (and
// a value enqueued twice may be removed from either place, two different
// next states), so kqueue gives seqSpec.outcomes instead: every (next
// state, results) a deq may give. searchOrders branches on each (a
// returned deq keeps those with its recorded result, an optional one all
// of them), and the generators pick one at random, which makes them a
// simulated correct relaxed queue. Other models keep apply and behave
// exactly as before (their generators draw no extra random numbers).

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// kqState is a kqueue's state: the elements in enqueue order (never
// written into: a step copies) and the skips of the oldest, s in the docs.
type kqState struct {
	elems []model.Value
	skips int
}

func kqueueSpec(k int) *seqSpec {
	return &seqSpec{
		arity:   map[string]int{"enq": 1, "deq": 0, "contents": 0},
		initial: kqState{},
		outcomes: func(s any, name string, _ int64, a []model.Value) []seqOutcome {
			cur := s.(kqState)
			if name == "contents" { // oldest first; the skips stay
				return []seqOutcome{{cur, contentsOf(slices.Clone(cur.elems))}}
			}
			if name == "enq" {
				// Enqueueing does not change how often the oldest was skipped.
				return []seqOutcome{{kqState{append(slices.Clip(cur.elems), a[0]), cur.skips}, one(vOK)}}
			}
			if len(cur.elems) == 0 {
				return []seqOutcome{{cur, one(vEmpty)}}
			}
			var outs []seqOutcome
			for i := 0; i <= k && i < len(cur.elems); i++ {
				skips := 0 // the oldest removed: the next one starts afresh
				if i > 0 {
					if cur.skips >= k {
						break // the oldest was skipped K times: it must go now
					}
					skips = cur.skips + 1
				}
				rest := slices.Delete(slices.Clone(cur.elems), i, i+1)
				outs = append(outs, seqOutcome{kqState{rest, skips}, one(cur.elems[i])})
			}
			return outs
		},
	}
}

// kqSequences lists every sequence of results that ops (each "enq V" or
// "deq") may give run one after another on a kqueue of factor k.
func kqSequences(k int, ops [][]model.Value) [][]model.Value {
	sp := kqueueSpec(k)
	var all [][]model.Value
	var walk func(s any, i int, got []model.Value)
	walk = func(s any, i int, got []model.Value) {
		if i == len(ops) {
			all = append(all, slices.Clone(got))
			return
		}
		name, args := "deq", []model.Value(nil)
		if len(ops[i]) > 0 {
			name, args = "enq", ops[i]
		}
		for _, o := range sp.outcomes(s, name, 1, args) {
			walk(o.next, i+1, append(got, o.res...))
		}
	}
	walk(sp.initial, 0, nil)
	return all
}

// TestOracleKqueueSpec checks the specification on the paper's and the
// docs' sequential examples: the deq orders it allows after enq 1 2 3,
// counted and listed by hand from the two restrictions, for K = 0..3.
func TestOracleKqueueSpec(t *testing.T) {
	n := func(v uint64) model.Value { return model.Number(v) }
	enq := func(v uint64) []model.Value { return []model.Value{n(v)} }
	ops := [][]model.Value{enq(1), enq(2), enq(3), nil, nil, nil, nil}
	seq := func(vs ...uint64) []model.Value {
		r := []model.Value{vOK, vOK, vOK}
		for _, v := range vs {
			r = append(r, n(v))
		}
		return append(r, vEmpty)
	}
	want := map[int][][]model.Value{
		// K = 0 is the queue.
		0: {seq(1, 2, 3)},
		// The paper's History 0, 1 and 2; not 3 1 2 (restriction 1), 2 3 1
		// (restriction 2: 1 skipped twice) or 3 2 1.
		1: {seq(1, 2, 3), seq(1, 3, 2), seq(2, 1, 3)},
		// K = 2: any first deq; 3 2 1 skips 1 twice, allowed; all six.
		2: {seq(1, 2, 3), seq(1, 3, 2), seq(2, 1, 3), seq(2, 3, 1), seq(3, 1, 2), seq(3, 2, 1)},
		3: {seq(1, 2, 3), seq(1, 3, 2), seq(2, 1, 3), seq(2, 3, 1), seq(3, 1, 2), seq(3, 2, 1)},
	}
	for k, w := range want {
		got := kqSequences(k, ops)
		if len(got) != len(w) {
			t.Errorf("k=%d: %d sequences, want %d: %v", k, len(got), len(w), got)
			continue
		}
		for _, s := range w {
			if !slices.ContainsFunc(got, func(g []model.Value) bool { return slices.Equal(g, s) }) {
				t.Errorf("k=%d: %v not allowed; allowed: %v", k, s, got)
			}
		}
	}
	// K = 2 is not "anything goes": after enq 1..4, 1 may be skipped at
	// most twice (2 3 4 1 breaks restriction 2), and the first deq cannot
	// take 4 (three steps from the head).
	ops4 := [][]model.Value{enq(1), enq(2), enq(3), enq(4), nil, nil, nil, nil}
	for _, s := range kqSequences(2, ops4) {
		if slices.Equal(s[4:], []model.Value{n(2), n(3), n(4), n(1)}) || s[4] == n(4) {
			t.Errorf("k=2 allows %v", s)
		}
	}
	// A value enqueued twice may be removed from either place, and the
	// two next states differ: k=1, enq 5 5 6; deq -> 5 is the first copy
	// (skips 0) or the second (the first skipped once). Only after the
	// first may 6 come next (the oldest 5 skipped once), so 5 6 5 needs
	// that branch, and 5 5 6 either; 6 first is two steps from the head.
	// A spec that kept one state per result would lose one of them.
	sp := kqueueSpec(1)
	s := sp.initial
	for _, v := range []uint64{5, 5, 6} {
		s = sp.outcomes(s, "enq", 1, enq(v))[0].next
	}
	outs := sp.outcomes(s, "deq", 1, nil)
	if len(outs) != 2 || outs[0].res[0] != n(5) || outs[1].res[0] != n(5) || outs[0].next.(kqState).skips == outs[1].next.(kqState).skips {
		t.Errorf("k=1, [5 5 6]: deq outcomes %v", outs)
	}
	got := kqSequences(1, [][]model.Value{enq(5), enq(5), enq(6), nil, nil, nil})
	// Three runs: 5 (first copy) 5 6, 5 (first copy) 6 5, 5 (second
	// copy) 5 6.
	want556, want565 := []model.Value{n(5), n(5), n(6)}, []model.Value{n(5), n(6), n(5)}
	if len(got) != 3 || !slices.Equal(got[0][3:], want556) || !slices.Equal(got[1][3:], want565) || !slices.Equal(got[2][3:], want556) {
		t.Errorf("k=1 after enq 5 5 6: %v, want 5 5 6, 5 6 5, 5 5 6", got)
	}
}

// kqueueCase is a concurrent kqueue history with its verdict in every
// mode, worked out by hand from the docs' definition (the comments say
// how), and, if file is set, kept as a fixture under internal/history/testdata/v2.
type kqueueCase struct {
	name, file, text             string
	strict, recoverable, durable bool
}

var kqueueCases = []kqueueCase{
	// Round-Up's Fig. 3 and 4: a 1-quasi queue holding 1 2 3 4 (enqueued
	// by one process) and four sequential deqs. H1-a (1 2 3 4) is
	// linearizable; H1-b..d (2 1 3 4, 1 2 4 3, 2 1 4 3) are 1-quasi
	// linearizable; so all four pass with k=1, and only H1-a with k=0.
	{"Fig. 3 H1-d, k=1", "kqueue-roundup-fig3.hist", roundUpFig3(1, "2 1 4 3"), true, true, true},
	{"Fig. 3 H1-b, k=1", "", roundUpFig3(1, "2 1 3 4"), true, true, true},
	{"Fig. 3 H1-c, k=1", "", roundUpFig3(1, "1 2 4 3"), true, true, true},
	{"Fig. 3 H1-d, k=0", "", roundUpFig3(0, "2 1 4 3"), false, false, false},
	{"Fig. 3 H1-a, k=0", "", roundUpFig3(0, "1 2 3 4"), true, true, true},
	// The buggy implementation of Section II (deq always takes one of
	// the first two of the current queue, without the window): 2 3 4
	// skip 1 three times, where k=1 allows once.
	{"Section II bug 2 3 4 1, k=1", "kqueue-roundup-bug.hist", roundUpFig3(1, "2 3 4 1"), false, false, false},
	// Section V.A's History 3 (3 1 2): two steps from the head.
	{"History 3, k=1", "", roundUp3(1, "3 1 2"), false, false, false},
	{"History 4, k=1", "", roundUp3(1, "2 3 1"), false, false, false},
	{"History 4, k=2", "", roundUp3(2, "2 3 1"), true, true, true},
	// Needs K = 1: the deqs are sequential after the enqs, and 2 comes
	// out before 1.
	{"needs k=1, k=1", "kqueue-needs-k1.hist", needsK(1, 1), true, true, true},
	{"needs k=1, k=0", "", needsK(1, 0), false, false, false},
	// Needs K = 2: 3 comes out first (two steps), then 2 (1 skipped
	// twice), then 1.
	{"needs k=2, k=2", "kqueue-needs-k2.hist", needsK(2, 2), true, true, true},
	{"needs k=2, k=1", "", needsK(2, 1), false, false, false},
	// Concurrency helps: enq 1 and enq 2 overlap, so 2 may be the oldest;
	// k=0 passes.
	{"concurrent enqs, k=0", "", `object q kqueue k=0
1 inv q enq 1
2 inv q enq 2
1 ret ok
2 ret ok
3 inv q deq
3 ret 2
3 inv q deq
3 ret 1`, true, true, true},
	// A value held twice: 5 6 5 after enq 5 5 6 (k=1) needs the first
	// deq to remove the first 5 (the second would leave the oldest
	// skipped, and 6 would skip it again).
	{"value held twice, k=1", "", kqSequential(1, []string{"5", "5", "6"}, "5 6 5"), true, true, true},
	// ... while 6 5 5 is two steps from the head first.
	{"value held twice, 6 first, k=1", "", kqSequential(1, []string{"5", "5", "6"}, "6 5 5"), false, false, false},
	// empty exactly when nothing is held, whatever K.
	{"empty while full, k=3", "", `object q kqueue k=3
1 inv q enq 1
1 ret ok
2 inv q deq
2 ret empty`, false, false, false},
	// An element comes out once.
	{"deq twice, k=3", "", `object q kqueue k=3
1 inv q enq 1
1 ret ok
2 inv q deq
2 ret 1
2 inv q deq
2 ret 1`, false, false, false},
	// A deq cut off by a crash, and p3 then gets 2 and 3: 1 was skipped
	// twice unless the cut-off deq removed it, which it may in every
	// mode (strict: before the crash, which is before p3's deqs).
	{"cut-off deq removes the oldest, k=1", "kqueue-crash.hist", `object q kqueue k=1
1 inv q enq 1
1 ret ok
1 inv q enq 2
1 ret ok
1 inv q enq 3
1 ret ok
2 inv q deq
crash
3 inv q deq
3 ret 2
3 inv q deq
3 ret 3`, true, true, true},
	// The modes differ. p3's deq -> 1, then empty: the cut-off deq must
	// remove 2 (dropped, empty is wrong) and after 1 went (k=0: a deq
	// before takes 1). Strict puts it before the crash, so before p3's
	// deqs; recoverable is free (p2 never invokes again), and durable.
	{"cut-off deq after the crash, k=0", "kqueue-crash-modes.hist", crashThenEmpty(0, false), false, true, true},
	// With k=1 the cut-off deq may take 2 before the crash (skipping 1
	// once), so strict passes too.
	{"cut-off deq after the crash, k=1", "", crashThenEmpty(1, false), true, true, true},
	// p2 deqs again after the crash and gets 1, then p3 finds the queue
	// empty: recoverable orders the cut-off deq before p2's deq -> 1, so
	// with k=0 it would take 1; only durable lets it take 2 after.
	{"cut-off deq before its process's next, k=0", "", crashThenEmpty(0, true), false, false, true},
	// With k=1 it takes 2 first (1 skipped once): every mode passes.
	{"cut-off deq before its process's next, k=1", "", crashThenEmpty(1, true), true, true, true},
	// An element a lost deq took does not come out again: p3's empty
	// after the crash needs the cut-off deq to have taken 2, and then p4
	// cannot get 2.
	{"lost deq's element comes out, k=0", "", `object q kqueue k=0
1 inv q enq 1
1 ret ok
1 inv q enq 2
1 ret ok
3 inv q deq
3 ret 1
2 inv q deq
crash
3 inv q deq
3 ret empty
4 inv q deq
4 ret 2`, false, false, false},
	// A deq answered ? may take effect after its response (k=0: it
	// takes 2 after p3's deq -> 1), in every mode.
	{"? deq takes effect late, k=0", "kqueue-unknown.hist", `object q kqueue k=0
1 inv q enq 1
1 ret ok
1 inv q enq 2
1 ret ok
2 inv q deq
2 ret ?
3 inv q deq
3 ret 1
3 inv q deq
3 ret empty`, true, true, true},
	// ... but not before its invocation: p3's empty comes first.
	{"? deq before its invocation, k=1", "", `object q kqueue k=1
1 inv q enq 1
1 ret ok
3 inv q deq
3 ret empty
2 inv q deq
2 ret ?`, false, false, false},
	// A deq pending at the end may take 1 between p3's deqs (k=1: 2 skips
	// 1 once, then the pending deq takes 1, then p3 finds it empty).
	{"pending deq, k=1", "", `object q kqueue k=1
1 inv q enq 1
1 ret ok
1 inv q enq 2
1 ret ok
2 inv q deq
3 inv q deq
3 ret 2
3 inv q deq
3 ret empty`, true, true, true},
}

// crashThenEmpty holds 1 and 2; p2's deq is cut off by a crash; then
// (p2 first, getting 1, if again, else p3) 1 comes out and p3 finds the
// queue empty.
func crashThenEmpty(k int, again bool) string {
	p := "3"
	if again {
		p = "2"
	}
	return "object q kqueue k=" + itoa(k) + `
1 inv q enq 1
1 ret ok
1 inv q enq 2
1 ret ok
2 inv q deq
crash
` + p + ` inv q deq
` + p + ` ret 1
3 inv q deq
3 ret empty
`
}

// roundUpFig3 is Round-Up's Fig. 3 test with factor k: enq 1..4 by
// process 1, then deqs by process 2 returning order (space separated).
func roundUpFig3(k int, order string) string {
	return kqSequential(k, []string{"1", "2", "3", "4"}, order)
}

// roundUp3 is Section V.A's example: enq 1..3, then the deqs.
func roundUp3(k int, order string) string {
	return kqSequential(k, []string{"1", "2", "3"}, order)
}

// needsK is a history that passes with factor need and no smaller one:
// enq 1..need+1, then deqs taking need+1 first, then need, ..., 1 (the
// oldest skipped need times, the first deq need steps from the head).
func needsK(need, k int) string {
	var enqs, deqs []string
	for v := 1; v <= need+1; v++ {
		enqs = append(enqs, itoa(v))
		deqs = append([]string{itoa(v)}, deqs...)
	}
	return kqSequential(k, enqs, joinSpace(deqs))
}

func joinSpace(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out
}

// kqSequential writes a kqueue history of factor k: process 1 enqueues
// enqs one after another, then process 2 dequeues, getting order.
func kqSequential(k int, enqs []string, order string) string {
	text := "object q kqueue k=" + itoa(k) + "\n"
	for _, v := range enqs {
		text += "1 inv q enq " + v + "\n1 ret ok\n"
	}
	for _, v := range splitSpace(order) {
		text += "2 inv q deq\n2 ret " + v + "\n"
	}
	return text
}

func splitSpace(s string) []string {
	var out []string
	cur := ""
	for _, c := range s + " " {
		if c == ' ' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			continue
		}
		cur += string(c)
	}
	return out
}

// TestOracleKqueueHandWritten holds the brute force and the checker to
// the hand-worked verdicts; a case with a file is also the fixture under
// internal/history/testdata/v2, read there by the project's reader (the same
// operations as the case's text), and checked as read.
func TestOracleKqueueHandWritten(t *testing.T) {
	files := 0
	for _, c := range kqueueCases {
		h, err := parseV2(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.file != "" {
			files++
			path := filepath.Join("..", "history", "testdata", "v2", c.file)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			fh, err := history.ReadV2(f, path)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(fh.Ops, h.Ops, sameOp) || !slices.EqualFunc(fh.Objects, h.Objects, sameObject) {
				t.Fatalf("%s: %s is not the case's history\n%s", c.name, path, c.text)
			}
			for _, m := range history.Modes {
				want := [...]bool{c.strict, c.recoverable, c.durable}[m]
				if l := linVerdict(t, fh, m, lin.Options{}, func() string { return path }); l != want {
					t.Errorf("%s, %v: lin says %v, the hand-worked verdict is %v", path, m, l, want)
				}
			}
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
			if l := linVerdict(t, h, m, lin.Options{}, func() string { return c.name }); l != want {
				t.Errorf("%s, %v: lin says %v, the hand-worked verdict is %v\n%s", c.name, m, l, want, c.text)
			}
		}
	}
	if files < 7 {
		t.Errorf("%d kqueue fixtures", files)
	}
}

func sameObject(a, b model.Object) bool {
	return a.Name == b.Name && a.Model == b.Model && slices.Equal(a.Params, b.Params)
}

// TestOracleKqueueFactor checks, on the generated kqueue histories each
// run with every factor 0..3, that the checker agrees with the brute force
// at every factor (so at the boundary of each history, where K-1 fails
// and K passes), that a larger factor accepts what a smaller one accepts
// (the docs' rule only widens with K), and counts the histories whose
// verdict needs a factor, so that the campaign is known to exercise the
// relaxation and not only the queue.
func TestOracleKqueueFactor(t *testing.T) {
	n := testenv.Count(0, 1000, 20000)
	mi := slices.Index(bruteModels, "kqueue")
	needs := 0
	for i := range n {
		h := genSeeded("kqueue", mi, i)
		for _, mode := range history.Modes {
			var v [4]bool
			for k := range v {
				for o := range h.Objects {
					h.Objects[o].Params = []model.Param{{Key: "k", Value: itoa(k)}}
				}
				var err error
				if v[k], err = bruteForce(h, mode); err != nil {
					t.Fatal(err)
				}
				where := func() string { return "kqueue seed (" + itoa(i) + ", " + itoa(mi) + ") with k=" + itoa(k) }
				if l := linVerdict(t, h, mode, lin.Options{}, where); l != v[k] {
					t.Fatalf("%s, %v: lin says %v, the brute force %v\n%s", where(), mode, l, v[k], renderV2(h))
				}
				if k > 0 && v[k-1] && !v[k] {
					t.Fatalf("seed (%d, %d), %v: k=%d accepts, k=%d does not\n%s", i, mi, mode, k-1, k, renderV2(h))
				}
			}
			if v[3] && !v[0] {
				needs++
			}
		}
	}
	t.Logf("of %d kqueue histories x 3 modes x k=0..3, lin and the brute force agree; %d (history, mode) pairs pass with k=3 and not with k=0", n, needs)
	if needs == 0 {
		t.Error("no generated history needs a factor above 0")
	}
}

// TestOracleKqueueLonger compares lin with the brute force on kqueue
// histories of 8 to 10 operations (bruteMax, beyond the campaign's 7),
// where more deqs can be out of order: 500 by default, 20,000 with
// PMLIN_LONG=1.
func TestOracleKqueueLonger(t *testing.T) {
	n := testenv.Count(0, 500, 20000)
	yes := 0
	for i := range n {
		cfg := genConfigFor("kqueue", i)
		cfg.minOps, cfg.maxOps = 8, bruteMax
		h := genHistory(rand.New(rand.NewPCG(uint64(i), 300)), cfg)
		where := func() string { return "kqueue seed (" + itoa(i) + ", 300), 8..10 operations" }
		for _, mode := range history.Modes {
			b, err := bruteForce(h, mode)
			if err != nil {
				t.Fatal(err)
			}
			if l := linVerdict(t, h, mode, lin.Options{}, where); l != b {
				t.Fatalf("%s, %v: lin says %v, the brute force %v\n%s", where(), mode, l, b, renderV2(h))
			}
			if b {
				yes++
			}
		}
	}
	t.Logf("%d kqueue histories of 8..10 operations x 3 modes agree; %d of the %d verdicts linearizable", n, yes, 3*n)
	if yes == 0 || yes == 3*n {
		t.Error("one verdict only")
	}
}
