package model

import (
	"fmt"
	"strconv"
	"strings"
)

// parseNum reads a parameter's number.
func parseNum(s string) (Value, error) {
	v, err := ParseValue(s)
	if err != nil {
		return v, err
	}
	if v.Sym != Num {
		return v, fmt.Errorf("%v is not a number", v)
	}
	return v, nil
}

// register: the state is one Value.

func makeRegister(ps []Param) (*Model, error) {
	init := Number(0)
	err := params("register", ps, map[string]func(string) error{"init": func(s string) error {
		v, err := ParseValue(s)
		if err == nil && v.Sym != Num && v.Sym != Nil {
			err = fmt.Errorf("%v is not a number or nil", v)
		}
		init = v
		return err
	}})
	if err != nil {
		return nil, err
	}
	return &Model{
		Init: func() []any { return states(init) },
		Step: stepRegister,
		Key:  func(s any) string { return string(enc(nil, s.(Value))) },
		Validate: validator("register", map[string]sig{
			"read":  {"", one(true, Nil)},
			"write": {"v", one(false, OK)},
			"cas":   {"vv", one(false, OK, Fail)},
		}),
		Describe: func(s any) string { return "register holding " + s.(Value).String() },
		ReadOnly: func(op *Op) bool { return op.Name == "read" || op.Results[0].Sym == Fail },
		Expect: func(s any, op *Op) []Value {
			v := s.(Value)
			switch {
			case op.Name == "read":
				return []Value{v}
			case op.Name == "cas" && v != op.Args[0]:
				return []Value{Sym(Fail)}
			}
			return []Value{Sym(OK)}
		},
	}, nil
}

func stepRegister(s any, op *Op) []any {
	v := s.(Value)
	known := op.Status == Returned
	switch op.Name {
	case "read":
		if known && op.Results[0] != v {
			return nil
		}
		return states(v)
	case "write":
		return states(op.Args[0])
	case "cas":
		ok := v == op.Args[0]
		if known && ok != (op.Results[0].Sym == OK) {
			return nil
		}
		if ok {
			return states(op.Args[1])
		}
		return states(v)
	}
	return nil
}

// counter: the state is a uint64.

func makeCounter(ps []Param) (*Model, error) {
	var init uint64
	err := params("counter", ps, map[string]func(string) error{"init": func(s string) error {
		v, err := parseNum(s)
		init = v.N
		return err
	}})
	if err != nil {
		return nil, err
	}
	return &Model{
		Init: func() []any { return states(init) },
		Step: stepCounter,
		Key:  func(s any) string { return string(enc(nil, Number(s.(uint64)))) },
		Validate: validator("counter", map[string]sig{
			"add":      {"n", one(false, OK)},
			"get":      {"", one(true)},
			"fetchadd": {"n", one(true)},
		}),
		Describe: func(s any) string { return "counter at " + Number(s.(uint64)).String() },
		ReadOnly: func(op *Op) bool { return op.Name == "get" },
		Expect: func(s any, op *Op) []Value {
			if op.Name == "add" {
				return []Value{Sym(OK)}
			}
			return []Value{Number(s.(uint64))}
		},
	}, nil
}

func stepCounter(s any, op *Op) []any {
	c := s.(uint64)
	known := op.Status == Returned
	switch op.Name {
	case "add":
		return states(c + op.Args[0].N)
	case "get":
		if known && op.Results[0].N != c {
			return nil
		}
		return states(c)
	case "fetchadd":
		if known && op.Results[0].N != c {
			return nil
		}
		return states(c + op.Args[0].N)
	}
	return nil
}

// queue, stack, pqueue: the state is a string of encoded elements, front
// (queue), top (stack) or least (pqueue) first.

type order uint8

const (
	fifo order = iota
	lifo
	least
)

var containerNames = [...]struct{ model, add, remove, front string }{
	fifo:  {"queue", "enq", "deq", "front first"},
	lifo:  {"stack", "push", "pop", "top first"},
	least: {"pqueue", "insert", "removemin", "least first"},
}

