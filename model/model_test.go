package model

import (
	"slices"
	"strings"
	"testing"
)

func TestBuiltinNames(t *testing.T) {
	for _, name := range []string{"words", "register", "counter", "queue", "stack", "pqueue", "set", "map", "mutex", "exchanger", "channel"} {
		mk := Builtin(name)
		if mk == nil {
			t.Fatalf("%s: no maker", name)
		}
		m, err := mk(nil)
		if err != nil || m.Init == nil || m.Step == nil || m.Key == nil || m.Validate == nil || m.Describe == nil {
			t.Fatalf("%s: %v %+v", name, err, m)
		}
	}
	// models with parameters, and names that are no model
	if m, err := Builtin("kqueue")([]Param{{"k", "2"}}); err != nil || m.Describe == nil {
		t.Fatalf("kqueue k=2: %v", err)
	}
	for _, name := range []string{"Queue", "exchange", ""} {
		if Builtin(name) != nil {
			t.Errorf("%q has a maker", name)
		}
	}
}

func TestParams(t *testing.T) {
	cases := []struct {
		model string
		ps    []Param
		err   string // "" if accepted
	}{
		{"queue", []Param{{"cap", "3"}}, ""},
		{"queue", []Param{{"cap", "0"}}, "cap=0: not a capacity"},
		{"queue", []Param{{"cap", "3"}, {"cap", "4"}}, "parameter cap given twice"},
		{"stack", []Param{{"cap", "x"}}, "not a capacity"},
		{"pqueue", []Param{{"cap", "3"}}, "model pqueue takes no parameters"},
		{"kqueue", nil, "needs its quasi factor"},
		{"kqueue", []Param{{"k", "256"}}, "not a quasi factor"},
		{"kqueue", []Param{{"k", "0"}}, ""},
		{"kqueue", []Param{{"cap", "2"}}, "has no parameter \"cap\""},
		{"register", []Param{{"init", "nil"}}, ""},
		{"register", []Param{{"init", "0x10"}}, ""},
		{"register", []Param{{"init", "empty"}}, "not a number or nil"},
		{"counter", []Param{{"init", "nil"}}, "nil is not a number"},
		{"counter", []Param{{"init", "-1"}}, "is not a value"},
		{"set", []Param{{"k", "1"}}, "model set takes no parameters"},
		{"mutex", []Param{{"fair", "true"}}, "model mutex takes no parameters"},
		{"words", []Param{{"init", "5"}, {"10", "7"}}, ""},
		{"words", []Param{{"10", "7"}, {"0xa", "8"}}, "address 10 is given twice"},
		{"words", []Param{{"init", "nil"}}, "not a number"},
	}
	for _, c := range cases {
		_, err := Builtin(c.model)(c.ps)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s %v: error %v, want %q", c.model, c.ps, err, c.err)
		}
	}
}

