package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Model is a sequential specification: what an object of one data type
// does, operation by operation. It is a value of functions, in the shape
// of Porcupine's models, so that a user defines a model of their own
// without implementing an interface, and a checker runs any model.
//
// States are values of the model's own choosing (type any), never
// modified once made: Step returns new ones.
type Model struct {
	// Init returns the initial states (several if the initial state is
	// not known exactly).
	Init func() []any
	// Step returns the states that op can lead to from state s. When
	// op.Status is Returned, these are the states after op returns
	// op.Results; none (nil) means that op cannot return these results in
	// s. Otherwise (Unknown, CutOff) op's results are unknown: Step
	// returns the states after op with any results the model allows in s.
	// Step is given only operations that Validate accepts.
	Step func(s any, op *Op) []any
	// Key is the identity of a state for memoisation: two states are the
	// same exactly when their keys are equal. One canonical key rather
	// than a hash and an equality, because a pair of functions that
	// disagree (equal states with different hashes) silently loses states
	// and turns into wrong verdicts, while a key cannot disagree with
	// itself; and a key is usually a cheap encoding of the state anyway.
	Key func(s any) string
	// Validate says whether op is an operation of the model: its name, the
	// number and kinds of its arguments and, when op.Status is Returned,
	// of its results. The checker names the operation's line in front of
	// the error.
	Validate func(op *Op) error
	// Partition, if not nil, splits an object's operations into groups
	// that never constrain each other through the state (P-compositionality,
	// Horn and Kroening): the object's history is linearizable exactly
	// when each group's is. It returns groups of indexes into ops; every
	// index must be in exactly one group.
	Partition func(ops []*Op) [][]int
	// Describe writes a state in the model's terms, for explanations.
	Describe func(s any) string
	// ReadOnly, if not nil, says whether op, with its results, leaves
	// unchanged every state in which it can return them: a read, a failed
	// cas, an enq that found the queue full. Not: a write (the value may
	// already be there, or not). The checker places such an operation as
	// soon as it may, without trying it later. Only returned operations
	// are asked. A wrong "true" makes wrong verdicts: when unsure, false.
	ReadOnly func(op *Op) bool
	// Expect, if not nil, returns the results op would return in state s
	// (nil if it has none there, or several), for explanations: "it
	// returns 0x100001 there".
	Expect func(s any, op *Op) []Value
	// Sync, if not nil, makes the model's objects synchronisation objects
	// (Lawrence and Lowe, "Synchronisation: specification and testing",
	// Section 2): an operation takes effect together with one partner, at
	// one point inside both intervals. Sync says whether a and b (either
	// way round) can be such a pair with their results as recorded (an
	// optional one's results are any). Step then says only which returned
	// operations take effect alone (a timeout: the state unchanged; nil:
	// it needs a partner). The checker decides such a model by matching
	// (internal/lin, sync.go), which takes it to be stateless: one
	// initial state that no step changes.
	Sync func(a, b *Op) bool
}

// Maker makes a model from an object's declaration parameters
// ("cap=3"), or says which parameter is wrong.
type Maker func(params []Param) (*Model, error)

// Builtin returns the maker of a built-in model (docs/history-format.md,
// "The built-in models of version 2"), or nil if there is none of that
// name.
func Builtin(name string) Maker {
	switch name {
	case "register":
		return makeRegister
	case "counter":
		return makeCounter
	case "queue":
		return makeQueue(fifo)
	case "stack":
		return makeQueue(lifo)
	case "pqueue":
		return makeQueue(least)
	case "kqueue":
		return makeKQueue
	case "set":
		return makeSet
	case "map":
		return makeMap
	case "mutex":
		return makeMutex
	case "exchanger":
		return makeExchanger
	case "channel":
		return makeChannel
	case "words":
		return makeWords
	}
	return nil
}

// sig is an operation's signature: its name, the kinds of its arguments
// ('n' a number, 'v' a number or nil), and a check of its results.
type sig struct {
	args    string
	results func(res []Value) error
}