func makeQueue(o order) Maker {
	return func(ps []Param) (*Model, error) {
		names := containerNames[o]
		capacity := -1
		parse := map[string]func(string) error{}
		if o != least {
			parse["cap"] = func(s string) error {
				n, err := strconv.Atoi(s)
				if err != nil || n < 1 {
					return fmt.Errorf("not a capacity (a decimal number >= 1)")
				}
				capacity = n
				return nil
			}
		}
		if err := params(names.model, ps, parse); err != nil {
			return nil, err
		}
		// fail is the shape of an add's answer whatever the capacity: on
		// an unbounded container it is impossible (a violation), not
		// malformed.
		addResult := one(false, OK, Fail)
		return &Model{
			Init: func() []any { return states("") },
			Step: func(s any, op *Op) []any { return stepQueue(o, capacity, s.(string), op) },
			Key:  strKey,
			Validate: validator(names.model, map[string]sig{
				names.add:    {"n", addResult},
				names.remove: {"", one(true, Empty)},
				"contents":   {"", contentsResult},
			}),
			Describe: func(s any) string {
				if s.(string) == "" {
					return names.model + " empty"
				}
				return names.model + " holding " + list(s.(string), "[]") + " (" + names.front + ")"
			},
			ReadOnly: func(op *Op) bool {
				return op.Name == "contents" || op.Results[0].Sym == Fail || op.Results[0].Sym == Empty
			},
			Expect: func(s any, op *Op) []Value {
				q := s.(string)
				switch {
				case op.Name == "contents":
					return listing(q)
				case op.Name == names.add && capacity >= 0 && len(q)/vlen >= capacity:
					return []Value{Sym(Fail)}
				case op.Name == names.add:
					return []Value{Sym(OK)}
				case q == "":
					return []Value{Sym(Empty)}
				}
				return []Value{dec(q, 0)}
			},
		}, nil
	}
}

func stepQueue(o order, capacity int, q string, op *Op) []any {
	known := op.Status == Returned
	if op.Name == "contents" {
		return stepContents(q, op)
	}
	if op.Name == containerNames[o].add {
		full := capacity >= 0 && len(q)/vlen >= capacity
		if known && full != (op.Results[0].Sym == Fail) {
			return nil
		}
		if full {
			return states(q)
		}
		e := string(enc(nil, op.Args[0]))
		switch o {
		case fifo:
			return states(q + e)
		case lifo:
			return states(e + q)
		}
		i := 0
		for i < len(q) && !less(op.Args[0], dec(q, i)) {
			i += vlen
		}
		return states(q[:i] + e + q[i:])
	}
	if q == "" {
		if known && op.Results[0].Sym != Empty {
			return nil
		}
		return states(q)
	}
	if known && op.Results[0] != dec(q, 0) {
		return nil
	}
	return states(q[vlen:])
}

// contents is pmlin's read-only operation of the containers (queue,
// stack, pqueue, kqueue: docs/history-format.md, "contents"): it returns
// every element, in the container's order (front, top or least first),
// or the one result empty when there is none. The harness records the
// state a data-structure target's recovery left as one.
func contentsResult(res []Value) error {
	switch {
	case len(res) == 0:
		return fmt.Errorf("returns nothing (the elements, or empty)")
	case len(res) == 1 && res[0].Sym == Empty:
		return nil
	}
	for i, v := range res {
		if v.Sym != Num {
			return fmt.Errorf("result %d is %v, not a number (the elements, or empty alone)", i+1, v)
		}
	}
	return nil
}

// listing is what contents returns on the elements encoded in q.
func listing(q string) []Value {
	if q == "" {
		return []Value{Sym(Empty)}
	}
	out := make([]Value, 0, len(q)/vlen)
	for i := 0; i < len(q); i += vlen {
		out = append(out, dec(q, i))
	}
	return out
}

// stepContents steps contents on the elements encoded in q: the state
// stays, if the results list them (or are unknown).
func stepContents(q string, op *Op) []any {
	if op.Status != Returned {
		return states(q)
	}
	if q == "" {
		if op.Results[0].Sym != Empty {
			return nil
		}
		return states(q)
	}
	if len(op.Results)*vlen != len(q) {
		return nil
	}
	for i, v := range op.Results {
		if v != dec(q, i*vlen) {
			return nil
		}
	}
	return states(q)
}

// set: the state is a string of the encoded members in increasing order.
// It splits by value.

func makeSet(ps []Param) (*Model, error) {
	if err := params("set", ps, nil); err != nil {
		return nil, err
	}
	tf := one(false, True, False)
	return &Model{
		Init: func() []any { return states("") },
		Step: stepSet,
		Key:  strKey,
		Validate: validator("set", map[string]sig{
			"add": {"n", tf}, "remove": {"n", tf}, "contains": {"n", tf},
		}),
		Partition: byFirstArg,
		Describe: func(s any) string {
			return "set holding " + list(s.(string), "{}")
		},
		ReadOnly: func(op *Op) bool { return op.Name == "contains" || op.Results[0].Sym == False },
		Expect: func(s any, op *Op) []Value {
			_, present := find(s.(string), vlen, op.Args[0])
			if present == (op.Name != "add") {
				return []Value{Sym(True)}
			}
			return []Value{Sym(False)}
		},
	}, nil
}

