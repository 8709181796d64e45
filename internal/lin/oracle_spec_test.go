package lin_test

// The sequential specifications of the built-in models, written for the
// brute force (oracle_brute_test.go) from the model table of
// docs/history-format.md, "Version 2", and from nothing else: not from the
// checker's models. Each one is a plain function of an immutable state, so
// the brute force can keep every state of a search prefix.
//
// Where the table leaves a choice, this file takes the reading written
// next to it; the checker may read differently, and a disagreement found
// by the agreement tests is then a question for the format, not
// automatically a bug of either side:
//   - counter: add and fetchadd wrap modulo 2^64 (the table says nothing
//     about overflow; the generators never come near it).
//   - pqueue: "least V" compares numbers; a symbol argument is refused.
//   - map: a stored value is whatever put wrote, even nil; get of a key
//     that was never put (or was removed) is nil. putifabsent stores only
//     when the key is absent, and answers nil then, else the current value.
//   - mutex: acquire takes effect only when nobody holds the lock (a
//     sequential acquire of a held lock has no result, so it cannot be
//     linearised there); release only by the process holding it. The
//     holder is the process id; a crash does not release the lock.
//   - words (version 1's word array, arguments flattened as
//     docs/history-format.md writes them: read a1..ak; cas a1 e1 n1 ...;
//     swap a1 n1 ...): a failed cas blames one of its words that differs
//     from its expected value, and its reported values, if any, are the
//     current ones; an optional cas succeeds if it can, else does nothing.
//   - queue/stack with cap=N: enq/push answers fail exactly when N
//     elements are held, and then changes nothing; without cap it never
//     fails.
//   - contents (queue, stack, pqueue, kqueue; pmlin's extension of the
//     table): every element, front / top / least / oldest first, or the
//     one result empty when there is none; it changes nothing.

import (
	"fmt"
	"slices"

	"github.com/pmlin/pmlin/model"
)

// seqSpec is the sequential specification of one object.
type seqSpec struct {
	// arity maps each operation name of the model to its argument count;
	// argsOK, if set, decides instead (words: any multiple of k).
	arity  map[string]int
	argsOK func(name string, n int) bool
	// initial is the object's state before any operation.
	initial any
	// apply runs an operation named name, called by proc with args, on
	// state s: the next state and the results the specification gives, or
	// ok false when the operation cannot take effect in s at all. It never
	// modifies s.
	apply func(s any, name string, proc int64, args []model.Value) (next any, res []model.Value, ok bool)
	// accept, if set, replaces "apply gives exactly the recorded results"
	// for a returned operation, where the model allows several results
	// (words: a failed cas may blame any word that differs, and may
	// report values or not).
	accept func(s any, name string, args, results []model.Value) (next any, ok bool)
	// outcomes, if set, replaces apply for a model whose operations are
	// nondeterministic in their effect, not only in their results (kqueue:
	// a deq may remove any of several elements, and which one changes the
	// state): every (next state, results) the operation may give in s,
	// none when it cannot take effect there. accept cannot say this (it
	// returns one next state), and apply stays a function for every other
	// model, so that their brute force and generators are unchanged.
	outcomes func(s any, name string, proc int64, args []model.Value) []seqOutcome
}

// seqOutcome is one possible effect of an operation: the next state and
// the results it gives.
type seqOutcome struct {
	next any
	res  []model.Value
}

// takesArgs says whether operation name of spec takes n arguments.
func (sp *seqSpec) takesArgs(name string, n int) bool {
	if sp.argsOK != nil {
		return sp.argsOK(name, n)
	}
	k, ok := sp.arity[name]
	return ok && k == n
}

var (
	vNil   = model.Sym(model.Nil)
	vOK    = model.Sym(model.OK)
	vFail  = model.Sym(model.Fail)
	vEmpty = model.Sym(model.Empty)
	vTrue  = model.Sym(model.True)
	vFalse = model.Sym(model.False)
)

func one(v model.Value) []model.Value { return []model.Value{v} }

// contentsOf is what contents answers with the elements elems, in order.
func contentsOf(elems []model.Value) []model.Value {
	if len(elems) == 0 {
		return one(vEmpty)
	}
	return elems
}