func must(t *testing.T, name string, ps ...Param) *Model {
	t.Helper()
	m, err := Builtin(name)(ps)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ret(name string, args []Value, res ...Value) *Op {
	return &Op{Name: name, Args: args, Results: res, Status: Returned}
}

func unknown(name string, args ...Value) *Op {
	return &Op{Name: name, Args: args, Status: Unknown}
}

// run applies ops in order from the first initial state, each to the
// single next state it must have.
func run(t *testing.T, m *Model, ops ...*Op) any {
	t.Helper()
	s := m.Init()[0]
	for _, op := range ops {
		if err := m.Validate(op); err != nil {
			t.Fatal(err)
		}
		next := m.Step(s, op)
		if len(next) != 1 {
			t.Fatalf("%s %v -> %v: %d next states from %s", op.Name, op.Args, op.Results, len(next), m.Describe(s))
		}
		s = next[0]
	}
	return s
}

var (
	ok    = Sym(OK)
	fail  = Sym(Fail)
	empty = Sym(Empty)
	nilV  = Sym(Nil)
)

func nums(ns ...uint64) []Value {
	var vs []Value
	for _, n := range ns {
		vs = append(vs, Number(n))
	}
	return vs
}

// TestKeysCanonical: equal states have equal keys whatever led to them,
// different states different keys; Step leaves its state unchanged.
func TestKeysCanonical(t *testing.T) {
	w := must(t, "words", Param{"10", "7"})
	a := run(t, w, ret("swap", nums(10, 8), Number(7)), ret("swap", nums(10, 7), Number(8)))
	if w.Key(a) != w.Key(w.Init()[0]) {
		t.Errorf("words back at their initial values: key %q, initial %q", w.Key(a), w.Key(w.Init()[0]))
	}
	b := run(t, w, ret("cas", nums(11, 0, 1, 12, 0, 2), ok))
	c := run(t, w, ret("cas", nums(12, 0, 2), ok), ret("cas", nums(11, 0, 1), ok))
	if w.Key(b) != w.Key(c) {
		t.Errorf("one array, two keys: %q %q", w.Key(b), w.Key(c))
	}
	s := must(t, "set")
	x := run(t, s, ret("add", nums(3), Sym(True)), ret("add", nums(1), Sym(True)))
	y := run(t, s, ret("add", nums(1), Sym(True)), ret("add", nums(3), Sym(True)))
	if s.Key(x) != s.Key(y) || s.Describe(x) != "set holding {1 3}" {
		t.Errorf("set: keys %q %q, %s", s.Key(x), s.Key(y), s.Describe(x))
	}
	q := must(t, "queue")
	one := run(t, q, ret("enq", nums(1), ok))
	two := m1(t, q, one, ret("enq", nums(2), ok))
	if q.Key(one) == q.Key(two) || q.Describe(one) != "queue holding [1] (front first)" {
		t.Errorf("queue: %s and %s", q.Describe(one), q.Describe(two))
	}
}

func m1(t *testing.T, m *Model, s any, op *Op) any {
	t.Helper()
	next := m.Step(s, op)
	if len(next) != 1 {
		t.Fatalf("%d next states", len(next))
	}
	return next[0]
}

// TestUnknownSteps: an operation whose result is unknown leads where the
// model says, whatever it returned.
func TestUnknownSteps(t *testing.T) {
	cases := []struct {
		m    *Model
		pre  []*Op
		op   *Op
		want string // Describe of the one next state
	}{
		{must(t, "queue"), []*Op{ret("enq", nums(1), ok)}, unknown("deq"), "queue empty"},
		{must(t, "queue", Param{"cap", "1"}), []*Op{ret("enq", nums(1), ok)}, unknown("enq", Number(2)), "queue holding [1] (front first)"},
		{must(t, "stack"), []*Op{ret("push", nums(1), ok)}, unknown("push", Number(2)), "stack holding [2 1] (top first)"},
		{must(t, "pqueue"), []*Op{ret("insert", nums(5), ok)}, unknown("insert", Number(2)), "pqueue holding [2 5] (least first)"},
		{must(t, "register"), nil, unknown("cas", Number(0), Number(4)), "register holding 4"},
		{must(t, "register"), nil, unknown("cas", Number(1), Number(4)), "register holding 0"},
		{must(t, "counter"), nil, unknown("fetchadd", Number(3)), "counter at 3"},
		{must(t, "map"), []*Op{ret("put", nums(1, 2), nilV)}, unknown("putifabsent", Number(1), Number(3)), "map {1: 2}"},
		{must(t, "map"), nil, unknown("put", Number(1), Number(3)), "map {1: 3}"},
		{must(t, "set"), nil, unknown("add", Number(1)), "set holding {1}"},
		{must(t, "mutex"), nil, &Op{Name: "acquire", Proc: 4, Status: CutOff}, "mutex held by process 4"},
		{must(t, "words"), nil, unknown("cas", nums(1, 0, 5, 2, 1, 6)...), "every word at its initial value"},
		{must(t, "words"), nil, unknown("swap", nums(1, 5)...), "words 1=5, the others at their initial value"},
	}
	for _, c := range cases {
		s := run(t, c.m, c.pre...)
		if got := c.m.Describe(m1(t, c.m, s, c.op)); got != c.want {
			t.Errorf("%s %v after %d ops: %s, want %s", c.op.Name, c.op.Args, len(c.pre), got, c.want)
		}
	}
	// an impossible step stays impossible when unknown
	if next := must(t, "mutex").Step(int64(3), &Op{Name: "release", Proc: 4, Status: Unknown}); len(next) != 0 {
		t.Errorf("release by a non-holder: %d next states", len(next))
	}
}

// TestPartitions: map and set split by their first argument, words by
// the connected components of their addresses.
func TestPartitions(t *testing.T) {
	ops := []*Op{
		{Name: "cas", Args: nums(1, 0, 1, 2, 0, 1)}, // {1, 2}
		{Name: "read", Args: nums(3)},               // {3}
		{Name: "swap", Args: nums(4, 1)},            // {4}
		{Name: "read", Args: nums(2, 4)},            // joins {1, 2} and {4}
		{Name: "read", Args: nums(5)},               // {5}
	}
	got := must(t, "words").Partition(ops)
	want := [][]int{{0, 2, 3}, {1}, {4}}
	for _, g := range got {
		slices.Sort(g)
	}
	slices.SortFunc(got, func(a, b []int) int { return a[0] - b[0] })
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("words: %v, want %v", got, want)
	}
	mops := []*Op{{Name: "put", Args: nums(1, 2)}, {Name: "get", Args: nums(2)}, {Name: "remove", Args: nums(1)}}
	if got := must(t, "map").Partition(mops); !slices.EqualFunc(got, [][]int{{0, 2}, {1}}, slices.Equal) {
		t.Errorf("map: %v", got)
	}
}