// find returns where v is, or would be, in the sorted string of
// records of width w keyed by their first value.
func find(s string, w int, v Value) (int, bool) {
	for i := 0; i < len(s); i += w {
		c := dec(s, i)
		if c == v {
			return i, true
		}
		if less(v, c) {
			return i, false
		}
	}
	return len(s), false
}

func stepSet(s any, op *Op) []any {
	set := s.(string)
	v := op.Args[0]
	i, present := find(set, vlen, v)
	if op.Status == Returned && (op.Results[0].Sym == True) != (present == (op.Name != "add")) {
		return nil
	}
	switch {
	case op.Name == "add" && !present:
		return states(set[:i] + string(enc(nil, v)) + set[i:])
	case op.Name == "remove" && present:
		return states(set[:i] + set[i+vlen:])
	}
	return states(set)
}

// byFirstArg groups operations by their first argument: a map's key, a
// set's value.
func byFirstArg(ops []*Op) [][]int {
	group := map[Value]int{}
	var groups [][]int
	for i, op := range ops {
		g, ok := group[op.Args[0]]
		if !ok {
			g = len(groups)
			group[op.Args[0]] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// map: the state is a string of (key, value) records in increasing key
// order. It splits by key.

func makeMap(ps []Param) (*Model, error) {
	if err := params("map", ps, nil); err != nil {
		return nil, err
	}
	nv := one(true, Nil)
	return &Model{
		Init: func() []any { return states("") },
		Step: stepMap,
		Key:  strKey,
		Validate: validator("map", map[string]sig{
			"put": {"nn", nv}, "get": {"n", nv}, "remove": {"n", nv}, "putifabsent": {"nn", nv},
		}),
		Partition: byFirstArg,
		Describe: func(s any) string {
			m := s.(string)
			var b strings.Builder
			b.WriteString("map {")
			for i := 0; i < len(m); i += 2 * vlen {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%v: %v", dec(m, i), dec(m, i+vlen))
			}
			b.WriteString("}")
			return b.String()
		},
		ReadOnly: func(op *Op) bool {
			switch op.Name {
			case "get":
				return true
			case "remove":
				return op.Results[0].Sym == Nil
			case "putifabsent":
				return op.Results[0].Sym != Nil
			}
			return false
		},
		Expect: func(s any, op *Op) []Value {
			m := s.(string)
			if i, present := find(m, 2*vlen, op.Args[0]); present {
				return []Value{dec(m, i+vlen)}
			}
			return []Value{Sym(Nil)}
		},
	}, nil
}

func stepMap(s any, op *Op) []any {
	m := s.(string)
	k := op.Args[0]
	i, present := find(m, 2*vlen, k)
	cur := Sym(Nil)
	if present {
		cur = dec(m, i+vlen)
	}
	if op.Status == Returned && op.Results[0] != cur {
		return nil
	}
	without := m
	if present {
		without = m[:i] + m[i+2*vlen:]
	}
	with := func(v Value) string {
		return without[:i] + string(enc(enc(nil, k), v)) + without[i:]
	}
	switch op.Name {
	case "put":
		return states(with(op.Args[1]))
	case "remove":
		return states(without)
	case "putifabsent":
		if !present {
			return states(with(op.Args[1]))
		}
	}
	return states(m)
}

// mutex: the state is the holder's process id, or -1 when free.

func makeMutex(ps []Param) (*Model, error) {
	if err := params("mutex", ps, nil); err != nil {
		return nil, err
	}
	ok := one(false, OK)
	return &Model{
		Init: func() []any { return states(int64(-1)) },
		Step: func(s any, op *Op) []any {
			h := s.(int64)
			switch {
			case op.Name == "acquire" && h == -1:
				return states(op.Proc)
			case op.Name == "release" && h == op.Proc:
				return states(int64(-1))
			}
			return nil
		},
		Key:      func(s any) string { return strconv.FormatInt(s.(int64), 10) },
		Validate: validator("mutex", map[string]sig{"acquire": {"", ok}, "release": {"", ok}}),
		Describe: func(s any) string {
			if h := s.(int64); h >= 0 {
				return fmt.Sprintf("mutex held by process %d", h)
			}
			return "mutex free"
		},
	}, nil
}
