package model

import (
	"fmt"
	"strings"
)

// words: version 1's word array. Arguments and results are flattened as
// docs/history-format.md says (cas: a1 e1 n1 ... ak ek nk). The state is
// a string of (address, value) records in increasing address order, for
// the words whose value differs from their initial one, so that equal
// arrays have equal keys.

type wordsModel struct {
	def  uint64
	init map[uint64]uint64
}

func makeWords(ps []Param) (*Model, error) {
	w := &wordsModel{init: map[uint64]uint64{}}
	seenDef := false
	for _, p := range ps {
		v, err := parseNum(p.Value)
		if err != nil {
			return nil, fmt.Errorf("model words: %s=%s: %v", p.Key, p.Value, err)
		}
		if p.Key == "init" {
			if seenDef {
				return nil, fmt.Errorf("model words: parameter init given twice")
			}
			w.def, seenDef = v.N, true
			continue
		}
		a, err := parseNum(p.Key)
		if err != nil {
			return nil, fmt.Errorf("model words has no parameter %q (it has init=V and ADDRESS=V)", p.Key)
		}
		if _, dup := w.init[a.N]; dup {
			return nil, fmt.Errorf("model words: the initial value of address %v is given twice", a)
		}
		w.init[a.N] = v.N
	}
	return &Model{
		Init:      func() []any { return states("") },
		Step:      w.step,
		Key:       strKey,
		Validate:  validateWords,
		Partition: wordComponents,
		Describe:  w.describe,
		Expect:    w.expect,
		ReadOnly:  func(op *Op) bool { return op.Name == "read" || op.Name == "cas" && op.Results[0].Sym == Fail },
	}, nil
}

// stride is the number of arguments per word of an operation.
func stride(name string) int {
	switch name {
	case "cas":
		return 3
	case "swap":
		return 2
	}
	return 1
}

func validateWords(op *Op) error {
	st := stride(op.Name)
	if op.Name != "read" && op.Name != "cas" && op.Name != "swap" {
		return fmt.Errorf("words has no operation %q (it has read, cas, swap)", op.Name)
	}
	if len(op.Args) == 0 || len(op.Args)%st != 0 {
		return fmt.Errorf("words %s takes %d numbers per word and at least one word, not %d arguments", op.Name, st, len(op.Args))
	}
	seen := map[uint64]bool{}
	for i, a := range op.Args {
		if a.Sym != Num {
			return fmt.Errorf("words %s: argument %d: %v is not a number", op.Name, i+1, a)
		}
		if i%st == 0 {
			if seen[a.N] {
				return fmt.Errorf("words %s: address %v appears twice", op.Name, a)
			}
			seen[a.N] = true
		}
	}
	if op.Status != Returned {
		return nil
	}
	k := len(op.Args) / st
	res := op.Results
	nums := func(r []Value) error {
		if len(r) != k {
			return fmt.Errorf("words %s of %d words returns %d values", op.Name, k, len(r))
		}
		for _, v := range r {
			if v.Sym != Num {
				return fmt.Errorf("words %s returns %v, not a number", op.Name, v)
			}
		}
		return nil
	}
	if op.Name != "cas" {
		return nums(res)
	}
	switch {
	case len(res) == 1 && res[0].Sym == OK:
		return nil
	case len(res) >= 2 && res[0].Sym == Fail && res[1].Sym == Num:
		if !seen[res[1].N] {
			return fmt.Errorf("words cas fails at address %v, which is not one of its own", res[1])
		}
		if len(res) == 2 {
			return nil
		}
		return nums(res[2:])
	}
	return fmt.Errorf("words cas returns %s, not ok, fail A or fail A V1 ... Vk", valuesString(res))
}

func valuesString(vs []Value) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, " ")
}

func (w *wordsModel) initial(a uint64) uint64 {
	if v, ok := w.init[a]; ok {
		return v
	}
	return w.def
}

