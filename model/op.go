// Package model is pmlin's model of an operation on an object of any
// sequential data type, and of the data types themselves (history format
// version 2, docs/history-format.md): a History is its objects, its
// operations (process, object, operation name, arguments, results or
// "unknown", place in the history) and its crashes. Every reader of a
// version 2 history produces this one in-memory form; every checker of a
// generic history consumes it.
//
// The word array of version 1 (read, cas, swap) is the vocabulary of one
// model, "words"; its near-linear analyzer (package analyzer) keeps its own
// streaming encoding for histories of millions of operations.
package model

import (
	"fmt"
	"strconv"
	"strings"
)

// Symbol says what kind of value a Value is: a number, or one of the
// format's symbols.
type Symbol uint8

// The format's symbols; Num marks a number.
const (
	Num Symbol = iota
	Nil
	OK
	Fail
	Empty
	True
	False
)

var symbolNames = [...]string{Nil: "nil", OK: "ok", Fail: "fail", Empty: "empty", True: "true", False: "false"}

// Value is an argument or a result: an unsigned 64-bit number, or a symbol.
// Values are comparable with ==.
type Value struct {
	Sym Symbol
	N   uint64 // the number, when Sym is Num; 0 otherwise
}

// Number is the Value of n.
func Number(n uint64) Value { return Value{N: n} }

// Sym is the Value of symbol s.
func Sym(s Symbol) Value { return Value{Sym: s} }

// hexFrom is where numbers start to be written in hex: small numbers read
// best in decimal, tags with a process id in the high bits in hex.
const hexFrom = 4096

// String writes v as pmlin writes values everywhere (Append).
func (v Value) String() string {
	var b [24]byte
	return string(v.Append(b[:0]))
}

// Append appends v to b as pmlin writes values everywhere (histories of
// both versions, explanations, reports): a symbol by its name, a number in
// decimal below 4096 and in 0x hex from 4096 on. Readers accept both forms
// of a number anywhere.
func (v Value) Append(b []byte) []byte {
	if v.Sym != Num {
		return v.appendSymbol(b)
	}
	if v.N < hexFrom {
		return strconv.AppendUint(b, v.N, 10)
	}
	return strconv.AppendUint(append(b, '0', 'x'), v.N, 16)
}

// appendSymbol is Append's symbol case, apart so that Append of a number
// stays small enough to inline into writers.
func (v Value) appendSymbol(b []byte) []byte {
	if int(v.Sym) < len(symbolNames) {
		return append(b, symbolNames[v.Sym]...)
	}
	return fmt.Appendf(b, "symbol(%d)", v.Sym)
}

// ParseValue reads a value as the format writes it: decimal, 0x hex, or a
// symbol.
func ParseValue(s string) (Value, error) {
	for sym, name := range symbolNames {
		if name != "" && s == name {
			return Value{Sym: Symbol(sym)}, nil
		}
	}
	var n uint64
	var err error
	if rest, ok := strings.CutPrefix(s, "0x"); ok && rest != "" {
		n, err = strconv.ParseUint(rest, 16, 64)
	} else {
		n, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil {
		return Value{}, fmt.Errorf("%q is not a value (decimal, 0x hex, nil, ok, fail, empty, true or false)", s)
	}
	return Value{N: n}, nil
}

// Status is how an operation ended.
type Status uint8

const (
	// Returned: its response gave its results.
	Returned Status = iota
	// Unknown: its response was "?" (Jepsen's :info): it may or may not
	// have taken effect, at any time after its invocation.
	Unknown
	// CutOff: a crash, or the end of the history, came before its response.
	CutOff
)

// Op is one operation of a history.
type Op struct {
	Proc    int64   // the process that called it
	Object  int     // its object: an index in History.Objects
	Name    string  // the operation's name in its model: "enq", "get", "read", ...
	Args    []Value // its arguments, as written
	Results []Value // its results when Returned; nil otherwise
	Status  Status

	// Call and Return place the operation in the history: the positions,
	// counting from 0, of its invocation and of its response among the
	// history's events (invocations, responses and crashes in real-time
	// order). Return is -1 when the operation is CutOff.
	Call, Return int
	// Crash is the index in History.Crashes of the crash that cut the
	// operation off, or -1 (not cut off, or cut off by the end).
	Crash int

	// Line and RetLine are the 1-based lines of the invocation and the
	// response in the file read (0: none, or not read from a file).
	Line, RetLine int64
}

// Param is one "<param>=<value>" of an object declaration.
type Param struct{ Key, Value string }

// Object is one declared object: "object <name> <model> [<param>=<value> ...]".
type Object struct {
	Name   string
	Model  string
	Params []Param // in the order written
	Line   int64   // the line of its declaration (0: implicit or not from a file)
}

// Crash is one full-system crash.
type Crash struct {
	Pos  int   // its position among the history's events
	Line int64 // its line in the file read (0: not from a file)
}

// History is a history of operations on objects, in real-time order:
// Ops sorted by Call.
type History struct {
	Name    string // the file it was read from, for messages ("" if none)
	Objects []Object
	Ops     []Op
	Crashes []Crash
	Events  int // the number of events: positions are in [0, Events)
}

// Where names an operation for a message: "FILE:LINE" of its invocation,
// or "operation I" when it was not read from a file.
func (h *History) Where(i int) string {
	op := &h.Ops[i]
	if op.Line == 0 {
		return fmt.Sprintf("operation %d", i)
	}
	if h.Name == "" {
		return fmt.Sprintf("line %d", op.Line)
	}
	return fmt.Sprintf("%s:%d", h.Name, op.Line)
}