func boolVal(b bool) model.Value {
	if b {
		return vTrue
	}
	return vFalse
}

// newSpec builds the specification of obj from its model name and params.
func newSpec(obj model.Object) (*seqSpec, error) {
	params := map[string]string{}
	for _, p := range obj.Params {
		params[p.Key] = p.Value
	}
	allow := func(keys ...string) error {
		for k := range params {
			if !slices.Contains(keys, k) {
				return fmt.Errorf("object %s: model %s has no param %q", obj.Name, obj.Model, k)
			}
		}
		return nil
	}
	number := func(key string, def uint64) (uint64, bool, error) {
		s, ok := params[key]
		if !ok {
			return def, false, nil
		}
		v, err := model.ParseValue(s)
		if err != nil || v.Sym != model.Num {
			return 0, false, fmt.Errorf("object %s: %s=%s is not a number", obj.Name, key, s)
		}
		return v.N, true, nil
	}
	switch obj.Model {
	case "register":
		if err := allow("init"); err != nil {
			return nil, err
		}
		init := model.Number(0)
		if s, ok := params["init"]; ok {
			v, err := model.ParseValue(s)
			if err != nil {
				return nil, fmt.Errorf("object %s: init=%s: %v", obj.Name, s, err)
			}
			init = v
		}
		return registerSpec(init), nil
	case "counter":
		if err := allow("init"); err != nil {
			return nil, err
		}
		init, _, err := number("init", 0)
		if err != nil {
			return nil, err
		}
		return counterSpec(init), nil
	case "queue", "stack":
		if err := allow("cap"); err != nil {
			return nil, err
		}
		c, bounded, err := number("cap", 0)
		if err != nil {
			return nil, err
		}
		limit := -1
		if bounded {
			limit = int(min(c, 1<<30))
		}
		return sequenceSpec(obj.Model == "stack", limit), nil
	case "kqueue":
		if err := allow("k"); err != nil {
			return nil, err
		}
		k, given, err := number("k", 0)
		if err != nil {
			return nil, err
		}
		if !given {
			return nil, fmt.Errorf("object %s: model kqueue needs k=K", obj.Name)
		}
		return kqueueSpec(int(min(k, 1<<30))), nil
	case "pqueue":
		if err := allow(); err != nil {
			return nil, err
		}
		return pqueueSpec(), nil
	case "set":
		if err := allow(); err != nil {
			return nil, err
		}
		return setSpec(), nil
	case "map":
		if err := allow(); err != nil {
			return nil, err
		}
		return mapSpec(), nil
	case "mutex":
		if err := allow(); err != nil {
			return nil, err
		}
		return mutexSpec(), nil
	case "words":
		def := uint64(0)
		init := map[uint64]uint64{}
		for _, p := range obj.Params {
			v, err := model.ParseValue(p.Value)
			if err != nil || v.Sym != model.Num {
				return nil, fmt.Errorf("object %s: %s=%s is not a number", obj.Name, p.Key, p.Value)
			}
			if p.Key == "init" {
				def = v.N
				continue
			}
			a, err := model.ParseValue(p.Key)
			if err != nil || a.Sym != model.Num {
				return nil, fmt.Errorf("object %s: param %q is neither init nor an address", obj.Name, p.Key)
			}
			init[a.N] = v.N
		}
		return wordsSpec(def, init), nil
	}
	return nil, fmt.Errorf("object %s: the brute force has no model %q", obj.Name, obj.Model)
}

func registerSpec(init model.Value) *seqSpec {
	return &seqSpec{
		arity:   map[string]int{"read": 0, "write": 1, "cas": 2},
		initial: init,
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			cur := s.(model.Value)
			switch name {
			case "read":
				return cur, one(cur), true
			case "write":
				return a[0], one(vOK), true
			default: // cas
				if cur == a[0] {
					return a[1], one(vOK), true
				}
				return cur, one(vFail), true
			}
		},
	}
}