// validator checks ops against a table of signatures.
func validator(model string, sigs map[string]sig) func(op *Op) error {
	return func(op *Op) error {
		s, ok := sigs[op.Name]
		if !ok {
			names := slices.Sorted(maps.Keys(sigs))
			return fmt.Errorf("%s has no operation %q (it has %s)", model, op.Name, strings.Join(names, ", "))
		}
		if len(op.Args) != len(s.args) {
			return fmt.Errorf("%s %s takes %d arguments, not %d", model, op.Name, len(s.args), len(op.Args))
		}
		for i, k := range []byte(s.args) {
			if err := kind(k, op.Args[i]); err != nil {
				return fmt.Errorf("%s %s: argument %d: %v", model, op.Name, i+1, err)
			}
		}
		if op.Status != Returned {
			return nil
		}
		if err := s.results(op.Results); err != nil {
			return fmt.Errorf("%s %s: %v", model, op.Name, err)
		}
		return nil
	}
}

// kind checks v against a kind letter: 'n' a number, 'v' a number or nil.
func kind(k byte, v Value) error {
	switch {
	case v.Sym == Num:
		return nil
	case k == 'v' && v.Sym == Nil:
		return nil
	case k == 'v':
		return fmt.Errorf("%v is not a number or nil", v)
	}
	return fmt.Errorf("%v is not a number", v)
}

// one is a result check: exactly one result, one of the given symbols or,
// if num, a number.
func one(num bool, syms ...Symbol) func(res []Value) error {
	return func(res []Value) error {
		var want []string
		if num {
			want = append(want, "a number")
		}
		for _, s := range syms {
			want = append(want, Sym(s).String())
		}
		if len(res) != 1 {
			return fmt.Errorf("returns %d results, not one (%s)", len(res), strings.Join(want, " or "))
		}
		if res[0].Sym == Num && num {
			return nil
		}
		for _, s := range syms {
			if res[0].Sym == s && s != Num {
				return nil
			}
		}
		return fmt.Errorf("returns %v, not %s", res[0], strings.Join(want, " or "))
	}
}

// params reads an object's parameters: each known key at most once, with
// a value that parse accepts.
func params(model string, ps []Param, parse map[string]func(string) error) error {
	seen := map[string]bool{}
	for _, p := range ps {
		f, ok := parse[p.Key]
		if !ok {
			if len(parse) == 0 {
				return fmt.Errorf("model %s takes no parameters (%s=%s)", model, p.Key, p.Value)
			}
			keys := slices.Sorted(maps.Keys(parse))
			return fmt.Errorf("model %s has no parameter %q (it has %s)", model, p.Key, strings.Join(keys, ", "))
		}
		if seen[p.Key] {
			return fmt.Errorf("model %s: parameter %s given twice", model, p.Key)
		}
		seen[p.Key] = true
		if err := f(p.Value); err != nil {
			return fmt.Errorf("model %s: %s=%s: %v", model, p.Key, p.Value, err)
		}
	}
	return nil
}

// enc appends v's 9-byte encoding to b: the states of the built-in models
// are strings of such encodings, so that a state is its own key.
func enc(b []byte, v Value) []byte {
	n := v.N
	return append(b, byte(v.Sym), byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// dec reads the value encoded at s[i:i+9].
func dec(s string, i int) Value {
	var n uint64
	for _, c := range []byte(s[i+1 : i+9]) {
		n = n<<8 | uint64(c)
	}
	return Value{Sym: Symbol(s[i]), N: n}
}

const vlen = 9

// less orders values: numbers by magnitude, symbols after numbers.
func less(a, b Value) bool {
	if a.Sym != b.Sym {
		return a.Sym < b.Sym
	}
	return a.N < b.N
}

func strKey(s any) string { return s.(string) }

// list writes the values encoded in s between brackets: "[1 2 0x1000]".
func list(s string, brackets string) string {
	var b strings.Builder
	b.WriteByte(brackets[0])
	for i := 0; i < len(s); i += vlen {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(dec(s, i).String())
	}
	b.WriteByte(brackets[1])
	return b.String()
}

func states(s ...any) []any { return s }