// get returns the value of word a in state s.
func (w *wordsModel) get(s string, a uint64) uint64 {
	if i, ok := find(s, 2*vlen, Number(a)); ok {
		return dec(s, i+vlen).N
	}
	return w.initial(a)
}

// set returns s with word a holding v.
func (w *wordsModel) set(s string, a, v uint64) string {
	i, ok := find(s, 2*vlen, Number(a))
	if ok {
		s = s[:i] + s[i+2*vlen:]
	}
	if v == w.initial(a) {
		return s
	}
	return s[:i] + string(enc(enc(nil, Number(a)), Number(v))) + s[i:]
}

func (w *wordsModel) step(state any, op *Op) []any {
	s := state.(string)
	known := op.Status == Returned
	st := stride(op.Name)
	switch op.Name {
	case "read":
		if known {
			for j, a := range op.Args {
				if w.get(s, a.N) != op.Results[j].N {
					return nil
				}
			}
		}
		return states(s)
	case "swap":
		for j := 0; j < len(op.Args); j += st {
			a := op.Args[j].N
			if known && w.get(s, a) != op.Results[j/st].N {
				return nil
			}
			s = w.set(s, a, op.Args[j+1].N)
		}
		return states(s)
	}
	// cas
	differs := false
	for j := 0; j < len(op.Args); j += st {
		differs = differs || w.get(s, op.Args[j].N) != op.Args[j+1].N
	}
	if !known || op.Results[0].Sym == OK {
		if differs {
			if known {
				return nil
			}
			return states(s)
		}
		for j := 0; j < len(op.Args); j += st {
			s = w.set(s, op.Args[j].N, op.Args[j+2].N)
		}
		return states(s)
	}
	// a failure: the blamed word differs, and reported values are current
	for j := 0; j < len(op.Args); j += st {
		a := op.Args[j].N
		cur := w.get(s, a)
		if a == op.Results[1].N && cur == op.Args[j+1].N {
			return nil
		}
		if len(op.Results) > 2 && op.Results[2+j/st].N != cur {
			return nil
		}
	}
	return states(s)
}

// expect: a read's or a swap's current values; a cas's ok, or its
// failure at the first word that differs with every current value.
func (w *wordsModel) expect(state any, op *Op) []Value {
	s := state.(string)
	st := stride(op.Name)
	var cur []Value
	blame := -1
	for j := 0; j < len(op.Args); j += st {
		v := w.get(s, op.Args[j].N)
		cur = append(cur, Number(v))
		if op.Name == "cas" && blame < 0 && v != op.Args[j+1].N {
			blame = j
		}
	}
	switch {
	case op.Name != "cas":
		return cur
	case blame < 0:
		return []Value{Sym(OK)}
	}
	return append([]Value{Sym(Fail), op.Args[blame]}, cur...)
}

func (w *wordsModel) describe(state any) string {
	s := state.(string)
	if s == "" {
		return "every word at its initial value"
	}
	var b strings.Builder
	b.WriteString("words ")
	for i := 0; i < len(s); i += 2 * vlen {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v=%v", dec(s, i), dec(s, i+vlen))
	}
	b.WriteString(", the others at their initial value")
	return b.String()
}

// wordComponents groups operations by the connected components of the
// words they touch.
func wordComponents(ops []*Op) [][]int {
	parent := map[uint64]uint64{}
	root := func(a uint64) uint64 {
		r := a
		for p, ok := parent[r]; ok && p != r; p, ok = parent[r] {
			r = p
		}
		for a != r { // path compression
			next := parent[a]
			parent[a] = r
			a = next
		}
		return r
	}
	for _, op := range ops {
		st := stride(op.Name)
		first := root(op.Args[0].N)
		for j := st; j < len(op.Args); j += st {
			if r := root(op.Args[j].N); r != first {
				parent[r] = first
			}
		}
	}
	group := map[uint64]int{}
	var groups [][]int
	for i, op := range ops {
		r := root(op.Args[0].N)
		g, ok := group[r]
		if !ok {
			g = len(groups)
			group[r] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}