func counterSpec(init uint64) *seqSpec {
	return &seqSpec{
		arity:   map[string]int{"add": 1, "get": 0, "fetchadd": 1},
		initial: init,
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			cur := s.(uint64)
			if name == "get" {
				return cur, one(model.Number(cur)), true
			}
			if a[0].Sym != model.Num {
				return nil, nil, false
			}
			if name == "add" {
				return cur + a[0].N, one(vOK), true
			}
			return cur + a[0].N, one(model.Number(cur)), true
		},
	}
}

// sequenceSpec is a queue (oldest out first) or a stack (newest out
// first), bounded by limit elements unless limit < 0. The state is a
// slice in insertion order that apply never writes into.
func sequenceSpec(lifo bool, limit int) *seqSpec {
	ins, rem := "enq", "deq"
	if lifo {
		ins, rem = "push", "pop"
	}
	return &seqSpec{
		arity:   map[string]int{ins: 1, rem: 0, "contents": 0},
		initial: []model.Value(nil),
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			cur := s.([]model.Value)
			if name == "contents" {
				out := slices.Clone(cur)
				if lifo {
					slices.Reverse(out)
				}
				return cur, contentsOf(out), true
			}
			if name == ins {
				if limit >= 0 && len(cur) >= limit {
					return cur, one(vFail), true
				}
				return append(slices.Clip(cur), a[0]), one(vOK), true
			}
			if len(cur) == 0 {
				return cur, one(vEmpty), true
			}
			if lifo {
				return cur[: len(cur)-1 : len(cur)-1], one(cur[len(cur)-1]), true
			}
			return cur[1:], one(cur[0]), true
		},
	}
}

func pqueueSpec() *seqSpec {
	return &seqSpec{
		arity:   map[string]int{"insert": 1, "removemin": 0, "contents": 0},
		initial: []uint64(nil),
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			cur := s.([]uint64) // a multiset, kept unsorted
			if name == "contents" {
				sorted := slices.Sorted(slices.Values(cur))
				out := make([]model.Value, len(sorted))
				for i, v := range sorted {
					out[i] = model.Number(v)
				}
				return cur, contentsOf(out), true
			}
			if name == "insert" {
				if a[0].Sym != model.Num {
					return nil, nil, false
				}
				return append(slices.Clip(cur), a[0].N), one(vOK), true
			}
			if len(cur) == 0 {
				return cur, one(vEmpty), true
			}
			i := 0
			for j, v := range cur {
				if v < cur[i] {
					i = j
				}
			}
			return slices.Delete(slices.Clone(cur), i, i+1), one(model.Number(cur[i])), true
		},
	}
}

func setSpec() *seqSpec {
	return &seqSpec{
		arity:   map[string]int{"add": 1, "remove": 1, "contains": 1},
		initial: []model.Value(nil),
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			cur := s.([]model.Value)
			i := slices.Index(cur, a[0])
			switch name {
			case "add":
				if i >= 0 {
					return cur, one(vFalse), true
				}
				return append(slices.Clip(cur), a[0]), one(vTrue), true
			case "remove":
				if i < 0 {
					return cur, one(vFalse), true
				}
				return slices.Delete(slices.Clone(cur), i, i+1), one(vTrue), true
			default: // contains
				return cur, one(boolVal(i >= 0)), true
			}
		},
	}
}

type mapEntry struct{ k, v model.Value }

func mapSpec() *seqSpec {
	return &seqSpec{
		arity:   map[string]int{"put": 2, "get": 1, "remove": 1, "putifabsent": 2},
		initial: []mapEntry(nil),
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			cur := s.([]mapEntry)
			i := slices.IndexFunc(cur, func(e mapEntry) bool { return e.k == a[0] })
			old := vNil
			if i >= 0 {
				old = cur[i].v
			}
			set := func(v model.Value) []mapEntry {
				next := slices.Clone(cur)
				if i >= 0 {
					next[i].v = v
					return next
				}
				return append(next, mapEntry{a[0], v})
			}
			switch name {
			case "get":
				return cur, one(old), true
			case "put":
				return set(a[1]), one(old), true
			case "remove":
				if i < 0 {
					return cur, one(vNil), true
				}
				return slices.Delete(slices.Clone(cur), i, i+1), one(old), true
			default: // putifabsent
				if i >= 0 {
					return cur, one(old), true
				}
				return set(a[1]), one(vNil), true
			}
		},
	}
}