// TestExpectAgreesWithStep: in random states of every built-in model with
// Expect, the results Expect gives are valid and possible (Step has a next
// state for them), and an operation ReadOnly calls read-only with them
// leaves the state as it was.
func TestExpectAgreesWithStep(t *testing.T) {
	vocab := map[string][]struct {
		name  string
		arity int
	}{
		"register": {{"read", 0}, {"write", 1}, {"cas", 2}},
		"counter":  {{"add", 1}, {"get", 0}, {"fetchadd", 1}},
		"queue":    {{"enq", 1}, {"deq", 0}, {"contents", 0}},
		"stack":    {{"push", 1}, {"pop", 0}, {"contents", 0}},
		"pqueue":   {{"insert", 1}, {"removemin", 0}, {"contents", 0}},
		"set":      {{"add", 1}, {"remove", 1}, {"contains", 1}},
		"map":      {{"put", 2}, {"get", 1}, {"remove", 1}, {"putifabsent", 2}},
		"words":    {{"read", 2}, {"cas", 6}, {"swap", 4}},
	}
	checked := 0
	for name, ops := range vocab {
		var ps []Param
		if name == "queue" || name == "stack" {
			ps = []Param{{"cap", "3"}}
		}
		m := must(t, name, ps...)
		s := m.Init()[0]
		seed := uint64(len(name))
		rnd := func(n int) int {
			seed = seed*6364136223846793005 + 1442695040888963407
			return int(seed>>33) % n
		}
		for range 300 {
			o := ops[rnd(len(ops))]
			op := &Op{Name: o.name, Status: Unknown}
			for j := range o.arity {
				op.Args = append(op.Args, Number(uint64(rnd(3))))
				if name == "words" && j == o.arity/2 {
					op.Args[j] = Number(uint64(1 + rnd(3))) // the second word: distinct from the first (0)
				}
			}
			if name == "words" {
				op.Args[0] = Number(0)
			}
			exp := m.Expect(s, op)
			if exp == nil {
				t.Fatalf("%s %s: no expectation", name, op.Name)
			}
			known := &Op{Name: op.Name, Args: op.Args, Results: exp, Status: Returned}
			if err := m.Validate(known); err != nil {
				t.Fatalf("%s in %s: Expect gives %v: %v", name, m.Describe(s), exp, err)
			}
			after := m.Step(s, known)
			if len(after) == 0 {
				t.Fatalf("%s %s %v in %s: Expect gives %v, which Step refuses", name, op.Name, op.Args, m.Describe(s), exp)
			}
			if m.ReadOnly != nil && m.ReadOnly(known) && (len(after) != 1 || m.Key(after[0]) != m.Key(s)) {
				t.Fatalf("%s %s %v -> %v in %s: read-only, but it changes the state", name, op.Name, op.Args, exp, m.Describe(s))
			}
			checked++
			next := m.Step(s, op)
			s = next[rnd(len(next))]
		}
	}
	if checked != 8*300 {
		t.Fatalf("%d checked", checked)
	}
}

