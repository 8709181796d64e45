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
//   - queue/stack with cap=N: enq/push answers fail exactly when N
//     elements are held, and then changes nothing; without cap it never
//     fails.

import (
	"fmt"
	"slices"

	"github.com/pmlin/pmlin/model"
)

// seqSpec is the sequential specification of one object.
type seqSpec struct {
	// arity maps each operation name of the model to its argument count.
	arity map[string]int
	// initial is the object's state before any operation.
	initial any
	// apply runs an operation named name, called by proc with args, on
	// state s: the next state and the results the specification gives, or
	// ok false when the operation cannot take effect in s at all. It never
	// modifies s.
	apply func(s any, name string, proc int64, args []model.Value) (next any, res []model.Value, ok bool)
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
		arity:   map[string]int{ins: 1, rem: 0},
		initial: []model.Value(nil),
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			cur := s.([]model.Value)
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
		arity:   map[string]int{"insert": 1, "removemin": 0},
		initial: []uint64(nil),
		apply: func(s any, name string, _ int64, a []model.Value) (any, []model.Value, bool) {
			cur := s.([]uint64) // a multiset, kept unsorted
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