type mutexState struct {
	held   bool
	holder int64
}

func mutexSpec() *seqSpec {
	return &seqSpec{
		arity:   map[string]int{"acquire": 0, "release": 0},
		initial: mutexState{},
		apply: func(s any, name string, proc int64, _ []model.Value) (any, []model.Value, bool) {
			cur := s.(mutexState)
			if name == "acquire" {
				if cur.held {
					return nil, nil, false
				}
				return mutexState{true, proc}, one(vOK), true
			}
			if !cur.held || cur.holder != proc {
				return nil, nil, false
			}
			return mutexState{}, one(vOK), true
		},
	}
}

// wordsState is the word array: the words written, over a default.
type wordsState struct {
	def   uint64
	words map[uint64]uint64 // never modified: a write copies it
}

func (w wordsState) get(a uint64) uint64 {
	if v, ok := w.words[a]; ok {
		return v
	}
	return w.def
}

func (w wordsState) set(addrs, vals []uint64) wordsState {
	next := wordsState{def: w.def, words: map[uint64]uint64{}}
	for a, v := range w.words {
		next.words[a] = v
	}
	for i, a := range addrs {
		next.words[a] = vals[i]
	}
	return next
}

// wordsOp splits a words operation's flattened arguments into its
// addresses and the per-word values (expected and new for cas, new for
// swap).
func wordsOp(name string, args []model.Value) (addrs, exp, new []uint64) {
	n := map[string]int{"read": 1, "swap": 2, "cas": 3}[name]
	for i := 0; i+n <= len(args); i += n {
		addrs = append(addrs, args[i].N)
		switch name {
		case "swap":
			new = append(new, args[i+1].N)
		case "cas":
			exp, new = append(exp, args[i+1].N), append(new, args[i+2].N)
		}
	}
	return
}

func wordsSpec(def uint64, init map[uint64]uint64) *seqSpec {
	nums := func(ws wordsState, addrs []uint64) []model.Value {
		var r []model.Value
		for _, a := range addrs {
			r = append(r, model.Number(ws.get(a)))
		}
		return r
	}
	matches := func(ws wordsState, addrs, exp []uint64) int { // first differing word, or -1
		for i, a := range addrs {
			if ws.get(a) != exp[i] {
				return i
			}
		}
		return -1
	}
	return &seqSpec{
		argsOK: func(name string, n int) bool {
			k, ok := map[string]int{"read": 1, "swap": 2, "cas": 3}[name]
			return ok && n >= k && n%k == 0
		},
		initial: wordsState{def: def, words: init},
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			ws := s.(wordsState)
			addrs, exp, new := wordsOp(name, a)
			switch name {
			case "read":
				return ws, nums(ws, addrs), true
			case "swap":
				return ws.set(addrs, new), nums(ws, addrs), true
			}
			if i := matches(ws, addrs, exp); i >= 0 {
				return ws, append([]model.Value{vFail, model.Number(addrs[i])}, nums(ws, addrs)...), true
			}
			return ws.set(addrs, new), one(vOK), true
		},
		accept: func(s any, name string, a, res []model.Value) (any, bool) {
			ws := s.(wordsState)
			addrs, exp, new := wordsOp(name, a)
			switch name {
			case "read":
				return ws, slices.Equal(res, nums(ws, addrs))
			case "swap":
				return ws.set(addrs, new), slices.Equal(res, nums(ws, addrs))
			}
			if len(res) == 1 && res[0] == vOK {
				return ws.set(addrs, new), matches(ws, addrs, exp) < 0
			}
			if len(res) < 2 || res[0] != vFail || res[1].Sym != model.Num {
				return nil, false
			}
			i := slices.Index(addrs, res[1].N)
			if i < 0 || ws.get(addrs[i]) == exp[i] {
				return nil, false
			}
			return ws, len(res) == 2 || slices.Equal(res[2:], nums(ws, addrs))
		},
	}
}