// TestKQueue: Round-Up's strict out-of-order semantics, sequence by
// sequence: the example of docs/history-format.md and its neighbours.
func TestKQueue(t *testing.T) {
	cases := []struct {
		k    string
		deqs []uint64 // after enq 1, enq 2, enq 3; 0 stands for empty
		ok   bool
	}{
		{"1", []uint64{2, 1, 3}, true},
		{"1", []uint64{1, 3, 2}, true},
		{"1", []uint64{2, 3}, false}, // 1 skipped twice
		{"1", []uint64{3}, false},    // three steps from the front
		{"1", []uint64{2, 1, 3, 0}, true},
		{"1", []uint64{1, 2, 0}, false}, // empty with 3 inside
		{"2", []uint64{3, 2, 1}, true},
		{"2", []uint64{3, 2}, true},
		{"2", []uint64{2, 3, 1}, true},
		{"0", []uint64{1, 2, 3}, true},
		{"0", []uint64{2}, false},
	}
	for _, c := range cases {
		m := must(t, "kqueue", Param{"k", c.k})
		states := m.Init()
		for _, v := range []uint64{1, 2, 3} {
			states = m.Step(states[0], &Op{Name: "enq", Args: []Value{Number(v)}, Results: []Value{Sym(OK)}})
		}
		for _, d := range c.deqs {
			res := Number(d)
			if d == 0 {
				res = Sym(Empty)
			}
			var next []any
			for _, s := range states {
				next = append(next, m.Step(s, &Op{Name: "deq", Results: []Value{res}})...)
			}
			states = next
		}
		if got := len(states) > 0; got != c.ok {
			t.Errorf("k=%s, deqs %v: legal %v, want %v", c.k, c.deqs, got, c.ok)
		}
	}
	// An unknown deq may return any of the first k+1, or nothing else.
	m := must(t, "kqueue", Param{"k", "1"})
	s := m.Init()[0]
	for _, v := range []uint64{1, 2, 3} {
		s = m.Step(s, &Op{Name: "enq", Args: []Value{Number(v)}, Results: []Value{Sym(OK)}})[0]
	}
	if got := m.Step(s, &Op{Name: "deq", Status: Unknown}); len(got) != 2 {
		t.Errorf("unknown deq: %d next states, want 2 (1 or 2 removed)", len(got))
	}
}

// TestContents: pmlin's read of a container's whole state lists it in
// the container's order (or says empty), changes nothing, and refuses
// any other listing.
func TestContents(t *testing.T) {
	c := func(res ...Value) *Op { return ret("contents", nil, res...) }
	cases := []struct {
		m    *Model
		pre  []*Op
		good []Value
		bad  [][]Value
	}{
		{must(t, "queue"), []*Op{ret("enq", nums(1), ok), ret("enq", nums(2), ok)}, nums(1, 2), [][]Value{nums(2, 1), nums(1), nums(1, 2, 3), {Sym(Empty)}}},
		{must(t, "stack"), []*Op{ret("push", nums(1), ok), ret("push", nums(2), ok)}, nums(2, 1), [][]Value{nums(1, 2)}},
		{must(t, "pqueue"), []*Op{ret("insert", nums(5), ok), ret("insert", nums(2), ok), ret("insert", nums(5), ok)}, nums(2, 5, 5), [][]Value{nums(2, 5), nums(5, 5, 2)}},
		{must(t, "queue"), nil, []Value{Sym(Empty)}, [][]Value{nums(0)}},
		{must(t, "kqueue", Param{"k", "1"}), []*Op{ret("enq", nums(1), ok), ret("enq", nums(2), ok), ret("deq", nil, Number(2))}, nums(1), [][]Value{nums(2), {Sym(Empty)}}},
	}
	for i, tc := range cases {
		s := run(t, tc.m, tc.pre...)
		op := c(tc.good...)
		if err := tc.m.Validate(op); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		next := tc.m.Step(s, op)
		if len(next) != 1 || tc.m.Key(next[0]) != tc.m.Key(s) || !tc.m.ReadOnly(op) {
			t.Errorf("case %d: contents %v in %s: %d next states, or not read-only", i, tc.good, tc.m.Describe(s), len(next))
		}
		if exp := tc.m.Expect(s, op); !slices.Equal(exp, tc.good) {
			t.Errorf("case %d: Expect %v, want %v", i, exp, tc.good)
		}
		for _, b := range tc.bad {
			if len(tc.m.Step(s, c(b...))) != 0 {
				t.Errorf("case %d: contents %v accepted in %s", i, b, tc.m.Describe(s))
			}
		}
	}
	for _, bad := range [][]Value{nil, {Sym(Empty), Number(1)}, {Number(1), Sym(Nil)}} {
		if must(t, "queue").Validate(c(bad...)) == nil {
			t.Errorf("contents -> %v validates", bad)
		}
	}
}
